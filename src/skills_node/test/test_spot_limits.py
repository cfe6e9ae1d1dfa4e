"""Issue 20, Spot: walk goals farther than `max_go_to_distance` from where the body stands and velocity
commands longer than `max_move_duration` are refused before any command reaches the SDK (FakeSpot over
gRPC), and the configured limits are validated at startup."""
from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from monologue_common.core.settings import ParamReader, parameters_from_files
from skills_node.core.arm import MotionRefused, Refusal
from skills_node.robots.spot.core.robot import PASSWORD_ENV, USERNAME_ENV, SpotCredentials, SpotRobot, SpotSettings
from skills_node.robots.spot.settings import read
from skills_node.robots.spot.testing.fake_spot import FakeSpot

LOG = logging.getLogger("test.spot_limits")
PASSWORD = "limits-test-password"
CONFIG = Path(__file__).resolve().parents[3] / "config"


@pytest.fixture
def fake() -> Iterator[FakeSpot]:
    with FakeSpot(username="operator", password=PASSWORD, motion_duration_s=0.05) as spot:
        yield spot


@pytest.fixture
def standing(fake: FakeSpot) -> Iterator[SpotRobot]:
    settings = SpotSettings(
        hostname="127.0.0.1", port=fake.port, client_name="limits-test", ca_cert_path=str(fake.ca_cert_path),
        rpc_timeout_s=1.0, connect_timeout_s=5.0, command_timeout_s=5.0, feedback_period_s=0.02,
        take_lease=False, lease_check_period_s=0.2, estop_timeout_s=3.0, max_linear_velocity=0.5,
        max_angular_velocity=0.8, max_arm_reach=1.0, max_go_to_distance=5.0, max_move_duration=4.0)
    robot = SpotRobot(settings, SpotCredentials.from_env({USERNAME_ENV: "operator", PASSWORD_ENV: PASSWORD}), LOG)
    robot.connect()
    try:
        robot.power_on()
        robot.stand()
        yield robot
    finally:
        robot.close()


def test_a_far_go_to_goal_is_refused_before_sending(standing: SpotRobot, fake: FakeSpot) -> None:
    before = len(fake.commands())
    for x, y in ((1e3, 0.0), (4.0, -3.5), (-5.01, 0.0)):
        with pytest.raises(MotionRefused) as err:
            standing.go_to(x, y, 0.0, timeout_s=5.0)
        assert err.value.refusal == Refusal.DISTANCE and "farther than the limit 5 m" in err.value.reason
    assert len(fake.commands()) == before
    standing.go_to(3.0, 4.0, 0.0, timeout_s=5.0)  # exactly 5 m: allowed, and sent
    assert [name for name, _ in fake.commands()[before:]] == ["trajectory"]


def test_a_go_to_odom_goal_is_measured_from_where_spot_stands(standing: SpotRobot, fake: FakeSpot) -> None:
    fake.set_body_pose((10.0, 0.0, 0.0))
    before = len(fake.commands())
    with pytest.raises(MotionRefused) as err:
        standing.go_to_odom(0.0, 0.0, 0.0, timeout_s=5.0)  # the odom origin, 10 m behind
    assert err.value.refusal == Refusal.DISTANCE and "10.00 m away" in err.value.reason
    assert len(fake.commands()) == before
    standing.go_to_odom(12.0, 1.0, 0.0, timeout_s=5.0)  # 2.2 m from here (12 m from the origin)
    assert [name for name, _ in fake.commands()[before:]] == ["trajectory"]
    assert math.dist(fake.body_pose[:2], (12.0, 1.0)) < 0.05


def test_a_long_velocity_command_is_refused_before_sending(standing: SpotRobot, fake: FakeSpot) -> None:
    before = len(fake.commands())
    for duration in (1e9, 4.01):
        with pytest.raises(MotionRefused) as err:
            standing.move(0.1, 0.0, 0.0, duration_s=duration)
        assert err.value.refusal == Refusal.DURATION and "longer than the limit 4 s" in err.value.reason
    assert len(fake.commands()) == before
    standing.move(0.1, 0.0, 0.0, duration_s=0.1)
    assert [name for name, _ in fake.commands()[before:]] == ["velocity"]


def spot_params(**overrides: object) -> dict[str, object]:
    params = parameters_from_files([CONFIG / "monologue.yaml", CONFIG / "robots" / "spot.yaml"], "skills")
    return {**params, **overrides}


def test_the_limits_come_from_the_yaml_and_are_validated_at_startup() -> None:
    r = ParamReader(spot_params(), "skills")
    s = read(r)
    assert r.errors == [] and s is not None and isinstance(s.robot, SpotSettings)
    assert s.robot.max_go_to_distance == 8.0 and s.robot.max_move_duration == 10.0
    r = ParamReader({k: v for k, v in spot_params(**{"spot.max_move_duration": 0.0}).items()
                     if k != "spot.max_go_to_distance"}, "skills")
    assert read(r) is None
    text = "\n".join(r.errors)
    assert "spot.max_go_to_distance: missing" in text and "spot.max_move_duration: must be in (0" in text
    # shorter than a walk between two configured locations: that go_to could never run
    r = ParamReader(spot_params(**{"spot.max_go_to_distance": 3.0}), "skills")
    assert read(r) is None
    assert any("spot.max_go_to_distance: 3 m is shorter than the walk between" in e for e in r.errors), r.errors
