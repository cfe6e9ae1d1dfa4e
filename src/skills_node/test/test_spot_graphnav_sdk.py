"""SpotRobot's GraphNav navigation (robots/spot/core/robot.py) on the real bosdyn-client GraphNavClient against FakeSpot's
GraphNavService (a waypoint per kitchen location): localization, navigate_to + feedback until the goal, and
every way it fails (stuck, lost, not localized, unknown waypoint, lease taken, e-stop, cancel, silent robot)
ending in a clear error within bounded time; after a failure the robot is where odometry says and can go on."""
from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable

import pytest
from bosdyn.api.graph_nav import graph_nav_pb2  # type: ignore[import-untyped, unused-ignore]

from skills_node.core.arm import FaultKind, MotionInterrupted, MotionRefused
from skills_node.robots.spot.core.robot import SpotCredentials, SpotFault, SpotFaultCause, SpotRobot, SpotSettings
from skills_node.robots.spot.testing.fake_spot import FakeSpot
from skills_node.robots.spot.testing.fake_spot_world import STAND_POSES, FakeKitchen

LOG = logging.getLogger("test.spot.graphnav")
USER, PASSWORD = "operator", "s3cret-Spot-passw0rd"
NAV = graph_nav_pb2.NavigationFeedbackResponse
FAR = "wp-far-counter"


def settings_for(fake: FakeSpot) -> SpotSettings:
    return SpotSettings(
        hostname="127.0.0.1", port=fake.port, client_name="monologue-test", ca_cert_path=str(fake.ca_cert_path),
        rpc_timeout_s=1.0, connect_timeout_s=5.0, command_timeout_s=5.0, feedback_period_s=0.02,
        take_lease=False, lease_check_period_s=0.2, estop_timeout_s=3.0, max_linear_velocity=0.5,
        max_angular_velocity=0.8, max_arm_reach=1.0)


Make = Callable[..., tuple[SpotRobot, FakeSpot, FakeKitchen]]


@pytest.fixture
def make(standing_spot: Callable[..., SpotRobot]) -> Make:
    """make(time_scale) -> a standing SpotRobot on a FakeSpot hosting the kitchen (starts at initial position)."""
    def _make(time_scale: float = 0.05) -> tuple[SpotRobot, FakeSpot, FakeKitchen]:
        world = FakeKitchen()
        fake = FakeSpot(username=USER, password=PASSWORD, world=world, time_scale=time_scale).start()
        return standing_spot(fake, settings_for(fake), SpotCredentials(USER, PASSWORD)), fake, world

    return _make


def test_navigate_to_waypoint_reaches_it(make: Make) -> None:
    robot, fake, world = make()
    assert robot.graph_nav_waypoint() == "wp-initial-position"
    n = len(fake.calls)
    robot.navigate_to_waypoint(FAR, timeout_s=20.0)
    assert robot.body_pose() == pytest.approx(STAND_POSES["far counter"], abs=1e-6)
    assert robot.graph_nav_waypoint() == FAR
    assert world.state().robot_location == "far counter"
    nav = [c for c in fake.calls[n:] if c in ("NavigateTo", "NavigationFeedback", "RobotCommand")]
    assert nav[0] == "NavigateTo" and set(nav[1:]) == {"NavigationFeedback"}
    request = next(c for c in fake._s.commands.values() if c.kind == "navigate").request
    assert request.destination_waypoint_id == FAR
    assert request.leases and request.leases[0].sequence  # the lease wallet's body lease
    assert request.clock_identifier  # time-synced end time
    assert 0.0 < request.end_time.ToNanoseconds() / 1e9 - time.time() < 22.0


@pytest.mark.parametrize(("status", "words"), [(NAV.STATUS_STUCK, "stuck"), (NAV.STATUS_LOST, "lost")])
def test_navigation_failure_is_a_clear_fault_then_recovery(make: Make, status: int, words: str) -> None:
    robot, fake, world = make()
    fake.fail_next_navigation(status, fraction=0.5)
    with pytest.raises(SpotFault) as err:
        robot.navigate_to_waypoint(FAR, timeout_s=20.0)
    assert err.value.cause == SpotFaultCause.NAVIGATION_FAILED
    assert err.value.kind == FaultKind.COMMAND_FAILED
    assert words in str(err.value) and NAV.Status.Name(status) in str(err.value)
    x, y, _ = robot.body_pose()
    goal = STAND_POSES["far counter"]
    assert 0.5 < math.dist((x, y), goal[:2]) < math.dist((0.0, 0.0), goal[:2]) - 0.5  # stopped on the way
    assert robot.status().ok  # a navigation failure, the robot is fine
    if status == NAV.STATUS_LOST:
        assert robot.graph_nav_waypoint() == ""  # lost the localization
        with pytest.raises(SpotFault) as again:  # the robot refuses to navigate unlocalized
            robot.navigate_to_waypoint(FAR, timeout_s=20.0)
        assert again.value.cause == SpotFaultCause.NAVIGATION_FAILED
        assert "NotLocalized" in str(again.value)
        robot.go_to_odom(*goal, timeout_s=20.0)  # odometry still works: walk there without the map
    else:
        robot.navigate_to_waypoint(FAR, timeout_s=20.0)  # no restart needed
    assert robot.body_pose() == pytest.approx(goal, abs=1e-6)
    assert world.state().robot_location == "far counter"


def test_unknown_waypoint_and_bad_arguments(make: Make) -> None:
    robot, fake, _ = make()
    with pytest.raises(SpotFault) as err:
        robot.navigate_to_waypoint("wp-nowhere", timeout_s=5.0)
    assert err.value.cause == SpotFaultCause.NAVIGATION_FAILED and "UnknownWaypoint" in str(err.value)
    with pytest.raises(MotionRefused):
        robot.navigate_to_waypoint("", timeout_s=5.0)
    with pytest.raises(MotionRefused):
        robot.navigate_to_waypoint(FAR, timeout_s=0.0)
    assert fake.calls.count("NavigateTo") == 1


def test_navigation_timeout_stops(make: Make) -> None:
    robot, fake, _ = make(time_scale=1.0)  # a ~10 s walk
    t0 = time.monotonic()
    with pytest.raises(SpotFault) as err:
        robot.navigate_to_waypoint(FAR, timeout_s=0.5)
    assert err.value.cause == SpotFaultCause.TIMEOUT
    assert time.monotonic() - t0 < 2.0
    assert fake.commands()[-1][0] == "stop"


def _navigate_with(make: Make, fault: Callable[[SpotRobot, FakeSpot], None],
                   cancel: threading.Event | None = None) -> tuple[SpotRobot, FakeSpot, BaseException]:
    robot, fake, _ = make(time_scale=1.0)  # a ~10 s walk: the fault lands on the way
    fake.when("NavigationFeedback", lambda: fault(robot, fake), after=3)
    t0 = time.monotonic()
    with pytest.raises((SpotFault, MotionInterrupted)) as err:
        robot.navigate_to_waypoint(FAR, timeout_s=30.0, cancel=cancel)
    assert time.monotonic() - t0 < 2.0
    x, y, _ = robot.body_pose() if not isinstance(err.value, SpotFault) or \
        err.value.cause != SpotFaultCause.CONNECTION_LOST else fake.body_pose
    assert math.dist((x, y), STAND_POSES["far counter"][:2]) > 1.0  # stopped on the way
    return robot, fake, err.value


def test_lease_taken_mid_navigation_is_lease_lost(make: Make) -> None:
    robot, _, err = _navigate_with(make, lambda r, f: f.take_lease_as("tablet"))
    assert isinstance(err, SpotFault) and err.cause == SpotFaultCause.LEASE_LOST
    assert robot.lease_lost


def test_estop_mid_navigation_is_estop(make: Make) -> None:
    _, fake, err = _navigate_with(make, lambda r, f: r.estop_cut())
    assert isinstance(err, SpotFault) and err.cause == SpotFaultCause.ESTOP
    assert not fake.motors_on


def test_hardware_estop_mid_navigation_is_estop(make: Make) -> None:
    _, _, err = _navigate_with(make, lambda r, f: f.press_estop())
    assert isinstance(err, SpotFault) and err.cause == SpotFaultCause.ESTOP


def test_cancel_mid_navigation_stops(make: Make) -> None:
    cancel = threading.Event()
    _, fake, err = _navigate_with(make, lambda r, f: cancel.set(), cancel=cancel)
    assert isinstance(err, MotionInterrupted)
    assert fake.commands()[-1][0] == "stop"


def test_silent_robot_mid_navigation_is_connection_lost(make: Make) -> None:
    _, fake, err = _navigate_with(make, lambda r, f: f.go_silent())
    assert isinstance(err, SpotFault) and err.cause == SpotFaultCause.CONNECTION_LOST
    fake.resume()
