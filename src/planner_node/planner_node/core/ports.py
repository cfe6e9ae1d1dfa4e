"""What the planner needs from the rest of the graph, as Protocols over plain data (no rclpy)."""
from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class SkillOption:
    """An admissible skill instance with its affordance in [0, 1]."""

    skill: str
    args: tuple[str, ...]
    affordance: float


@dataclass(frozen=True)
class SkillResult:
    """Outcome of one executed skill; `error_name` is an ExecuteSkill error code name."""

    error_code: int
    error_name: str
    message: str
    failed_precondition: str
    start_s: float  # seconds since the epoch
    end_s: float

    @property
    def ok(self) -> bool:
        return self.error_code == 0


@dataclass(frozen=True)
class SceneItem:
    name: str
    category: str
    visible: bool = True
    position: tuple[float, float, float] | None = None  # m, centre in the robot base frame (None: not known)
    size: tuple[float, float, float] | None = None  # m, axis-aligned extent (x, y, z); zeros for locations


@dataclass(frozen=True)
class Workspace:
    """The box the robot may move in (its safety limits), m in the robot base frame."""

    minimum: tuple[float, float, float]
    maximum: tuple[float, float, float]
    min_height: float  # m, lowest tool z above the table top


@dataclass(frozen=True)
class SuccessReport:
    success: bool
    confidence: float  # [0, 1]
    explanation: str


class PortUnavailable(Exception):
    """A skill, perception or success service did not answer within its timeout."""


class SkillsPort(Protocol):
    def affordances(self) -> list[SkillOption]: ...

    def execute(self, skill: str, args: Sequence[str], cancel: threading.Event) -> SkillResult: ...


class ScenePort(Protocol):
    def describe(self) -> list[SceneItem]: ...


class HumanPort(Protocol):
    def poll(self) -> list[str]:
        """Interjections received since the last poll, oldest first (UTF-8 text, any language)."""
        ...

    def ask(self, question: str, timeout_s: float, cancel: threading.Event) -> str | None:
        """Ask a person (IM active scene description); the answer, or None after `timeout_s` s."""
        ...


@runtime_checkable
class WorkspaceSource(Protocol):
    """Optional capability of a ScenePort (the node's: the skills node's safety parameters)."""

    def workspace(self) -> Workspace | None:
        """The robot's safety workspace, or None if the robot has none configured (m, base frame)."""
        ...


class SuccessPort(Protocol):
    def detect(self, skill: str, args: Sequence[str], start_s: float, end_s: float) -> SuccessReport: ...


class RobotStatusPort(Protocol):
    def fault(self) -> str | None:
        """Why the robot may not move now (protective stop, e-stop latched, ...), or None if it may."""
        ...

    def wait_ok(self, timeout_s: float, cancel: threading.Event) -> str | None:
        """Wait up to `timeout_s` s for the robot to be able to move; the remaining fault or None."""
        ...


class HumanAsker(Protocol):
    """Puts a question to a person (the node: the `ask_human` action)."""

    def ask(self, question: str, timeout_s: float, cancel: threading.Event, episode_id: str = "") -> str | None:
        """The answer, or None after `timeout_s` s (or if nobody can be asked)."""
        ...
