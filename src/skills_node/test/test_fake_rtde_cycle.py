"""Issue 32: the fake UR5e takes commands at its control cycle (2 ms, an e-Series controller's 500 Hz), as
ur_rtde's commands reach the control script once per cycle; it used to apply them at once, faster than
the SDK. The e-stop benchmark (R4) measures until the cycle that took the stopL."""
from __future__ import annotations

import math
import time
from typing import Any

from skills_node.robots.ur5e.testing.fake_rtde import FakeUrController

PERIOD = 0.002  # s


def _taken(robot: FakeUrController) -> list[tuple[str, float]]:
    seen: list[tuple[str, float]] = []

    def log(name: str, _args: tuple[Any, ...], taken: float) -> None:
        seen.append((name, taken))

    robot.on_command = log
    return seen


def test_commands_take_effect_at_a_control_cycle_never_before_they_were_sent() -> None:
    robot = FakeUrController()
    assert robot.control_period == PERIOD  # the default is the real controller's
    seen = _taken(robot)
    ctrl = robot.factories().control("ur")
    sent = []
    for _ in range(20):
        sent.append(time.time())
        ctrl.stopL(2.0, False)
    assert [n for n, _ in seen] == ["stopL"] * 20
    for (_, taken), t_sent in zip(seen, sent):
        cycles = (taken - robot._wall_start) / PERIOD
        assert math.isclose(cycles, round(cycles), abs_tol=1e-3)  # on the controller's cycle grid
        assert taken > t_sent - 1e-6  # never before the call
    assert len({t for _, t in seen}) == 20  # a blocking call returns after its cycle: one command per cycle


def test_a_controller_without_a_cycle_takes_commands_at_once() -> None:
    robot = FakeUrController(control_period=0.0)
    seen = _taken(robot)
    before = time.time()
    robot.factories().control("ur").stopJ(3.0, False)
    assert seen[0][0] == "stopJ" and seen[0][1] >= before
