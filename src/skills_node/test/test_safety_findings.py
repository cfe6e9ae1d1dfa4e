"""Issue 20's safety findings (docs/reliability.md, "Safety findings"), each refused before anything moves:
absurdly slow motions (a minimum speed and a longest motion duration; RtdeArm bounds every wait), joint
moves whose path leaves the workspace, and stop decelerations against the acceleration limits."""
from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from monologue_common.core.settings import parameters_from_files
from skills_node.core.arm import MotionInterrupted, MotionRefused, Refusal, TcpPose
from skills_node.core.arm_backend import ArmSkillBackend, PickPlaceConfig, SceneLocator
from skills_node.core.safety import JOINT_PATH_STEP, SafeArm, SafetyLimits
from skills_node.plugin import settings_from_parameters
from skills_node.robots.ur5e.core.rtde import RtdeArm
from skills_node.robots.ur5e.testing.fake_rtde import DOWN_POSE, HOME_Q, FakeUrController

LOG = logging.getLogger("test.safety_findings")
CONFIG = Path(__file__).resolve().parents[3] / "config"
TINY = 5e-324  # the smallest positive float: "any speed > 0" used to accept it


def down(x: float, y: float, z: float) -> TcpPose:
    return TcpPose(x, y, z, *DOWN_POSE)


def skills_params(robot: str) -> dict[str, object]:
    """The skills node's parameters for `robot` from config/ (monologue.yaml, then robots/<robot>.yaml)."""
    params = parameters_from_files([CONFIG / "monologue.yaml", CONFIG / "robots" / f"{robot}.yaml"], "skills")
    return {**params, "backend": robot}


# ----- 1. absurdly slow motions ------------------------------------------------------------------
@pytest.mark.parametrize(("call", "refusal", "words"), [
    (lambda a: a.move_linear(down(0.5, 0.1, 0.2), TINY, 0.5), Refusal.SPEED, "must be in [0.005, 0.5] m/s"),
    (lambda a: a.move_linear(down(0.5, 0.1, 0.2), 0.001, 0.5), Refusal.SPEED, "speed 0.001 m/s"),
    (lambda a: a.move_joints(HOME_Q, TINY, 1.0), Refusal.JOINT_SPEED, "must be in [0.05, 1] rad/s"),
    (lambda a: a.move_until_contact((0.0, 0.0, -1.0), TINY, 0.1), Refusal.SPEED, "contact speed"),
    # a valid speed with an absurd acceleration: the ramp alone would take ~1e161 s
    (lambda a: a.move_linear(down(0.5, 0.1, 0.2), 0.25, TINY), Refusal.DURATION, "longer than 30 s"),
    (lambda a: a.move_joints([q + 0.3 for q in HOME_Q[:1]] + list(HOME_Q[1:]), 0.5, 1e-9), Refusal.DURATION,
     "joint move of 0.300 rad"),
    # in every rate limit, but 0.25 m at 0.006 m/s takes 42 s
    (lambda a: a.move_until_contact((0.0, 0.0, -1.0), 0.006, 0.25), Refusal.DURATION, "contact move of up to"),
])
def test_absurdly_slow_motions_are_refused_before_anything_is_sent(
        safe_arm: SafeArm, robot: FakeUrController, call: Callable[[SafeArm], object], refusal: Refusal,
        words: str) -> None:
    sent = list(robot.commands)
    started = time.monotonic()
    with pytest.raises(MotionRefused) as err:
        call(safe_arm)
    assert err.value.refusal == refusal
    assert words in err.value.reason
    assert robot.commands == sent
    assert time.monotonic() - started < 1.0  # refused, not waited for


def test_a_long_but_valid_motion_still_runs(safe_arm: SafeArm, robot: FakeUrController) -> None:
    """At the minimum speed across 5 cm: 10 s nominal, within the 30 s limit (the fake runs 20x)."""
    safe_arm.move_linear(down(0.40, 0.0, 0.30), 0.25, 0.5)
    safe_arm.move_linear(down(0.45, 0.0, 0.30), 0.005, 0.5)
    assert safe_arm.tcp_pose().distance_to(down(0.45, 0.0, 0.30)) < 0.003


def test_rtde_arm_bounds_its_own_wait_and_refuses_a_motion_that_would_never_end(
        arm: RtdeArm, robot: FakeUrController) -> None:
    """Without the layer above, RtdeArm computed an infinite time limit and waited forever."""
    sent = list(robot.commands)
    started = time.monotonic()
    for move in (lambda: arm.move_linear(down(0.5, 0.1, 0.2), TINY, 0.5),
                 lambda: arm.move_joints([q + 0.2 for q in HOME_Q], TINY, 1.0),
                 lambda: arm.move_until_contact((0.0, 0.0, -1.0), TINY, 0.05)):
        with pytest.raises(MotionRefused) as err:
            move()
        assert err.value.refusal == Refusal.DURATION and "exceeds 300 s" in err.value.reason
    assert robot.commands == sent
    assert time.monotonic() - started < 1.0


def test_the_minimum_speeds_and_longest_duration_are_validated_at_startup(
        limits_for: Callable[..., SafetyLimits]) -> None:
    make_limits = limits_for
    with pytest.raises(ValueError, match="min_speed"):
        make_limits(min_speed=0.6)  # above max_speed 0.5
    with pytest.raises(ValueError, match="max_motion_duration must be > 0"):
        make_limits(max_motion_duration=math.inf)
    params = skills_params("ur5e")
    del params["safety.min_speed"]
    params["safety.max_motion_duration"] = 0.0
    with pytest.raises(ValueError) as e:
        settings_from_parameters(params)
    assert "safety.min_speed: missing" in str(e.value) and "safety.max_motion_duration: must be in (0" in str(e.value)


def test_a_pick_and_place_too_slow_for_the_limits_is_refused_at_startup(
        safe_arm: SafeArm, locator: SceneLocator, pick_config: PickPlaceConfig,
        limits_for: Callable[..., SafetyLimits]) -> None:
    with pytest.raises(ValueError, match="contact speed 0.001 m/s must be in"):
        ArmSkillBackend(safe_arm, locator, replace(pick_config, contact_speed=0.001), LOG, approval_timeout_s=1.0)
    slow = SafeArm(safe_arm.arm, limits_for(max_motion_duration=2.0), LOG, approval_timeout_s=1.0)
    with pytest.raises(ValueError, match="a travel across the workspace"):
        ArmSkillBackend(slow, locator, pick_config, LOG, approval_timeout_s=1.0)


# ----- 2. joint paths ----------------------------------------------------------------------------
# From HOME_Q to here the TCP ends inside the workspace (0.264, 0.146, 0.118) m, but on the way it goes
# through the table, down to z = -0.137 m (joint-space interpolation, as UR's moveJ).
THROUGH_THE_TABLE = (1.64, 0.06, 3.19, -3.0, -0.79, -1.48)


def test_a_joint_move_whose_path_goes_through_the_table_is_refused(
        safe_arm: SafeArm, robot: FakeUrController, fk: Callable[..., TcpPose]) -> None:
    end = fk(THROUGH_THE_TABLE)
    assert 0.25 < end.x < 0.75 and abs(end.y) < 0.35 and end.z > 0.1  # the end point alone passes
    lowest = min(fk([a + (b - a) * k / 100 for a, b in zip(HOME_Q, THROUGH_THE_TABLE)]).z for k in range(101))
    assert lowest < -0.1
    safe_arm.check_joint_target(THROUGH_THE_TABLE, 0.5, 1.0)  # the old check (end point only) accepts it
    sent = list(robot.commands)
    with pytest.raises(MotionRefused) as err:
        safe_arm.move_joints(THROUGH_THE_TABLE, 0.5, 1.0)
    assert err.value.refusal in (Refusal.WORKSPACE, Refusal.MIN_HEIGHT)
    assert "TCP on the way to the joint target" in err.value.reason
    assert robot.commands == sent and not robot.protective_stopped


def test_joint_moves_inside_the_workspace_still_run(safe_arm: SafeArm, robot: FakeUrController,
                                                    fk: Callable[..., TcpPose]) -> None:
    q = [HOME_Q[0] + 0.3, *HOME_Q[1:]]  # turn the base: the TCP sweeps an arc inside the box
    safe_arm.move_joints(q, 0.5, 1.0)
    safe_arm.move_joints(HOME_Q, 0.5, 1.0)
    assert [c[0] for c in robot.motion_commands()[-2:]] == ["moveJ", "moveJ"]
    assert max(abs(a - b) for a, b in zip(robot.q, HOME_Q)) < 0.01


def test_the_path_is_sampled_at_the_named_spacing(fk: Callable[..., TcpPose],
                                                  limits_for: Callable[..., SafetyLimits]) -> None:
    limits = limits_for()
    seen: list[list[float]] = []

    def recording_fk(q: list[float]) -> TcpPose:
        seen.append(list(q))
        return fk(q)

    target = [HOME_Q[0] + 0.5, *HOME_Q[1:]]
    limits.check_joint_path(HOME_Q, target, recording_fk)
    steps = [b[0] - a[0] for a, b in zip(seen, seen[1:])]
    assert len(seen) == math.ceil(0.5 / JOINT_PATH_STEP) - 1  # start and end excluded (checked elsewhere)
    assert max(steps) <= JOINT_PATH_STEP + 1e-12


# ----- 4. stop deceleration -------------------------------------------------------------------------
def test_stops_decelerate_at_least_as_hard_as_the_motion_limit(safe_arm: SafeArm, robot: FakeUrController) -> None:
    """A stop is exempt from max_acceleration (it must end the motion fast) but never below it."""
    robot.set_time_scale(1.0)
    threading.Timer(0.1, safe_arm.engage_estop, args=("test",)).start()
    with pytest.raises(MotionInterrupted):
        safe_arm.move_linear(down(0.70, 0.30, 0.30), 0.1, 0.5)
    name, args = robot.motion_commands()[-1]
    assert name == "stopL" and args[0] >= safe_arm.limits.max_acceleration


@pytest.mark.parametrize(("override", "words"), [
    ({"ur5e.stop_deceleration": 0.5}, "ur5e.stop_deceleration: 0.5 must be at least safety.max_acceleration (1)"),
    ({"ur5e.contact.acceleration": 2.0}, "ur5e.contact.acceleration: 2 m/s^2 exceeds safety.max_acceleration 1"),
    ({"safety.max_joint_acceleration": 4.0, "safety.max_joint_speed": 1.0},
     "the stopJ deceleration: 3 must be at least safety.max_joint_acceleration (4)"),
])
def test_decelerations_against_the_limits_are_validated_at_startup(override: dict[str, object], words: str) -> None:
    settings_from_parameters(skills_params("ur5e"))  # the shipped file passes
    with pytest.raises(ValueError) as e:
        settings_from_parameters({**skills_params("ur5e"), **override})
    assert words in str(e.value)
