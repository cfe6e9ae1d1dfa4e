"""The base of the symbolic worlds' backends (robots/kitchen, robots/household), ROS-free: a world with
preconditions behind the SkillBackend protocol, one skill at a time, each taking `skill_duration_s`.

Every read of the world (affordances, objects, locations, ground truth, state) holds the world lock; a
subclass names only its world's parts: the skills, the affordance list, the locations and, optionally,
what it logs about a refused or an executed skill."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

from monologue_domain.kitchen.skills import PreconditionError
from monologue_domain.kitchen.state import KitchenState
from monologue_domain.objects import ObjectState
from monologue_domain.skills import Affordance, SkillError, SkillOutcome, SkillState

from .backend import FeedbackFn


class SymbolicWorld(Protocol):
    """What the base needs of a symbolic world (KitchenWorld, HouseholdWorld)."""

    @property
    def objects(self) -> list[str]: ...

    def state(self) -> KitchenState: ...

    def scene_objects(self) -> Sequence[ObjectState]: ...

    def invalid(self, skill: str, args: Sequence[str]) -> SkillOutcome | None: ...

    def check(self, skill: str, args: Sequence[str]) -> PreconditionError | None: ...

    def execute(self, skill: str, args: Sequence[str]) -> SkillOutcome: ...


W = TypeVar("W", bound=SymbolicWorld)


class SymbolicBackend(Generic[W]):
    """A symbolic world behind the SkillBackend protocol (subclasses: KitchenBackend, HouseholdBackend)."""

    SKILLS: tuple[str, ...] = ()  # the world's skill names (GetAffordances)

    def __init__(self, world: W, logger: logging.Logger, skill_duration_s: float,
                 on_change: Callable[[], None] | None = None) -> None:
        if skill_duration_s < 0.0:
            raise ValueError("skill_duration_s must be >= 0")
        self._world = world
        self._log = logger
        self._duration = skill_duration_s  # s
        self._on_change = on_change
        self._busy = threading.Lock()  # one skill at a time
        self._lock = threading.RLock()  # world access, held briefly

    # ---- the world's parts (subclasses) -----------------------------------------------------------
    def _affordance_list(self, include_unaffordable: bool) -> list[Affordance]:
        """The world's affordances (called with the world lock held)."""
        raise NotImplementedError

    def _locations(self) -> list[str]:
        """The world's locations (called with the world lock held)."""
        raise NotImplementedError

    def _refusal(self, pre: PreconditionError) -> str:
        """What is logged about a failed precondition."""
        return pre.text

    def _run(self, skill: str, args: Sequence[str]) -> tuple[SkillOutcome, list[str]]:
        """Execute a skill (world lock held): its outcome and lines to log (e.g. disturbances)."""
        return self._world.execute(skill, args), []

    # ---- SkillBackend -----------------------------------------------------------------------------
    @property
    def world(self) -> W:
        return self._world

    def state(self) -> KitchenState:
        with self._lock:
            return self._world.state()

    def skill_names(self) -> Sequence[str]:
        return tuple(self.SKILLS)

    def affordances(self, include_unaffordable: bool = False) -> list[Affordance]:
        with self._lock:
            return self._affordance_list(include_unaffordable)

    def objects(self) -> list[str]:
        with self._lock:
            return list(self._world.objects)

    def locations(self) -> list[str]:
        with self._lock:
            return self._locations()

    def ground_truth(self) -> list[ObjectState]:
        with self._lock:
            return list(self._world.scene_objects())

    def expert_extra(self) -> dict[str, Any]:
        """The world's whole state for the expert LLM stand-in's side channel (llm:=expert only; the node
        writes it beside the ground truth): {"kitchen_state": monologue_domain.expert.kitchen.state_json}."""
        from monologue_domain.expert.kitchen import state_json

        with self._lock:
            return {"kitchen_state": state_json(self._world.state())}

    def execute(self, skill: str, args: Sequence[str], feedback: FeedbackFn,
                cancel: threading.Event) -> SkillOutcome:
        start = time.monotonic()

        def took(o: SkillOutcome) -> SkillOutcome:
            return SkillOutcome(o.error, o.message, o.failed_precondition, time.monotonic() - start)

        if not self._busy.acquire(blocking=False):
            return SkillOutcome(SkillError.BUSY, "another skill is running")
        try:
            with self._lock:
                bad = self._world.invalid(skill, args)
                pre = self._world.check(skill, args) if bad is None else None
            if bad is not None:
                return took(bad)
            if pre is not None:
                self._log.info("%s(%s): %s", skill, ", ".join(args), self._refusal(pre))
                return took(SkillOutcome(SkillError.PRECONDITION_FAILED, pre.explicit, pre.text))
            feedback(SkillState.MOVING_TO_PICK, f"running {skill}({', '.join(args)})")
            if cancel.wait(self._duration) if self._duration > 0 else cancel.is_set():
                return took(SkillOutcome(SkillError.CANCELED, "cancelled; nothing changed"))
            with self._lock:  # the preconditions still hold: one skill at a time
                outcome, notes = self._run(skill, args)
            for note in notes:
                self._log.info("%s", note)
            if self._on_change is not None:
                self._on_change()
            feedback(SkillState.DONE, outcome.message)
            self._log.info("%s(%s): %s", skill, ", ".join(args), outcome.message)
            return took(outcome)
        finally:
            self._busy.release()
