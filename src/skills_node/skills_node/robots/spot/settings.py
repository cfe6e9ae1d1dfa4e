"""Settings of backend `spot`: Boston Dynamics Spot through bosdyn-client (core/robot.py `SpotRobot`) with
SayCan's kitchen skills (core/skills.py `SpotKitchenSkills`). ROS-free.

Skills (GetAffordances names; texts in config/prompts/saycan.yaml and im_kitchen.yaml, as sim_kitchen's):
find(object), go_to(location), pick_up(object), put_down(object), bring_to_user(), open_drawer(drawer),
close_drawer(drawer), put_in_drawer(object, drawer), stand(), sit(); `done` is the planner's. A skill runs
only if it is in `spot.skills` (the allow-list). Preconditions and affordances are the kitchen world's on
Spot's belief (odometry / GraphNav, the gripper, perception's scene); a failed precondition is
PRECONDITION_FAILED with the kitchen's `failed_precondition` line, as on sim_kitchen.

This module reads the settings (ParamReader, every value from config/robots/spot.yaml; every problem
reported at once); plugin.py wires SpotRobot, the skills and the ROS bridge (ros.py: robot/status,
`estop`, `estop_reset`, the hand camera as Image / CameraInfo / TF - or, for a camera of our own such as a
RealSense on the arm (`spot.camera_mount`), the TF it needs -, perception's scene for the belief, the
approval gate). Credentials come only from the environment (BOSDYN_CLIENT_USERNAME /
BOSDYN_CLIENT_PASSWORD). Bring-up and what is verified only against the fake: docs/spot.md.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields

from monologue_common.core.settings import ParamReader

from .core.skills import SKILLS, SpotKitchenSettings

ESTOP_MODES = ("settle", "cut")  # as core.robot.ESTOP_MODES (read without importing bosdyn)
APPROVAL_MODES = ("off", "skill")  # skill: a person approves every skill before it moves Spot
MOUNT_PARENTS = ("hand", "body")  # Spot frames a camera of our own can be mounted on


@dataclass(frozen=True)
class SpotCameraSettings:
    rate: float  # Hz, hand images published as camera/* (0 = off)
    color_source: str  # ImageClient source of the colour image (rgb8)
    depth_source: str  # depth aligned to the colour image (16UC1)
    namespace: str  # topic prefix, "camera" -> camera/color/image_raw ...


@dataclass(frozen=True)
class SpotCameraMountSettings:
    """A camera of our own (a RealSense on the arm, published by its own node) whose pose perception looks up
    on /tf: odom -> body -> hand from the robot state at `rate` Hz, and `parent` -> `frame` (static)."""

    rate: float  # Hz, odom -> body (-> hand) on /tf (0 = off)
    parent: str  # Spot frame the camera is fixed to: hand | body
    frame: str  # the camera's optical frame id, as in its images' headers
    # parent_T_frame: (x, y, z) m, unit quaternion (x, y, z, w)
    pose: tuple[tuple[float, float, float], tuple[float, float, float, float]]


@dataclass(frozen=True)
class SpotBackendSettings:
    robot: object  # core.robot.SpotSettings (typed loosely so that reading needs no bosdyn import)
    skills: SpotKitchenSettings
    camera: SpotCameraSettings
    scene_topic: str  # perception's scene description (odom frame) for the belief
    approval_mode: str  # off | skill
    approval_timeout: float  # s to answer; no answer = refused
    approval_action: str  # AskHuman action server
    power_on_at_start: bool  # power the motors on after connecting (and after an e-stop reset)
    stand_at_start: bool  # stand after powering on (needs power_on_at_start)
    status_rate: float  # Hz, robot/status (also sent on every change)
    camera_mount: SpotCameraMountSettings


def _per_name(r: ParamReader, key: str, names: tuple[str, ...], width: int, what: str) -> dict[str, tuple[float, ...]]:
    values = r.numbers(key)
    r.check(len(values) == width * len(names), f"{key}: {width} numbers ({what}) per entry of {list(names)} "
            f"({width * len(names)}), got {len(values)}")
    if len(values) != width * len(names):
        return {}
    return {n: tuple(values[width * i:width * (i + 1)]) for i, n in enumerate(names)}


def _pairs(r: ParamReader, key: str, sep: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in r.strings(key):
        name, ok, value = item.partition(sep)
        r.check(bool(ok and name.strip() and value.strip()), f"{key}: {item!r} is not 'location{sep}id'")
        if ok:
            out[name.strip()] = value.strip()
    return out


def _vec3(v: tuple[float, ...]) -> tuple[float, float, float]:
    return (v[0], v[1], v[2]) if len(v) == 3 else (0.0, 0.0, 0.0)


def _camera_mount(r: ParamReader, camera_rate: float) -> SpotCameraMountSettings:
    rate = r.number("spot.camera_mount.rate", low=0.0, high=100.0)
    parent = r.string("spot.camera_mount.parent", MOUNT_PARENTS)
    frame = r.string("spot.camera_mount.frame", nonempty=True)
    pose = r.numbers("spot.camera_mount.pose", 7)
    q = pose[3:] if len(pose) == 7 else (0.0, 0.0, 0.0, 1.0)
    norm = math.sqrt(sum(c * c for c in q))
    r.check(abs(norm - 1.0) < 1e-3, f"spot.camera_mount.pose: the quaternion {list(q)} (x y z w) must be a unit "
            f"quaternion, its norm is {norm:.4f}")
    r.check(rate == 0.0 or camera_rate == 0.0, "spot.camera.rate and spot.camera_mount.rate both publish odom -> "
            "body on /tf: set one of them to 0 (the hand camera or a camera of our own)")
    r.check(frame.strip() not in ("odom", "body", "hand", "vision", "flat_body"),
            f"spot.camera_mount.frame: {frame!r} is a Spot frame; name the camera's optical frame")
    xyz = (pose[0], pose[1], pose[2]) if len(pose) == 7 else (0.0, 0.0, 0.0)
    quat = (q[0] / norm, q[1] / norm, q[2] / norm, q[3] / norm) if norm > 0.0 else (0.0, 0.0, 0.0, 1.0)
    return SpotCameraMountSettings(rate, parent, frame.strip(), (xyz, quat))


def read(r: ParamReader) -> SpotBackendSettings | None:
    from .core.robot import SpotSettings, ca_cert_problem

    def positive(name: str) -> float:
        return r.number(f"spot.{name}", low=0.0, low_open=True)

    robot_values = dict(
        hostname=r.string("spot.hostname", nonempty=True),
        port=r.integer("spot.port", low=1, high=65535),
        client_name=r.string("spot.client_name", nonempty=True),
        ca_cert_path=r.string("spot.ca_cert_path").strip(),
        rpc_timeout_s=positive("rpc_timeout"), connect_timeout_s=positive("connect_timeout"),
        command_timeout_s=positive("command_timeout"), feedback_period_s=positive("feedback_period"),
        take_lease=r.boolean("spot.take_lease"), lease_check_period_s=positive("lease_check_period"),
        estop_timeout_s=positive("estop_timeout"),
        estop_mode=r.string("spot.estop_mode", ESTOP_MODES), estop_force_setup=r.boolean("spot.estop_force_setup"),
        max_linear_velocity=positive("max_linear_velocity"), max_angular_velocity=positive("max_angular_velocity"),
        max_go_to_distance=positive("max_go_to_distance"), max_move_duration=positive("max_move_duration"),
    )
    cert_problem = ca_cert_problem(str(robot_values["ca_cert_path"]))
    r.check(cert_problem is None, f"spot.ca_cert_path: {cert_problem}")
    extra = {f.name for f in fields(SpotSettings)} - set(robot_values)
    if "max_arm_reach" in extra:  # the arm's reach limit (core.robot): m from the body origin
        robot_values["max_arm_reach"] = positive("max_arm_reach")
    skills = r.strings("spot.skills")
    unknown = [s for s in skills if s not in SKILLS]
    r.check(not unknown, f"spot.skills: unknown skills {unknown}; known: {list(SKILLS)}")
    names = r.strings("spot.location_names")
    r.check(bool(names), "spot.location_names: name at least one location")
    r.check(len(set(names)) == len(names), f"spot.location_names: duplicates in {list(names)}")
    poses = _per_name(r, "spot.location_poses", names, 3, "x m, y m, yaw rad")
    places = _per_name(r, "spot.place_points", names, 3, "x, y, z m in the body frame")
    drawers = r.strings("spot.drawers")
    handles = _per_name(r, "spot.drawer_handles", drawers, 3, "x, y, z m in the kitchen frame")
    gmin, gmax = r.numbers("spot.geofence_min", 2), r.numbers("spot.geofence_max", 2)  # m
    r.check(len(gmin) != 2 or len(gmax) != 2 or all(a < b for a, b in zip(gmin, gmax, strict=True)),
            f"spot.geofence_min {list(gmin)} must be below spot.geofence_max {list(gmax)}")
    kitchen = dict(
        skills=skills,
        locations={n: (p[0], p[1], p[2]) for n, p in poses.items()},
        start_location=r.string("spot.start_location", nonempty=True),
        geofence_min=(gmin[0], gmin[1]) if len(gmin) == 2 else (0.0, 0.0),
        geofence_max=(gmax[0], gmax[1]) if len(gmax) == 2 else (0.0, 0.0),
        go_to_time_margin=r.number("spot.go_to_time_margin", low=0.0),
        available_affordance=r.number("spot.affordance.available", low=0.0, high=1.0),
        reached_affordance=r.number("spot.affordance.reached", low=0.0, high=1.0),
        waypoints=_pairs(r, "spot.waypoints", "="),
        objects=r.strings("spot.objects"),
        drawers=drawers,
        open_drawers=r.strings("spot.open_drawers"),
        drawer_handles={d: _vec3(v) for d, v in handles.items()},
        search_locations=r.strings("spot.search_locations"),
        arrive_tolerance=positive("arrive_tolerance"),
        object_radius=positive("object_radius"),
        look_timeout=positive("look_timeout"),
        color_source=r.string("spot.camera.color_source", nonempty=True),
        depth_source=r.string("spot.camera.depth_source", nonempty=True),
        arm_timeout=positive("arm_timeout"),
        grasp_timeout=positive("grasp_timeout"),
        place_points={n: _vec3(v) for n, v in places.items()},
        handover_point=_vec3(r.numbers("spot.handover_point", 3)),
        drawer_pull=positive("drawer_pull"),
        drawer_drop=_vec3(r.numbers("spot.drawer_drop", 3)),
    )
    camera = SpotCameraSettings(r.number("spot.camera.rate", low=0.0, high=30.0),
                                str(kitchen["color_source"]), str(kitchen["depth_source"]),
                                r.string("spot.camera.namespace", nonempty=True))
    mount = _camera_mount(r, camera.rate)
    scene_topic = r.string("scene_topic", nonempty=True)
    mode = r.string("approval.mode", APPROVAL_MODES)
    approval_timeout = r.number("approval.timeout", low=0.0, low_open=True)
    approval_action = r.string("approval.action", nonempty=True)
    power_on = r.boolean("spot.power_on_at_start")
    stand = r.boolean("spot.stand_at_start")
    r.check(power_on or not stand, "spot.stand_at_start needs spot.power_on_at_start")
    rate = r.number("status_rate", low=0.0, high=1000.0, low_open=True)
    if r.errors:
        return None
    fence = SpotKitchenSettings(**kitchen)  # type: ignore[arg-type]
    for problem in fence.problems():
        r.check(False, f"spot: {problem}")
    reach = float(robot_values["max_go_to_distance"])  # type: ignore[arg-type]
    walked = {n: p for n, p in fence.locations.items() if n not in fence.waypoints}  # odom walks (go_to_odom)
    far = [(a, b) for a in walked for b in walked if math.dist(walked[a][:2], walked[b][:2]) > reach]
    r.check(not far, f"spot.max_go_to_distance: {reach:g} m is shorter than the walk between "
            f"{' and '.join(far[0]) if far else ''}: that go_to would always be refused")
    try:
        robot = SpotSettings(**robot_values)  # type: ignore[arg-type]
    except ValueError as e:
        r.check(False, f"spot: {e}")
        return None
    if r.errors:
        return None
    return SpotBackendSettings(robot, fence, camera, scene_topic, mode, approval_timeout, approval_action,
                               power_on, stand, rate, mount)
