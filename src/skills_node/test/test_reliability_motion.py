"""R2 short (docs/reliability.md): 500 random and adversarial motion targets through the safety layer on
the simulator's arm port, the fake ur_rtde and the fake Spot (benchmarks/reliability/r2_motion.py;
`make reliability` runs 10,000), and the allow-list / SafeArm refusing injected requests (R7's layer)."""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.reliability import r2_motion  # noqa: E402


def test_no_motion_outside_the_limits_reaches_an_arm_and_every_refusal_says_why() -> None:
    tallies = r2_motion.measure(500, seed=20)
    assert set(tallies) == {"sim", "ur5e", "spot"}
    for name, t in tallies.items():
        assert t.violations == 0, (name, t.examples)
        assert t.silent_refusals == 0, name
        assert t.refused > 0 and t.reached > 0, name  # both sides of every limit were exercised
    assert sum(t.targets for t in tallies.values()) == 500


def test_the_arm_side_check_sees_a_violation() -> None:
    lim = r2_motion.limits_of("sim")
    x_out = lim.workspace_max[0] + 0.01
    assert "outside" in r2_motion.check_cartesian(lim, (x_out, 0.0, 0.3), 0.1, 0.1, "moveL")
    assert "speed" in r2_motion.check_cartesian(lim, (0.5, 0.0, 0.3), lim.max_speed * 2, 0.1, "moveL")
    assert r2_motion.check_cartesian(lim, (0.5, 0.0, 0.3), lim.max_speed, lim.max_acceleration, "moveL") == ""
