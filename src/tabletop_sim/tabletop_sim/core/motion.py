"""Time-parametrised arm motions: joint moves and straight-line TCP moves with speed/acceleration limits.

A motion is planned completely (every IK solution along the path) before anything moves, so an
unreachable target is refused with the arm still at rest. Trajectories are sampled every PLAN_DT
seconds and interpolated linearly in joint space in between.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from .geometry import Vec, interpolate_rotation, rotation_angle
from .kinematics import ArmKinematics

PLAN_DT = 0.008  # s between planned samples
MAX_JOINT_STEP = 0.05  # rad, largest joint change between two samples of a Cartesian path (else: singularity)
# Limits of the UR5e's normal operation (UR5e user manual; the sim refuses anything above them).
MAX_LINEAR_SPEED = 1.0  # m/s (TCP)
MAX_LINEAR_ACCELERATION = 5.0  # m/s^2
MAX_JOINT_SPEED = math.pi  # rad/s
MAX_JOINT_ACCELERATION = 10.0  # rad/s^2
MAX_CONTACT_SPEED = 0.25  # m/s, fastest approach of a move until contact
MAX_TRAVEL = 1.0  # m, longest move until contact
TOOL_ANGULAR_SPEED = 1.0  # rad/s, TCP rotation speed limit of linear moves
TOOL_ANGULAR_ACCELERATION = 4.0  # rad/s^2
MIN_TCP_HEIGHT = 0.0  # m, linear-move targets below the table top are refused
MIN_CONTACT_HEIGHT = -0.02  # m, lowest point a move until contact may aim at (it stops on contact first)


class ArmError(IntEnum):
    """Result codes; must match monologue_interfaces/action/ArmCommand ERROR_* (checked by a test)."""

    NONE = 0
    UNREACHABLE = 1
    INVALID = 2
    PROTECTIVE_STOP = 3
    CANCELED = 4
    TIMEOUT = 5


class MotionError(Exception):
    """A motion was refused before it started."""

    def __init__(self, code: ArmError, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Trajectory:
    """Joint positions q[i] (rad) at times[i] (s from the motion's start)."""

    kind: str  # "joints", "linear" or "contact"
    times: Vec
    q: Vec  # (n, 6)
    stop_on_contact: bool = False

    @property
    def duration(self) -> float:
        return float(self.times[-1])

    def sample(self, t: float) -> tuple[Vec, Vec]:
        """Joint positions (rad) and velocities (rad/s) at time t (s), held at the ends."""
        if t <= 0.0:
            return self.q[0].copy(), np.zeros(6)
        if t >= self.duration:
            return self.q[-1].copy(), np.zeros(6)
        i = min(int(np.searchsorted(self.times, t, side="right")) - 1, len(self.times) - 2)
        dt = float(self.times[i + 1] - self.times[i])
        u = (t - float(self.times[i])) / dt
        return self.q[i] + u * (self.q[i + 1] - self.q[i]), (self.q[i + 1] - self.q[i]) / dt


def trapezoid(distance: float, v_max: float, a_max: float) -> tuple[float, float, float]:
    """(duration s, accel-phase time s, cruise speed) of a rest-to-rest trapezoidal profile."""
    if distance <= 0.0:
        return 0.0, 0.0, 0.0
    t_acc = v_max / a_max
    if a_max * t_acc * t_acc >= distance:  # triangular: never reaches v_max
        t_acc = math.sqrt(distance / a_max)
        return 2 * t_acc, t_acc, a_max * t_acc
    return 2 * t_acc + (distance - a_max * t_acc * t_acc) / v_max, t_acc, v_max


def profile(duration: float, t_acc: float, t: float) -> float:
    """Fraction of the path (0..1) done at time t of a trapezoid with this duration and accel time."""
    if duration <= 0.0 or t >= duration:
        return 1.0
    if t <= 0.0:
        return 0.0
    v = 1.0 / (duration - t_acc)  # cruise speed in path fractions per second
    a = v / t_acc if t_acc > 0 else math.inf
    if t < t_acc:
        return 0.5 * a * t * t
    if t > duration - t_acc:
        r = duration - t
        return 1.0 - 0.5 * a * r * r
    return 0.5 * a * t_acc * t_acc + v * (t - t_acc)


def _times(duration: float) -> Vec:
    n = max(2, int(math.ceil(duration / PLAN_DT)) + 1)
    return np.linspace(0.0, duration, n)


def check_limits(value: float, name: str, upper: float, unit: str) -> None:
    if not math.isfinite(value) or value <= 0.0 or value > upper:
        raise MotionError(ArmError.INVALID, f"{name} must be in (0, {upper:g}] {unit}, got {value:g}")


def plan_joints(kin: ArmKinematics, q0: Vec, q1: Vec, speed: float, acceleration: float) -> Trajectory:
    """Synchronised joint move: every joint starts and stops together; the largest move sets the time."""
    check_limits(speed, "joint speed", MAX_JOINT_SPEED, "rad/s")
    check_limits(acceleration, "joint acceleration", MAX_JOINT_ACCELERATION, "rad/s^2")
    if q1.shape != (6,) or not np.all(np.isfinite(q1)):
        raise MotionError(ArmError.INVALID, "joint_positions must hold 6 finite angles (rad)")
    if not kin.within_limits(q1):
        raise MotionError(ArmError.UNREACHABLE, f"joint target {np.round(q1, 4).tolist()} rad is outside the "
                          f"joint limits {np.round(kin.lower, 4).tolist()}..{np.round(kin.upper, 4).tolist()}")
    delta = q1 - q0
    duration, t_acc, _ = trapezoid(float(np.max(np.abs(delta))), speed, acceleration)
    times = _times(duration)
    q = np.array([q0 + profile(duration, t_acc, float(t)) * delta for t in times])
    return Trajectory("joints", times, q)


def plan_linear(
    kin: ArmKinematics,
    q0: Vec,
    target_pos: Vec,
    target_rot: Vec,
    speed: float,
    acceleration: float,
    kind: str = "linear",
    min_height: float = MIN_TCP_HEIGHT,
) -> Trajectory:
    """Straight TCP line from FK(q0) to the target, orientation slerped along it; IK at every sample."""
    check_limits(speed, "linear speed", MAX_CONTACT_SPEED if kind == "contact" else MAX_LINEAR_SPEED, "m/s")
    check_limits(acceleration, "linear acceleration", MAX_LINEAR_ACCELERATION, "m/s^2")
    if float(target_pos[2]) < min_height - 1e-9:
        raise MotionError(ArmError.UNREACHABLE, f"target TCP height {float(target_pos[2]):.3f} m is below the "
                          f"lowest allowed {min_height:.3f} m (table top at z = 0)")
    if kin.solve(target_pos, target_rot, q0, max_iterations=300) is None:
        raise MotionError(ArmError.UNREACHABLE, f"no IK solution for the target TCP ({target_pos[0]:.3f}, "
                          f"{target_pos[1]:.3f}, {target_pos[2]:.3f}) m: outside the arm's reach")
    p0, r0 = kin.tcp(q0)
    dist = float(np.linalg.norm(target_pos - p0))
    angle = rotation_angle(r0, target_rot)
    d_lin = trapezoid(dist, speed, acceleration)
    d_ang = trapezoid(angle, TOOL_ANGULAR_SPEED, TOOL_ANGULAR_ACCELERATION)
    duration, t_acc, _ = max(d_lin, d_ang)
    times = _times(duration)
    qs = [q0]
    q = q0
    for t in times[1:]:
        u = profile(duration, t_acc, float(t))
        pos = p0 + u * (target_pos - p0)
        rot = interpolate_rotation(r0, target_rot, u)
        nxt = kin.solve(pos, rot, q, max_iterations=50)
        if nxt is None:
            raise MotionError(ArmError.UNREACHABLE, f"no IK solution at TCP ({pos[0]:.3f}, {pos[1]:.3f}, "
                              f"{pos[2]:.3f}) m on the way to the target: outside the arm's reach")
        jump = float(np.max(np.abs(nxt - q)))
        if jump > MAX_JOINT_STEP:
            raise MotionError(ArmError.UNREACHABLE, f"the straight line passes a singularity near TCP "
                              f"({pos[0]:.3f}, {pos[1]:.3f}, {pos[2]:.3f}) m (joint jump {jump:.2f} rad); "
                              "use a joint move")
        qs.append(nxt)
        q = nxt
    return Trajectory(kind, times, np.array(qs), stop_on_contact=kind == "contact")


def plan_until_contact(
    kin: ArmKinematics, q0: Vec, direction: Vec, speed: float, max_travel: float, acceleration: float
) -> Trajectory:
    """Straight TCP line along `direction` for up to `max_travel` m; the world stops it on contact."""
    norm = float(np.linalg.norm(direction))
    if not math.isfinite(norm) or norm < 1e-6:
        raise MotionError(ArmError.INVALID, "direction must be a non-zero vector")
    if not math.isfinite(max_travel) or not 0.0 < max_travel <= MAX_TRAVEL:
        raise MotionError(ArmError.INVALID, f"max_travel must be in (0, {MAX_TRAVEL:g}] m, got {max_travel:g}")
    p0, r0 = kin.tcp(q0)
    unit = direction / norm
    if unit[2] < -1e-9:  # never aim below MIN_CONTACT_HEIGHT: the table stops the tool first anyway
        max_travel = min(max_travel, (float(p0[2]) - MIN_CONTACT_HEIGHT) / -float(unit[2]))
        if max_travel <= 1e-4:
            raise MotionError(ArmError.UNREACHABLE, f"the TCP is at {float(p0[2]):.3f} m, already at the lowest "
                              f"height a move until contact may reach ({MIN_CONTACT_HEIGHT:.3f} m)")
    target = p0 + unit * max_travel
    return plan_linear(kin, q0, target, r0, speed, acceleration, kind="contact", min_height=MIN_CONTACT_HEIGHT)
