"""The arm abstraction shared by the UR5e (ur_rtde) backend and the simulated arm.

Conventions are ur_rtde's: Cartesian poses are the TCP in the robot base frame as
(x, y, z) in metres plus a rotation vector (rx, ry, rz) in radians (axis times angle);
joint positions are radians. Robot and safety mode numbers are Universal Robots' RTDE values,
which the simulated arm reports too (RUNNING / NORMAL), so every consumer reads one vocabulary.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum, IntEnum
from typing import Protocol


@dataclass(frozen=True)
class TcpPose:
    """TCP pose in the base frame: position in m, orientation as a rotation vector in rad."""

    x: float
    y: float
    z: float
    rx: float = 0.0
    ry: float = 0.0
    rz: float = 0.0

    @classmethod
    def from_list(cls, values: Sequence[float]) -> TcpPose:
        """From ur_rtde's [x, y, z, rx, ry, rz]."""
        if len(values) != 6:
            raise ValueError(f"a TCP pose has 6 values [x, y, z, rx, ry, rz], got {len(values)}")
        return cls(*(float(v) for v in values))

    def as_list(self) -> list[float]:
        """ur_rtde's [x, y, z, rx, ry, rz]."""
        return [self.x, self.y, self.z, self.rx, self.ry, self.rz]

    @property
    def position(self) -> tuple[float, float, float]:
        return (self.x, self.y, self.z)

    def with_position(self, x: float, y: float, z: float) -> TcpPose:
        return replace(self, x=x, y=y, z=z)

    def distance_to(self, other: TcpPose) -> float:
        """Euclidean distance between the two positions (m); orientation ignored."""
        return math.dist(self.position, other.position)

    def __str__(self) -> str:
        return (f"({self.x:.3f}, {self.y:.3f}, {self.z:.3f}) m, "
                f"rotvec ({self.rx:.3f}, {self.ry:.3f}, {self.rz:.3f}) rad")


class RobotMode(IntEnum):
    """UR robot mode (RTDE `robot_mode`)."""

    NO_CONTROLLER = -1
    DISCONNECTED = 0
    CONFIRM_SAFETY = 1
    BOOTING = 2
    POWER_OFF = 3
    POWER_ON = 4
    IDLE = 5
    BACKDRIVE = 6
    RUNNING = 7
    UPDATING_FIRMWARE = 8


class SafetyMode(IntEnum):
    """UR safety mode (RTDE `safety_mode`)."""

    NORMAL = 1
    REDUCED = 2
    PROTECTIVE_STOP = 3
    RECOVERY = 4
    SAFEGUARD_STOP = 5
    SYSTEM_EMERGENCY_STOP = 6
    ROBOT_EMERGENCY_STOP = 7
    VIOLATION = 8
    FAULT = 9
    VALIDATE_JOINT_ID = 10
    UNDEFINED_SAFETY_MODE = 11
    AUTOMATIC_MODE_SAFEGUARD_STOP = 12
    SYSTEM_THREE_POSITION_ENABLING_STOP = 13


MOTION_SAFETY_MODES = frozenset({SafetyMode.NORMAL, SafetyMode.REDUCED})


def mode_name(enum: type[IntEnum], value: int) -> str:
    """The enum member's name, or "UNKNOWN(<value>)"."""
    try:
        return enum(value).name
    except ValueError:
        return f"UNKNOWN({value})"


@dataclass(frozen=True)
class ArmStatus:
    """A snapshot of the arm's health."""

    robot_mode: int  # RobotMode value
    safety_mode: int  # SafetyMode value
    protective_stop: bool
    emergency_stop: bool
    connected: bool
    detail: str = ""  # extra words, e.g. why the connection was lost

    @property
    def ok(self) -> bool:
        """True when the arm can move: connected, running, and in a normal or reduced safety mode."""
        return (self.connected and not self.protective_stop and not self.emergency_stop
                and self.robot_mode == RobotMode.RUNNING and self.safety_mode in MOTION_SAFETY_MODES)

    def fault(self) -> FaultKind | None:
        """The most severe fault this status shows, or None when ok."""
        if not self.connected:
            return FaultKind.CONNECTION_LOST
        if self.emergency_stop or self.safety_mode in (SafetyMode.SYSTEM_EMERGENCY_STOP,
                                                       SafetyMode.ROBOT_EMERGENCY_STOP):
            return FaultKind.EMERGENCY_STOP
        if self.protective_stop or self.safety_mode == SafetyMode.PROTECTIVE_STOP:
            return FaultKind.PROTECTIVE_STOP
        if self.safety_mode not in MOTION_SAFETY_MODES:
            return FaultKind.SAFETY_STOP
        if self.robot_mode != RobotMode.RUNNING:
            return FaultKind.NOT_RUNNING
        return None

    def describe(self) -> str:
        """One line for logs and error messages."""
        if not self.connected:
            return f"not connected{': ' + self.detail if self.detail else ''}"
        words = [f"robot mode {mode_name(RobotMode, self.robot_mode)}",
                 f"safety mode {mode_name(SafetyMode, self.safety_mode)}"]
        if self.protective_stop:
            words.append("protective stop")
        if self.emergency_stop:
            words.append("emergency stop")
        if self.detail:
            words.append(self.detail)
        return ", ".join(words)


class FaultKind(Enum):
    """Why the arm cannot move or stopped moving."""

    PROTECTIVE_STOP = "protective stop"
    EMERGENCY_STOP = "emergency stop"
    SAFETY_STOP = "safety stop"  # safeguard stop, violation, fault, recovery...
    NOT_RUNNING = "robot not running"  # powered off, idle, booting, backdrive...
    CONNECTION_LOST = "connection lost"
    COMMAND_FAILED = "command failed"  # the controller refused or did not finish a command
    TIMEOUT = "timeout"  # a motion did not finish within its time limit
    LEASE_LOST = "lease lost"  # another client (e.g. Spot's tablet) took control of the robot


class ArmError(Exception):
    """Base class of arm errors."""


class ArmFault(ArmError):
    """The robot faulted or could not execute: protective/emergency stop, connection lost..."""

    def __init__(self, kind: FaultKind, reason: str) -> None:
        super().__init__(f"{kind.value}: {reason}")
        self.kind = kind
        self.reason = reason


class MotionInterrupted(ArmError):
    """The motion was stopped on request (stop() from another thread) before it finished."""


class Refusal(Enum):
    """Which limit a refused motion or skill would have broken."""

    WORKSPACE = "workspace"
    MIN_HEIGHT = "min_height"
    SPEED = "speed"
    ACCELERATION = "acceleration"
    JOINT_SPEED = "joint_speed"
    JOINT_ACCELERATION = "joint_acceleration"
    JOINT_LIMITS = "joint_limits"
    CONTACT_TRAVEL = "contact_travel"
    DURATION = "duration"  # the motion would take longer than the limit (absurdly slow speed or acceleration)
    DISTANCE = "distance"  # a mobile base's goal farther than the limit from where it stands
    INVALID_TARGET = "invalid_target"  # NaN, wrong length, zero direction...
    ESTOP = "estop"
    NOT_APPROVED = "not_approved"


class MotionRefused(ArmError):
    """A motion was refused before anything was sent to the robot."""

    def __init__(self, refusal: Refusal, reason: str) -> None:
        super().__init__(f"{refusal.value}: {reason}")
        self.refusal = refusal
        self.reason = reason


Vector3 = tuple[float, float, float]


def motion_duration(distance: float, speed: float, acceleration: float) -> float:
    """Nominal time (s) of a trapezoidal move over `distance` (m or rad) at `speed` (m/s or rad/s) with
    `acceleration` (m/s^2 or rad/s^2); inf when it would never end (a speed or acceleration of ~0)."""
    if distance <= 0:
        return 0.0
    try:
        ramp = speed / acceleration  # s to reach speed
        if acceleration * ramp * ramp >= distance:  # triangular profile
            return 2.0 * math.sqrt(distance / acceleration)
        return distance / speed + ramp
    except (ZeroDivisionError, OverflowError):
        return math.inf


class ArmPort(Protocol):
    """What a skill backend needs from an arm with a suction (or other on/off) end effector.

    Motions block until done and raise ArmFault (robot fault, connection lost, timeout),
    MotionInterrupted (stop() was called) or MotionRefused (a safety layer said no).
    """

    def move_linear(self, pose: TcpPose, speed: float, acceleration: float) -> None:
        """Straight-line TCP motion to `pose`; speed in m/s, acceleration in m/s^2."""
        ...

    def move_joints(self, q: Sequence[float], speed: float, acceleration: float) -> None:
        """Joint-space motion to `q` (rad); leading-axis speed rad/s and acceleration rad/s^2."""
        ...

    def move_until_contact(self, direction: Vector3, speed: float, max_travel: float) -> bool:
        """Move along `direction` (base frame) at `speed` (m/s) until contact; stop at most
        `max_travel` (m) away. True if contact was made, False if max_travel was reached."""
        ...

    def set_suction(self, on: bool) -> None: ...

    def holding(self) -> bool:
        """True if the end effector holds something (vacuum sensed, or suction on without a sensor)."""
        ...

    def stop(self) -> None:
        """Decelerate to a standstill now; a running motion raises MotionInterrupted. Thread-safe."""
        ...

    def tcp_pose(self) -> TcpPose: ...

    def joint_positions(self) -> list[float]:
        """Actual joint positions (rad)."""
        ...

    def status(self) -> ArmStatus: ...
