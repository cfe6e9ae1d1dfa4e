"""The physics world: MuJoCo tabletop with a kinematically driven UR5e, a suction cup and dynamic objects.

Arm: the joints follow the active Trajectory exactly (positions and velocities are set before every
physics step), as a position-controlled industrial arm does; objects react to it through contacts, so
pushing, stacking and knocking towers over happen physically.

Suction: the vacuum grips a block whose surface the cup's lip (the TCP) touches, within
SUCTION_RANGE. A gripped block is rigidly attached to the cup, the equivalent of a weld constraint
switched on at run time: its free joint follows the TCP every step and contacts push whatever it
touches. A block heavier than SUCTION_PAYLOAD seals (the vacuum sensor reports holding while the cup
touches it) but is not lifted: once the cup moves away, the seal breaks and `holding` is false.

Contact sensing: the force on the tool is the vector sum of the contact forces on the cup and on the
gripped block from everything else (N), like a wrist force/torque sensor.

Not thread-safe by itself: every public method takes `lock`, which the runner holds while stepping.
"""
from __future__ import annotations

import logging
import math
import random
import threading
from dataclasses import dataclass, field

import mujoco
import numpy as np

from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.scene import LOCATION, Scene, SceneObject
from monologue_domain.scene_spec import SceneLayout
from monologue_domain.statler_domains import world_from_objects
from monologue_domain.tabletop import (
    BLOCK_SIZE,
    BOWL_DIAMETER,
    BOWL_FLOOR,
    BOWL_HEIGHT,
    CUP_DIAMETER,
    CUP_HEIGHT,
    LOCATIONS,
)

from .geometry import Pose, Vec, mat_to_quat, wxyz_to_xyzw, xyzw_to_wxyz
from .kinematics import HOME_Q
from .model import ModelIndex, ObjectIndex, build_model
from .motion import ArmError, Trajectory

SUCTION_RANGE = (-0.005, 0.003)  # m, signed distance from the TCP to a block's surface that seals
SUCTION_PAYLOAD = 0.5  # kg, heaviest block the cup lifts
SETTLED_SPEED = 2e-3  # m/s (and rad/s x 0.1 m): objects slower than this are at rest
SETTLED_STEPS = 50  # consecutive quiet physics steps before the world counts as settled
TABLE_X = (-0.20, 0.90)  # m, table top extent in base_link
TABLE_Y = (-0.65, 0.65)  # m


@dataclass(frozen=True)
class WorldConfig:
    """Physics and noise settings: the simulator node's parameters (defaults in config/robots/sim.yaml
    only; config.SimSettings.world_config), and the arm's start pose."""

    timestep: float  # s, physics step
    contact_force: float  # N, a move until contact stops at this tool force
    protective_stop_force: float  # N, any other motion stops with a protective stop above this
    place_noise_std: float  # m, N(0, std) added to x and y of a block when suction releases it
    image_width: int  # px, largest image any camera renders from this world
    image_height: int  # px
    fovy_deg: float  # deg, vertical field of view of both cameras
    seed: int  # seeds the noise generators
    home_q: tuple[float, ...] = HOME_Q  # rad, where the arm starts and returns to on reset
    calibration_board: bool = False  # a ChArUco board on the table (model.BOARD_CENTER)
    camera_mount_offset: tuple[float, ...] = (0.0,) * 6  # wrist camera mount error: x, y, z m, rotation vector rad


@dataclass(frozen=True)
class ObjectTruth:
    """Ground truth of one object, in base_link. Blocks: pose of the centre; bowls: of the base centre."""

    name: str
    category: str  # "block", "bowl" or "cup" (Statler's covers)
    color: str
    position: tuple[float, float, float]  # m
    orientation: tuple[float, float, float, float]  # (x, y, z, w)
    size: tuple[float, float, float]  # m, extent at rest
    segmentation_id: int
    heavy: bool
    held: bool


@dataclass
class Motion:
    """A trajectory being executed and how it ended."""

    trajectory: Trajectory
    start_time: float  # s, world time at start
    done: threading.Event = field(default_factory=threading.Event)
    error: ArmError = ArmError.NONE
    message: str = ""
    contact: bool = False
    progress: float = 0.0  # 0..1 of the trajectory's duration
    peak_force: float = 0.0  # N, largest tool force seen

    def finish(self, error: ArmError, message: str, contact: bool = False) -> None:
        if not self.done.is_set():
            self.error, self.message, self.contact = error, message, contact
            self.done.set()


@dataclass
class _Grip:
    obj: ObjectIndex
    relative: tuple[Vec, Vec]  # object pose in the TCP frame: (position m, rotation matrix)


class SimWorld:
    """One tabletop scene and the arm; reset() replaces the scene in place (see `generation`)."""

    def __init__(self, layout: SceneLayout, config: WorldConfig, logger: logging.Logger) -> None:
        self.config = config
        self.log = logger
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)  # notified when a motion starts or the scene changes
        self.generation = 0
        self.revision = 0  # changes whenever the state may have changed (renderers cache on it)
        self._noise = random.Random(config.seed)
        self.model: mujoco.MjModel
        self.data: mujoco.MjData
        self.index: ModelIndex
        self.layout: SceneLayout
        self._load(layout, np.array(self.config.home_q))

    # ----- scene ---------------------------------------------------------------------------------
    def _load(self, layout: SceneLayout, q: Vec) -> None:
        self.model, self.index = build_model(layout, self.config.timestep, self.config.image_width,
                                             self.config.image_height, self.config.fovy_deg,
                                             self.config.calibration_board, self.config.camera_mount_offset)
        self.data = mujoco.MjData(self.model)
        self.layout = layout
        self._qadr = np.array(self.index.arm_qpos)
        self._dadr = np.array(self.index.arm_dof)
        self._hold_q = q.copy()
        self._motion: Motion | None = None
        self._stop_asked = threading.Event()  # stop() waits for the lock: step() yields it between two steps
        self._suction = False
        self._grip: _Grip | None = None
        self._quiet_steps = 0
        self._sense = np.zeros(self.model.ngeom, dtype=bool)
        self._sense[list(self.index.tool_geoms)] = True
        self._force6 = np.zeros(6)
        dofs = np.array([o.dof for o in self.index.objects], dtype=np.int64).reshape(-1, 1)
        self._lin_dofs = (dofs + np.arange(3)).ravel()
        self._ang_dofs = (dofs + 3 + np.arange(3)).ravel()
        self.data.qpos[self._qadr] = q
        mujoco.mj_forward(self.model, self.data)
        self.generation += 1
        self.revision += 1

    def reset(self, layout: SceneLayout) -> None:
        """New scene; the arm goes home, suction off, any motion is cancelled."""
        with self.lock:
            if self._motion is not None:
                self._motion.finish(ArmError.CANCELED, "the scene was reset")
            self._load(layout, np.array(self.config.home_q))
            self.changed.notify_all()
        self.log.info("scene (seed %d): %s", layout.seed, ", ".join(o.name for o in layout.objects))

    @property
    def time(self) -> float:
        """Simulated time (s) since the scene was loaded."""
        return float(self.data.time)

    # ----- stepping ------------------------------------------------------------------------------
    def step(self, n: int = 1) -> None:
        """Advance physics by n steps of config.timestep."""
        with self.lock:
            for _ in range(n):
                if self._stop_asked.is_set():  # a stop is waiting for the lock: let it in between two steps
                    break
                self._step_once()
            self.revision += 1

    def _step_once(self) -> None:
        m, d = self.model, self.data
        motion = self._motion
        if motion is not None:
            t = d.time - motion.start_time
            q, qd = motion.trajectory.sample(t)
            motion.progress = min(1.0, t / motion.trajectory.duration) if motion.trajectory.duration > 0 else 1.0
        else:
            q, qd = self._hold_q, np.zeros(6)
        d.qpos[self._qadr] = q
        d.qvel[self._dadr] = qd
        if self._grip is not None:
            self._drive_gripped(self._grip)
        mujoco.mj_step(m, d)
        d.qpos[self._qadr] = q  # the arm is position-controlled: contacts never push it off its path
        if motion is not None:
            self._supervise(motion, q)
        if self._suction and self._grip is None:
            self._try_grip()
        self._update_quiet()

    def _supervise(self, motion: Motion, q: Vec) -> None:
        force = self.tool_force()
        motion.peak_force = max(motion.peak_force, force)
        traj = motion.trajectory
        if traj.stop_on_contact and force >= self.config.contact_force:
            self._end_motion(motion, q, ArmError.NONE, f"contact: {force:.1f} N on the tool", contact=True)
        elif not traj.stop_on_contact and force >= self.config.protective_stop_force:
            self._end_motion(motion, q, ArmError.PROTECTIVE_STOP,
                             f"protective stop: {force:.0f} N on the tool (limit "
                             f"{self.config.protective_stop_force:.0f} N)")
        elif self.data.time - motion.start_time >= traj.duration:
            message = "no contact within max_travel" if traj.stop_on_contact else "target reached"
            self._end_motion(motion, traj.q[-1], ArmError.NONE, message)

    def _end_motion(self, motion: Motion, q: Vec, error: ArmError, message: str, contact: bool = False) -> None:
        self._hold_q = np.array(q, dtype=np.float64)
        self.data.qpos[self._qadr] = self._hold_q
        self.data.qvel[self._dadr] = 0.0
        self._motion = None
        motion.progress = 1.0 if error == ArmError.NONE and not contact else motion.progress
        motion.finish(error, message, contact)
        mujoco.mj_forward(self.model, self.data)

    def _update_quiet(self) -> None:
        v = self.data.qvel
        quiet = self._lin_dofs.size == 0 or (
            float(np.max(np.abs(v[self._lin_dofs]))) < SETTLED_SPEED
            and 0.1 * float(np.max(np.abs(v[self._ang_dofs]))) < SETTLED_SPEED)
        if self._motion is None and quiet:
            self._quiet_steps += 1
        else:
            self._quiet_steps = 0

    def settled(self) -> bool:
        """True when no motion runs and the objects have been at rest for SETTLED_STEPS steps."""
        with self.lock:
            return self._motion is None and self._quiet_steps >= SETTLED_STEPS

    def _wake(self) -> None:
        self._quiet_steps = 0
        self.revision += 1
        self.changed.notify_all()

    # ----- arm -----------------------------------------------------------------------------------
    def joint_positions(self) -> Vec:
        """Current joint angles (rad), ARM_JOINTS order."""
        with self.lock:
            return np.array(self.data.qpos[self._qadr], dtype=np.float64)

    def joint_velocities(self) -> Vec:
        """Current joint velocities (rad/s)."""
        with self.lock:
            return np.array(self.data.qvel[self._dadr], dtype=np.float64) if self._motion else np.zeros(6)

    def tcp_pose(self) -> Pose:
        """TCP (suction cup lip) in base_link."""
        with self.lock:
            return Pose.from_matrix(self.data.site_xpos[self.index.tcp_site],
                                    self.data.site_xmat[self.index.tcp_site].reshape(3, 3))

    def tool0_pose(self) -> Pose:
        """tool0 (flange) in base_link."""
        with self.lock:
            return Pose.from_matrix(self.data.site_xpos[self.index.tool0_site],
                                    self.data.site_xmat[self.index.tool0_site].reshape(3, 3))

    def start(self, trajectory: Trajectory, generation: int) -> Motion:
        """Start a planned trajectory. It must start at the current joint angles of this scene generation."""
        with self.lock:
            if generation != self.generation:
                raise RuntimeError("the scene was reset while the motion was planned")
            if self._motion is not None:
                raise RuntimeError("another motion is running")
            if float(np.max(np.abs(trajectory.q[0] - self.data.qpos[self._qadr]))) > 1e-6:
                raise RuntimeError("the trajectory does not start at the current joint angles")
            motion = Motion(trajectory, float(self.data.time))
            if trajectory.duration <= 0.0:
                motion.progress = 1.0
                motion.finish(ArmError.NONE, "already at the target")
                return motion
            self._motion = motion
            self._wake()
            return motion

    def stop(self, message: str = "stopped") -> bool:
        """Abort the running motion at once (the arm holds where it is). True if one was running."""
        self._stop_asked.set()  # the physics thread ends its chunk of steps after the current one
        try:
            with self.lock:
                motion = self._motion
                if motion is None:
                    return False
                self._end_motion(motion, np.array(self.data.qpos[self._qadr]), ArmError.CANCELED, message)
                self._wake()
                return True
        finally:
            self._stop_asked.clear()

    def busy(self) -> bool:
        with self.lock:
            return self._motion is not None

    def tool_force(self) -> float:
        """Magnitude (N) of the contact force on the cup and the gripped block from everything else."""
        with self.lock:
            m, d = self.model, self.data
            n = d.ncon
            if n == 0:
                return 0.0
            g1 = d.contact.geom1[:n]
            g2 = d.contact.geom2[:n]
            sense = self._sense
            mask = sense[g1] ^ sense[g2]
            if not mask.any():
                return 0.0
            total = np.zeros(3)
            for i in np.flatnonzero(mask):
                mujoco.mj_contactForce(m, d, int(i), self._force6)
                frame = d.contact.frame[i].reshape(3, 3)
                f = frame.T @ self._force6[:3]  # force on geom2 from geom1, world frame
                total += f if sense[g2[i]] else -f
            return float(np.linalg.norm(total))

    # ----- suction -------------------------------------------------------------------------------
    def set_suction(self, on: bool) -> None:
        """Switch the vacuum. On: grips a block the cup touches (now or later). Off: releases it."""
        with self.lock:
            self._suction = on
            if on and self._grip is None:
                self._try_grip()
            elif not on and self._grip is not None:
                self._release()
            self._wake()

    @property
    def suction(self) -> bool:
        with self.lock:
            return self._suction

    def holding(self) -> bool:
        """The vacuum sensor: a block is gripped, or a too-heavy block seals the cup."""
        with self.lock:
            if not self._suction:
                return False
            if self._grip is not None:
                return True
            return self._touching(heavy=True) is not None

    def held_object(self) -> str | None:
        with self.lock:
            return self._grip.obj.name if self._grip is not None else None

    def _touching(self, heavy: bool | None = None) -> ObjectIndex | None:
        """The block (or cup, by its closed top) whose surface the TCP touches (within SUCTION_RANGE)."""
        tcp = self.data.site_xpos[self.index.tcp_site]
        for obj in self.index.objects:
            if obj.category not in ("block", "cup") or (
                    heavy is not None and (obj.mass > SUCTION_PAYLOAD) != heavy):
                continue
            pos = self.data.xpos[obj.body]
            rot = self.data.xmat[obj.body].reshape(3, 3)
            local = rot.T @ (tcp - pos)
            if obj.category == "cup":
                dist = _cylinder_sdf(local - np.array([0.0, 0.0, CUP_HEIGHT / 2]), CUP_DIAMETER / 2, CUP_HEIGHT / 2)
            else:
                dist = _box_sdf(local, BLOCK_SIZE / 2)
            if SUCTION_RANGE[0] <= dist <= SUCTION_RANGE[1]:
                return obj
        return None

    def _try_grip(self) -> None:
        obj = self._touching(heavy=False)
        if obj is None:
            return
        tcp_p = self.data.site_xpos[self.index.tcp_site].copy()
        tcp_r = self.data.site_xmat[self.index.tcp_site].reshape(3, 3).copy()
        pos = self.data.xpos[obj.body].copy()
        rot = self.data.xmat[obj.body].reshape(3, 3).copy()
        self._grip = _Grip(obj, (tcp_r.T @ (pos - tcp_p), tcp_r.T @ rot))
        self._sense[list(obj.geoms)] = True
        self.log.debug("suction gripped the %s", obj.name)

    def _drive_gripped(self, grip: _Grip) -> None:
        """Put the gripped block where the TCP carries it, with the matching velocity."""
        m, d = self.model, self.data
        mujoco.mj_kinematics(m, d)
        tcp_p = d.site_xpos[self.index.tcp_site]
        tcp_r = d.site_xmat[self.index.tcp_site].reshape(3, 3)
        rel_p, rel_r = grip.relative
        pos = tcp_p + tcp_r @ rel_p
        a = grip.obj.qpos
        old = d.qpos[a:a + 3].copy()
        d.qpos[a:a + 3] = pos
        d.qpos[a + 3:a + 7] = xyzw_to_wxyz(mat_to_quat(tcp_r @ rel_r))
        d.qvel[grip.obj.dof:grip.obj.dof + 3] = (pos - old) / m.opt.timestep
        d.qvel[grip.obj.dof + 3:grip.obj.dof + 6] = 0.0

    def _release(self) -> None:
        assert self._grip is not None
        obj = self._grip.obj
        self._grip = None
        self._sense[list(obj.geoms)] = False
        std = self.config.place_noise_std
        if std > 0.0:
            a = obj.qpos
            dx, dy = self._noise.gauss(0.0, std), self._noise.gauss(0.0, std)
            self.data.qpos[a] += dx
            self.data.qpos[a + 1] += dy
            self.log.debug("place noise on the %s: (%.3f, %.3f) m", obj.name, dx, dy)
        self.data.qvel[obj.dof:obj.dof + 6] = 0.0
        mujoco.mj_forward(self.model, self.data)
        self.log.debug("suction released the %s", obj.name)

    # ----- ground truth --------------------------------------------------------------------------
    def objects(self) -> list[ObjectTruth]:
        with self.lock:
            held = self._grip.obj.name if self._grip is not None else None
            out = []
            for o in self.index.objects:
                p = self.data.xpos[o.body]
                q = wxyz_to_xyzw(self.data.xquat[o.body])
                out.append(ObjectTruth(
                    name=o.name, category=o.category, color=o.color,
                    position=(float(p[0]), float(p[1]), float(p[2])),
                    orientation=(float(q[0]), float(q[1]), float(q[2]), float(q[3])),
                    size=o.size, segmentation_id=o.segmentation_id, heavy=o.heavy, held=o.name == held,
                ))
            return out

    def ground_truth(self, stamp_s: float, frame: str = "base_link") -> Scene:
        """The ground-truth scene (source "ground_truth"): every object, then every named location
        (on the table, z = 0), and the held object; `stamp_s` is the observation time (s). A block under
        a cup (Statler's covers) is left out: this is what an oracle perceives."""
        objects = self.objects()
        hidden = self.covered(objects)
        scene_objects = [
            SceneObject(name=o.name, category=o.category, position=o.position, size=o.size,
                        segmentation_id=o.segmentation_id, color=o.color, orientation=o.orientation, heavy=o.heavy)
            for o in objects if o.name not in hidden
        ] + [SceneObject(name=n, category=LOCATION, position=(x, y, 0.0)) for n, (x, y) in LOCATIONS.items()]
        return Scene(frame=frame, stamp_s=stamp_s, source="ground_truth", objects=tuple(scene_objects),
                     held_objects=tuple(o.name for o in objects if o.held))

    def covered(self, objects: list[ObjectTruth] | None = None) -> dict[str, str]:
        """Blocks under a cup and the cup over each (kinematic_world's rule on the physical poses)."""
        objects = self.objects() if objects is None else objects
        if not any(o.category == "cup" for o in objects):
            return {}
        return self.kinematic_view(objects).covered()

    def kinematic_view(self, objects: list[ObjectTruth] | None = None) -> TabletopWorld:
        """The objects' current poses as a kinematic world (Statler's truth settles on it)."""
        objects = self.objects() if objects is None else objects
        return world_from_objects(
            SceneObject(name=o.name, category=o.category, position=o.position, color=o.color,
                        segmentation_id=o.segmentation_id, heavy=o.heavy) for o in objects)

    # ----- disturbances --------------------------------------------------------------------------
    def knock_tower(self, speed: float = 0.8) -> list[str]:
        """Push every block resting on another block sideways at `speed` (m/s). Returns their names.

        Raises ValueError if no block is stacked. The blocks then fall as physics steps.
        """
        with self.lock:
            held = self._grip.obj.name if self._grip is not None else None
            lifted = [o for o in self.index.objects
                      if o.category == "block" and o.name != held and self._stacked(o)]
            if not lifted:
                raise ValueError("there is no tower to knock over: no block rests on another block")
            angle = self._noise.uniform(0.0, 2 * math.pi)
            push = np.array([math.cos(angle), math.sin(angle), 0.15]) * speed
            for o in lifted:
                self.data.qvel[o.dof:o.dof + 3] = push
                self.data.qvel[o.dof + 3:o.dof + 6] = [self._noise.uniform(-5, 5) for _ in range(3)]
            self._wake()
            return [o.name for o in lifted]

    def _stacked(self, o: ObjectIndex) -> bool:
        """A block resting on another block (not on the table or a bowl's floor)."""
        z = float(self.data.xpos[o.body][2])
        for other in self.index.objects:
            if other is o or other.category != "block":
                continue
            op = self.data.xpos[other.body]
            if z > float(op[2]) + BLOCK_SIZE / 2 and math.hypot(*(self.data.xpos[o.body][:2] - op[:2])) < BLOCK_SIZE:
                return True
        return False

    def move_object(self, name: str, x: float, y: float) -> Pose:
        """Disturbance: put an object upright at (x, y) m, dropped onto whatever is below it.

        A gripped object is released first. Raises KeyError for an unknown object and ValueError for a
        point off the table. Returns the pose the object was put at (before it settles).
        """
        with self.lock:
            obj = self.index.object(name)
            if not (TABLE_X[0] + 0.05 <= x <= TABLE_X[1] - 0.05 and TABLE_Y[0] + 0.05 <= y <= TABLE_Y[1] - 0.05):
                raise ValueError(f"({x:.3f}, {y:.3f}) m is off the table (x {TABLE_X}, y {TABLE_Y} m)")
            if math.hypot(x, y) < 0.15:
                raise ValueError(f"({x:.3f}, {y:.3f}) m is inside the robot's base")
            if self._grip is not None and self._grip.obj.name == name:
                self._sense[list(obj.geoms)] = False
                self._grip = None
            z = self._support_height(obj, x, y) + (BLOCK_SIZE / 2 if obj.category == "block" else 0.0) + 0.002
            a = obj.qpos
            self.data.qpos[a:a + 3] = (x, y, z)
            self.data.qpos[a + 3:a + 7] = (1.0, 0.0, 0.0, 0.0)
            self.data.qvel[obj.dof:obj.dof + 6] = 0.0
            mujoco.mj_forward(self.model, self.data)
            self._wake()
            return Pose((x, y, z))

    def move_object_to_location(self, name: str, location: str) -> Pose:
        if location not in LOCATIONS:
            raise ValueError(f"unknown location {location!r}; known: {list(LOCATIONS)}")
        x, y = LOCATIONS[location]
        return self.move_object(name, x, y)

    def _support_height(self, obj: ObjectIndex, x: float, y: float) -> float:
        """Highest top surface (m) under an object put at (x, y), ignoring the object itself."""
        top = 0.0
        reach = (BLOCK_SIZE if obj.category == "block" else BOWL_DIAMETER) / 2
        for other in self.index.objects:
            if other is obj:
                continue
            p = self.data.xpos[other.body]
            d = math.hypot(x - float(p[0]), y - float(p[1]))
            if other.category == "block" and d < reach + BLOCK_SIZE / 2:
                top = max(top, float(p[2]) + BLOCK_SIZE / 2)
            elif other.category == "bowl" and d < reach + BOWL_DIAMETER / 2:
                inside = d < BOWL_DIAMETER / 2 - reach
                top = max(top, float(p[2]) + (BOWL_FLOOR if inside else BOWL_HEIGHT))
        return top

    def camera_pose(self, camera: str) -> Pose:
        """Optical frame (x right, y down, z forward) of a camera, in base_link."""
        with self.lock:
            cid = self.index.cameras[camera]
            rot = self.data.cam_xmat[cid].reshape(3, 3) @ np.diag([1.0, -1.0, -1.0])
            return Pose.from_matrix(self.data.cam_xpos[cid], rot)


def _box_sdf(p: Vec, half: float) -> float:
    """Signed distance (m) from point p to an axis-aligned cube of half-edge `half` at the origin."""
    q = np.abs(p) - half
    outside = float(np.linalg.norm(np.maximum(q, 0.0)))
    inside = min(float(np.max(q)), 0.0)
    return outside + inside


def _cylinder_sdf(p: Vec, radius: float, half_height: float) -> float:
    """Signed distance (m) from point p to a solid z-axis cylinder centred at the origin."""
    d = np.array([math.hypot(float(p[0]), float(p[1])) - radius, abs(float(p[2])) - half_height])
    return min(float(np.max(d)), 0.0) + float(np.linalg.norm(np.maximum(d, 0.0)))
