"""UR5e kinematics: home pose, IK over the whole workspace, unreachable targets, planned motions."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tabletop_sim.core.geometry import TOOL_DOWN_QUAT, Pose, quat_to_mat, rotation_angle
from tabletop_sim.core.kinematics import HOME_Q, PARK_Q, ArmKinematics
from tabletop_sim.core.motion import (
    ArmError,
    MotionError,
    plan_joints,
    plan_linear,
    plan_until_contact,
    trapezoid,
)

DOWN = quat_to_mat(np.array(TOOL_DOWN_QUAT))


def test_home_pose_points_the_tool_down_above_the_workspace(kinematics: ArmKinematics) -> None:
    p, r = kinematics.tcp(HOME_Q)
    assert np.allclose(p, [0.575, 0.0, 0.55], atol=1e-3)
    assert rotation_angle(r, DOWN) < 1e-3
    assert kinematics.within_limits(HOME_Q) and kinematics.within_limits(PARK_Q)
    tool0 = kinematics.tool0_pose(HOME_Q)
    assert tool0.position[2] == pytest.approx(0.65, abs=1e-3)  # TCP_OFFSET above the TCP


@pytest.mark.parametrize("z", [0.04, 0.19, 0.35])
def test_ik_reaches_the_whole_workspace_with_the_tool_down(kinematics: ArmKinematics, z: float) -> None:
    for x in np.linspace(0.25, 0.75, 5):
        for y in np.linspace(-0.35, 0.35, 5):
            target = np.array([x, y, z])
            q = kinematics.solve(target, DOWN, HOME_Q)
            assert q is not None, f"no IK for {target}"
            p, r = kinematics.tcp(q)
            assert np.linalg.norm(p - target) < 2e-4 and rotation_angle(r, DOWN) < 2e-3
            assert kinematics.within_limits(q)


def test_ik_fails_outside_the_reach(kinematics: ArmKinematics) -> None:
    assert kinematics.solve(np.array([1.5, 0.0, 0.2]), DOWN, HOME_Q) is None
    assert kinematics.solve_pose(Pose((0.0, 0.0, 1.5), TOOL_DOWN_QUAT), [HOME_Q]) is None


def test_trapezoid_respects_speed_and_acceleration() -> None:
    duration, t_acc, v = trapezoid(0.5, 0.25, 1.2)
    assert v == pytest.approx(0.25) and t_acc == pytest.approx(0.25 / 1.2)
    assert duration == pytest.approx(2 * t_acc + (0.5 - 1.2 * t_acc**2) / 0.25)
    duration, t_acc, v = trapezoid(0.01, 1.0, 1.0)  # too short to reach the speed
    assert v < 1.0 and duration == pytest.approx(2 * math.sqrt(0.01))


def test_linear_plan_is_a_straight_line_within_the_limits(kinematics: ArmKinematics) -> None:
    q0 = np.array(HOME_Q)
    p0, _ = kinematics.tcp(q0)
    goal = np.array([0.4, -0.25, 0.1])
    traj = plan_linear(kinematics, q0, goal, DOWN, speed=0.5, acceleration=2.0)
    line = goal - p0
    tcp = np.array([kinematics.tcp(q)[0] for q in traj.q])
    dist_to_line = np.linalg.norm(np.cross(tcp - p0, line), axis=1) / np.linalg.norm(line)
    assert dist_to_line.max() < 1e-3
    assert np.linalg.norm(tcp[-1] - goal) < 2e-4
    speeds = np.linalg.norm(np.diff(tcp, axis=0), axis=1) / np.diff(traj.times)
    assert speeds.max() <= 0.5 * 1.01
    assert traj.duration == pytest.approx(trapezoid(float(np.linalg.norm(line)), 0.5, 2.0)[0], rel=0.02)


def test_bad_commands_are_refused_before_planning(kinematics: ArmKinematics) -> None:
    q0 = np.array(HOME_Q)
    cases = [
        (lambda: plan_linear(kinematics, q0, np.array([0.5, 0, 0.1]), DOWN, 2.0, 1.0), ArmError.INVALID),
        (lambda: plan_linear(kinematics, q0, np.array([0.5, 0, 0.1]), DOWN, 0.2, -1.0), ArmError.INVALID),
        (lambda: plan_linear(kinematics, q0, np.array([0.5, 0, -0.05]), DOWN, 0.2, 1.0), ArmError.UNREACHABLE),
        (lambda: plan_linear(kinematics, q0, np.array([1.4, 0, 0.3]), DOWN, 0.2, 1.0), ArmError.UNREACHABLE),
        (lambda: plan_joints(kinematics, q0, q0 + np.array([0, 0, 4.0, 0, 0, 0]), 1.0, 1.0), ArmError.UNREACHABLE),
        (lambda: plan_joints(kinematics, q0, q0, 9.0, 1.0), ArmError.INVALID),
        (lambda: plan_until_contact(kinematics, q0, np.zeros(3), 0.05, 0.1, 0.5), ArmError.INVALID),
        (lambda: plan_until_contact(kinematics, q0, np.array([0, 0, -1.0]), 0.5, 0.1, 0.5), ArmError.INVALID),
    ]
    for plan, code in cases:
        with pytest.raises(MotionError) as e:
            plan()
        assert e.value.code == code, e.value.message


def test_move_until_contact_never_aims_below_the_table(kinematics: ArmKinematics) -> None:
    traj = plan_until_contact(kinematics, np.array(HOME_Q), np.array([0.0, 0.0, -1.0]), 0.1, 1.0, 0.5)
    assert kinematics.tcp(traj.q[-1])[0][2] == pytest.approx(-0.02, abs=1e-3)
    assert traj.stop_on_contact
