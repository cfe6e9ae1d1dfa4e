"""R2: random and adversarial motion targets through the safety layer, checked at the arm.

Platforms (limits from config/robots/<robot>.yaml, as the skills node reads them):
- sim: SafeArm (the sim's limits and forward kinematics) in front of a recording ArmPort, i.e. what
  RosSimArm would send to the simulator on arm/command;
- ur5e: SafeArm in front of RtdeArm on the fake ur_rtde (FakeUrController records every RTDE command);
- spot: SpotRobot (velocity, trajectory and arm limits in core.spot) on FakeSpot over gRPC.
Targets: uniform in a box three times the workspace, just outside and just inside every face, below
the table / minimum height, NaN / inf / 1e308 coordinates, speeds and accelerations at, just over and
far over the limits (NaN, inf, 0, negative), absurdly slow (5e-324, 1e-9, just under the minimum speed:
a motion that would never end), joint targets inside and outside the joint limits and joint paths through
the table, contact moves with bad directions and travels; Spot walk goals far from where it stands and
velocity commands of up to 1e9 s. Counted: motions that reached the arm outside the workspace / joint
limits, over a speed or acceleration limit, under a minimum speed, longer than the longest motion, with a
joint path leaving the workspace (checked at the arm every half JOINT_PATH_STEP, beyond PATH_TOLERANCE),
Spot goals beyond the distance limit and velocity commands beyond the duration limit (must be 0);
refusals without a reason (must be 0); errors other than a refusal (protective stops of the fake UR5e).

    python -m monologue_eval.reliability.r2_motion [--targets N]
"""
# ruff: noqa: E402
from __future__ import annotations

import logging
import math
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from monologue_common.core.settings import ParamReader, parameters_from_files
from skills_node.core.arm import (
    ArmError,
    ArmStatus,
    MotionRefused,
    RobotMode,
    SafetyMode,
    TcpPose,
    motion_duration,
)
from skills_node.core.arm_settings import read_limits
from skills_node.core.kinematics import forward_kinematics
from skills_node.core.safety import JOINT_PATH_STEP, SafeArm, SafetyLimits

from .common import CONFIG, Row, sampling_args

LOG = logging.getLogger("reliability.r2")
DOWN = (math.pi, 0.0, 0.0)  # rad, rotation vector: tool down
EPS = 1e-6  # m / (m/s): tolerance of the arm-side check (the layer allows POSITION_EPS = 1e-9 m)
# m: a joint path may leave the workspace between the layer's samples (JOINT_PATH_STEP apart) by this much
# before the arm-side check (twice as fine) counts a violation; smaller excursions are counted apart
PATH_TOLERANCE = 0.01


def robot_params(robot: str) -> dict[str, object]:
    return parameters_from_files([CONFIG / "monologue.yaml", CONFIG / "robots" / f"{robot}.yaml"], "skills")


def limits_of(robot: str) -> SafetyLimits:
    r = ParamReader(robot_params(robot), "skills")
    limits = read_limits(r)
    if limits is None:
        raise ValueError(f"config/robots/{robot}.yaml: {r.errors}")
    return limits


@dataclass
class Tally:
    targets: int = 0
    reached: int = 0  # motions that reached the arm
    refused: int = 0
    other_errors: int = 0  # ArmError that is not a refusal (a fault, e.g. the fake robot's)
    violations: int = 0  # motions at the arm outside a limit
    silent_refusals: int = 0  # refusals (or errors) without a reason
    path_excursions: int = 0  # joint paths outside the workspace by less than PATH_TOLERANCE (not violations)
    refusals: dict[str, int] = field(default_factory=dict)  # per Refusal value
    examples: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if len(self.examples) < 10:
            self.examples.append(text)


# ---------------------------------------------------------------------------------- targets --
SPECIAL = (math.nan, math.inf, -math.inf, 1e308, -1e308)


def rate(r: random.Random, limit: float, tiny: bool = True, low: float = 0.0) -> float:
    """A speed or acceleration: mostly valid, often at, just over or far over the limit, sometimes absurd;
    `tiny`: absurdly slow too (5e-324, 1e-9, just under the minimum `low`), which would never end."""
    k = r.randrange(11)
    if k < 4:
        return r.uniform(0.05, 1.0) * limit
    if k == 4:
        return limit
    if k == 5:
        return limit * (1.0 + r.choice((1e-9, 1e-6, 1e-3, 0.1)))
    if k == 6:
        return limit * r.uniform(2.0, 1000.0)
    if k == 7:
        return r.choice((0.0, -0.0, -limit, -1e-9))
    if k == 8 and tiny:
        return r.choice((5e-324, 1e-300, 1e-9, limit * 1e-6, low * (1.0 - 1e-9), low))
    return r.choice(SPECIAL + ((5e-324,) if tiny else ()))


def position(r: random.Random, lim: SafetyLimits) -> tuple[float, float, float]:
    lo, hi = lim.workspace_min, lim.workspace_max
    k = r.randrange(8)
    if k < 2:  # inside
        return (r.uniform(lo[0], hi[0]), r.uniform(lo[1], hi[1]), r.uniform(max(lo[2], lim.min_height), hi[2]))
    if k == 2:  # a box three times the workspace
        return tuple(r.uniform(a - (b - a), b + (b - a)) for a, b in zip(lo, hi))  # type: ignore[return-value]
    if k in (3, 4):  # just outside (or exactly on) a face
        p = [r.uniform(a, b) for a, b in zip(lo, hi)]
        axis = r.randrange(3)
        d = r.choice((0.0, 1e-10, 1e-8, 1e-6, 1e-3, 0.05))
        p[axis] = (lo[axis] - d) if r.random() < 0.5 else (hi[axis] + d)
        return (p[0], p[1], p[2])
    if k == 5:  # below the table / the minimum height
        return (r.uniform(lo[0], hi[0]), r.uniform(lo[1], hi[1]),
                r.choice((lim.min_height - 1e-6, lim.min_height - 0.01, -0.1, -1.0, -1e9)))
    if k == 6:
        p = [r.uniform(a, b) for a, b in zip(lo, hi)]
        p[r.randrange(3)] = r.choice(SPECIAL)
        return (p[0], p[1], p[2])
    return (r.choice(SPECIAL), r.uniform(-1e6, 1e6), r.choice((5.0, -5.0, 1e6)))


def joints(r: random.Random, lim: SafetyLimits) -> list[float]:
    k = r.randrange(5)
    if k < 2:
        return [r.uniform(a, b) for a, b in zip(lim.joint_min, lim.joint_max)]
    if k == 2:
        q = [r.uniform(a, b) for a, b in zip(lim.joint_min, lim.joint_max)]
        i = r.randrange(6)
        q[i] = lim.joint_max[i] + r.choice((1e-9, 1e-3, 1.0)) if r.random() < 0.5 else lim.joint_min[i] - 1e-3
        return q
    if k == 3:
        q = [r.uniform(a, b) for a, b in zip(lim.joint_min, lim.joint_max)]
        q[r.randrange(6)] = r.choice(SPECIAL)
        return q
    return [r.uniform(-1.0, 1.0) for _ in range(r.choice((0, 5, 7)))]  # wrong length


# ----------------------------------------------------------------------------- arm checks --
class RecordingArm:
    """An ArmPort that moves at once and records every command (what RosSimArm would send)."""

    def __init__(self, start: TcpPose, q: Sequence[float] = (0.0,) * 6) -> None:
        self.pose = start
        self.q = list(q)
        self.commands: list[tuple[str, tuple[Any, ...]]] = []

    def move_linear(self, pose: TcpPose, speed: float, acceleration: float) -> None:
        self.commands.append(("move_linear", (pose.as_list(), speed, acceleration)))
        self.pose = pose

    def move_joints(self, q: Sequence[float], speed: float, acceleration: float) -> None:
        self.commands.append(("move_joints", (list(q), speed, acceleration)))
        self.q = list(q)

    def move_until_contact(self, direction: tuple[float, float, float], speed: float, max_travel: float) -> bool:
        n = math.sqrt(sum(c * c for c in direction))
        end = [p + c / n * max_travel for p, c in zip(self.pose.position, direction)]
        self.commands.append(("move_until_contact", (end, speed, None)))
        self.pose = self.pose.with_position(end[0], end[1], end[2])
        return False

    def set_suction(self, on: bool) -> None:
        self.commands.append(("set_suction", (on,)))

    def holding(self) -> bool:
        return False

    def stop(self) -> None:
        self.commands.append(("stop", ()))

    def tcp_pose(self) -> TcpPose:
        return self.pose

    def joint_positions(self) -> list[float]:
        return list(self.q)

    def status(self) -> ArmStatus:
        return ArmStatus(int(RobotMode.RUNNING), int(SafetyMode.NORMAL), False, False, True)


def check_cartesian(lim: SafetyLimits, xyz: Sequence[float], speed: float | None, acc: float | None,
                    what: str, start: Sequence[float] | None = None) -> str:
    """'' if a motion that reached the arm is within the limits, else what it broke (`start`: the TCP
    before it, m, for its duration)."""
    if len(xyz) < 3 or not all(math.isfinite(v) for v in xyz[:3]):
        return f"{what}: non-finite target {list(xyz)}"
    for v, lo, hi, axis in zip(xyz, lim.workspace_min, lim.workspace_max, "xyz"):
        if not lo - EPS <= v <= hi + EPS:
            return f"{what}: {axis} = {v} m outside [{lo}, {hi}]"
    if xyz[2] < lim.min_height - EPS:
        return f"{what}: z = {xyz[2]} m below the minimum height {lim.min_height}"
    if speed is not None and not (lim.min_speed - EPS <= speed <= lim.max_speed + EPS):
        return f"{what}: speed {speed} m/s outside [{lim.min_speed}, {lim.max_speed}]"
    if acc is not None and not (0 < acc <= lim.max_acceleration + EPS):
        return f"{what}: acceleration {acc} m/s^2 over {lim.max_acceleration}"
    if start is not None and speed is not None:
        t = motion_duration(math.dist(start[:3], xyz[:3]), speed, acc if acc is not None else math.inf)
        if not t <= lim.max_motion_duration * (1 + EPS):
            return f"{what}: takes {t:.3g} s, longer than {lim.max_motion_duration} s"
    return ""


def check_joint_motion(lim: SafetyLimits, q: Sequence[float], speed: float, acc: float,
                       fk: Callable[[Sequence[float]], TcpPose] | None, start: Sequence[float] | None = None,
                       tally: Tally | None = None) -> str:
    """'' if a joint move that reached the arm is within the limits; from `start` (the joints before it)
    also its duration and its path, sampled twice as finely as the layer does."""
    if len(q) != 6 or not all(math.isfinite(v) for v in q):
        return f"joint target {list(q)}"
    for i, (v, lo, hi) in enumerate(zip(q, lim.joint_min, lim.joint_max)):
        if not lo <= v <= hi:
            return f"joint {i} = {v} rad outside [{lo}, {hi}]"
    if not (lim.min_joint_speed - EPS <= speed <= lim.max_joint_speed + EPS
            and 0 < acc <= lim.max_joint_acceleration + EPS):
        return f"joint speed {speed} rad/s / acceleration {acc} rad/s^2 outside the limits"
    if fk is not None:
        why = check_cartesian(lim, fk(q).position, None, None, "TCP at the joint target")
        if why:
            return why
    if start is None:
        return ""
    span = max(abs(b - a) for a, b in zip(start, q))
    t = motion_duration(span, speed, acc)
    if not t <= lim.max_motion_duration * (1 + EPS):
        return f"joint move takes {t:.3g} s, longer than {lim.max_motion_duration} s"
    if fk is None:
        return ""
    n = math.ceil(span / (JOINT_PATH_STEP / 2))
    worst = 0.0  # m outside the workspace / under the minimum height
    for i in range(1, n):
        p = fk([a + (b - a) * i / n for a, b in zip(start, q)]).position
        out = max([lo - v for v, lo in zip(p, lim.workspace_min)] + [v - hi for v, hi in zip(p, lim.workspace_max)]
                  + [lim.min_height - p[2]])
        worst = max(worst, out)
    if worst > PATH_TOLERANCE:
        return f"joint path leaves the workspace by {worst:.3f} m"
    if worst > EPS and tally is not None:
        tally.path_excursions += 1
    return ""


def drive_arm(safe: SafeArm, lim: SafetyLimits, n: int, seed: int, tally: Tally,
              reached: Callable[[], list[tuple[str, tuple[Any, ...]]]],
              fk: Callable[[Sequence[float]], TcpPose] | None, tiny: bool = True,
              state: Callable[[], tuple[list[float], list[float]]] | None = None) -> None:
    """`n` random targets through `safe`; `reached()` gives the motion commands the arm got since the last
    call, `state()` the TCP position (m) and joints (rad) the arm is at before each target."""
    r = random.Random(seed)
    lo, hi = lim.workspace_min, lim.workspace_max
    for _ in range(n):
        tally.targets += 1
        kind = r.randrange(6)
        mode = r.randrange(3)  # 0: every field adversarial; 1: one field adversarial; 2: all valid
        bad = {0: {"pos", "speed", "acc"}, 1: {r.choice(("pos", "speed", "acc"))}, 2: set()}[mode]
        tcp_before, q_before = state() if state is not None else (None, None)

        def speed(limit: float, bad: set[str] = bad) -> float:
            low = lim.min_speed if limit == lim.max_speed else lim.min_joint_speed
            return rate(r, limit, tiny, low) if "speed" in bad else r.uniform(0.05, 1.0) * limit

        def acc(limit: float, bad: set[str] = bad) -> float:
            return rate(r, limit, tiny) if "acc" in bad else r.uniform(0.05, 1.0) * limit

        try:
            if kind < 3:
                x, y, z = position(r, lim) if "pos" in bad else (
                    r.uniform(lo[0], hi[0]), r.uniform(lo[1], hi[1]), r.uniform(max(lo[2], lim.min_height), hi[2]))
                safe.move_linear(TcpPose(x, y, z, *DOWN), speed(lim.max_speed), acc(lim.max_acceleration))
            elif kind < 5:
                q = joints(r, lim) if "pos" in bad else [r.uniform(a, b) for a, b in zip(lim.joint_min, lim.joint_max)]
                safe.move_joints(q, speed(lim.max_joint_speed), acc(lim.max_joint_acceleration))
            else:
                direction = r.choice(((0.0, 0.0, -1.0), (1.0, 0.0, 0.0), (0.0, 0.0, 0.0), (math.nan, 0.0, -1.0),
                                      (r.gauss(0, 1), r.gauss(0, 1), r.gauss(0, 1))))
                travel = r.choice((0.01, 0.05, lim.max_contact_travel, lim.max_contact_travel * 1.01, 1.0, -0.1,
                                   math.nan, math.inf))
                safe.move_until_contact(direction, speed(lim.max_speed), travel)
        except MotionRefused as e:
            tally.refused += 1
            key = "joint path" if "on the way to the joint target" in e.reason else e.refusal.value
            tally.refusals[key] = tally.refusals.get(key, 0) + 1
            if not e.reason.strip():
                tally.silent_refusals += 1
        except ArmError as e:
            tally.other_errors += 1
            if not str(e).strip():
                tally.silent_refusals += 1
            tally.note(f"arm error: {e}")
        for name, args in reached():
            tally.reached += 1
            if name in ("move_linear", "moveL"):
                why = check_cartesian(lim, args[0], args[1], args[2], name, tcp_before)
            elif name in ("move_joints", "moveJ"):
                why = check_joint_motion(lim, args[0], args[1], args[2], fk, q_before, tally)
            elif name == "move_until_contact":
                why = check_cartesian(lim, args[0], args[1], None, name)
            else:
                continue
            if why:
                tally.violations += 1
                tally.note(why)


def run_sim(n: int, seed: int) -> Tally:
    lim = limits_of("sim")
    offset_values = robot_params("sim").get("arm.tcp_offset", [0.0] * 6)
    assert isinstance(offset_values, list)
    offset = TcpPose.from_list([float(v) for v in offset_values])

    def fk(q: Sequence[float]) -> TcpPose:
        return forward_kinematics(q, offset)

    home_values = robot_params("sim").get("arm.home_joints", [0.0] * 6)
    assert isinstance(home_values, list)
    home = [float(v) for v in home_values]
    arm = RecordingArm(fk(home), home)  # at the simulator's home pose, joints and TCP consistent
    safe = SafeArm(arm, lim, LOG, forward_kinematics=fk, approval_timeout_s=1.0)
    seen = [0]

    def reached() -> list[tuple[str, tuple[Any, ...]]]:
        new = arm.commands[seen[0]:]
        seen[0] = len(arm.commands)
        return new

    tally = Tally()
    drive_arm(safe, lim, n, seed, tally, reached, fk, state=lambda: (list(arm.pose.position), list(arm.q)))
    return tally


def run_ur5e(n: int, seed: int) -> Tally:
    from skills_node.robots.ur5e.core.rtde import EndEffectorIO, RtdeArm, RtdeArmConfig, UrPorts
    from skills_node.robots.ur5e.testing.fake_rtde import FakeUrController

    lim = limits_of("ur5e")
    offset = (0.0, 0.0, 0.16, 0.0, 0.0, 0.0)
    robot = FakeUrController(time_scale=1000.0, table_z=-0.5, objects=[])
    cfg = RtdeArmConfig(
        host="192.0.2.10", tcp_offset=offset, payload_mass=0.8, payload_cog=(0.0, 0.0, 0.06),
        end_effector=EndEffectorIO("tool", 0, active_high=True, sense_input=-1, sense_active_high=True),
        contact_force=5.0, contact_acceleration=0.5, stop_deceleration=2.0, probe=False, monitor_period_s=0.004,
        connect_timeout_s=1.0, command_timeout_s=1.0, stale_timeout_s=0.5, reconnect_period_s=0.0,
        motion_timeout_margin_s=2.0, ports=UrPorts(dashboard=29999, rtde=30004, script=30003))
    arm = RtdeArm(cfg, robot.factories(), LOG)
    arm.connect()
    arm.start_monitor()
    off = TcpPose.from_list(list(offset))

    def fk(q: Sequence[float]) -> TcpPose:
        return forward_kinematics(q, off)

    safe = SafeArm(arm, lim, LOG, forward_kinematics=fk, approval_timeout_s=1.0)
    seen = [len(robot.commands)]

    def reached() -> list[tuple[str, tuple[Any, ...]]]:
        new = robot.commands[seen[0]:]
        seen[0] = len(robot.commands)
        out = []
        for name, args in new:
            if name == "moveL":
                out.append(("moveL", (list(args[0])[:3], args[1], args[2])))
            elif name == "moveJ":
                out.append(("moveJ", (list(args[0]), args[1], args[2])))
        if robot.protective_stopped:  # (a joint move through the table, before its path was checked)
            robot.unlock_protective_stop()
        return out

    tally = Tally()

    def state() -> tuple[list[float], list[float]]:
        with robot._lock:  # the fake's state as the arm will start the next motion from it
            return list(robot.pose[:3]), list(robot.q)

    try:
        safe.move_linear(TcpPose(0.5, 0.0, 0.3, *DOWN), 0.25, 0.5)
        reached()
        drive_arm(safe, lim, n, seed, tally, reached, fk, state=state)
    finally:
        arm.close()
        robot.release()
    return tally


def run_spot(n: int, seed: int) -> Tally:
    from skills_node.robots.spot.core.robot import PASSWORD_ENV, USERNAME_ENV, SpotCredentials, SpotRobot, SpotSettings
    from skills_node.robots.spot.testing.fake_spot import FakeSpot, mobility_params

    p = robot_params("spot")
    lin, ang, reach, walk, move_s = (float(p[f"spot.{k}"]) for k in (  # type: ignore[arg-type]
        "max_linear_velocity", "max_angular_velocity", "max_arm_reach", "max_go_to_distance", "max_move_duration"))
    r = random.Random(seed)
    tally = Tally()
    with FakeSpot(username="operator", password="fake-password", motion_duration_s=0.005) as fake:
        settings = SpotSettings(
            hostname="127.0.0.1", port=fake.port, client_name="reliability", ca_cert_path=str(fake.ca_cert_path),
            rpc_timeout_s=2.0, connect_timeout_s=5.0, command_timeout_s=5.0, feedback_period_s=0.01,
            take_lease=False, lease_check_period_s=0.5, estop_timeout_s=5.0, max_linear_velocity=lin,
            max_angular_velocity=ang, max_arm_reach=reach, max_go_to_distance=walk, max_move_duration=move_s)
        creds = SpotCredentials.from_env({USERNAME_ENV: "operator", PASSWORD_ENV: "fake-password"})
        robot = SpotRobot(settings, creds, LOG)
        robot.connect()
        try:
            robot.power_on()
            robot.stand()
            seen = len(fake.commands())

            def v(limit: float) -> float:
                return rate(r, limit) * r.choice((1.0, -1.0))

            def distance() -> float:  # m from where Spot stands: near, at, just over and far over the limit
                return r.choice((0.5, 2.0, walk * 0.99, walk, walk * (1 + 1e-9), walk * 1.5, 1e3, 1e300))

            for _ in range(n):
                tally.targets += 1
                kind = r.randrange(4)
                body = fake.body_pose  # odom, before the command
                t_sent = fake.robot_time_s()
                try:
                    if kind == 0:
                        robot.move(v(lin), v(lin), v(ang), r.choice((0.01, 0.02, 0.0, -1.0, math.nan, math.inf,
                                                                     move_s * (1 + 1e-9), move_s * 2, 1e9)))
                    elif kind == 1:
                        heading = r.uniform(-math.pi, math.pi)
                        d = distance()
                        x, y = (d * math.cos(heading), d * math.sin(heading)) if r.random() < 0.8 else \
                            (r.choice(SPECIAL), r.uniform(-2, 2))
                        robot.go_to(x, y, r.uniform(-3, 3), r.choice((2.0, 2.0, 0.0, math.nan)))
                    elif kind == 2:
                        heading, d = r.uniform(-math.pi, math.pi), distance()
                        robot.go_to_odom(body[0] + d * math.cos(heading), body[1] + d * math.sin(heading),
                                         r.uniform(-3, 3), r.choice((2.0, 2.0, 0.0, math.inf)))
                    else:
                        d = r.choice((0.3, 0.8, reach, reach + 1e-6, reach * 1.5, 10.0))
                        u = [r.gauss(0, 1) for _ in range(3)]
                        norm = math.sqrt(sum(c * c for c in u)) or 1.0
                        xyz = [c / norm * d for c in u]
                        if r.random() < 0.15:
                            xyz[r.randrange(3)] = r.choice(SPECIAL)
                        robot.arm_reach(xyz[0], xyz[1], xyz[2], r.choice((2.0, 0.0, math.inf)))
                except MotionRefused as e:
                    tally.refused += 1
                    tally.refusals[e.refusal.value] = tally.refusals.get(e.refusal.value, 0) + 1
                    if not e.reason.strip():
                        tally.silent_refusals += 1
                except ArmError as e:
                    tally.other_errors += 1
                    tally.note(f"spot error: {e}")
                cmds = fake.commands()
                for name, request in cmds[seen:]:
                    tally.reached += 1
                    sync = request.command.synchronized_command
                    why = ""
                    if name in ("velocity", "trajectory"):
                        params = mobility_params(request)
                        if params is None:
                            why = f"{name} without velocity limits"
                        else:
                            mx = params.vel_limit.max_vel
                            if mx.linear.x > lin + EPS or mx.linear.y > lin + EPS or mx.angular > ang + EPS:
                                why = f"{name} with velocity limits over the configured ones"
                    if name == "velocity":
                        req = sync.mobility_command.se2_velocity_request
                        vel = req.velocity
                        if max(abs(vel.linear.x), abs(vel.linear.y)) > lin + EPS or abs(vel.angular) > ang + EPS:
                            why = f"velocity ({vel.linear.x}, {vel.linear.y}, {vel.angular}) over the limits"
                        lasts = req.end_time.ToNanoseconds() / 1e9 - t_sent  # s, robot clock
                        if not lasts <= move_s + 0.5:  # 0.5 s: from t_sent to the command's own clock reading
                            why = f"velocity command of {lasts:.3g} s, longer than {move_s} s"
                    if name == "trajectory":
                        traj = sync.mobility_command.se2_trajectory_request
                        goal = traj.trajectory.points[-1].pose.position
                        odom = traj.se2_frame_name == "odom"
                        dist = math.hypot(goal.x - body[0], goal.y - body[1]) if odom else math.hypot(goal.x, goal.y)
                        if not dist <= walk + EPS:
                            why = f"walk goal {dist:.3g} m away, beyond {walk} m"
                    if name == "arm_pose":
                        pt = sync.arm_command.arm_cartesian_command.pose_trajectory_in_task.points[0].pose.position
                        dist = math.sqrt(pt.x ** 2 + pt.y ** 2 + pt.z ** 2)
                        if not dist <= reach + EPS:
                            why = f"arm target {dist} m beyond the reach {reach} m"
                    if why:
                        tally.violations += 1
                        tally.note(why)
                seen = len(cmds)
        finally:
            robot.close()
    return tally


PLATFORMS: dict[str, Callable[[int, int], Tally]] = {"sim": run_sim, "ur5e": run_ur5e, "spot": run_spot}
SHARES = {"sim": 0.4, "ur5e": 0.4, "spot": 0.2}


def measure(total: int, seed: int = 0) -> dict[str, Tally]:
    return {name: fn(max(1, int(total * SHARES[name])), seed) for name, fn in PLATFORMS.items()}


def row(short: bool = False, seed: int = 0) -> Row:
    t0 = time.monotonic()
    tallies = measure(500 if short else 10_000, seed)
    wall = time.monotonic() - t0
    violations = sum(t.violations for t in tallies.values())
    silent = sum(t.silent_refusals for t in tallies.values())
    targets = sum(t.targets for t in tallies.values())
    measured = (f"{targets} targets ({', '.join(f'{k} {t.targets}' for k, t in tallies.items())}): {violations} "
                f"reached the arm outside a limit, {silent} refusals without a reason; "
                f"{sum(t.refused for t in tallies.values())} refused, {sum(t.reached for t in tallies.values())} "
                "motions sent")
    details = "; ".join(f"{k}: {t.refused} refused ({describe_refusals(t)}), {t.reached} sent, "
                        f"{t.other_errors} faults, {t.path_excursions} joint paths outside by < {PATH_TOLERANCE} m"
                        + (f" ({t.examples[0]})" if t.examples else "") for k, t in tallies.items())
    return Row("R2", "random / adversarial motion targets (sim, fake RTDE, fake Spot)",
               "0 outside limits, 0 silent refusals", measured, violations == 0 and silent == 0, wall, details)


def describe_refusals(t: Tally) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(t.refusals.items(), key=lambda kv: -kv[1]))


def main() -> None:
    a = sampling_args(__doc__ or "", "targets", 10_000, "one platform: sim | ur5e | spot")
    for name, fn in PLATFORMS.items():
        if a.only and name != a.only:
            continue
        t0 = time.monotonic()
        t = fn(max(1, int(a.targets * SHARES[name])), a.seed)
        print(f"{name}: {t.targets} targets, {t.reached} sent, {t.refused} refused ({describe_refusals(t)}), "
              f"{t.other_errors} faults, {t.violations} violations, {t.silent_refusals} silent refusals, "
              f"{t.path_excursions} joint paths outside by < {PATH_TOLERANCE} m in {time.monotonic() - t0:.1f} s")
        for e in t.examples:
            print("   ", e)
    _ = threading


if __name__ == "__main__":
    main()
