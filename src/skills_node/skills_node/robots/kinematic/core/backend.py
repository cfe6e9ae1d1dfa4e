"""The kinematic tabletop backend (ROS-free): IM's scripted pick-and-place on monologue_domain's kinematic
world, with simulated motion time."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.objects import ObjectState
from monologue_domain.skills import Affordance, SkillError, SkillOutcome, SkillRejected, SkillState
from monologue_domain.tabletop import LOCATIONS
from skills_node.core.backend import FeedbackFn


class SimBackend:
    """Kinematic tabletop backend: IM's scripted pick-and-place on monologue_domain's kinematic world,
    with simulated motion time.

    Motion phases mirror the real arm (hover 15 cm above, descend, suction, lift) and take
    `phase_duration_s` each, so cancelling and feedback behave as on hardware.
    """

    SKILLS = ("pick_place",)

    def __init__(
        self,
        world: TabletopWorld,
        logger: logging.Logger,
        phase_duration_s: float,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        if phase_duration_s < 0.0:
            raise ValueError("phase_duration_s must be >= 0")
        self._world = world
        self._log = logger
        self._phase_s = phase_duration_s
        self._busy = threading.Lock()  # one skill at a time
        self._lock = threading.RLock()  # world access, held briefly
        self._on_change = on_change

    @property
    def world(self) -> TabletopWorld:
        return self._world

    @property
    def world_lock(self) -> threading.RLock:
        """Held while the world changes (a skill's move and its settle): hold it to read a consistent world."""
        return self._lock

    def skill_names(self) -> Sequence[str]:
        return self.SKILLS

    def affordances(self, include_unaffordable: bool = False) -> list[Affordance]:
        with self._lock:
            return self._world.affordances(include_unaffordable)

    def objects(self) -> list[str]:
        with self._lock:
            return [o.name for o in self._world.objects]

    def locations(self) -> list[str]:
        return list(LOCATIONS)

    def ground_truth(self) -> list[ObjectState]:
        with self._lock:
            return self._world.snapshot()

    def execute(
        self, skill: str, args: Sequence[str], feedback: FeedbackFn, cancel: threading.Event
    ) -> SkillOutcome:
        start = time.monotonic()
        if skill not in self.SKILLS:
            return SkillOutcome(SkillError.UNKNOWN_SKILL, f"unknown skill {skill!r}; known: {self.SKILLS}")
        if len(args) != 2:
            return SkillOutcome(SkillError.INVALID_ARGUMENTS, "pick_place takes (object, target)")
        obj, target = args[0], args[1]
        if not self._busy.acquire(blocking=False):
            return SkillOutcome(SkillError.BUSY, "another skill is running")
        try:
            try:
                with self._lock:
                    self._world.check_pick_place(obj, target)
            except SkillRejected as e:
                return SkillOutcome(e.error, e.message, e.failed_precondition, time.monotonic() - start)
            for state, text in (
                (SkillState.MOVING_TO_PICK, f"moving 15 cm above the {obj}"),
                (SkillState.PICKING, f"descending to the {obj} and switching suction on"),
            ):
                feedback(state, text)
                if self._wait(cancel):
                    return SkillOutcome(SkillError.CANCELED, "cancelled; nothing was moved",
                                        duration_s=time.monotonic() - start)
            with self._lock:
                heavy = self._world.get(obj).heavy
            if heavy:
                feedback(SkillState.RETREATING, "lifting failed; retreating")
                self._wait(cancel)
                return SkillOutcome(
                    SkillError.EXECUTION_FAILED,
                    f"the suction cup could not lift the {obj}",
                    duration_s=time.monotonic() - start,
                )
            feedback(SkillState.MOVING_TO_PLACE, f"carrying the {obj} to 15 cm above the {target}")
            if self._wait(cancel):
                return SkillOutcome(SkillError.CANCELED, f"cancelled; the {obj} was put back",
                                    duration_s=time.monotonic() - start)
            feedback(SkillState.PLACING, f"lowering the {obj} and releasing suction")
            try:
                with self._lock:
                    moved, message = self._world.pick_place(obj, target)
            except SkillRejected as e:  # the world changed during the motion (a disturbance)
                return SkillOutcome(e.error, e.message, e.failed_precondition, time.monotonic() - start)
            if self._on_change is not None:
                self._on_change()
            feedback(SkillState.RETREATING, "lifting to hover height")
            self._wait(cancel)
            feedback(SkillState.DONE, message)
            error = SkillError.NONE if moved else SkillError.EXECUTION_FAILED
            self._log.info("pick_place(%s, %s): %s", obj, target, message)
            return SkillOutcome(error, message, duration_s=time.monotonic() - start)
        finally:
            self._busy.release()

    def _wait(self, cancel: threading.Event) -> bool:
        """Sleep one motion phase; True if cancelled meanwhile."""
        return cancel.wait(self._phase_s) if self._phase_s > 0 else cancel.is_set()
