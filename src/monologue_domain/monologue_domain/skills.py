"""Skills as plain data: result codes, feedback states, affordances and outcomes (no rclpy).

Shared by every skill backend (the kinematic world, the arm backends) and by their clients.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class SkillError(IntEnum):
    """Skill result codes; must match monologue_interfaces/action/ExecuteSkill (checked by a test)."""

    NONE = 0
    UNKNOWN_SKILL = 1
    INVALID_ARGUMENTS = 2
    PRECONDITION_FAILED = 3
    EXECUTION_FAILED = 4
    OUT_OF_LIMITS = 5
    CANCELED = 6
    ROBOT_FAULT = 7
    TIMEOUT = 8
    ESTOP_ACTIVE = 9
    BUSY = 10


class SkillState(IntEnum):
    """Feedback states; must match ExecuteSkill feedback STATE_* constants."""

    ACCEPTED = 0
    MOVING_TO_PICK = 1
    PICKING = 2
    MOVING_TO_PLACE = 3
    PLACING = 4
    RETREATING = 5
    DONE = 6


@dataclass(frozen=True)
class Affordance:
    """One admissible skill instance and its probability of success in [0, 1]."""

    skill: str
    args: tuple[str, ...]
    affordance: float

    @property
    def description(self) -> str:
        return f"{self.skill}({', '.join(self.args)})"


@dataclass(frozen=True)
class SkillOutcome:
    """What happened when a skill ran."""

    error: SkillError
    message: str = ""
    failed_precondition: str = ""
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error == SkillError.NONE


class SkillRejected(Exception):
    """Raised by a backend when a skill is refused before anything moves."""

    def __init__(self, error: SkillError, message: str, failed_precondition: str = "") -> None:
        super().__init__(message)
        self.error = error
        self.message = message
        self.failed_precondition = failed_precondition


__all__ = ["Affordance", "SkillError", "SkillOutcome", "SkillRejected", "SkillState"]
