"""A small kitchen for the fake Spot (testing/fake_spot.py): SayCan's kitchen (monologue_domain.kitchen) laid
out in Spot's odometry frame, so the fake robot's images, grasps, odometry and the ground truth agree.

Geometry (m, rad, frame `odom`; every box axis-aligned):
- every location has a *stand pose* (x, y, yaw): where Spot stands to use it (`STAND_POSES`, the nominal
  poses of config/robots/spot.yaml's location_poses with Spot starting at odom's origin);
- a location with a surface (`SURFACE_HEIGHT`: counters, table, trash, the drawers' cabinet) has a box in
  front of its stand pose: front edge `SURFACE_FRONT` m ahead, `SURFACE_DEPTH` deep, `SURFACE_WIDTH` wide,
  from the floor to its height; the others (initial position, user) have the floor;
- objects are cans (`OBJECT_SIZE`) standing on their location's surface (or the floor) in a grid of
  `COLUMNS` columns, rows `ROW_PITCH` apart starting `FIRST_ROW` m behind the surface's front edge;
- the drawers' cabinet front is `DRAWER_FRONT` m ahead of the drawers' stand pose; a drawer has a handle
  (a graspable box named "<drawer> handle", centre `HANDLE_HEIGHT` m up on the drawer's front) and, when
  open (pulled `DRAWER_PULL` m out), a tray (bottom + front panel) that objects can be dropped into.

The robot side (body pose, hand pose, what the gripper holds) is FakeSpot's; it tells the world through
`body`, `hand` and the methods `grasp_at` / `release_at` / `move_handle`. Rendering (`render`) ray-casts the
boxes and the floor exactly (a pinhole camera), so an oracle detector that projects `ground_truth()` sees
every object the image shows. Thread-safe (one lock).
"""
from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from monologue_domain.kitchen.state import HELD, KitchenState
from monologue_domain.kitchen.vocabulary import object_type
from monologue_domain.kitchen.world import (
    DRAWERS,
    DRAWERS_LOCATION,
    LOCATIONS,
    OBJECTS,
    default_state,
    make_state,
)
from monologue_domain.scene import LOCATION, SceneObject

Vec3 = tuple[float, float, float]
Pose2 = tuple[float, float, float]  # x m, y m, yaw rad

STAND_POSES: dict[str, Pose2] = {
    "initial position": (0.0, 0.0, 0.0),
    "close counter": (1.5, 1.0, math.pi / 2),
    "far counter": (4.0, 1.0, math.pi / 2),
    "table": (2.5, -1.0, -math.pi / 2),
    "trash": (0.5, -1.2, math.pi),
    "drawers": (3.5, -1.5, -math.pi / 2),
    "user": (0.8, 0.0, 0.0),
}
SURFACE_HEIGHT: dict[str, float] = {"close counter": 0.9, "far counter": 0.9, "table": 0.75, "trash": 0.5,
                                    DRAWERS_LOCATION: 0.6}
SURFACE_FRONT = 0.6  # m ahead of the stand pose
SURFACE_DEPTH = 0.6  # m
SURFACE_WIDTH = 1.2  # m
OBJECT_SIZE: Vec3 = (0.07, 0.07, 0.12)  # m, a can
FIRST_ROW = 0.15  # m behind the front edge (object centres)
ROW_PITCH = 0.12  # m
COLUMNS = 4
COLUMN_PITCH = 0.12  # m
DRAWER_FRONT = 0.72  # m ahead of the drawers' stand pose (the cabinet's front face)
CABINET_WIDTH = 0.8  # m
DRAWER_WIDTH = 0.6  # m
DRAWER_BOTTOM, DRAWER_TOP = 0.42, 0.58  # m above the floor: the drawer's front panel
HANDLE_HEIGHT = 0.55  # m, handle centre
HANDLE_SIZE: Vec3 = (0.04, 0.16, 0.03)  # m: depth (along the pull), width, height
DRAWER_PULL = 0.3  # m a drawer slides out when opened
PULL_THRESHOLD = 0.15  # m the held handle must move out (in) for the drawer to open (close)
AT_TOLERANCE = 0.5  # m: the robot within this of a stand pose is at that location
BODY_HEIGHT = 0.52  # m, body origin above the floor when standing
FLOOR_COLOR = (90, 90, 90)
BACKGROUND_COLOR = (200, 210, 220)
SURFACE_COLOR = (150, 110, 70)
CABINET_COLOR = (120, 120, 130)
HANDLE_COLOR = (30, 30, 30)


@dataclass(frozen=True)
class Box:
    """An axis-aligned box (centre and size m, odom) the camera sees."""

    name: str
    category: str  # an object's kind ("drink"), "surface", "cabinet", "drawer", "handle"
    center: Vec3
    size: Vec3
    color: tuple[int, int, int]
    graspable: bool = False

    @property
    def lo(self) -> Vec3:
        return (self.center[0] - self.size[0] / 2, self.center[1] - self.size[1] / 2, self.center[2] - self.size[2] / 2)

    @property
    def hi(self) -> Vec3:
        return (self.center[0] + self.size[0] / 2, self.center[1] + self.size[1] / 2, self.center[2] + self.size[2] / 2)

    @property
    def top(self) -> float:
        return self.center[2] + self.size[2] / 2


def color_of(name: str) -> tuple[int, int, int]:
    """A stable, saturated colour per object name (distinct from the furniture's greys and browns)."""
    known = list(OBJECTS)
    index = known.index(name) if name in known else len(known) + hashlib.sha256(name.encode()).digest()[0]
    hue = (0.05 + index * 0.618034) % 1.0  # golden-ratio steps: neighbours in the list differ most
    i = int(hue * 6) % 6
    f = hue * 6 - int(hue * 6)
    v, s = 230, 0.85
    p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
    r, g, b = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)][i]
    return (int(r), int(g), int(b))


def _ahead(pose: Pose2, forward: float, left: float = 0.0) -> tuple[float, float]:
    c, s = math.cos(pose[2]), math.sin(pose[2])
    return (pose[0] + c * forward - s * left, pose[1] + s * forward + c * left)


def _aabb(pose: Pose2, forward0: float, forward1: float, width: float, z0: float, z1: float) -> tuple[Vec3, Vec3]:
    """Centre and size of the axis-aligned box spanning forward0..forward1 ahead of `pose`, `width` across."""
    cx, cy = _ahead(pose, (forward0 + forward1) / 2)
    depth = forward1 - forward0
    c, s = abs(math.cos(pose[2])), abs(math.sin(pose[2]))
    return (cx, cy, (z0 + z1) / 2), (c * depth + s * width, s * depth + c * width, z1 - z0)


class FakeKitchen:
    """The kitchen world of a FakeSpot: objects on surfaces at odom positions, drawers, the symbolic state."""

    def __init__(self, state: KitchenState | None = None, stand_poses: Mapping[str, Pose2] | None = None,
                 drawers: Sequence[str] = DRAWERS, waypoint_ids: Mapping[str, str] | None = None) -> None:
        start = state if state is not None else default_state()
        make_state(start.object_locations, start.robot_location, start.open_containers, drawers)  # validate
        self.stand_poses: dict[str, Pose2] = dict(STAND_POSES if stand_poses is None else stand_poses)
        missing = [loc for loc in LOCATIONS if loc not in self.stand_poses]
        if missing:
            raise ValueError(f"stand poses missing for {missing}")
        self.drawers = tuple(drawers)
        # GraphNav waypoint id of each location (the fake's map): "wp-<location with dashes>" by default
        self.waypoint_ids: dict[str, str] = dict(waypoint_ids) if waypoint_ids is not None else {
            loc: "wp-" + loc.replace(" ", "-") for loc in self.stand_poses}
        self._lock = threading.RLock()
        self._open: dict[str, float] = {d: (DRAWER_PULL if d in start.open_containers else 0.0) for d in self.drawers}
        self._where: dict[str, str] = {}  # object -> location, drawer or HELD
        self._pos: dict[str, Vec3] = {}  # object -> centre (m, odom); the hand's for a held object
        self._visited: set[str] = set(start.visited)
        self._last_at: str | None = start.robot_location
        self.body: Pose2 = self.stand_poses[start.robot_location]  # odom_T_body, set by FakeSpot
        self.hand: Vec3 = (self.body[0], self.body[1], BODY_HEIGHT)  # hand position in odom, set by FakeSpot
        self.holding: str | None = None  # an object, or "<drawer> handle"
        self._grasp_point: Vec3 | None = None  # where a held handle was grasped (odom)
        for name, where in start.object_locations.items():
            if where == HELD:
                self._where[name] = HELD
                self.holding = name
                self._pos[name] = self.hand
            else:
                self._where[name] = where
                self._pos[name] = self._free_slot(where, name)

    # ---- layout --------------------------------------------------------------------------------
    def surface_height(self, location: str) -> float:
        return SURFACE_HEIGHT.get(location, 0.0)

    def _slot_position(self, location: str, i: int) -> Vec3:
        pose = self.stand_poses[location]
        front = DRAWER_FRONT if location == DRAWERS_LOCATION else SURFACE_FRONT
        row = i // COLUMNS  # odd rows are shifted half a column: the camera sees between the front cans
        x, y = _ahead(pose, front + FIRST_ROW + ROW_PITCH * row,
                      ((COLUMNS - 1) / 2 - i % COLUMNS - 0.5 * (row % 2)) * COLUMN_PITCH)
        return (x, y, self.surface_height(location) + OBJECT_SIZE[2] / 2)

    def _drawer_slot(self, drawer: str, i: int) -> Vec3:
        pose = self.stand_poses[DRAWERS_LOCATION]
        front = DRAWER_FRONT - DRAWER_PULL
        x, y = _ahead(pose, front + 0.12 + 0.1 * (i // 3), (1 - i % 3) * 0.1)
        return (x, y, DRAWER_BOTTOM + 0.02 + OBJECT_SIZE[2] / 2)

    def _free_slot(self, where: str, name: str) -> Vec3:
        """The first free slot of a location or drawer (in the drawer: where it lies once opened)."""
        taken = [p for o, p in self._pos.items() if o != name and self._where.get(o) == where]
        for i in range(64):
            p = self._drawer_slot(where, i) if where in self.drawers else self._slot_position(where, i)
            if all(math.dist(p[:2], q[:2]) > 0.05 for q in taken):
                return p
        raise ValueError(f"no free slot at {where}")

    def handle_box(self, drawer: str) -> Box:
        pose = self.stand_poses[DRAWERS_LOCATION]
        front = DRAWER_FRONT - self._open.get(drawer, 0.0)
        c, s = _aabb(pose, front - HANDLE_SIZE[0], front, HANDLE_SIZE[1], HANDLE_HEIGHT - HANDLE_SIZE[2] / 2,
                     HANDLE_HEIGHT + HANDLE_SIZE[2] / 2)
        return Box(f"{drawer} handle", "handle", c, s, HANDLE_COLOR, graspable=True)

    def _static_boxes(self) -> list[Box]:
        out = []
        for loc, h in SURFACE_HEIGHT.items():
            pose = self.stand_poses[loc]
            if loc == DRAWERS_LOCATION:
                c, s = _aabb(pose, DRAWER_FRONT, DRAWER_FRONT + SURFACE_DEPTH, CABINET_WIDTH, 0.0, h)
                out.append(Box(loc, "cabinet", c, s, CABINET_COLOR))
            else:
                c, s = _aabb(pose, SURFACE_FRONT, SURFACE_FRONT + SURFACE_DEPTH, SURFACE_WIDTH, 0.0, h)
                out.append(Box(loc, "surface", c, s, SURFACE_COLOR))
        return out

    def boxes(self) -> list[Box]:
        """Everything the camera can see now (held objects and objects in closed drawers excluded)."""
        with self._lock:
            out = self._static_boxes()
            pose = self.stand_poses[DRAWERS_LOCATION]
            for d in self.drawers:
                pull = self._open[d]
                out.append(self.handle_box(d))
                if pull > 0.0:
                    front = DRAWER_FRONT - pull
                    c, s = _aabb(pose, front, front + 0.02, DRAWER_WIDTH, DRAWER_BOTTOM, DRAWER_TOP)
                    out.append(Box(f"{d} front", "drawer", c, s, CABINET_COLOR))
                    c, s = _aabb(pose, front, DRAWER_FRONT, DRAWER_WIDTH, DRAWER_BOTTOM, DRAWER_BOTTOM + 0.02)
                    out.append(Box(f"{d} bottom", "drawer", c, s, CABINET_COLOR))
            for name, where in self._where.items():
                if where == HELD or (where in self.drawers and self._open[where] <= 0.0):
                    continue
                kind = OBJECTS.get(object_type(name), "object")
                out.append(Box(name, kind, self._pos[name], OBJECT_SIZE, color_of(object_type(name)), graspable=True))
            return out

    # ---- robot ---------------------------------------------------------------------------------
    def location_at(self, pose: Pose2 | None = None) -> str | None:
        """The location whose stand pose is within AT_TOLERANCE of `pose` (default: the body), or None."""
        p = self.body if pose is None else pose
        best = min(self.stand_poses, key=lambda n: math.dist(self.stand_poses[n][:2], p[:2]))
        return best if math.dist(self.stand_poses[best][:2], p[:2]) <= AT_TOLERANCE else None

    def set_body(self, pose: Pose2, settled: bool = True) -> None:
        """FakeSpot moved the body (odom). A settled pose (no walk running) where a location is counts as a
        visit (a place passed on the way does not)."""
        with self._lock:
            self.body = pose
            if not settled:
                return
            at = self.location_at(pose)
            if at is not None and at != self._last_at:
                if self._last_at is not None:
                    self._visited.add(self._last_at)
                self._visited.add(at)
                self._last_at = at

    def set_hand(self, hand: Vec3) -> None:
        with self._lock:
            self.hand = hand
            if self.holding is not None and self.holding in self._where:
                self._pos[self.holding] = hand

    def grasp_at(self, box_name: str) -> None:
        """The gripper closed on `box_name` (an object or a drawer handle) at the current hand position."""
        with self._lock:
            self.holding = box_name
            if box_name in self._where:
                self._where[box_name] = HELD
                self._pos[box_name] = self.hand
            else:
                self._grasp_point = self.hand

    def move_handle(self) -> None:
        """The arm moved while holding a handle: pulled out far enough opens the drawer, pushed in closes it."""
        with self._lock:
            held = self.holding
            if held is None or held in self._where or self._grasp_point is None:
                return
            drawer = held.removesuffix(" handle")
            pose = self.stand_poses[DRAWERS_LOCATION]
            out_x, out_y = -math.cos(pose[2]), -math.sin(pose[2])  # out of the cabinet, towards the robot
            d = (self.hand[0] - self._grasp_point[0]) * out_x + (self.hand[1] - self._grasp_point[1]) * out_y
            if d >= PULL_THRESHOLD and self._open[drawer] <= 0.0:
                self._open[drawer] = DRAWER_PULL
                self._grasp_point = self.hand
            elif d <= -PULL_THRESHOLD and self._open[drawer] > 0.0:
                self._open[drawer] = 0.0
                self._grasp_point = self.hand

    def release_at(self) -> str | None:
        """The gripper opened: a held object falls straight down from the hand onto whatever is below
        (an open drawer's tray, a surface, the floor). Returns what was held."""
        with self._lock:
            held, self.holding, self._grasp_point = self.holding, None, None
            if held is None or held not in self._where:
                return held
            hx, hy, hz = self.hand
            where, z = None, 0.0
            for d in self.drawers:
                if self._open[d] > 0.0:
                    pose = self.stand_poses[DRAWERS_LOCATION]
                    c, s = _aabb(pose, DRAWER_FRONT - self._open[d], DRAWER_FRONT + 0.1, DRAWER_WIDTH, 0.0, 1.0)
                    if abs(hx - c[0]) <= s[0] / 2 and abs(hy - c[1]) <= s[1] / 2 and hz >= DRAWER_BOTTOM:
                        where, z = d, DRAWER_BOTTOM + 0.02
            if where is None:
                for box in self._static_boxes():
                    lo, hi = box.lo, box.hi
                    if lo[0] <= hx <= hi[0] and lo[1] <= hy <= hi[1] and box.top <= hz + 0.05 and box.top > z:
                        where, z = box.name, box.top
            if where is None:  # the floor: belongs to where the robot is, else the nearest location
                where = self.location_at() or min(
                    self.stand_poses, key=lambda n: math.dist(self.stand_poses[n][:2], (hx, hy)))
            self._where[held] = where
            self._pos[held] = (hx, hy, z + OBJECT_SIZE[2] / 2)
            return held

    # ---- ray casting ---------------------------------------------------------------------------
    def cast(self, origins: NDArray[np.float64], directions: NDArray[np.float64],
             boxes: Sequence[Box] | None = None, floor: bool = True) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """Ray parameter t (inf: nothing) and index into `boxes` (-1: the floor or nothing) of the first hit of
        each ray origin + t * direction (N x 3 arrays, odom), t > 0; the floor is z = 0 (when `floor`)."""
        boxes = self.boxes() if boxes is None else boxes
        n = directions.shape[0]
        best = np.full(n, np.inf)
        which = np.full(n, -1, dtype=np.int64)
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = 1.0 / directions
            for k, b in enumerate(boxes):
                t0 = (np.asarray(b.lo) - origins) * inv
                t1 = (np.asarray(b.hi) - origins) * inv
                tmin = np.nanmax(np.minimum(t0, t1), axis=1)
                tmax = np.nanmin(np.maximum(t0, t1), axis=1)
                hit = (tmax >= np.maximum(tmin, 1e-6)) & (tmin < best)
                t = np.where(tmin > 1e-6, tmin, tmax)
                hit &= t > 1e-6
                best = np.where(hit, t, best)
                which = np.where(hit, k, which)
            if not floor:
                return best, which
            tf = -origins[:, 2] / directions[:, 2]
            on_floor = (directions[:, 2] < 0) & (tf > 1e-6) & (tf < best)
        best = np.where(on_floor, tf, best)
        which = np.where(on_floor, -1, which)
        return best, which

    def render(self, odom_from_camera: NDArray[np.float64], width: int, height: int, fx: float, fy: float,
               cx: float, cy: float, max_range_m: float = 10.0) -> tuple[NDArray[np.uint8], NDArray[np.float64]]:
        """(rgb HxWx3 uint8, depth HxW m along the optical axis, 0 = no return) seen by a pinhole camera
        (optical frame: z forward, x right, y down) at the 4x4 pose `odom_from_camera`. Pixel (u, v) is
        the ray through ((u - cx) / fx, (v - cy) / fy, 1). Each box is cast only over its projected
        rectangle (exact, and fast enough for 640 x 480 at a few Hz)."""
        boxes = self.boxes()
        us, vs = np.meshgrid(np.arange(width, dtype=np.float64), np.arange(height, dtype=np.float64))
        d_cam = np.stack([(us - cx) / fx, (vs - cy) / fy, np.ones_like(us)], axis=-1)
        rot, origin = odom_from_camera[:3, :3], odom_from_camera[:3, 3]
        dirs = d_cam @ rot.T  # H x W x 3, odom
        with np.errstate(divide="ignore", invalid="ignore"):
            tf = -origin[2] / dirs[..., 2]
        best = np.where((dirs[..., 2] < 0) & (tf > 1e-6), tf, np.inf)  # the floor, z = 0
        which = np.full((height, width), -1, dtype=np.int64)
        signs = np.array([[i, j, k] for i in (-1, 1) for j in (-1, 1) for k in (-1, 1)], dtype=np.float64)
        for k, b in enumerate(boxes):
            corners = np.asarray(b.center) + signs * np.asarray(b.size) / 2
            cam = (corners - origin) @ rot  # odom -> camera
            if np.all(cam[:, 2] <= 1e-3):
                continue
            if np.all(cam[:, 2] > 1e-3):
                u = fx * cam[:, 0] / cam[:, 2] + cx
                v = fy * cam[:, 1] / cam[:, 2] + cy
                u0, u1 = max(0, int(np.floor(u.min()))), min(width, int(np.ceil(u.max())) + 1)
                v0, v1 = max(0, int(np.floor(v.min()))), min(height, int(np.ceil(v.max())) + 1)
                if u0 >= u1 or v0 >= v1:
                    continue
            else:
                u0, u1, v0, v1 = 0, width, 0, height
            sub = dirs[v0:v1, u0:u1].reshape(-1, 3)
            t, hit = self.cast(np.broadcast_to(origin, sub.shape), sub, [b], floor=False)
            t = t.reshape(v1 - v0, u1 - u0)
            closer = (hit.reshape(v1 - v0, u1 - u0) == 0) & (t < best[v0:v1, u0:u1])
            best[v0:v1, u0:u1] = np.where(closer, t, best[v0:v1, u0:u1])
            which[v0:v1, u0:u1] = np.where(closer, k, which[v0:v1, u0:u1])
        palette = np.array([b.color for b in boxes] + [FLOOR_COLOR], dtype=np.uint8)
        rgb = palette[which]  # -1 -> the floor's colour (last row)
        seen = np.isfinite(best) & (best <= max_range_m)
        rgb[~seen] = BACKGROUND_COLOR
        depth = np.where(seen, best, 0.0)  # t along d_cam (z = 1) is the optical-axis depth
        return rgb, depth

    # ---- observation ---------------------------------------------------------------------------
    def is_open(self, drawer: str) -> bool:
        with self._lock:
            return self._open[drawer] > 0.0

    def position_of(self, obj: str) -> Vec3:
        with self._lock:
            return self._pos[obj]

    def state(self) -> KitchenState:
        """The symbolic kitchen state (kitchen.state.KitchenState): the robot's location is the nearest
        stand pose's."""
        with self._lock:
            at = self.location_at() or min(self.stand_poses,
                                           key=lambda n: math.dist(self.stand_poses[n][:2], self.body[:2]))
            held = self.holding if self.holding in self._where else None
            return KitchenState(at, held, dict(self._where), frozenset(d for d, p in self._open.items() if p > 0.0),
                                {}, frozenset(self._visited))

    def ground_truth(self) -> list[SceneObject]:
        """Objects (category = kind, e.g. "drink"; centre and size m in odom; `visible` False inside a
        closed drawer), each drawer's handle ("top drawer handle", category "handle") and the locations
        (category "location", at the centre of their surface's top, or the floor 0.75 m ahead)."""
        with self._lock:
            out = []
            for name, where in self._where.items():
                hidden = where in self.drawers and self._open[where] <= 0.0
                kind = OBJECTS.get(object_type(name), "object")
                out.append(SceneObject(name, kind, self._pos[name], OBJECT_SIZE, visible=not hidden))
            for d in self.drawers:
                h = self.handle_box(d)
                out.append(SceneObject(h.name, "handle", h.center, h.size))
            for loc, pose in self.stand_poses.items():
                front = DRAWER_FRONT if loc == DRAWERS_LOCATION else SURFACE_FRONT
                x, y = _ahead(pose, front + SURFACE_DEPTH / 2 if loc in SURFACE_HEIGHT else 0.75)
                out.append(SceneObject(loc, LOCATION, (x, y, self.surface_height(loc))))
            return out

    def objects_at(self, where: str) -> list[str]:
        with self._lock:
            return [o for o, w in self._where.items() if w == where]


def nearest(poses: Mapping[str, Pose2], pose: Pose2) -> str:
    return min(poses, key=lambda n: math.dist(poses[n][:2], pose[:2]))


__all__ = ["AT_TOLERANCE", "BODY_HEIGHT", "Box", "FakeKitchen", "STAND_POSES", "SURFACE_HEIGHT", "color_of",
           "nearest"]
