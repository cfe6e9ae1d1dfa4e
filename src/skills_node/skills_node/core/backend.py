"""The interface every skill backend (the simulators, UR5e, Spot) implements (robots/<name>/)."""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Protocol

from monologue_domain.objects import ObjectState
from monologue_domain.skills import Affordance, SkillOutcome, SkillState

FeedbackFn = Callable[[SkillState, str], None]


class SkillBackend(Protocol):
    """What the skills node needs from a robot or simulator."""

    def skill_names(self) -> Sequence[str]: ...

    def affordances(self, include_unaffordable: bool = False) -> list[Affordance]: ...

    def objects(self) -> list[str]: ...

    def locations(self) -> list[str]: ...

    def execute(
        self, skill: str, args: Sequence[str], feedback: FeedbackFn, cancel: threading.Event
    ) -> SkillOutcome: ...

    def ground_truth(self) -> list[ObjectState] | None:
        """Object states for oracle modes, or None on real hardware."""
        ...
