"""Settings shared by the arm backends (`mujoco`, `ur5e`): the safety limits (`safety.*`), the human
approval gate (`approval.*`), the scene they pick from, robot/status and the pick-and-place primitive
(under the backend's own block). ROS-free."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from monologue_common.core.settings import ParamReader

from .arm import TcpPose
from .arm_backend import SKILL_RULES, PickPlaceConfig
from .frames import Transform
from .kinematics import matrix_to_rotvec, pose_to_matrix, rotvec_to_quaternion
from .safety import SafetyLimits

T = TypeVar("T")

APPROVAL_MODES = ("off", "skill", "motion")


@dataclass(frozen=True)
class ArmSettings:
    limits: SafetyLimits
    pick: PickPlaceConfig
    approval_mode: str  # off | skill (once per skill) | motion (before every motion)
    approval_timeout: float  # s to answer; no answer = refused
    approval_action: str  # AskHuman action server
    scene_topic: str  # perception's scene description
    place_categories: tuple[str, ...]  # categories that are place targets only
    use_place_points: bool  # place at perception's IM-R place point of a plate/bowl (else its centre)
    status_rate: float  # Hz, robot/status (also sent on every change)


def _vec3(v: tuple[float, ...]) -> tuple[float, float, float]:
    return (v[0], v[1], v[2]) if len(v) == 3 else (0.0, 0.0, 0.0)


def _build(r: ParamReader, make: Callable[[], T], block: str) -> T | None:
    """`make()` once the parameters read so far have no errors; its ValueError becomes an error of
    `block`. None if anything is wrong (the errors are in `r`)."""
    if r.errors:
        return None
    try:
        return make()
    except ValueError as e:
        r.check(False, f"{block}: {e}")
        return None


def read_limits(r: ParamReader) -> SafetyLimits | None:
    rules = {rule.name: rule for rule in SKILL_RULES}
    allowed = r.strings("safety.skills")
    unknown = [s for s in allowed if s not in rules]
    r.check(not unknown, f"safety.skills: unknown skills {unknown}; known: {sorted(rules)}")
    make = partial(SafetyLimits,  # built after the error check below
        workspace_min=_vec3(r.numbers("safety.workspace_min", 3)),
        workspace_max=_vec3(r.numbers("safety.workspace_max", 3)),
        min_height=r.number("safety.min_height"),  # m
        max_speed=r.number("safety.max_speed", low=0.0, low_open=True),  # m/s
        max_acceleration=r.number("safety.max_acceleration", low=0.0, low_open=True),  # m/s^2
        max_joint_speed=r.number("safety.max_joint_speed", low=0.0, low_open=True),  # rad/s
        max_joint_acceleration=r.number("safety.max_joint_acceleration", low=0.0, low_open=True),  # rad/s^2
        max_contact_travel=r.number("safety.max_contact_travel", low=0.0, low_open=True),  # m
        min_speed=r.number("safety.min_speed", low=0.0, low_open=True),  # m/s
        min_joint_speed=r.number("safety.min_joint_speed", low=0.0, low_open=True),  # rad/s
        max_motion_duration=r.number("safety.max_motion_duration", low=0.0, low_open=True),  # s
        joint_min=r.numbers("safety.joint_min", 6), joint_max=r.numbers("safety.joint_max", 6),  # rad
        skills=tuple(rules[s] for s in allowed if s in rules),
    )
    return _build(r, make, "safety")


def read_pick_place(r: ParamReader, block: str) -> PickPlaceConfig | None:
    """The primitive's parameters under `block.` (e.g. `ur5e.hover_height`)."""
    def num(key: str, low: float = 0.0) -> float:
        return r.number(f"{block}.{key}", low=low)

    home = r.numbers(f"{block}.home_joints", allow=(1, 6))  # rad; one value = no home skill
    make = partial(PickPlaceConfig,  # built after the error check below
        hover_height=num("hover_height"), orientation=_vec3(r.numbers(f"{block}.orientation", 3)),
        speed=num("speed"), acceleration=num("acceleration"), contact_speed=num("contact.speed"),
        contact_margin=num("contact.margin"), joint_speed=num("joint_speed"),
        joint_acceleration=num("joint_acceleration"), home_joints=home if len(home) == 6 else (),
        grip_delay_s=num("grip_delay"), release_delay_s=num("release_delay"),
        check_grasp=r.boolean(f"{block}.check_grasp"), return_home=r.boolean(f"{block}.return_home"),
    )
    return _build(r, make, block)


def read_arm(r: ParamReader, block: str) -> ArmSettings | None:
    """Everything an arm backend shares; None (with the errors in `r`) if anything is wrong."""
    limits = read_limits(r)
    pick = read_pick_place(r, block)
    mode = r.string("approval.mode", APPROVAL_MODES)
    timeout = r.number("approval.timeout", low=0.0, low_open=True)
    action = r.string("approval.action", nonempty=True)
    topic = r.string("scene_topic", nonempty=True)
    categories = r.strings("place_categories")
    use_points = r.boolean("use_place_points")
    rate = r.number("status_rate", low=0.0, high=1000.0, low_open=True)
    if limits is None or pick is None or r.errors:
        return None
    return ArmSettings(limits, pick, mode, timeout, action, topic, categories, use_points, rate)


# ---- the arm on /tf (a wrist camera's pose for perception) -------------------------------------------

@dataclass(frozen=True)
class ArmTf:
    """What an arm backend publishes on /tf (frame names: skills_node.core.frames): base -> tool0 from the
    measured TCP pose, the fixed UR frames, and the wrist camera's hand-eye calibration."""

    rate: float  # Hz, base -> tool0
    camera_frame: str  # the camera's optical frame, the images' frame_id (camera_color_optical_frame)
    camera_link_frame: str  # the camera driver's body frame above it (camera_link); "" = none
    camera_in_tool0: Transform  # hand-eye calibration: the optical frame's pose in tool0 (m, quaternion)


def read_tf(r: ParamReader, block: str) -> ArmTf:
    rate = r.number(f"{block}.tf_rate", low=0.0, high=500.0, low_open=True)
    camera = r.string(f"{block}.hand_eye.child_frame", nonempty=True)
    link = r.string(f"{block}.hand_eye.camera_link")
    r.check(link != camera, f"{block}.hand_eye.camera_link: must differ from child_frame {camera!r} (or be '')")
    t = r.numbers(f"{block}.hand_eye.translation", 3)
    q = r.numbers(f"{block}.hand_eye.rotation", 4)
    norm = math.sqrt(sum(v * v for v in q)) if len(q) == 4 else 0.0
    r.check(abs(norm - 1.0) < 1e-3 or len(q) != 4,
            f"{block}.hand_eye.rotation: must be a unit quaternion [x, y, z, w], got {list(q)}")
    translation = (t[0], t[1], t[2]) if len(t) == 3 else (0.0, 0.0, 0.0)
    rotation = (q[0], q[1], q[2], q[3]) if len(q) == 4 else (0.0, 0.0, 0.0, 1.0)
    return ArmTf(rate, camera, link, (translation, rotation))


def flange_in_base(tcp: TcpPose, tcp_offset: TcpPose) -> Transform:
    """tool0's pose (the flange with an all-zero TCP) in the controller's `base` frame from the TCP's (m,
    rad; ur_rtde's getActualTCPPose includes the TCP offset) and the tool0 -> TCP offset."""
    t = pose_to_matrix(tcp)
    o = pose_to_matrix(tcp_offset)
    r_o = [row[:3] for row in o[:3]]
    r_inv = [[r_o[j][i] for j in range(3)] for i in range(3)]  # inverse rotation of the offset
    p_inv = [-sum(r_inv[i][k] * o[k][3] for k in range(3)) for i in range(3)]
    rot = [[sum(t[i][k] * r_inv[k][j] for k in range(3)) for j in range(3)] for i in range(3)]
    pos = tuple(sum(t[i][k] * p_inv[k] for k in range(3)) + t[i][3] for i in range(3))
    return (pos[0], pos[1], pos[2]), rotvec_to_quaternion(*matrix_to_rotvec(rot))
