"""The safety layer in front of every arm: skill allow-list, workspace box, minimum height,
speed and acceleration limits (with minimum speeds and a longest motion duration, so no motion can be
absurdly slow), the path of joint moves, a latching software e-stop and an optional human approval gate.

Targets outside the limits are refused (MotionRefused) before anything is sent to the arm.
The software e-stop is a convenience stop for the operator and the planner; it is not a
safety-rated stop and does not replace the robot's own emergency stop button.
All lengths are metres in the robot base frame, angles radians, times seconds.
"""
from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from .arm import (
    ArmFault,
    ArmPort,
    ArmStatus,
    MotionRefused,
    Refusal,
    TcpPose,
    Vector3,
    motion_duration,
)
from .types import SkillError, SkillRejected

ARG_MAX_LENGTH = 64  # characters per skill argument


POSITION_EPS = 1e-9  # m: float rounding of a target computed to lie exactly on a limit is not a violation
# rad: spacing, on the leading axis, of the samples of a joint move's path (joint-space interpolation, as
# UR's moveJ) whose TCP (forward kinematics) must be in the workspace. Between two samples every joint
# turns at most this much, so the TCP moves at most this times the sum of the axes' distances to it: on a
# UR5e with a 16 cm tool about 3.2 m in the worst case, i.e. at most 3.2 cm between samples (typically
# under 1.5 cm, as the joints do not all turn at the leading axis's rate with their longest lever).
JOINT_PATH_STEP = 0.01

@dataclass(frozen=True)
class SkillRule:
    """One allowed skill and the names of its arguments (their count is enforced)."""

    name: str
    arg_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class SafetyLimits:
    """Limits every motion is checked against before it is sent."""

    workspace_min: Vector3  # m, lowest corner of the box the TCP must stay in (base frame)
    workspace_max: Vector3  # m, highest corner
    min_height: float  # m, lowest TCP z (keeps the tool above the table / plates)
    max_speed: float  # m/s, TCP
    max_acceleration: float  # m/s^2, TCP
    max_joint_speed: float  # rad/s, leading axis
    max_joint_acceleration: float  # rad/s^2, leading axis
    max_contact_travel: float  # m, longest guarded move-until-contact
    min_speed: float  # m/s, TCP: slower linear and contact moves are refused
    min_joint_speed: float  # rad/s, leading axis: slower joint moves are refused
    max_motion_duration: float  # s, longest nominal duration of one motion (trapezoidal profile)
    joint_min: tuple[float, ...]  # rad
    joint_max: tuple[float, ...]  # rad
    skills: tuple[SkillRule, ...]  # the allow-list

    def __post_init__(self) -> None:
        for lo, hi, axis in zip(self.workspace_min, self.workspace_max, "xyz"):
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise ValueError(f"workspace {axis}: need finite min < max, got [{lo}, {hi}] m")
        if len(self.workspace_min) != 3 or len(self.workspace_max) != 3:
            raise ValueError("workspace_min and workspace_max need 3 values (x, y, z) in m")
        if not math.isfinite(self.min_height):
            raise ValueError("min_height must be finite (m)")
        for name in ("max_speed", "max_acceleration", "max_joint_speed", "max_joint_acceleration",
                     "max_contact_travel", "min_speed", "min_joint_speed", "max_motion_duration"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be > 0, got {value}")
        if self.min_speed > self.max_speed or self.min_joint_speed > self.max_joint_speed:
            raise ValueError(f"min_speed ({self.min_speed} m/s) and min_joint_speed ({self.min_joint_speed} rad/s) "
                             f"must not exceed max_speed ({self.max_speed}) and max_joint_speed "
                             f"({self.max_joint_speed})")
        if len(self.joint_min) != 6 or len(self.joint_max) != 6:
            raise ValueError("joint_min and joint_max need 6 values (rad)")
        if any(lo >= hi for lo, hi in zip(self.joint_min, self.joint_max)):
            raise ValueError("joint_min must be below joint_max for every joint")
        names = [s.name for s in self.skills]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate skills in the allow-list: {names}")

    # ----- skills ---------------------------------------------------------------------------
    def check_skill(self, skill: str, args: Sequence[str]) -> SkillRule:
        """The allow-list rule for `skill`; raises SkillRejected if the skill or its arguments are not allowed."""
        rule = next((s for s in self.skills if s.name == skill), None)
        if rule is None:
            raise SkillRejected(SkillError.UNKNOWN_SKILL,
                                f"skill {skill!r} is not on the allow-list {[s.name for s in self.skills]}")
        if len(args) != len(rule.arg_names):
            raise SkillRejected(SkillError.INVALID_ARGUMENTS,
                                f"{skill} takes {len(rule.arg_names)} argument(s) "
                                f"({', '.join(rule.arg_names) or 'none'}), got {len(args)}")
        for name, value in zip(rule.arg_names, args):
            if not value.strip() or len(value) > ARG_MAX_LENGTH or not value.isprintable():
                raise SkillRejected(SkillError.INVALID_ARGUMENTS,
                                    f"{skill}: argument {name} must be 1-{ARG_MAX_LENGTH} printable "
                                    f"characters, got {value!r}")
        return rule

    # ----- motions --------------------------------------------------------------------------
    def check_position(self, x: float, y: float, z: float, what: str = "target") -> None:
        if not all(math.isfinite(v) for v in (x, y, z)):
            raise MotionRefused(Refusal.INVALID_TARGET, f"{what} has a non-finite coordinate ({x}, {y}, {z})")
        for v, lo, hi, axis in zip((x, y, z), self.workspace_min, self.workspace_max, "xyz"):
            if not lo - POSITION_EPS <= v <= hi + POSITION_EPS:
                raise MotionRefused(
                    Refusal.WORKSPACE,
                    f"{what} {axis} = {v:.3f} m is outside the workspace [{lo:.3f}, {hi:.3f}] m")
        if z < self.min_height - POSITION_EPS:
            raise MotionRefused(Refusal.MIN_HEIGHT,
                                f"{what} z = {z:.3f} m is below the minimum height {self.min_height:.3f} m")

    def check_pose(self, pose: TcpPose, what: str = "target") -> None:
        if not all(math.isfinite(v) for v in pose.as_list()):
            raise MotionRefused(Refusal.INVALID_TARGET, f"{what} pose has a non-finite value: {pose.as_list()}")
        self.check_position(pose.x, pose.y, pose.z, what)

    def check_linear(self, pose: TcpPose, speed: float, acceleration: float, start: TcpPose | None = None) -> None:
        """Rates and the target; from `start` (the TCP now) also the motion's duration. A straight line
        between two points of the (convex) workspace box stays in it."""
        self._check_rate(speed, self.max_speed, Refusal.SPEED, "speed", "m/s", self.min_speed)
        self._check_rate(acceleration, self.max_acceleration, Refusal.ACCELERATION, "acceleration", "m/s^2")
        self.check_pose(pose)
        if start is not None:
            self.check_duration(start.distance_to(pose), speed, acceleration, "linear move", "m")

    def check_joints(self, q: Sequence[float], speed: float, acceleration: float,
                     forward_kinematics: Callable[[Sequence[float]], TcpPose] | None = None,
                     start: Sequence[float] | None = None) -> None:
        """Joint limits and rates; with forward kinematics, the TCP at `q` must be in the workspace too.

        From `start` (the joints now, rad) also the duration and, with forward kinematics, the path: a
        joint-space path is not a straight line in Cartesian space, so it is sampled every
        JOINT_PATH_STEP rad of the leading axis and the TCP of every sample must be in the workspace.
        """
        self._check_rate(speed, self.max_joint_speed, Refusal.JOINT_SPEED, "joint speed", "rad/s",
                         self.min_joint_speed)
        self._check_rate(acceleration, self.max_joint_acceleration, Refusal.JOINT_ACCELERATION,
                         "joint acceleration", "rad/s^2")
        if len(q) != 6 or not all(math.isfinite(v) for v in q):
            raise MotionRefused(Refusal.INVALID_TARGET, f"joint target needs 6 finite values (rad), got {list(q)}")
        for i, (v, lo, hi) in enumerate(zip(q, self.joint_min, self.joint_max)):
            if not lo <= v <= hi:
                raise MotionRefused(Refusal.JOINT_LIMITS,
                                    f"joint {i} target {v:.3f} rad is outside [{lo:.3f}, {hi:.3f}] rad")
        if forward_kinematics is not None:
            self.check_pose(forward_kinematics(q), "TCP at the joint target")
        if start is None:
            return
        if len(start) != 6 or not all(math.isfinite(v) for v in start):
            raise MotionRefused(Refusal.INVALID_TARGET, f"the arm's joints {list(start)} are not 6 finite values")
        span = max(abs(b - a) for a, b in zip(start, q))
        self.check_duration(span, speed, acceleration, "joint move", "rad")
        if forward_kinematics is not None:
            self.check_joint_path(start, q, forward_kinematics)

    def check_joint_path(self, start: Sequence[float], q: Sequence[float],
                         forward_kinematics: Callable[[Sequence[float]], TcpPose]) -> None:
        """The TCP along the joint-space interpolation from `start` to `q` (rad), sampled every
        JOINT_PATH_STEP rad of the leading axis (the start, where the arm already is, and the end,
        checked as the target, excluded) must be in the workspace and above the minimum height."""
        span = max(abs(b - a) for a, b in zip(start, q))
        n = math.ceil(span / JOINT_PATH_STEP)
        for i in range(1, n):
            s = i / n
            tcp = forward_kinematics([a + (b - a) * s for a, b in zip(start, q)])
            self.check_position(tcp.x, tcp.y, tcp.z, f"TCP on the way to the joint target ({s:.0%} of the path)")

    def check_duration(self, distance: float, speed: float, acceleration: float, what: str, unit: str) -> None:
        """Refuse (DURATION) a motion over `distance` (m or rad) that would take longer than max_motion_duration."""
        t = motion_duration(distance, speed, acceleration)
        if not t <= self.max_motion_duration:
            raise MotionRefused(Refusal.DURATION,
                                f"{what} of {distance:.3f} {unit} at {speed:g} {unit}/s and {acceleration:g} "
                                f"{unit}/s^2 would take {t:.3g} s, longer than {self.max_motion_duration:g} s")

    def check_motion_settings(self, speed: float, acceleration: float, contact_speed: float) -> None:
        """A primitive's travel and contact speeds (m/s, m/s^2) are within the rates, and a travel across
        the whole workspace (its diagonal) and a longest contact move end within max_motion_duration."""
        self._check_rate(speed, self.max_speed, Refusal.SPEED, "travel speed", "m/s", self.min_speed)
        self._check_rate(acceleration, self.max_acceleration, Refusal.ACCELERATION, "travel acceleration", "m/s^2")
        self._check_rate(contact_speed, self.max_speed, Refusal.SPEED, "contact speed", "m/s", self.min_speed)
        diagonal = math.dist(self.workspace_min, self.workspace_max)
        self.check_duration(diagonal, speed, acceleration, "a travel across the workspace", "m")
        self._check_contact_duration(self.max_contact_travel, contact_speed)

    def _check_contact_duration(self, max_travel: float, speed: float) -> None:
        t = max_travel / speed  # s at full speed: a lower bound whatever the contact move's acceleration
        if not t <= self.max_motion_duration:
            raise MotionRefused(Refusal.DURATION, f"contact move of up to {max_travel:.3f} m at {speed:g} m/s would "
                                                  f"take {t:.3g} s, longer than {self.max_motion_duration:g} s")

    def check_contact(self, start: TcpPose, direction: Vector3, speed: float, max_travel: float) -> None:
        """A guarded move from `start`: its farthest point (start + max_travel along direction) must be allowed."""
        norm = math.sqrt(sum(c * c for c in direction))
        if not math.isfinite(norm) or norm < 1e-9:
            raise MotionRefused(Refusal.INVALID_TARGET, f"contact direction {direction} is not a direction")
        self._check_rate(speed, self.max_speed, Refusal.SPEED, "contact speed", "m/s", self.min_speed)
        if not (math.isfinite(max_travel) and 0 < max_travel <= self.max_contact_travel):
            raise MotionRefused(Refusal.CONTACT_TRAVEL,
                                f"contact travel {max_travel:.3f} m must be in (0, {self.max_contact_travel:.3f}] m")
        self._check_contact_duration(max_travel, speed)
        end = [s + c / norm * max_travel for s, c in zip(start.position, direction)]
        self.check_position(end[0], end[1], end[2], "farthest point of the contact move")

    @staticmethod
    def _check_rate(value: float, limit: float, refusal: Refusal, name: str, unit: str, low: float = 0.0) -> None:
        """`value` in (0, limit], or in [low, limit] when a minimum `low` > 0 is given."""
        if not (math.isfinite(value) and 0 < value <= limit and value >= low):
            interval = f"[{low:g}, {limit:g}]" if low > 0 else f"(0, {limit:g}]"
            raise MotionRefused(refusal, f"{name} {value:g} {unit} must be in {interval} {unit}")


class ApprovalGate(Protocol):
    """A person approves a motion or a skill before it runs."""

    def approve(self, request: str, timeout_s: float) -> bool:
        """True if approved; False if denied or not answered within timeout_s (s)."""
        ...


@dataclass(frozen=True)
class Approval:
    """A backend's approval step: its gate (None: nothing needs approving) and the s a person has."""

    gate: ApprovalGate | None
    timeout_s: float

    def granted(self, request: str) -> bool:
        """True when no gate is configured, or a person approved `request` within timeout_s."""
        return self.gate is None or self.gate.approve(request, self.timeout_s)


class SafeArm:
    """An ArmPort that checks every command against SafetyLimits, the e-stop latch, the arm's
    own fault state and (optionally) a person, before passing it to the wrapped arm."""

    RESTOP_PERIOD_S = 0.02  # s, stop() is repeated this often while a motion is still in flight after an e-stop

    def __init__(
        self,
        arm: ArmPort,
        limits: SafetyLimits,
        logger: logging.Logger,
        forward_kinematics: Callable[[Sequence[float]], TcpPose] | None = None,
        approval: ApprovalGate | None = None,
        *,
        approval_timeout_s: float,
    ) -> None:
        if approval_timeout_s <= 0:
            raise ValueError("approval_timeout_s must be > 0 s")
        self._approval = Approval(approval, approval_timeout_s)
        self.arm = arm
        self.limits = limits
        self._log = logger
        self._fk = forward_kinematics
        self._lock = threading.Lock()
        self._estop = threading.Event()
        self._estop_reason = ""
        self._in_flight = 0  # motions passed to the arm that have not returned yet

    # ----- e-stop ---------------------------------------------------------------------------
    @property
    def estop_latched(self) -> bool:
        return self._estop.is_set()

    @property
    def estop_reason(self) -> str:
        return self._estop_reason

    def engage_estop(self, reason: str) -> None:
        """Latch the e-stop and stop the arm at once; every later motion is refused until reset_estop()."""
        with self._lock:
            first = not self._estop.is_set()
            self._estop.set()
            if first:
                self._estop_reason = reason
            in_flight = self._in_flight
        self._stop_quietly()  # first: a log record can block (a full stderr pipe) and is not urgent
        if first:
            self._log.error("software e-stop engaged: %s", reason)
        if in_flight:
            # A motion that passed its checks just before the latch may reach the robot after this
            # stop(); keep stopping until it has returned.
            threading.Thread(target=self._restop_while_in_flight, name="estop-restop", daemon=True).start()

    def reset_estop(self) -> bool:
        """Clear the latch; True if it was latched."""
        with self._lock:
            was = self._estop.is_set()
            self._estop.clear()
            self._estop_reason = ""
        if was:
            self._log.warning("software e-stop reset")
        return was

    def _restop_while_in_flight(self) -> None:
        while self._estop.is_set():
            with self._lock:
                if self._in_flight == 0:
                    return
            self._stop_quietly()
            threading.Event().wait(self.RESTOP_PERIOD_S)

    def _stop_quietly(self) -> None:
        try:
            self.arm.stop()
        except Exception as e:  # a dead connection must not hide the latch
            self._log.error("stop() failed: %s", e)

    # ----- motions --------------------------------------------------------------------------
    def check_joint_target(self, q: Sequence[float], speed: float, acceleration: float) -> None:
        """Raise MotionRefused if a joint move to `q` would be refused from anywhere (joint limits, rates,
        the TCP at `q`); move_joints also checks its duration and path from where the arm is."""
        self.limits.check_joints(q, speed, acceleration, self._fk)

    def move_linear(self, pose: TcpPose, speed: float, acceleration: float) -> None:
        self.limits.check_linear(pose, speed, acceleration)
        self._refuse_if_latched()
        self.limits.check_linear(pose, speed, acceleration, start=self.arm.tcp_pose())
        self._run(f"move linearly to {pose} at {speed:g} m/s",
                  lambda: self.arm.move_linear(pose, speed, acceleration))

    def move_joints(self, q: Sequence[float], speed: float, acceleration: float) -> None:
        self.check_joint_target(q, speed, acceleration)
        self._refuse_if_latched()
        self.limits.check_joints(q, speed, acceleration, self._fk, start=self.arm.joint_positions())
        target = [round(float(v), 4) for v in q]
        self._run(f"move joints to {target} rad at {speed:g} rad/s",
                  lambda: self.arm.move_joints(q, speed, acceleration))

    def move_until_contact(self, direction: Vector3, speed: float, max_travel: float) -> bool:
        self._refuse_if_latched()
        self.limits.check_contact(self.arm.tcp_pose(), direction, speed, max_travel)
        result: list[bool] = []
        self._run(f"move along {direction} until contact, at most {max_travel:.3f} m at {speed:g} m/s",
                  lambda: result.append(self.arm.move_until_contact(direction, speed, max_travel)))
        return result[0]

    def set_suction(self, on: bool) -> None:
        # Refused under the e-stop too: switching suction off would drop a held object.
        self._refuse_if_latched()
        self.arm.set_suction(on)

    def _run(self, description: str, motion: Callable[[], object]) -> None:
        self._refuse_if_latched()
        self._refuse_if_faulted()
        if not self._approval.granted(description):
            raise MotionRefused(Refusal.NOT_APPROVED, f"not approved within {self._approval.timeout_s:g} s: "
                                                      f"{description}")
        with self._lock:
            self._refuse_if_latched()
            self._in_flight += 1
        try:
            motion()
        finally:
            with self._lock:
                self._in_flight -= 1

    def _refuse_if_latched(self) -> None:
        if self._estop.is_set():
            raise MotionRefused(Refusal.ESTOP, f"software e-stop is latched ({self._estop_reason}); reset it first")

    def _refuse_if_faulted(self) -> None:
        status = self.arm.status()
        kind = status.fault()
        if kind is not None:
            raise ArmFault(kind, f"the arm cannot move: {status.describe()}")

    # ----- pass-through ---------------------------------------------------------------------
    def holding(self) -> bool:
        return self.arm.holding()

    def stop(self) -> None:
        self.arm.stop()

    def tcp_pose(self) -> TcpPose:
        return self.arm.tcp_pose()

    def joint_positions(self) -> list[float]:
        return self.arm.joint_positions()

    def status(self) -> ArmStatus:
        return self.arm.status()


APPROVING_ANSWERS = frozenset({"y", "yes", "ok", "okay", "approve", "approved", "go", "go ahead"})


def is_approval(answer: str) -> bool:
    """True if a person's free-text answer approves (yes / y / ok / approve / go); anything else denies."""
    return answer.strip().strip(".!").lower() in APPROVING_ANSWERS
