"""Backend `mujoco` (robot `sim`): the MuJoCo tabletop (tabletop_sim) driven like the real UR5e, through its
`arm/command` action (RosSimArm) with the same safety layer and pick-and-place primitive.

Parameters (config/robots/sim.yaml): `arm.*` (the primitive, `tcp_offset`, `command_timeout`, `motion_timeout`),
`safety.*`, `approval.*`, `scene_topic`, `place_categories`, `use_place_points`, `status_rate`.
"""
from __future__ import annotations

from dataclasses import dataclass

from monologue_common.core.settings import ParamReader
from skills_node.core.arm_settings import ArmSettings, read_arm
from skills_node.plugin import BackendHandle, BackendHost, BackendPlugin


@dataclass(frozen=True)
class SimArmSettings:
    arm: ArmSettings
    tcp_offset: tuple[float, ...]  # m, rad: flange -> TCP of the simulated tool (tabletop_sim's TCP_OFFSET)
    command_timeout: float  # s, arm/command goal acceptance and suction
    motion_timeout: float  # s, one motion


def read(r: ParamReader) -> SimArmSettings | None:
    arm = read_arm(r, "arm")
    tcp_offset = r.numbers("arm.tcp_offset", 6)
    command = r.number("arm.command_timeout", low=0.0, low_open=True)
    motion = r.number("arm.motion_timeout", low=0.0, low_open=True)
    return SimArmSettings(arm, tcp_offset, command, motion) if arm is not None and not r.errors else None


def create(host: BackendHost, s: SimArmSettings) -> BackendHandle:
    from rclpy.callback_groups import ReentrantCallbackGroup

    from skills_node.arm_ros import ArmRosBridge

    from .sim_arm import RosSimArm

    arm = RosSimArm(host.node, ReentrantCallbackGroup(), s.command_timeout, s.motion_timeout)
    # forward_kinematics (UR DH) agrees with tabletop_sim's base_link for its HOME_Q (checked at
    # start-up: the home TCP must lie in the workspace box)
    bridge = ArmRosBridge(host.node, host.logger("skills.sim"), "sim", arm, s.tcp_offset, s.arm, host.frame_id)
    return BackendHandle(bridge.backend, bridge.close)


PLUGIN = BackendPlugin("mujoco", read, create, "the MuJoCo simulator's arm through arm/command")
