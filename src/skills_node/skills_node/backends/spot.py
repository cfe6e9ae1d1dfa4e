"""Backend `spot`: Boston Dynamics Spot through bosdyn-client (core/spot.py `SpotRobot`), navigation skills.

Skills (GetAffordances names; texts in config/prompts/saycan.yaml and im_kitchen.yaml): `go_to(location)`
("go to the <location>"), `stand()`, `sit()`; `done` is the planner's. A skill runs only if it is in
`spot.skills` (the allow-list).

`go_to` walks to a named location of `spot.location_names` (`spot.location_poses`: x, y m, yaw rad,
in the frame of the start pose: where Spot stands when the node starts, at `spot.start_location`).
A name that is not configured is refused (INVALID_ARGUMENTS), and so is a location outside the
rectangular geofence `spot.geofence_min/max` (OUT_OF_LIMITS), before anything moves. Spot has no map
here: the backend keeps the pose it last reached (dead reckoning on the configured poses) and sends the
difference as a body-frame SE2 trajectory (`SpotRobot.go_to`). After a go_to that did not finish, the
pose is unknown and `go_to` is refused until the node restarts at the start location (GraphNav
localisation is issue 13's next step). `go_to` stands first
(and powers on) when Spot is sitting; `stand` powers on when the motors are off.

Affordances: 0 for every skill when Spot cannot move (not connected, e-stopped, behaviour fault, lease not
held, our software e-stop latched); `spot.affordance.reached` for a skill whose effect already holds (the
location reached, already standing / sitting); `spot.affordance.available` otherwise.

Parameters (config/robots/spot.yaml, block `spot.*` and `status_rate`). Credentials come only from the
environment (BOSDYN_CLIENT_USERNAME / BOSDYN_CLIENT_PASSWORD). ROS wiring (robot/status, `estop`,
`estop_reset`): skills_node.spot_ros. Bring-up: docs/spot.md.
"""
from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from monologue_common.core.settings import ParamReader
from monologue_domain.objects import ObjectState
from monologue_domain.skills import Affordance, SkillError, SkillOutcome, SkillState

from ..core.arm import FaultKind, MotionInterrupted, MotionRefused
from ..core.backend import FeedbackFn
from . import BackendHandle, BackendHost, BackendPlugin

SKILLS = ("go_to", "stand", "sit")
SKILL_ARGS = {"go_to": 1, "stand": 0, "sit": 0}

Pose2 = tuple[float, float, float]  # x m, y m, yaw rad


@dataclass(frozen=True)
class SpotSkillSettings:
    """What the skills add to the connection: locations, geofence, allow-list, affordances."""

    skills: tuple[str, ...]  # allow-list, a subset of SKILLS
    locations: dict[str, Pose2]  # name -> (x m, y m, yaw rad) in the start frame
    start_location: str  # where Spot stands when the node starts (one of locations)
    geofence_min: tuple[float, float]  # m, x and y, start frame
    geofence_max: tuple[float, float]  # m
    go_to_time_margin: float  # s added to distance / max speed + turn / max yaw rate for a go_to's time limit
    available_affordance: float  # [0, 1], an admissible skill
    reached_affordance: float  # [0, 1], a skill whose effect already holds

    def inside(self, pose: Pose2) -> bool:
        return all(lo <= v <= hi for v, lo, hi in zip(pose[:2], self.geofence_min, self.geofence_max, strict=True))


@dataclass(frozen=True)
class SpotBackendSettings:
    robot: object  # core.spot.SpotSettings (typed loosely so that reading needs no bosdyn import)
    skills: SpotSkillSettings
    power_on_at_start: bool  # power the motors on after connecting (and after an e-stop reset)
    stand_at_start: bool  # stand after powering on (needs power_on_at_start)
    status_rate: float  # Hz, robot/status (also sent on every change)


def read(r: ParamReader) -> SpotBackendSettings | None:
    from ..core.spot import SpotSettings

    def positive(name: str) -> float:
        return r.number(f"spot.{name}", low=0.0, low_open=True)

    robot_values = dict(
        hostname=r.string("spot.hostname", nonempty=True),
        port=r.integer("spot.port", low=1, high=65535),
        client_name=r.string("spot.client_name", nonempty=True),
        ca_cert_path=r.string("spot.ca_cert_path"),
        rpc_timeout_s=positive("rpc_timeout"), connect_timeout_s=positive("connect_timeout"),
        command_timeout_s=positive("command_timeout"), feedback_period_s=positive("feedback_period"),
        take_lease=r.boolean("spot.take_lease"), lease_check_period_s=positive("lease_check_period"),
        estop_timeout_s=positive("estop_timeout"),
        max_linear_velocity=positive("max_linear_velocity"), max_angular_velocity=positive("max_angular_velocity"),
    )
    skills = r.strings("spot.skills")
    unknown = [s for s in skills if s not in SKILLS]
    r.check(not unknown, f"spot.skills: unknown skills {unknown}; known: {list(SKILLS)}")
    names = r.strings("spot.location_names")
    r.check(bool(names), "spot.location_names: name at least one location")
    r.check(len(set(names)) == len(names), f"spot.location_names: duplicates in {list(names)}")
    poses = r.numbers("spot.location_poses")  # x m, y m, yaw rad per name, in the order of location_names
    r.check(len(poses) == 3 * len(names), f"spot.location_poses: 3 numbers (x m, y m, yaw rad) per location "
            f"of spot.location_names ({len(names)}), got {len(poses)}")
    locations: dict[str, Pose2] = {}
    if len(poses) == 3 * len(names):
        locations = {n: (poses[3 * i], poses[3 * i + 1], poses[3 * i + 2]) for i, n in enumerate(names)}
    start = r.string("spot.start_location", nonempty=True)
    r.check(not start or start in names, f"spot.start_location: {start!r} is not one of {list(names)}")
    gmin, gmax = r.numbers("spot.geofence_min", 2), r.numbers("spot.geofence_max", 2)  # m
    r.check(len(gmin) != 2 or len(gmax) != 2 or all(a < b for a, b in zip(gmin, gmax, strict=True)),
            f"spot.geofence_min {list(gmin)} must be below spot.geofence_max {list(gmax)}")
    margin = r.number("spot.go_to_time_margin", low=0.0)
    available = r.number("spot.affordance.available", low=0.0, high=1.0)
    reached = r.number("spot.affordance.reached", low=0.0, high=1.0)
    power_on = r.boolean("spot.power_on_at_start")
    stand = r.boolean("spot.stand_at_start")
    r.check(power_on or not stand, "spot.stand_at_start needs spot.power_on_at_start")
    rate = r.number("status_rate", low=0.0, high=1000.0, low_open=True)
    if r.errors:
        return None
    fence = SpotSkillSettings(skills, locations, start, (gmin[0], gmin[1]), (gmax[0], gmax[1]), margin,
                              available, reached)
    outside = [n for n, p in locations.items() if not fence.inside(p)]
    r.check(not outside, f"spot.locations: {outside} outside the geofence {list(gmin)}..{list(gmax)} m")
    try:
        robot = SpotSettings(**robot_values)  # type: ignore[arg-type]
    except ValueError as e:
        r.check(False, f"spot: {e}")
        return None
    if r.errors:
        return None
    return SpotBackendSettings(robot, fence, power_on, stand, rate)


class SpotPort(Protocol):
    """What the skills need of core.spot.SpotRobot (a fake in unit tests needs no more)."""

    def status(self) -> _Status: ...

    def power_on(self) -> None: ...

    def stand(self, cancel: threading.Event | None = None) -> None: ...

    def sit(self, cancel: threading.Event | None = None) -> None: ...

    def go_to(self, x: float, y: float, yaw: float, timeout_s: float,
              cancel: threading.Event | None = None) -> None: ...

    @property
    def cfg(self) -> _Limits: ...


class _Status(Protocol):
    @property
    def connected(self) -> bool: ...

    @property
    def estopped(self) -> bool: ...

    @property
    def behavior_faults(self) -> tuple[str, ...]: ...

    @property
    def powered(self) -> bool: ...

    @property
    def standing(self) -> bool: ...

    @property
    def lease_held(self) -> bool: ...


class _Limits(Protocol):
    @property
    def max_linear_velocity(self) -> float: ...  # m/s

    @property
    def max_angular_velocity(self) -> float: ...  # rad/s


def wrap(angle: float) -> float:
    """An angle in (-pi, pi] rad."""
    return math.atan2(math.sin(angle), math.cos(angle))


def relative(frm: Pose2, to: Pose2) -> Pose2:
    """`to` in the body frame of `frm` (both in the start frame): x, y m and yaw rad."""
    dx, dy = to[0] - frm[0], to[1] - frm[1]
    c, s = math.cos(frm[2]), math.sin(frm[2])
    return (c * dx + s * dy, -s * dx + c * dy, wrap(to[2] - frm[2]))


class SpotSkillBackend:
    """The SkillBackend of Spot: go_to / stand / sit on a SpotPort, one skill at a time (ROS-free).

    `estop_latched` (set by the ROS bridge from the `estop` topic) refuses every skill with ESTOP_ACTIVE."""

    def __init__(self, spot: SpotPort, s: SpotSkillSettings, logger: logging.Logger,
                 on_change: Callable[[], None] | None = None) -> None:
        self._spot = spot
        self._s = s
        self._log = logger
        self._on_change = on_change
        self._busy = threading.Lock()
        self._pose: Pose2 | None = s.locations[s.start_location]  # start frame; None = unknown
        self._at: str | None = s.start_location  # the named location reached last
        self.estop_latched = False
        self.estop_reason = ""

    @property
    def location(self) -> str | None:
        """The location Spot stands at, or None (between locations, or unknown after a failure)."""
        return self._at

    def skill_names(self) -> Sequence[str]:
        return tuple(s for s in SKILLS if s in self._s.skills)

    def objects(self) -> list[str]:
        return []  # no object perception on Spot yet

    def locations(self) -> list[str]:
        return list(self._s.locations)

    def ground_truth(self) -> list[ObjectState] | None:
        return None

    def _usable(self, st: _Status) -> bool:
        return (st.connected and not st.estopped and not st.behavior_faults and st.lease_held
                and not self.estop_latched)

    def affordances(self, include_unaffordable: bool = False) -> list[Affordance]:
        st = self._spot.status()
        usable = self._usable(st)
        avail, reached = self._s.available_affordance, self._s.reached_affordance
        out: list[Affordance] = []
        if "go_to" in self._s.skills:
            for name in self._s.locations:
                value = 0.0 if not usable or self._pose is None else reached if name == self._at else avail
                out.append(Affordance("go_to", (name,), value))
        if "stand" in self._s.skills:
            out.append(Affordance("stand", (), 0.0 if not usable else reached if st.standing else avail))
        if "sit" in self._s.skills:
            out.append(Affordance("sit", (), 0.0 if not usable else avail if st.standing else reached))
        return out if include_unaffordable else [a for a in out if a.affordance > 0.0]

    def execute(self, skill: str, args: Sequence[str], feedback: FeedbackFn,
                cancel: threading.Event) -> SkillOutcome:
        start = time.monotonic()

        def result(error: SkillError, message: str, pre: str = "") -> SkillOutcome:
            return SkillOutcome(error, message, pre, time.monotonic() - start)

        if skill not in SKILLS or skill not in self._s.skills:
            return result(SkillError.UNKNOWN_SKILL, f"unknown or not allowed skill {skill!r}; "
                          f"allowed: {list(self.skill_names())}")
        if len(args) != SKILL_ARGS[skill]:
            return result(SkillError.INVALID_ARGUMENTS,
                          f"{skill} takes {SKILL_ARGS[skill]} arguments, got {list(args)}")
        target: Pose2 | None = None
        if skill == "go_to":
            name = args[0]
            if name not in self._s.locations:
                return result(SkillError.INVALID_ARGUMENTS, f"no location {name!r}; known: {self.locations()}")
            target = self._s.locations[name]
            if not self._s.inside(target):
                return result(SkillError.OUT_OF_LIMITS, f"the {name} at {target[:2]} m is outside the geofence "
                              f"{self._s.geofence_min}..{self._s.geofence_max} m")
            if self._pose is None:
                return result(SkillError.PRECONDITION_FAILED, f"I do not know where I am, so I cannot go to the {name}",
                              "position unknown after an interrupted go to: restart at the start location")
        if self.estop_latched:
            return result(SkillError.ESTOP_ACTIVE, f"the software e-stop is latched ({self.estop_reason})")
        if not self._busy.acquire(blocking=False):
            return result(SkillError.BUSY, "another skill is running")
        try:
            return result(*self._run(skill, args, target, feedback, cancel))
        finally:
            self._busy.release()
            if self._on_change is not None:
                self._on_change()

    def _run(self, skill: str, args: Sequence[str], target: Pose2 | None, feedback: FeedbackFn,
             cancel: threading.Event) -> tuple[SkillError, str]:
        spot = self._spot
        try:
            if skill == "sit":
                feedback(SkillState.MOVING_TO_PLACE, "sitting down")
                spot.sit(cancel)
                return SkillError.NONE, "sitting"
            if skill == "stand" or not spot.status().standing:
                if not spot.status().powered:
                    feedback(SkillState.MOVING_TO_PICK, "powering the motors on")
                    spot.power_on()
                feedback(SkillState.MOVING_TO_PICK, "standing up")
                spot.stand(cancel)
                if skill == "stand":
                    return SkillError.NONE, "standing"
            assert target is not None and self._pose is not None
            name = args[0]
            x, y, yaw = relative(self._pose, target)
            lim = spot.cfg
            limit = (math.hypot(x, y) / lim.max_linear_velocity + abs(yaw) / lim.max_angular_velocity
                     + self._s.go_to_time_margin)
            feedback(SkillState.MOVING_TO_PLACE, f"walking to the {name} ({x:.2f}, {y:.2f}) m, {yaw:.2f} rad")
            self._pose, self._at = None, None  # unknown until the trajectory reports the goal
            spot.go_to(x, y, yaw, limit, cancel)
            self._pose, self._at = target, name
            feedback(SkillState.DONE, f"at the {name}")
            self._log.info("go_to(%s): reached", name)
            return SkillError.NONE, f"reached the {name}"
        except MotionInterrupted as e:
            return SkillError.CANCELED, f"{e}; Spot was stopped"
        except MotionRefused as e:
            return SkillError.OUT_OF_LIMITS, str(e)
        except Exception as e:  # SpotFault (an ArmFault) and anything the SDK raised
            kind = getattr(e, "kind", None)
            if self.estop_latched:
                return SkillError.ESTOP_ACTIVE, f"{skill} stopped by the software e-stop ({self.estop_reason}): {e}"
            if kind == FaultKind.TIMEOUT:
                return SkillError.TIMEOUT, str(e)
            self._log.error("%s(%s): %s", skill, ", ".join(args), e)
            return SkillError.ROBOT_FAULT, str(e)


def create(host: BackendHost, s: SpotBackendSettings) -> BackendHandle:
    from ..core.spot import SpotCredentials, SpotFault, SpotRobot, SpotSettings
    from ..spot_ros import SpotRosBridge

    log = host.logger("skills.spot")
    assert isinstance(s.robot, SpotSettings)
    bridges: list[SpotRosBridge] = []  # the fault callback may fire before the bridge exists

    def on_fault(_fault: SpotFault) -> None:
        if bridges:
            bridges[0].publish_status()

    robot = SpotRobot(s.robot, SpotCredentials.from_env(), log, on_fault=on_fault)
    robot.connect()  # raises SpotFault (nothing left held) when Spot cannot be reached: the node exits
    try:
        backend = SpotSkillBackend(robot, s.skills, log)
        bridge = SpotRosBridge(host.node, log, robot, backend, s, host.frame_id)
        bridges.append(bridge)
        bridge.start_posture()
    except BaseException:
        robot.close()
        raise

    def close() -> None:
        try:
            bridge.close()
        finally:
            robot.close()

    return BackendHandle(backend, close)


PLUGIN = BackendPlugin("spot", read, create, "Boston Dynamics Spot through bosdyn-client (navigation skills)")
