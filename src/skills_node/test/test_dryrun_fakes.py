"""The dry run's fake processes (fake:=true): the tabletop truth for the oracle detector, the fake Spot's command
line. ROS-free, fast."""
from __future__ import annotations

import pytest

from skills_node.robots.spot.testing import serve
from skills_node.robots.ur5e.testing.fake_controller import robot_from_scene
from skills_node.robots.ur5e.testing.fake_tabletop_truth import truth_objects

SCENE = {"objects": [{"name": "red block", "x": 0.45, "y": 0.10, "size": 0.04, "liftable": True},
                     {"name": "blue bowl", "x": 0.55, "y": -0.15, "size": 0.12, "liftable": False}]}


def test_the_truth_is_the_scene_on_the_table() -> None:
    block, bowl = truth_objects(SCENE)
    assert (block.name, block.category, block.color) == ("red block", "block", "red")
    assert block.position == pytest.approx((0.45, 0.10, 0.02)) and block.size == pytest.approx((0.04, 0.04, 0.04))
    assert bowl.category == "bowl" and bowl.position == pytest.approx((0.55, -0.15, 0.0))


def test_the_truth_follows_the_controllers_state() -> None:
    state = {"objects": [{"name": "red block", "x": 0.55, "y": -0.15, "z": 0.06, "size": 0.04}], "held": None}
    block, bowl = truth_objects(SCENE, state)
    assert block.position == pytest.approx((0.55, -0.15, 0.06))  # moved into the bowl by the simulated arm
    assert bowl.position == pytest.approx((0.55, -0.15, 0.0))  # not in the state: where the scene put it


def test_fake_spot_refuses_an_unknown_location(capsys: pytest.CaptureFixture[str]) -> None:
    assert serve.main(["--start", '{"coke": "the moon"}', "--ground-truth-topic", ""]) == 2
    assert "the moon" in capsys.readouterr().err


def test_the_fake_controller_starts_with_the_scenes_installation() -> None:
    robot = robot_from_scene({**SCENE, "installation": {"tcp_offset": [0, 0, 0.16, 0, 0, 0], "payload_mass": 0.8,
                                                        "payload_cog": [0, 0, 0.06]}})
    assert robot.tcp_offset == [0.0, 0.0, 0.16, 0.0, 0.0, 0.0] and robot.payload == (0.8, [0.0, 0.0, 0.06])
    bare = robot_from_scene(SCENE)  # a controller fresh from the factory
    assert bare.tcp_offset == [0.0] * 6 and bare.payload == (0.0, [0.0, 0.0, 0.0])
