"""Fixtures: a fake UR5e behind ur_rtde's API, the RtdeArm on it, the safety layer and the skill backend."""
from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from skills_node.core.arm import TcpPose
from skills_node.core.arm_backend import SKILL_RULES, ArmSkillBackend, PickPlaceConfig, SceneEntry, SceneLocator
from skills_node.core.kinematics import forward_kinematics
from skills_node.core.safety import SafeArm, SafetyLimits
from skills_node.robots.ur5e.core.rtde import EndEffectorIO, RtdeArm, RtdeArmConfig, UrPorts
from skills_node.robots.ur5e.testing.fake_rtde import HOME_Q, FakeObject, FakeUrController

LOG = logging.getLogger("test.ur5e")
TCP_OFFSET = (0.0, 0.0, 0.1, 0.0, 0.0, 0.0)  # m, rad: a 10 cm suction tool
PLACE_CATEGORIES = ("bowl", "plate", "location")  # place targets only (the skills node's place_categories)


def make_limits(**overrides: object) -> SafetyLimits:
    values: dict[str, object] = dict(
        workspace_min=(0.25, -0.35, 0.0), workspace_max=(0.75, 0.35, 0.50), min_height=0.005,
        max_speed=0.5, max_acceleration=1.0, max_joint_speed=1.0, max_joint_acceleration=2.0,
        max_contact_travel=0.25, min_speed=0.005, min_joint_speed=0.05, max_motion_duration=30.0,
        joint_min=(-2 * math.pi,) * 6, joint_max=(2 * math.pi,) * 6, skills=SKILL_RULES,
    )
    values.update(overrides)
    return SafetyLimits(**values)  # type: ignore[arg-type]


def scene_objects() -> list[FakeObject]:
    return [
        FakeObject("red block", 0.45, 0.10, size=0.04),
        FakeObject("green block", 0.55, -0.10, size=0.04),
        FakeObject("heavy block", 0.40, -0.20, size=0.04, liftable=False),
        FakeObject("blue plate", 0.60, 0.15, size=0.01),
        FakeObject("far block", 0.90, 0.00, size=0.04),  # outside the workspace box
    ]


def locator_for(robot: FakeUrController) -> SceneLocator:
    """What perception would report: the top-centre of every object (m, base frame)."""
    loc = SceneLocator(PLACE_CATEGORIES, use_place_points=True)
    loc.update([SceneEntry(o.name, "plate" if "plate" in o.name else "block", (o.x, o.y, o.top))
                for o in robot.objects])
    return loc


@pytest.fixture
def robot_objects() -> list[FakeObject]:
    """The objects on the fake UR5e's table (a test module may override this fixture)."""
    return scene_objects()


@pytest.fixture
def robot(robot_objects: list[FakeObject]) -> Iterator[FakeUrController]:
    r = FakeUrController(time_scale=20.0, objects=robot_objects)
    yield r
    r.release()


@pytest.fixture
def arm_config() -> RtdeArmConfig:
    return RtdeArmConfig(
        host="192.0.2.10", tcp_offset=TCP_OFFSET, payload_mass=0.4, payload_cog=(0.0, 0.0, 0.05),
        end_effector=EndEffectorIO("tool", 0, active_high=True, sense_input=16,  # vacuum sensor on tool input 0
                                   sense_active_high=True),
        contact_force=5.0, contact_acceleration=0.5, stop_deceleration=2.0,
        probe=False, monitor_period_s=0.004, connect_timeout_s=1.0, command_timeout_s=1.0,
        stale_timeout_s=0.3, reconnect_period_s=0.0, motion_timeout_margin_s=2.0,
        ports=UrPorts(dashboard=29999, rtde=30004, script=30003),  # not probed
    )


@pytest.fixture
def make_arm(robot: FakeUrController, arm_config: RtdeArmConfig) -> Iterator[Callable[..., RtdeArm]]:
    arms: list[RtdeArm] = []

    def make(config: RtdeArmConfig | None = None, connect: bool = True, **kwargs: object) -> RtdeArm:
        arm = RtdeArm(config or arm_config, robot.factories(), LOG, **kwargs)  # type: ignore[arg-type]
        arms.append(arm)
        if connect:
            arm.connect()
            arm.start_monitor()
        return arm

    yield make
    robot.release()
    for a in arms:
        a.close()


@pytest.fixture
def arm(make_arm: Callable[..., RtdeArm]) -> RtdeArm:
    return make_arm()


@pytest.fixture
def limits_for() -> Callable[..., SafetyLimits]:
    """make_limits(**overrides)."""
    return make_limits


@pytest.fixture
def fk() -> Callable[..., TcpPose]:
    """UR5e forward kinematics with the test tool's TCP offset."""
    return lambda q: forward_kinematics(q, TcpPose(*TCP_OFFSET))


@pytest.fixture
def safe_arm(arm: RtdeArm, fk: Callable[..., TcpPose]) -> SafeArm:
    return SafeArm(arm, make_limits(), LOG, forward_kinematics=fk, approval_timeout_s=30.0)


@pytest.fixture
def locator(robot: FakeUrController) -> SceneLocator:
    return locator_for(robot)


@pytest.fixture
def pick_config() -> PickPlaceConfig:
    return PickPlaceConfig(hover_height=0.15, orientation=(0.0, math.pi, 0.0), speed=0.25, acceleration=0.5,
                           contact_speed=0.05, contact_margin=0.05, joint_speed=0.5, joint_acceleration=1.0,
                           home_joints=HOME_Q, grip_delay_s=0.02, release_delay_s=0.02, check_grasp=True,
                           return_home=False)


@pytest.fixture
def backend(safe_arm: SafeArm, locator: SceneLocator, pick_config: PickPlaceConfig) -> ArmSkillBackend:
    return ArmSkillBackend(safe_arm, locator, pick_config, LOG, approval_timeout_s=30.0)


@pytest.fixture
def standing_spot() -> Iterator[Callable[..., Any]]:
    """standing_spot(fake, settings, credentials) -> a SpotRobot connected to the started FakeSpot `fake`, powered
    on and standing; every robot and fake is closed after the test."""
    from skills_node.robots.spot.core.robot import SpotRobot

    opened: list[tuple[Any, Any]] = []

    def start(fake: Any, settings: Any, credentials: Any) -> SpotRobot:
        robot = SpotRobot(settings, credentials, logging.getLogger("test.spot"))
        opened.append((robot, fake))
        robot.connect()
        robot.power_on()
        robot.stand()
        return robot

    yield start
    for robot, fake in opened:
        robot.close()
        fake.stop()
