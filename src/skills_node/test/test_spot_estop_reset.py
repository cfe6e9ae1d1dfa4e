"""Issue 32: Spot's `estop` runs on its own thread and `estop_reset` on the node's executor (the reset powers
on and stands: seconds, which used to hold the e-stop's callback group). The two now run at the same time,
so a reset may clear only the e-stops that came before it: an e-stop that arrives while the reset is
releasing Spot's e-stop stays latched (and cut). An e-stop before the skills exist latches them too."""
from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from skills_node.testing.host import skills_params

CONFIG = Path(__file__).resolve().parents[3] / "config"
LIVENESS_S = 30.0  # s: bound of every wait


class _Robot:
    """The SpotRobot calls the bridge makes on e-stop and reset; `estop_release` can be held open."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.releasing = threading.Event()
        self.finish_release = threading.Event()
        self.finish_release.set()

    def estop(self) -> None:  # the configured spot.estop_mode (settle or cut)
        self.calls.append("estop")

    def estop_release(self) -> None:
        self.calls.append("release")
        self.releasing.set()
        assert self.finish_release.wait(LIVENESS_S)

    def power_on(self) -> None:
        self.calls.append("power_on")

    def stand(self) -> None:
        self.calls.append("stand")


@pytest.fixture
def bridge() -> Iterator[Any]:
    import rclpy
    from rclpy.context import Context
    from rclpy.node import Node

    from skills_node.plugin import settings_from_parameters
    from skills_node.robots.spot.ros import SpotRosBridge

    class Bridge(SpotRosBridge):
        def publish_status(self) -> None:  # no SpotStatus from the stand-in robot
            return None

    params = {**skills_params(CONFIG, "spot"), "spot.camera.rate": 0.0}
    settings, _ = settings_from_parameters(params)
    context = Context()
    rclpy.init(context=context)
    node = Node("skills", context=context)
    b = Bridge(node, logging.getLogger("test.spot"), _Robot(), None, settings.backend_settings,  # type: ignore[arg-type]
               "odom")
    yield b
    b.close()
    node.destroy_node()
    rclpy.shutdown(context=context)


def _skills() -> Any:
    return SimpleNamespace(estop_latched=False, estop_reason="")


def test_an_estop_during_the_reset_stays_latched(bridge: Any) -> None:
    from std_msgs.msg import Bool

    from monologue_interfaces.srv import ResetEstop

    robot: _Robot = bridge._robot
    skills = _skills()
    bridge.attach(skills)
    bridge._on_estop(Bool(data=True))
    assert skills.estop_latched and robot.calls == ["estop"]
    robot.finish_release.clear()
    answers: list[Any] = []
    reset = threading.Thread(target=lambda: answers.append(bridge._on_reset(ResetEstop.Request(),
                                                                             ResetEstop.Response())))
    reset.start()
    assert robot.releasing.wait(LIVENESS_S)
    bridge._on_estop(Bool(data=True))  # a second e-stop while Spot's e-stop is being released
    robot.finish_release.set()
    reset.join(LIVENESS_S)
    assert answers and not answers[0].success and "still latched" in answers[0].message
    assert skills.estop_latched and skills.estop_reason == "estop topic"
    assert robot.calls == ["estop", "release", "estop"]  # no power on, no stand


def test_a_reset_after_the_estop_clears_it_and_restores_the_posture(bridge: Any) -> None:
    from std_msgs.msg import Bool

    from monologue_interfaces.srv import ResetEstop

    skills = _skills()
    bridge.attach(skills)
    bridge._on_estop(Bool(data=True))
    res = bridge._on_reset(ResetEstop.Request(), ResetEstop.Response())
    assert res.success and not skills.estop_latched
    assert bridge._robot.calls[:2] == ["estop", "release"]


def test_an_estop_before_the_skills_exist_cuts_and_latches_them(bridge: Any) -> None:
    from std_msgs.msg import Bool

    bridge._on_estop(Bool(data=True))
    assert bridge._robot.calls == ["estop"]
    skills = _skills()
    bridge.attach(skills)
    assert skills.estop_latched and skills.estop_reason == "estop topic"
