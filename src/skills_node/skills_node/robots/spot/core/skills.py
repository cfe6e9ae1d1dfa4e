"""SayCan's kitchen skills on Spot (SC §3.4, IM §4.3, CAPE §2), ROS-free: the skill logic of backend `spot`
over a `SpotPort` (what it needs of core.robot.SpotRobot) and a `SceneBuffer` (perception's scene description).

Skills (names and arguments as sim_kitchen's, config/prompts/saycan.yaml and im_kitchen.yaml): find(object),
go_to(location), pick_up(object), put_down(object), bring_to_user(), open_drawer(drawer),
close_drawer(drawer), put_in_drawer(object, drawer), plus stand(), sit(); `done` is the planner's.

Frames (m, rad): `odom` is Spot's odometry frame; the *kitchen frame* is the frame of the configured
location poses, fixed to odom when the backend starts (Spot stands at `start_location` then):
odom_T_kitchen = odom_T_body(start) * inverse(kitchen_T_start). Perception runs with base_frame `odom`, so
scene positions are odom positions.

Belief (a monologue_domain KitchenState, rebuilt for every affordance query and skill): the robot's location
is the configured location within `arrive_tolerance` of its odometry pose (or the GraphNav waypoint it is
localized at), the held object comes from `holding()` and the last pick, objects' locations from perception's
scene (each object belongs to the location whose pose is nearest, within `object_radius`) unless a skill of
ours placed it since (put down, put in a drawer), drawers are open or closed as last commanded. Preconditions
and affordances are those of the kitchen world (monologue_domain.kitchen.world.KitchenWorld.check) on that
belief, so a failed precondition gives PRECONDITION_FAILED with the kitchen's line
"<proposition>: I cannot <skill> because <reason>" exactly as on sim_kitchen, and SayCan's scoring works
the same. Spot-only refinements: between two locations (after an interrupted walk) nothing that needs
nearness is admissible (`not_near`); `find` of an object perception has not seen scans `search_locations`.

Safety: the allow-list `skills`, a geofence (rectangle in the kitchen frame) checked for every walk target,
velocity limits (SpotRobot's mobility params), an optional approval gate before anything moves, cancel ->
stop (SpotRobot sends it and raises MotionInterrupted) -> CANCELED. A walk that did not finish leaves Spot
somewhere: the next skill reads the pose from odometry again (no restart needed).
"""
from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from monologue_domain.kitchen.skills import SKILLS as KITCHEN_SKILLS
from monologue_domain.kitchen.skills import PreconditionError, skill_text
from monologue_domain.kitchen.state import HELD, KitchenState
from monologue_domain.kitchen.vocabulary import object_type
from monologue_domain.kitchen.world import DRAWERS_LOCATION, LOCATIONS, USER, KitchenWorld
from monologue_domain.scene import SceneObject
from monologue_domain.skills import Affordance, SkillError, SkillOutcome, SkillState
from skills_node.core.arm import FaultKind, MotionInterrupted, MotionRefused
from skills_node.core.backend import FeedbackFn
from skills_node.core.safety import Approval, ApprovalGate

Pose2 = tuple[float, float, float]  # x m, y m, yaw rad
Vec3 = tuple[float, float, float]  # m
Quat = tuple[float, float, float, float]  # x, y, z, w
Pose3 = tuple[Vec3, Quat]

POSTURE_SKILLS = ("stand", "sit")
SKILLS: tuple[str, ...] = (*KITCHEN_SKILLS, *POSTURE_SKILLS)
SKILL_ARGS: dict[str, int] = {**{k: v[0] for k, v in KITCHEN_SKILLS.items()}, "stand": 0, "sit": 0}
UNKNOWN_HELD = "object"  # the name of a held thing no pick of ours explains (the gripper reports holding)
NEEDS_NEARNESS = ("pick_up", "open_drawer", "close_drawer", "put_in_drawer")


# ---- geometry -----------------------------------------------------------------------------------

def wrap(angle: float) -> float:
    """An angle in (-pi, pi] rad."""
    return math.atan2(math.sin(angle), math.cos(angle))


def compose(a: Pose2, b: Pose2) -> Pose2:
    """a * b: `b` (given in frame a) in a's parent frame."""
    c, s = math.cos(a[2]), math.sin(a[2])
    return (a[0] + c * b[0] - s * b[1], a[1] + s * b[0] + c * b[1], wrap(a[2] + b[2]))


def inverse(a: Pose2) -> Pose2:
    c, s = math.cos(a[2]), math.sin(a[2])
    return (-c * a[0] - s * a[1], s * a[0] - c * a[1], wrap(-a[2]))


def relative(frm: Pose2, to: Pose2) -> Pose2:
    """`to` in the body frame of `frm` (both in one frame): x, y m and yaw rad."""
    return compose(inverse(frm), to)


def rotate(q: Quat, v: Vec3) -> Vec3:
    """Rotate `v` by the unit quaternion `q` (x, y, z, w)."""
    x, y, z, w = q
    # v + 2 w (u x v) + 2 u x (u x v), u = (x, y, z)
    cx, cy, cz = y * v[2] - z * v[1], z * v[0] - x * v[2], x * v[1] - y * v[0]
    ddx, ddy, ddz = y * cz - z * cy, z * cx - x * cz, x * cy - y * cx
    return (v[0] + 2 * (w * cx + ddx), v[1] + 2 * (w * cy + ddy), v[2] + 2 * (w * cz + ddz))


def quat_mul(a: Quat, b: Quat) -> Quat:
    """Hamilton product a * b (x, y, z, w)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz)


def compose3(a: Pose3, b: Pose3) -> Pose3:
    """a * b for 3D poses (translation m, unit quaternion)."""
    t = rotate(a[1], b[0])
    return ((a[0][0] + t[0], a[0][1] + t[1], a[0][2] + t[2]), quat_mul(a[1], b[1]))


def invert3(a: Pose3) -> Pose3:
    qi: Quat = (-a[1][0], -a[1][1], -a[1][2], a[1][3])
    t = rotate(qi, a[0])
    return ((-t[0], -t[1], -t[2]), qi)


def point_in(frame: Pose3, p: Vec3) -> Vec3:
    """`p` (in the parent frame of `frame`) expressed in `frame` (frame = parent_T_frame)."""
    (tx, ty, tz), (qx, qy, qz, qw) = frame
    return rotate((-qx, -qy, -qz, qw), (p[0] - tx, p[1] - ty, p[2] - tz))


class ImageLike(Protocol):
    """What the skills read of a core.robot.SpotImage."""

    @property
    def source(self) -> str: ...
    @property
    def encoding(self) -> str: ...
    @property
    def width(self) -> int: ...
    @property
    def height(self) -> int: ...
    @property
    def fx(self) -> float: ...
    @property
    def fy(self) -> float: ...
    @property
    def cx(self) -> float: ...
    @property
    def cy(self) -> float: ...
    @property
    def odom_from_sensor(self) -> Pose3: ...
    @property
    def odom_from_body(self) -> Pose3: ...


def project(image: ImageLike, p_odom: Vec3) -> tuple[float, float] | None:
    """Pixel (u, v) of the odom point `p_odom` in `image` (pinhole, camera looking along +z of its optical
    sensor frame), or None when it is behind the camera or outside the image."""
    x, y, z = point_in(image.odom_from_sensor, p_odom)
    if z <= 1e-3:
        return None
    u, v = image.fx * x / z + image.cx, image.fy * y / z + image.cy
    if not (0.0 <= u < image.width and 0.0 <= v < image.height):
        return None
    return (u, v)


# ---- ports --------------------------------------------------------------------------------------

class StatusLike(Protocol):
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


class LimitsLike(Protocol):
    @property
    def max_linear_velocity(self) -> float: ...  # m/s
    @property
    def max_angular_velocity(self) -> float: ...  # rad/s


Cancel = threading.Event | None


class SpotPort(Protocol):
    """What the kitchen skills need of core.robot.SpotRobot (names as the Spot contract)."""

    @property
    def cfg(self) -> LimitsLike: ...
    def status(self) -> StatusLike: ...
    def power_on(self) -> None: ...
    def stand(self, cancel: Cancel = None) -> None: ...
    def sit(self, cancel: Cancel = None) -> None: ...
    def body_pose(self) -> Pose2: ...
    def go_to_odom(self, x: float, y: float, yaw: float, timeout_s: float, cancel: Cancel = None) -> None: ...
    def navigate_to_waypoint(self, waypoint_id: str, timeout_s: float, cancel: Cancel = None) -> None: ...
    def graph_nav_waypoint(self) -> str: ...
    def get_images(self, sources: Sequence[str]) -> Sequence[Any]: ...
    def pick_in_image(self, image: Any, pixel: tuple[float, float], timeout_s: float,
                      cancel: Cancel = None) -> None: ...
    def holding(self) -> bool: ...
    def arm_stow(self, timeout_s: float, cancel: Cancel = None) -> None: ...
    def arm_carry(self, timeout_s: float, cancel: Cancel = None) -> None: ...
    def gripper_open(self, timeout_s: float, cancel: Cancel = None) -> None: ...
    def arm_reach(self, x: float, y: float, z: float, timeout_s: float, cancel: Cancel = None) -> None: ...


@dataclass(frozen=True)
class SceneSnapshot:
    objects: tuple[SceneObject, ...]  # positions in odom, m
    received_s: float  # time.monotonic() when it arrived


class SceneBuffer:
    """The newest scene description from perception (thread-safe); `wait_newer` waits for one that
    arrived after a given time (a look after arriving somewhere)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._latest = SceneSnapshot((), -math.inf)

    def update(self, objects: Sequence[SceneObject], received_s: float | None = None) -> None:
        with self._cond:
            self._latest = SceneSnapshot(tuple(objects), time.monotonic() if received_s is None else received_s)
            self._cond.notify_all()

    def latest(self) -> SceneSnapshot:
        with self._cond:
            return self._latest

    def wait_newer(self, after_s: float, timeout_s: float, cancel: Cancel = None) -> SceneSnapshot | None:
        """The first scene received after `after_s` (monotonic s), within `timeout_s`; None if none came
        (or `cancel` was set)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._latest.received_s <= after_s:
                left = deadline - time.monotonic()
                if left <= 0.0 or (cancel is not None and cancel.is_set()):
                    return None
                self._cond.wait(min(left, 0.05))
            return self._latest


# ---- settings -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class SpotKitchenSettings:
    """What the kitchen skills add to the connection (values from config/robots/spot.yaml, `spot.*`)."""

    skills: tuple[str, ...]  # allow-list, a subset of SKILLS
    locations: dict[str, Pose2]  # kitchen location name -> standing pose (x m, y m, yaw rad), kitchen frame
    start_location: str  # where Spot stands when the backend starts (one of locations)
    geofence_min: tuple[float, float]  # m, x and y, kitchen frame
    geofence_max: tuple[float, float]  # m
    go_to_time_margin: float  # s added to distance / max speed + turn / max yaw rate
    available_affordance: float  # [0, 1], an admissible skill
    reached_affordance: float  # [0, 1], a skill whose effect already holds
    waypoints: dict[str, str] = field(default_factory=dict)  # location -> GraphNav waypoint id (else odom)
    objects: tuple[str, ...] = ()  # the object vocabulary (affordances for find of unseen objects)
    drawers: tuple[str, ...] = ()  # drawer names (at the location "drawers")
    open_drawers: tuple[str, ...] = ()  # open at start
    drawer_handles: dict[str, Vec3] = field(default_factory=dict)  # drawer -> handle, kitchen frame (z up), m
    search_locations: tuple[str, ...] = ()  # where `find` looks for an object perception has not seen
    arrive_tolerance: float = 0.3  # m: within this of a location's pose Spot is at it
    object_radius: float = 1.5  # m: an object belongs to the nearest location within this (x-y)
    look_timeout: float = 5.0  # s to wait for a fresh scene after arriving (find) or before a grasp
    color_source: str = "hand_color_image"
    depth_source: str = "hand_depth_in_hand_color_frame"
    arm_timeout: float = 10.0  # s per arm / gripper command
    grasp_timeout: float = 20.0  # s for a ManipulationApi grasp
    place_points: dict[str, Vec3] = field(default_factory=dict)  # location -> hand point for put down, body, m
    handover_point: Vec3 = (0.8, 0.0, 0.3)  # m, body frame: bring_to_user holds the object out here
    drawer_pull: float = 0.3  # m a drawer travels (pulled towards Spot to open)
    drawer_drop: Vec3 = (0.15, 0.0, 0.15)  # m, from the open drawer's handle (body axes) to drop into it

    def inside(self, pose: Sequence[float]) -> bool:
        return all(lo <= v <= hi for v, lo, hi in zip(pose[:2], self.geofence_min, self.geofence_max, strict=True))

    def problems(self) -> list[str]:
        """Inconsistencies (the reader reports them at start-up)."""
        out: list[str] = []
        unknown = [s for s in self.skills if s not in SKILLS]
        if unknown:
            out.append(f"skills: unknown {unknown}; known: {list(SKILLS)}")
        bad = [n for n in self.locations if n not in LOCATIONS]
        if bad:
            out.append(f"location_names: {bad} are not kitchen locations {list(LOCATIONS)}")
        if self.start_location not in self.locations:
            out.append(f"start_location: {self.start_location!r} is not one of {list(self.locations)}")
        outside = [n for n, p in self.locations.items() if not self.inside(p)]
        if outside:
            out.append(f"locations {outside} are outside the geofence {list(self.geofence_min)}.."
                       f"{list(self.geofence_max)} m")
        for what, names in (("waypoints", list(self.waypoints)), ("search_locations", list(self.search_locations)),
                            ("place_points", list(self.place_points))):
            missing = [n for n in names if n not in self.locations]
            if missing:
                out.append(f"{what}: {missing} are not configured locations")
        if self.drawers and DRAWERS_LOCATION not in self.locations:
            out.append(f"drawers {list(self.drawers)} need the location {DRAWERS_LOCATION!r}")
        odd = [d for d in (*self.open_drawers, *self.drawer_handles) if d not in self.drawers]
        if odd:
            out.append(f"open_drawers / drawer_handles name unknown drawers {odd}; drawers: {list(self.drawers)}")
        if "bring_to_user" in self.skills and USER not in self.locations:
            out.append(f"bring_to_user needs the location {USER!r}")
        return out


# ---- the skills ---------------------------------------------------------------------------------

class _Done(Exception):
    """Internal: ends a skill with this outcome."""

    def __init__(self, error: SkillError, message: str, failed_precondition: str = "") -> None:
        super().__init__(message)
        self.error, self.message, self.failed_precondition = error, message, failed_precondition


@dataclass(frozen=True)
class Belief:
    state: KitchenState
    between: bool  # not within arrive_tolerance of any location (after an interrupted walk)
    pose: Pose2  # kitchen frame
    positions: dict[str, Vec3]  # perceived objects' positions, odom, m


class SpotKitchenSkills:
    """The SkillBackend of Spot: the kitchen skills plus stand/sit on a SpotPort, one skill at a time.

    `estop_latched` (set by the ROS bridge from the `estop` topic) refuses every skill with ESTOP_ACTIVE."""

    def __init__(self, spot: SpotPort, s: SpotKitchenSettings, scene: SceneBuffer, logger: logging.Logger,
                 approval: ApprovalGate | None = None, approval_timeout_s: float = 30.0,
                 on_change: Callable[[], None] | None = None) -> None:
        problems = s.problems()
        if problems:
            raise ValueError("; ".join(problems))
        self._spot = spot
        self._s = s
        self._scene = scene
        self._log = logger
        self._approval = Approval(approval, approval_timeout_s)
        self._on_change = on_change
        self._busy = threading.Lock()
        self._lock = threading.Lock()  # belief bookkeeping
        self._odom_T_kitchen: Pose2 | None = None
        self._held: str | None = None
        self._placed: dict[str, tuple[str, float]] = {}  # object -> (where, monotonic s) from our own skills
        self._open: set[str] = set(s.open_drawers)
        self._arm_out = False  # the arm is not stowed / carrying (a put down or hand-over left it out)
        self._handles: dict[str, Vec3] = {}  # drawer -> handle (odom, m) where our last pull / push left it
        self.estop_latched = False
        self.estop_reason = ""

    # -- frames -----------------------------------------------------------------------------------
    def anchor(self) -> None:
        """Fix the kitchen frame to odom: Spot stands at `start_location` now. SpotFault if the pose cannot
        be read (the backend then anchors at the first skill or query that can)."""
        odom_body = self._spot.body_pose()
        with self._lock:
            self._odom_T_kitchen = compose(odom_body, inverse(self._s.locations[self._s.start_location]))
        self._log.info("kitchen frame anchored: Spot at the %s, odom pose (%.2f, %.2f) m, %.2f rad",
                       self._s.start_location, *odom_body)

    def _frame(self) -> Pose2:
        if self._odom_T_kitchen is None:
            self.anchor()
        assert self._odom_T_kitchen is not None
        return self._odom_T_kitchen

    def pose(self) -> Pose2:
        """Spot's pose in the kitchen frame, from odometry (SpotFault when it cannot be read)."""
        return compose(inverse(self._frame()), self._spot.body_pose())

    def _to_kitchen_xy(self, p_odom: Vec3) -> tuple[float, float]:
        x, y, _ = compose(inverse(self._frame()), (p_odom[0], p_odom[1], 0.0))
        return x, y

    def _to_odom(self, p: Pose2) -> Pose2:
        return compose(self._frame(), p)

    def location_at(self, pose: Pose2) -> str | None:
        """The configured location within arrive_tolerance of `pose` (kitchen frame), nearest first."""
        best = min(self._s.locations, key=lambda n: math.dist(self._s.locations[n][:2], pose[:2]))
        return best if math.dist(self._s.locations[best][:2], pose[:2]) <= self._s.arrive_tolerance else None

    # -- belief ------------------------------------------------------------------------------------
    @property
    def held(self) -> str | None:
        return self._held

    @property
    def location(self) -> str | None:
        """The location Spot stands at (odometry, or GraphNav's waypoint), None between locations."""
        try:
            return self._robot_place()[0]
        except Exception:  # noqa: BLE001 - not connected: unknown
            return None

    def _robot_place(self) -> tuple[str | None, Pose2]:
        pose = self.pose()
        if self._s.waypoints:
            wp = self._spot.graph_nav_waypoint()
            for name, wid in self._s.waypoints.items():
                if wid and wid == wp:
                    return name, pose
        return self.location_at(pose), pose

    def belief(self) -> Belief:
        """The kitchen state Spot believes in now (reads odometry, the gripper and the latest scene)."""
        at, pose = self._robot_place()
        holding = self._spot.holding()
        scene = self._scene.latest()
        with self._lock:
            nearest = at or min(self._s.locations, key=lambda n: math.dist(self._s.locations[n][:2], pose[:2]))
            if not holding and self._held is not None:  # dropped (or taken): it lies where Spot is
                self._log.warning("the %s is no longer in the gripper", self._held)
                if self._held != UNKNOWN_HELD:
                    self._placed[self._held] = (nearest, time.monotonic())
                self._held = None
            elif holding and self._held is None:
                self._held = UNKNOWN_HELD
            where: dict[str, str] = {}
            positions: dict[str, Vec3] = {}
            for o in scene.objects:
                if not self._is_object(o):
                    continue
                positions[o.name] = o.position
                kx, ky = self._to_kitchen_xy(o.position)
                place = min(self._s.locations, key=lambda n: math.dist(self._s.locations[n][:2], (kx, ky)))
                if math.dist(self._s.locations[place][:2], (kx, ky)) > self._s.object_radius:
                    continue
                placed = self._placed.get(o.name)
                if placed is not None:
                    ours = DRAWERS_LOCATION if placed[0] in self._s.drawers else placed[0]
                    if ours == place or not (o.visible and scene.received_s > placed[1]):
                        continue  # our record agrees (and may be more specific: in a drawer) or is newer
                    del self._placed[o.name]  # seen somewhere else since: a person moved it
                where[o.name] = place
            for obj, (place, _t) in self._placed.items():
                where.setdefault(obj, place)
            if self._held is not None:
                where[self._held] = HELD
            state = KitchenState(nearest, self._held, where, frozenset(self._open))
        return Belief(state, at is None, pose, positions)

    def _world(self, b: Belief) -> KitchenWorld:
        return KitchenWorld.from_state(b.state, drawers=self._s.drawers,
                                       completed_affordance=self._s.reached_affordance)

    # -- SkillBackend: queries ---------------------------------------------------------------------
    def skill_names(self) -> Sequence[str]:
        return tuple(s for s in SKILLS if s in self._s.skills)

    def objects(self) -> list[str]:
        seen = [o.name for o in self._scene.latest().objects if self._is_object(o)]
        return list(dict.fromkeys([*self._s.objects, *seen]))

    def locations(self) -> list[str]:
        return [*self._s.locations, *self._s.drawers]

    def _is_object(self, o: SceneObject) -> bool:
        """A perceived thing to pick (not a location, a drawer or a drawer's handle)."""
        return not o.is_location and not any(o.name in (d, f"{d} handle") for d in self._s.drawers)

    def ground_truth(self) -> None:
        return None  # a real robot

    def _usable(self, st: StatusLike) -> bool:
        return (st.connected and not st.estopped and not st.behavior_faults and st.lease_held
                and not self.estop_latched)

    def _instances(self, b: Belief) -> list[tuple[str, tuple[str, ...]]]:
        types = list(dict.fromkeys([*self._s.objects, *(object_type(o) for o in b.state.object_locations)]))
        if UNKNOWN_HELD in types:
            types.remove(UNKNOWN_HELD)
        out: list[tuple[str, tuple[str, ...]]] = []
        for skill in ("find", "pick_up", "put_down"):
            out += [(skill, (o,)) for o in types]
        out += [("go_to", (loc,)) for loc in self._s.locations]
        out.append(("bring_to_user", ()))
        for d in self._s.drawers:
            out += [("open_drawer", (d,)), ("close_drawer", (d,))]
            out += [("put_in_drawer", (o, d)) for o in types]
        return [(k, a) for k, a in out if k in self._s.skills]

    def affordances(self, include_unaffordable: bool = False) -> list[Affordance]:
        st = self._spot.status()
        out: list[Affordance] = []
        avail, reached = self._s.available_affordance, self._s.reached_affordance
        usable = self._usable(st)
        b: Belief | None = None
        if usable:
            try:
                b = self.belief()
            except Exception as e:  # noqa: BLE001 - the robot cannot be read: nothing is admissible
                self._log.warning("affordances: %s", e)
        instances = self._instances(b) if b is not None else [
            (k, a) for k, a in self._instances_without_belief()]
        world = self._world(b) if b is not None else None
        for skill, args in instances:
            value = 0.0
            if b is not None and world is not None and self._precondition(skill, args, b, world) is None:
                value = reached if self._completed(skill, args, b, world) else avail
            out.append(Affordance(skill, args, value))
        if "stand" in self._s.skills:
            out.append(Affordance("stand", (), 0.0 if not usable else reached if st.standing else avail))
        if "sit" in self._s.skills:
            out.append(Affordance("sit", (), 0.0 if not usable or self._held is not None
                                  else avail if st.standing else reached))
        return out if include_unaffordable else [a for a in out if a.affordance > 0.0]

    def _instances_without_belief(self) -> list[tuple[str, tuple[str, ...]]]:
        empty = Belief(KitchenState(self._s.start_location, None), False, (0.0, 0.0, 0.0), {})
        return self._instances(empty)

    # -- preconditions ------------------------------------------------------------------------------
    def _invalid(self, skill: str, args: Sequence[str]) -> SkillOutcome | None:
        if skill not in SKILLS or skill not in self._s.skills:
            return SkillOutcome(SkillError.UNKNOWN_SKILL, f"unknown or not allowed skill {skill!r}; "
                                f"allowed: {list(self.skill_names())}")
        if len(args) != SKILL_ARGS[skill]:
            return SkillOutcome(SkillError.INVALID_ARGUMENTS,
                                f"{skill} takes {SKILL_ARGS[skill]} arguments, got {list(args)}")
        kinds = {"find": "o", "pick_up": "o", "put_down": "o", "go_to": "l", "open_drawer": "d",
                 "close_drawer": "d", "put_in_drawer": "od"}.get(skill, "")
        for kind, a in zip(kinds, args, strict=False):
            if kind == "o":
                names = [*self._placed, *(o.name for o in self._scene.latest().objects if self._is_object(o))]
                if self._held is not None:
                    names.append(self._held)
                known = set(self._s.objects) | set(names) | {object_type(n) for n in names}
            else:
                known = set(self._s.locations) if kind == "l" else set(self._s.drawers)
            if a not in known:
                noun = {"o": "object", "l": "location", "d": "drawer"}[kind]
                return SkillOutcome(SkillError.INVALID_ARGUMENTS,
                                    f"{skill}: unknown {noun} {a!r}; known: {sorted(known)}")
        if skill == "go_to":
            target = self._s.locations[args[0]]
            if not self._s.inside(target):
                return SkillOutcome(SkillError.OUT_OF_LIMITS, f"the {args[0]} at {target[:2]} m is outside the "
                                    f"geofence {self._s.geofence_min}..{self._s.geofence_max} m")
        return None

    def _precondition(self, skill: str, args: Sequence[str], b: Belief,
                      world: KitchenWorld) -> PreconditionError | None:
        """The kitchen world's precondition on the belief, with Spot's refinements."""
        a = tuple(args)
        if skill in POSTURE_SKILLS:
            if skill == "sit" and b.state.holding is not None:
                return PreconditionError(skill, a, "hand_full", f"I am holding the {object_type(b.state.holding)}")
            return None
        if skill == "find" and not world.instances_of(a[0]):
            if self._s.search_locations:
                return None  # not seen yet: scan the search locations
            return PreconditionError(skill, a, "not_near", f"I do not know where the {a[0]} is")
        pre = world.check(skill, a)
        if pre is None and b.between and skill in NEEDS_NEARNESS:
            target = a[1] if skill == "put_in_drawer" else a[0]
            return PreconditionError(skill, a, "not_near", f"I am not near the {target}")
        return pre

    def _completed(self, skill: str, args: Sequence[str], b: Belief, world: KitchenWorld) -> bool:
        if b.between:
            return False
        if skill == "find" and not world.instances_of(args[0]):
            return False
        return world.completed(skill, args)

    # -- SkillBackend: execute ---------------------------------------------------------------------
    def execute(self, skill: str, args: Sequence[str], feedback: FeedbackFn, cancel: threading.Event) -> SkillOutcome:
        start = time.monotonic()

        def took(error: SkillError, message: str, pre: str = "") -> SkillOutcome:
            return SkillOutcome(error, message, pre, time.monotonic() - start)

        bad = self._invalid(skill, args)
        if bad is not None:
            return took(bad.error, bad.message)
        if self.estop_latched:
            return took(SkillError.ESTOP_ACTIVE, f"the software e-stop is latched ({self.estop_reason})")
        if not self._busy.acquire(blocking=False):
            return took(SkillError.BUSY, "another skill is running")
        try:
            try:
                self._check_and_run(skill, tuple(args), feedback, cancel)
            except _Done as d:
                if d.error != SkillError.NONE:
                    self._log.info("%s(%s): %s", skill, ", ".join(args), d.failed_precondition or d.message)
                return took(d.error, d.message, d.failed_precondition)
            except MotionInterrupted as e:  # SpotRobot sent the stop command
                return took(SkillError.CANCELED, f"{e}; Spot was stopped")
            except MotionRefused as e:
                return took(SkillError.OUT_OF_LIMITS, str(e))
            except Exception as e:  # SpotFault (an ArmFault) and anything the SDK raised
                return took(*self._fault(skill, args, e))
            return took(SkillError.NONE, "done")  # not reached: every skill ends with _Done
        finally:
            self._busy.release()
            if self._on_change is not None:
                self._on_change()

    def _fault(self, skill: str, args: Sequence[str], e: Exception) -> tuple[SkillError, str]:
        if type(e).__name__ == "GraspFailed":  # core.robot.GraspFailed: the skill failed, the robot is fine
            return SkillError.EXECUTION_FAILED, f"{skill_text(skill, tuple(args))} failed: the grasp failed ({e})"
        if self.estop_latched:
            return SkillError.ESTOP_ACTIVE, f"{skill} stopped by the software e-stop ({self.estop_reason}): {e}"
        if getattr(e, "kind", None) == FaultKind.TIMEOUT:
            return SkillError.TIMEOUT, str(e)
        self._log.error("%s(%s): %s", skill, ", ".join(args), e)
        return SkillError.ROBOT_FAULT, str(e)

    def _check_and_run(self, skill: str, a: tuple[str, ...], feedback: FeedbackFn, cancel: threading.Event) -> None:
        b = self.belief()
        world = self._world(b)
        pre = self._precondition(skill, a, b, world)
        if pre is not None:
            raise _Done(SkillError.PRECONDITION_FAILED, pre.explicit, pre.text)
        what = skill_text(skill, a) if skill in KITCHEN_SKILLS else skill
        if not self._approval.granted(what):
            raise _Done(SkillError.PRECONDITION_FAILED, "a person did not approve the skill; nothing moved",
                        "a person approves the motion")
        if cancel.is_set():
            raise _Done(SkillError.CANCELED, "cancelled before anything moved")
        run: dict[str, Callable[[], str]] = {
            "stand": lambda: self._stand(feedback, cancel, force=True),
            "sit": lambda: self._sit(feedback, cancel),
            "go_to": lambda: self._walk(a[0], feedback, cancel),
            "find": lambda: self._find(a[0], b, world, feedback, cancel),
            "pick_up": lambda: self._pick_up(a[0], b, world, feedback, cancel),
            "put_down": lambda: self._put_down(a[0], b, feedback, cancel),
            "bring_to_user": lambda: self._bring(feedback, cancel),
            "open_drawer": lambda: self._drawer(a[0], True, b, feedback, cancel),
            "close_drawer": lambda: self._drawer(a[0], False, b, feedback, cancel),
            "put_in_drawer": lambda: self._put_in_drawer(a[0], a[1], b, feedback, cancel),
        }
        message = run[skill]()
        feedback(SkillState.DONE, message)
        self._log.info("%s(%s): %s", skill, ", ".join(a), message)
        raise _Done(SkillError.NONE, message)

    # -- skills -------------------------------------------------------------------------------------
    def _stand(self, feedback: FeedbackFn, cancel: threading.Event, force: bool = False) -> str:
        """Power on if needed and stand (`force`: even when the status says standing)."""
        st = self._spot.status()
        if st.standing and not force:
            return "standing"
        if not st.powered:
            feedback(SkillState.MOVING_TO_PICK, "powering the motors on")
            self._spot.power_on()
        feedback(SkillState.MOVING_TO_PICK, "standing up")
        self._spot.stand(cancel)
        return "standing"

    def _sit(self, feedback: FeedbackFn, cancel: threading.Event) -> str:
        self._stow(cancel)
        feedback(SkillState.MOVING_TO_PLACE, "sitting down")
        self._spot.sit(cancel)
        return "sitting"

    def _stow(self, cancel: threading.Event) -> None:
        """Arm in (carrying if something is held) before walking or sitting."""
        if not self._arm_out:
            return
        if self._held is not None:
            self._spot.arm_carry(self._s.arm_timeout, cancel)
        else:
            self._spot.arm_stow(self._s.arm_timeout, cancel)
        self._arm_out = False

    def _walk(self, name: str, feedback: FeedbackFn, cancel: threading.Event) -> str:
        """Walk to a configured location: GraphNav when it has a waypoint, else an odom trajectory to its
        pose. The start pose is read from odometry, so a walk that was interrupted before needs nothing."""
        target = self._s.locations[name]
        if not self._s.inside(target):
            raise _Done(SkillError.OUT_OF_LIMITS, f"the {name} at {target[:2]} m is outside the geofence "
                        f"{self._s.geofence_min}..{self._s.geofence_max} m")
        if not self._spot.status().standing:
            self._stand(feedback, cancel)
        self._stow(cancel)
        here = self.pose()
        dx, dy, dyaw = relative(here, target)
        lim = self._spot.cfg
        limit = (math.hypot(dx, dy) / lim.max_linear_velocity + abs(dyaw) / lim.max_angular_velocity
                 + self._s.go_to_time_margin)
        wid = self._s.waypoints.get(name, "")
        if wid:
            feedback(SkillState.MOVING_TO_PLACE, f"navigating to the {name} (GraphNav waypoint {wid})")
            self._spot.navigate_to_waypoint(wid, limit, cancel)
        else:
            x, y, yaw = self._to_odom(target)
            feedback(SkillState.MOVING_TO_PLACE, f"walking to the {name} ({dx:.2f}, {dy:.2f}) m, {dyaw:.2f} rad "
                     "from here")
            self._spot.go_to_odom(x, y, yaw, limit, cancel)
        return f"reached the {name}"

    def _look_for(self, obj: str, since_s: float, cancel: threading.Event) -> SceneObject | None:
        """A visible instance of `obj` in the first scene after `since_s` (monotonic s), or None."""
        deadline = time.monotonic() + self._s.look_timeout
        after = since_s
        while time.monotonic() < deadline:
            snap = self._scene.wait_newer(after, deadline - time.monotonic(), cancel)
            if cancel.is_set():
                raise MotionInterrupted("cancelled while looking")
            if snap is None:
                return None
            seen = [o for o in snap.objects if o.visible and not o.is_location
                    and (o.name == obj or object_type(o.name) == obj)]
            if seen:
                return seen[0]
            after = snap.received_s
        return None

    def _find(self, obj: str, b: Belief, world: KitchenWorld, feedback: FeedbackFn, cancel: threading.Event) -> str:
        known = [b.state.object_locations[o] for o in world.instances_of(obj)
                 if b.state.object_locations[o] != HELD and b.state.object_locations[o] not in self._s.drawers]
        places = list(dict.fromkeys([*known, *self._s.search_locations]))
        tried: list[str] = []
        for place in places:
            if place != b.state.robot_location or b.between or tried:
                self._walk(place, feedback, cancel)
            tried.append(place)
            feedback(SkillState.MOVING_TO_PICK, f"looking for the {obj} at the {place}")
            if self._look_for(obj, time.monotonic(), cancel) is not None:
                return f"found the {obj} at the {place}"
        raise _Done(SkillError.EXECUTION_FAILED,
                    f"I could not find the {obj} (looked at the {', the '.join(tried) or 'nothing'})")

    def _fresh_images(self) -> tuple[Any, Any]:
        images = list(self._spot.get_images([self._s.color_source, self._s.depth_source]))
        by = {getattr(i, "source", ""): i for i in images}
        color = by.get(self._s.color_source)
        if color is None:
            raise _Done(SkillError.EXECUTION_FAILED, f"no image from the {self._s.color_source} camera")
        return color, by.get(self._s.depth_source)

    def _target_position(self, name: str, b: Belief, cancel: threading.Event) -> Vec3:
        """Odom position of a perceived object: a fresh scene's if one comes within look_timeout, else the
        belief's (perception's memory)."""
        seen = self._look_for(name, time.monotonic(), cancel)
        if seen is not None:
            return seen.position
        instances = [n for n in b.positions if n == name or object_type(n) == name]
        if not instances:
            raise _Done(SkillError.EXECUTION_FAILED, f"I cannot see the {name}")
        return b.positions[instances[0]]

    def _grasp_at(self, name: str, p_odom: Vec3, feedback: FeedbackFn, cancel: threading.Event) -> Any:
        color, _depth = self._fresh_images()
        pixel = project(color, p_odom)
        if pixel is None:
            raise _Done(SkillError.EXECUTION_FAILED, f"the {name} is not in view of the {self._s.color_source} camera")
        feedback(SkillState.PICKING, f"grasping the {name} at pixel ({pixel[0]:.0f}, {pixel[1]:.0f})")
        self._arm_out = True
        self._spot.pick_in_image(color, pixel, self._s.grasp_timeout, cancel)
        return color

    def _pick_up(self, obj: str, b: Belief, world: KitchenWorld, feedback: FeedbackFn, cancel: threading.Event) -> str:
        here = [o for o in world.instances_of(obj) if b.state.object_locations.get(o) == b.state.robot_location]
        name = here[0] if here else obj
        p = self._target_position(name, b, cancel)
        self._grasp_at(obj, p, feedback, cancel)
        if not self._spot.holding():
            self._spot.arm_stow(self._s.arm_timeout, cancel)
            self._arm_out = False
            raise _Done(SkillError.EXECUTION_FAILED, f"the grasp of the {obj} ended with an empty gripper")
        with self._lock:
            self._held = name
            self._placed.pop(name, None)
        feedback(SkillState.RETREATING, "carrying")
        self._spot.arm_carry(self._s.arm_timeout, cancel)
        self._arm_out = False
        return f"holding the {obj}"

    def _release(self, place: str, feedback: FeedbackFn, cancel: threading.Event) -> None:
        """Open the gripper and stow; the held object is then at `place` (a location or drawer)."""
        feedback(SkillState.PLACING, "opening the gripper")
        self._spot.gripper_open(self._s.arm_timeout, cancel)
        held = self._held
        with self._lock:
            if held is not None and held != UNKNOWN_HELD:
                self._placed[held] = (place, time.monotonic())
            self._held = None
        feedback(SkillState.RETREATING, "stowing the arm")
        self._spot.arm_stow(self._s.arm_timeout, cancel)
        self._arm_out = False
        if self._spot.holding():
            raise _Done(SkillError.EXECUTION_FAILED, "the gripper still holds something after opening")

    def _put_down(self, obj: str, b: Belief, feedback: FeedbackFn, cancel: threading.Event) -> str:
        place = b.state.robot_location
        x, y, z = self._s.place_points.get(place, self._s.handover_point)
        feedback(SkillState.MOVING_TO_PLACE, f"reaching to ({x:.2f}, {y:.2f}, {z:.2f}) m")
        self._arm_out = True
        self._spot.arm_reach(x, y, z, self._s.arm_timeout, cancel)
        self._release(place, feedback, cancel)
        return f"put the {obj} down at the {place}"

    def _bring(self, feedback: FeedbackFn, cancel: threading.Event) -> str:
        self._walk(USER, feedback, cancel)
        x, y, z = self._s.handover_point
        feedback(SkillState.MOVING_TO_PLACE, "holding it out")
        self._arm_out = True
        self._spot.arm_reach(x, y, z, self._s.arm_timeout, cancel)
        return f"brought the {object_type(self._held or UNKNOWN_HELD)} to you"

    def _handle(self, drawer: str) -> Vec3:
        """The drawer handle's odom position: where our last pull / push left it, else perceived ("<drawer>
        handle" or the drawer), else configured. (An open drawer's handle is below the hand camera's view, so
        perception keeps the closed position: our own record wins.)"""
        if drawer in self._handles:
            return self._handles[drawer]
        for name in (f"{drawer} handle", drawer):
            seen = [o for o in self._scene.latest().objects if o.name == name and not o.is_location]
            if seen:
                return seen[0].position
        if drawer in self._s.drawer_handles:  # configured closed; an open drawer's is drawer_pull towards Spot
            hx, hy, hz = self._s.drawer_handles[drawer]
            if drawer in self._open:
                yaw = self._s.locations[DRAWERS_LOCATION][2]  # Spot faces the drawers there
                hx, hy = hx - self._s.drawer_pull * math.cos(yaw), hy - self._s.drawer_pull * math.sin(yaw)
            x, y, _ = self._to_odom((hx, hy, 0.0))
            return (x, y, hz)
        raise _Done(SkillError.EXECUTION_FAILED, f"I cannot see the handle of the {drawer}")

    def _drawer(self, drawer: str, opening: bool, b: Belief, feedback: FeedbackFn, cancel: threading.Event) -> str:
        """Grasp the handle in a fresh hand image, pull it out (open) or push it in (close) by drawer_pull along
        Spot's x axis (Spot faces the drawers at their pose), let go, stow."""
        handle = self._handle(drawer)
        image = self._grasp_at(f"{drawer} handle", handle, feedback, cancel)
        hx, hy, hz = point_in(image.odom_from_body, handle)
        target = (hx + (-self._s.drawer_pull if opening else self._s.drawer_pull), hy, hz)
        feedback(SkillState.MOVING_TO_PLACE, f"{'pulling' if opening else 'pushing'} the {drawer}")
        self._spot.arm_reach(*target, self._s.arm_timeout, cancel)
        with self._lock:
            self._handles[drawer] = compose3(image.odom_from_body, (target, (0.0, 0.0, 0.0, 1.0)))[0]
            if opening:
                self._open.add(drawer)
            else:
                self._open.discard(drawer)
        self._spot.gripper_open(self._s.arm_timeout, cancel)
        self._spot.arm_stow(self._s.arm_timeout, cancel)
        self._arm_out = False
        return f"the {drawer} is {'open' if opening else 'closed'}"

    def _put_in_drawer(self, obj: str, drawer: str, b: Belief, feedback: FeedbackFn, cancel: threading.Event) -> str:
        handle = self._handle(drawer)
        odom_from_body = self._fresh_images()[0].odom_from_body
        hx, hy, hz = point_in(odom_from_body, handle)
        dx, dy, dz = self._s.drawer_drop
        feedback(SkillState.MOVING_TO_PLACE, f"reaching into the {drawer}")
        self._arm_out = True
        self._spot.arm_reach(hx + dx, hy + dy, hz + dz, self._s.arm_timeout, cancel)
        self._release(drawer, feedback, cancel)
        return f"put the {obj} in the {drawer}"


__all__ = ["SKILLS", "Belief", "SceneBuffer", "SpotKitchenSettings", "SpotKitchenSkills", "SpotPort", "compose",
           "compose3", "inverse", "invert3", "point_in", "project", "relative", "rotate", "wrap"]
