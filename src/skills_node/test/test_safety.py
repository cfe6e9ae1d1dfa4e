"""The safety layer: limits refuse targets before anything is sent, e-stop latch, approval gate; UR5e FK."""
from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable

import pytest

from skills_node.core.arm import ArmFault, FaultKind, MotionInterrupted, MotionRefused, Refusal, TcpPose
from skills_node.core.kinematics import forward_kinematics, matrix_to_rotvec, rotvec_to_matrix
from skills_node.core.safety import SafeArm, SafetyLimits, SkillRule, is_approval
from skills_node.core.types import SkillError, SkillRejected
from skills_node.robots.ur5e.core.rtde import RtdeArm
from skills_node.robots.ur5e.testing.fake_rtde import DOWN_POSE, HOME_Q, FakeUrController

LOG = logging.getLogger("test.safety")


def down(x: float, y: float, z: float) -> TcpPose:
    return TcpPose(x, y, z, *DOWN_POSE)


@pytest.mark.parametrize(("call", "refusal", "words"), [
    (lambda a: a.move_linear(down(0.90, 0.0, 0.2), 0.25, 0.5), Refusal.WORKSPACE, "x = 0.900 m is outside"),
    (lambda a: a.move_linear(down(0.5, -0.5, 0.2), 0.25, 0.5), Refusal.WORKSPACE, "y = -0.500 m"),
    (lambda a: a.move_linear(down(0.5, 0.0, 0.6), 0.25, 0.5), Refusal.WORKSPACE, "z = 0.600 m"),
    (lambda a: a.move_linear(down(0.5, 0.0, 0.002), 0.25, 0.5), Refusal.MIN_HEIGHT, "below the minimum height"),
    (lambda a: a.move_linear(down(0.5, 0.0, math.nan), 0.25, 0.5), Refusal.INVALID_TARGET, "non-finite"),
    (lambda a: a.move_linear(down(0.5, 0.0, 0.2), 0.8, 0.5), Refusal.SPEED, "speed 0.8 m/s must be in [0.005, 0.5]"),
    (lambda a: a.move_linear(down(0.5, 0.0, 0.2), 0.25, 3.0), Refusal.ACCELERATION, "acceleration 3"),
    (lambda a: a.move_linear(down(0.5, 0.0, 0.2), 0.0, 0.5), Refusal.SPEED, "speed 0"),
    (lambda a: a.move_joints(HOME_Q, 2.0, 1.0), Refusal.JOINT_SPEED, "joint speed 2 rad/s"),
    (lambda a: a.move_joints(HOME_Q, 0.5, 5.0), Refusal.JOINT_ACCELERATION, "joint acceleration 5"),
    (lambda a: a.move_joints([7.0, 0, 0, 0, 0, 0], 0.5, 1.0), Refusal.JOINT_LIMITS, "joint 0 target 7.000 rad"),
    (lambda a: a.move_joints([0.0] * 6, 0.5, 1.0), Refusal.WORKSPACE, "TCP at the joint target x = -0.817"),
    (lambda a: a.move_joints([0.0] * 5, 0.5, 1.0), Refusal.INVALID_TARGET, "6 finite values"),
    (lambda a: a.move_until_contact((0.0, 0.0, -1.0), 0.05, 0.4), Refusal.CONTACT_TRAVEL, "contact travel 0.400"),
    (lambda a: a.move_until_contact((0.0, 0.0, 0.0), 0.05, 0.1), Refusal.INVALID_TARGET, "not a direction"),
    (lambda a: a.move_until_contact((-1.0, 0.0, 0.0), 0.05, 0.2), Refusal.WORKSPACE,
     "farthest point of the contact move x = 0.200 m is outside"),
])
def test_out_of_limit_targets_are_refused_with_nothing_sent(
        safe_arm: SafeArm, robot: FakeUrController, call: Callable[[SafeArm], object], refusal: Refusal,
        words: str) -> None:
    sent = list(robot.commands)
    with pytest.raises(MotionRefused) as err:
        call(safe_arm)
    assert err.value.refusal == refusal
    assert words in err.value.reason
    assert robot.commands == sent


def test_contact_move_that_could_go_below_the_minimum_height_is_refused(
        safe_arm: SafeArm, robot: FakeUrController) -> None:
    safe_arm.move_linear(down(0.5, 0.0, 0.2), 0.25, 0.5)
    sent = list(robot.commands)
    with pytest.raises(MotionRefused) as err:
        safe_arm.move_until_contact((0.0, 0.0, -1.0), 0.05, 0.198)
    assert err.value.refusal == Refusal.MIN_HEIGHT
    assert "farthest point of the contact move z = 0.002 m is below the minimum height 0.005 m" in err.value.reason
    assert robot.commands == sent


def test_in_limit_motion_passes(safe_arm: SafeArm, robot: FakeUrController) -> None:
    safe_arm.move_linear(down(0.5, 0.1, 0.2), 0.25, 0.5)
    assert robot.motion_commands()[-1][0] == "moveL"
    assert safe_arm.tcp_pose().distance_to(down(0.5, 0.1, 0.2)) < 1e-9


def test_estop_stops_the_running_motion_at_once_and_latches(safe_arm: SafeArm, robot: FakeUrController) -> None:
    robot.set_time_scale(1.0)
    threading.Timer(0.1, safe_arm.engage_estop, args=("estop topic",)).start()
    started = time.monotonic()
    with pytest.raises(MotionInterrupted):
        safe_arm.move_linear(down(0.70, 0.30, 0.30), 0.1, 0.5)
    assert time.monotonic() - started < 0.5
    assert robot.motion_commands()[-1][0] == "stopL"
    assert safe_arm.estop_latched and safe_arm.estop_reason == "estop topic"
    sent = list(robot.commands)
    for call in (lambda: safe_arm.move_linear(down(0.5, 0.0, 0.2), 0.25, 0.5),
                 lambda: safe_arm.move_joints(HOME_Q, 0.5, 1.0),
                 lambda: safe_arm.move_until_contact((0.0, 0.0, -1.0), 0.05, 0.1),
                 lambda: safe_arm.set_suction(False)):  # releasing would drop a held object
        with pytest.raises(MotionRefused) as err:
            call()
        assert err.value.refusal == Refusal.ESTOP and "latched (estop topic)" in err.value.reason
    assert robot.commands == sent
    assert safe_arm.reset_estop() and not safe_arm.reset_estop()
    robot.set_time_scale(20.0)
    safe_arm.move_linear(down(0.5, 0.0, 0.2), 0.25, 0.5)


def test_estop_racing_a_motion_command_still_stops_it(robot: FakeUrController, arm: RtdeArm,
                                                      limits_for: Callable[..., SafetyLimits]) -> None:
    """The latch is set while a motion has passed its checks but its moveL is not sent yet."""
    robot.set_time_scale(1.0)
    safe = SafeArm(arm, limits_for(), LOG, approval_timeout_s=30.0)
    gate = threading.Event()
    original = arm.move_linear

    def slow_start(pose: TcpPose, speed: float, acceleration: float) -> None:
        gate.wait(2.0)  # the e-stop lands here, before the command reaches the robot
        original(pose, speed, acceleration)

    arm.move_linear = slow_start  # type: ignore[method-assign]
    raised: list[BaseException] = []

    def move() -> None:
        try:
            safe.move_linear(down(0.70, 0.30, 0.30), 0.1, 0.5)
        except Exception as e:
            raised.append(e)

    t = threading.Thread(target=move)
    t.start()
    time.sleep(0.05)
    safe.engage_estop("race")
    gate.set()
    t.join(3.0)
    assert not t.is_alive()
    assert len(raised) == 1 and isinstance(raised[0], MotionInterrupted)
    sent = [c[0] for c in robot.motion_commands()]
    assert "moveL" in sent and sent[-1] == "stopL"  # stopped again after the late moveL
    assert robot._segment is None and robot.pose[0] < 0.45


def test_a_faulted_arm_is_refused_before_sending(safe_arm: SafeArm, robot: FakeUrController, arm: RtdeArm) -> None:
    robot.trigger_protective_stop()
    deadline = time.monotonic() + 2.0
    while arm.status().ok and time.monotonic() < deadline:
        time.sleep(0.01)
    sent = list(robot.commands)
    with pytest.raises(ArmFault) as err:
        safe_arm.move_linear(down(0.5, 0.0, 0.2), 0.25, 0.5)
    assert err.value.kind == FaultKind.PROTECTIVE_STOP and robot.commands == sent


def test_motion_approval_gate(arm: RtdeArm, robot: FakeUrController, limits_for: Callable[..., SafetyLimits]) -> None:
    answers = [False, True]
    asked: list[tuple[str, float]] = []

    class Person:
        def approve(self, request: str, timeout_s: float) -> bool:
            asked.append((request, timeout_s))
            return answers.pop(0)

    safe = SafeArm(arm, limits_for(), LOG, approval=Person(), approval_timeout_s=7.0)
    sent = list(robot.commands)
    with pytest.raises(MotionRefused) as err:
        safe.move_linear(down(0.5, 0.0, 0.2), 0.25, 0.5)
    assert err.value.refusal == Refusal.NOT_APPROVED and robot.commands == sent
    safe.move_linear(down(0.5, 0.0, 0.2), 0.25, 0.5)
    assert robot.motion_commands()[-1][0] == "moveL"
    assert asked[0] == ("move linearly to (0.500, 0.000, 0.200) m, rotvec (0.000, 3.142, 0.000) rad at 0.25 m/s", 7.0)
    # out-of-limit targets are refused without bothering the person
    with pytest.raises(MotionRefused):
        safe.move_linear(down(0.9, 0.0, 0.2), 0.25, 0.5)
    assert len(asked) == 2


def test_skill_allow_list(limits_for: Callable[..., SafetyLimits]) -> None:
    limits = limits_for(skills=(SkillRule("pick_place", ("object", "target")),))
    assert limits.check_skill("pick_place", ["red block", "blue bowl"]).name == "pick_place"
    cases = [("home", [], SkillError.UNKNOWN_SKILL, "not on the allow-list ['pick_place']"),
             ("pick_place", ["a"], SkillError.INVALID_ARGUMENTS, "takes 2 argument(s) (object, target), got 1"),
             ("pick_place", ["a", " "], SkillError.INVALID_ARGUMENTS, "argument target must be"),
             ("pick_place", ["a" * 65, "b"], SkillError.INVALID_ARGUMENTS, "argument object must be 1-64")]
    for skill, args, error, words in cases:
        with pytest.raises(SkillRejected) as err:
            limits.check_skill(skill, args)
        assert err.value.error == error and words in err.value.message


@pytest.mark.parametrize(("overrides", "words"), [
    ({"workspace_min": (0.8, -0.3, 0.0)}, "workspace x: need finite min < max"),
    ({"max_speed": 0.0}, "max_speed must be > 0"),
    ({"max_joint_acceleration": math.inf}, "max_joint_acceleration must be > 0"),
    ({"joint_min": (0.0,) * 5}, "joint_min and joint_max need 6 values"),
    ({"skills": (SkillRule("a"), SkillRule("a"))}, "duplicate skills"),
])
def test_bad_limits_are_rejected_at_startup(limits_for: Callable[..., SafetyLimits], overrides: dict[str, object],
                                           words: str) -> None:
    with pytest.raises(ValueError, match=words):
        limits_for(**overrides)


def test_ur5e_forward_kinematics() -> None:
    # all joints at zero: the arm lies along -x (UR's published zero pose)
    p = forward_kinematics([0.0] * 6)
    assert p.position == pytest.approx((-0.8172, -0.2329, 0.0628), abs=1e-4)
    # the TCP offset is applied along the flange z axis; q1 = pi mirrors the arm to +x
    home = forward_kinematics(HOME_Q, TcpPose(0.0, 0.0, 0.1))
    flange = forward_kinematics(HOME_Q)
    assert home.position == pytest.approx((flange.x, flange.y, flange.z - 0.1), abs=1e-9)
    assert home.x == pytest.approx(0.4919, abs=1e-4)
    # and the tool points down: its z axis is -z of the base
    r = rotvec_to_matrix(home.rx, home.ry, home.rz)
    assert [r[0][2], r[1][2], r[2][2]] == pytest.approx([0.0, 0.0, -1.0], abs=1e-6)


@pytest.mark.parametrize("rv", [(0.0, math.pi, 0.0), (0.3, -0.2, 1.0), (2.221, -2.221, 0.0), (0.0, 0.0, 0.0)])
def test_rotation_vector_round_trip(rv: tuple[float, float, float]) -> None:
    back = rotvec_to_matrix(*matrix_to_rotvec(rotvec_to_matrix(*rv)))
    assert back == [pytest.approx(row, abs=1e-6) for row in rotvec_to_matrix(*rv)]


@pytest.mark.parametrize(("answer", "approved"), [("yes", True), (" Y ", True), ("OK.", True), ("approve", True),
                                                  ("no", False), ("", False), ("yes, but slowly", False)])
def test_free_text_approval(answer: str, approved: bool) -> None:
    assert is_approval(answer) is approved
