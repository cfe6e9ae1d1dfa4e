"""R2 short (docs/reliability.md): 500 random and adversarial motion targets through the safety layer on
the simulator's arm port, the fake ur_rtde and the fake Spot (monologue_eval/reliability/r2_motion.py;
`make reliability` runs 10,000), and the allow-list / SafeArm refusing injected requests (R7's layer)."""
from __future__ import annotations

from monologue_eval.reliability import r2_motion


def test_no_motion_outside_the_limits_reaches_an_arm_and_every_refusal_says_why() -> None:
    tallies = r2_motion.measure(500, seed=20)
    assert set(tallies) == {"sim", "ur5e", "spot"}
    for name, t in tallies.items():
        assert t.violations == 0, (name, t.examples)
        assert t.silent_refusals == 0, name
        assert t.refused > 0 and t.reached > 0, name  # both sides of every limit were exercised
        assert t.other_errors == 0, (name, t.examples)  # no protective stop: no joint path through the table
    assert sum(t.targets for t in tallies.values()) == 500
    # issue 20's findings are among the adversarial targets: absurdly slow motions, joint paths leaving the
    # workspace, far Spot goals and long Spot velocity commands, each refused before it was sent
    for name in ("sim", "ur5e"):
        assert {"duration", "joint path", "speed"} <= set(tallies[name].refusals), tallies[name].refusals
    assert {"distance", "duration"} <= set(tallies["spot"].refusals), tallies["spot"].refusals


def test_the_arm_side_check_sees_slow_motions_and_joint_paths_through_the_table() -> None:
    lim = r2_motion.limits_of("ur5e")
    assert "speed" in r2_motion.check_cartesian(lim, (0.5, 0.0, 0.3), 5e-324, 0.5, "moveL")
    assert "longer than" in r2_motion.check_cartesian(lim, (0.5, 0.0, 0.3), 0.25, 1e-12, "moveL", (0.4, 0.0, 0.3))
    from skills_node.core.arm import TcpPose
    from skills_node.core.kinematics import forward_kinematics
    from skills_node.robots.ur5e.testing.fake_rtde import HOME_Q

    def fk(q: object) -> TcpPose:
        return forward_kinematics(q, TcpPose(0.0, 0.0, 0.1, 0.0, 0.0, 0.0))  # type: ignore[arg-type]

    through_the_table = (1.64, 0.06, 3.19, -3.0, -0.79, -1.48)  # ends inside the box, dips to z = -0.14 m
    lim = r2_motion.limits_of("sim")  # joints within +-2 pi
    assert r2_motion.check_joint_motion(lim, through_the_table, 0.5, 1.0, fk) == ""  # the end alone passes
    assert "joint path leaves the workspace" in r2_motion.check_joint_motion(
        lim, through_the_table, 0.5, 1.0, fk, start=HOME_Q)


def test_the_arm_side_check_sees_a_violation() -> None:
    lim = r2_motion.limits_of("sim")
    x_out = lim.workspace_max[0] + 0.01
    assert "outside" in r2_motion.check_cartesian(lim, (x_out, 0.0, 0.3), 0.1, 0.1, "moveL")
    assert "speed" in r2_motion.check_cartesian(lim, (0.5, 0.0, 0.3), lim.max_speed * 2, 0.1, "moveL")
    assert r2_motion.check_cartesian(lim, (0.5, 0.0, 0.3), lim.max_speed, lim.max_acceleration, "moveL") == ""
