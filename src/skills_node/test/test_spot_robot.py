"""SpotRobot (robots/spot/core/robot.py) on the real bosdyn-client against FakeSpot, a gRPC robot over TLS on localhost.

Asserts the RPC sequence of connect / power / stand / sit / close, and every fault: lease taken by the tablet
mid-motion, e-stop cut mid-motion, command feedback failure, a silent and a vanished robot (a clear error within
the deadlines, never a hang), bad or missing credentials, and that the password never reaches the logs.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest
from bosdyn.api import basic_command_pb2, estop_pb2  # type: ignore[import-untyped, unused-ignore]

from skills_node.core.arm import FaultKind, MotionInterrupted, MotionRefused, Refusal
from skills_node.robots.spot.core.robot import (
    PASSWORD_ENV,
    USERNAME_ENV,
    SpotCredentials,
    SpotFault,
    SpotFaultCause,
    SpotRobot,
    SpotSettings,
)
from skills_node.robots.spot.testing.fake_spot import FakeSpot, mobility_params

LOG = logging.getLogger("test.spot")
PASSWORD = "s3cret-Spot-passw0rd"  # must never appear in any log record or error
RPC_TIMEOUT_S = 1.0


def settings_for(fake: FakeSpot, **overrides: object) -> SpotSettings:
    values: dict[str, object] = dict(
        hostname="127.0.0.1", port=fake.port, client_name="monologue-test", ca_cert_path=str(fake.ca_cert_path),
        rpc_timeout_s=RPC_TIMEOUT_S, connect_timeout_s=5.0, command_timeout_s=5.0, feedback_period_s=0.05,
        take_lease=False, lease_check_period_s=0.2, estop_timeout_s=3.0, max_linear_velocity=0.5,
        max_angular_velocity=0.8, max_arm_reach=1.0,
    )
    values.update(overrides)
    return SpotSettings(**values)  # type: ignore[arg-type]


@pytest.fixture
def fake() -> Iterator[FakeSpot]:
    with FakeSpot(username="operator", password=PASSWORD, motion_duration_s=0.2) as spot:
        yield spot


@pytest.fixture
def creds() -> SpotCredentials:
    return SpotCredentials.from_env({USERNAME_ENV: "operator", PASSWORD_ENV: PASSWORD})


@pytest.fixture
def spot(fake: FakeSpot, creds: SpotCredentials) -> Iterator[SpotRobot]:
    robot = SpotRobot(settings_for(fake), creds, LOG)
    robot.connect()
    try:
        yield robot
    finally:
        robot.close()


@pytest.fixture
def standing(spot: SpotRobot) -> SpotRobot:
    spot.power_on()
    spot.stand()
    return spot


def test_connect_power_stand_sit_close_call_sequence(fake: FakeSpot, creds: SpotCredentials) -> None:
    robot = SpotRobot(settings_for(fake), creds, LOG)
    robot.connect()
    assert fake.calls[:3] == ["GetAuthToken", "ListServiceEntries", "TimeSyncUpdate"]
    setup = [c for c in fake.calls if c not in ("TimeSyncUpdate", "EstopCheckIn", "RetainLease")]
    assert setup == ["GetAuthToken", "ListServiceEntries", "GetEstopConfig", "SetEstopConfig",
                     "RegisterEstopEndpoint", "AcquireLease"]
    assert fake.lease_owner.startswith("monologue-test")
    # beside the tablet's endpoint, which stays registered (issue 31)
    assert fake.endpoint_levels() == {"tablet": estop_pb2.ESTOP_LEVEL_NONE, "monologue-test": estop_pb2.ESTOP_LEVEL_NONE}
    assert robot.status().describe() == "motors off, not standing, lease held"

    n = len(fake.calls)
    robot.power_on()
    robot.stand()
    assert fake.standing and fake.motors_on
    status = robot.status()
    assert status.ok and status.standing and status.powered and status.fault() is None
    robot.sit()
    robot.power_off()
    assert (fake.motors_on, fake.standing) == (False, False)
    motion = [c for c in fake.calls[n:] if c in ("PowerCommand", "RobotCommand")]
    assert motion == ["PowerCommand", "RobotCommand", "RobotCommand", "PowerCommand"]
    assert [kind for kind, _ in fake.commands()] == ["stand", "sit"]

    robot.close()
    assert fake.calls[-1] == "ReturnLease"
    assert fake.lease_owner == ""
    robot.close()  # twice is fine


def test_power_off_while_standing_sits_first(standing: SpotRobot, fake: FakeSpot) -> None:
    standing.power_off()
    assert [kind for kind, _ in fake.commands()] == ["stand", "sit"]
    assert not fake.motors_on


def test_move_sends_velocity_with_limits_and_finishes(standing: SpotRobot, fake: FakeSpot) -> None:
    standing.move(0.3, 0.0, 0.2, duration_s=0.3)
    kind, request = fake.commands()[-1]
    assert kind == "velocity"
    vel = request.command.synchronized_command.mobility_command.se2_velocity_request.velocity
    assert (vel.linear.x, vel.linear.y) == pytest.approx((0.3, 0.0)) and vel.angular == pytest.approx(0.2)
    params = mobility_params(request)
    assert params.vel_limit.max_vel.linear.x == pytest.approx(0.5)
    assert params.vel_limit.max_vel.angular == pytest.approx(0.8)


def test_go_to_sends_body_frame_trajectory(standing: SpotRobot, fake: FakeSpot) -> None:
    standing.go_to(1.0, 0.5, 0.3, timeout_s=3.0)
    kind, request = fake.commands()[-1]
    assert kind == "trajectory"
    traj = request.command.synchronized_command.mobility_command.se2_trajectory_request
    assert traj.se2_frame_name == "flat_body"
    goal = traj.trajectory.points[0].pose
    assert (goal.position.x, goal.position.y, goal.angle) == pytest.approx((1.0, 0.5, 0.3))
    assert mobility_params(request).vel_limit.max_vel.linear.y == pytest.approx(0.5)


def test_odometry_follows_body_and_odom_frame_walks(standing: SpotRobot, fake: FakeSpot) -> None:
    assert standing.body_pose() == pytest.approx((0.0, 0.0, 0.0))
    standing.go_to(1.0, 0.5, 0.3, timeout_s=3.0)  # body frame
    assert standing.body_pose() == pytest.approx((1.0, 0.5, 0.3))
    standing.go_to(1.0, 0.0, 0.0, timeout_s=3.0)  # 1 m ahead along the new heading
    assert standing.body_pose() == pytest.approx((1.0 + 0.955336, 0.5 + 0.295520, 0.3), abs=1e-5)
    standing.go_to_odom(-0.5, 0.2, -1.0, timeout_s=3.0)
    assert standing.body_pose() == pytest.approx((-0.5, 0.2, -1.0))
    _, request = fake.commands()[-1]
    assert request.command.synchronized_command.mobility_command.se2_trajectory_request.se2_frame_name == "odom"
    assert not standing.holding() and not standing.status().holding


def test_odometry_unreadable_is_a_fault(standing: SpotRobot, fake: FakeSpot) -> None:
    fake.go_silent()
    with pytest.raises(SpotFault) as err:
        standing.body_pose()
    assert err.value.cause == SpotFaultCause.CONNECTION_LOST
    fake.resume()


@pytest.mark.parametrize("velocity", [(0.6, 0.0, 0.0), (0.0, -0.7, 0.0), (0.0, 0.0, 1.0)])
def test_velocity_over_limit_is_refused_before_sending(standing: SpotRobot, fake: FakeSpot,
                                                       velocity: tuple[float, float, float]) -> None:
    before = len(fake.commands())
    with pytest.raises(MotionRefused) as err:
        standing.move(*velocity, duration_s=1.0)
    assert err.value.refusal == Refusal.SPEED
    assert len(fake.commands()) == before


def test_lease_taken_by_tablet_mid_motion_is_a_fault(fake: FakeSpot, creds: SpotCredentials) -> None:
    faults: list[SpotFault] = []  # on_fault: the node's hook for robot/status
    with SpotRobot(settings_for(fake), creds, LOG, on_fault=faults.append) as standing:
        standing.power_on()
        standing.stand()
        _lease_taken_mid_motion(standing, fake, faults)
    assert fake.lease_owner == "tablet"  # close() must not disturb the tablet's lease


def _lease_taken_mid_motion(standing: SpotRobot, fake: FakeSpot, faults: list[SpotFault]) -> None:
    fake.when("RobotCommandFeedback", lambda: fake.take_lease_as("tablet"), after=3)
    t0 = time.monotonic()
    with pytest.raises(SpotFault) as err:
        standing.move(0.2, 0.0, 0.0, duration_s=3.0)
    assert time.monotonic() - t0 < 2.0
    assert err.value.cause == SpotFaultCause.LEASE_LOST
    assert err.value.kind == FaultKind.LEASE_LOST
    assert "lease" in str(err.value)
    assert standing.lease_lost
    assert [f.cause for f in faults] == [SpotFaultCause.LEASE_LOST]
    status = standing.status()
    assert not status.lease_held and not status.ok and status.fault() == FaultKind.LEASE_LOST
    with pytest.raises(SpotFault) as again:  # no further commands with a lost lease
        standing.stand()
    assert again.value.cause == SpotFaultCause.LEASE_LOST


def test_lease_held_by_tablet_at_connect(fake: FakeSpot, creds: SpotCredentials) -> None:
    fake.take_lease_as("tablet")
    robot = SpotRobot(settings_for(fake), creds, LOG)
    with pytest.raises(SpotFault) as err:
        robot.connect()
    assert err.value.cause == SpotFaultCause.LEASE_LOST
    assert "take_lease" in str(err.value)
    assert not robot.connected
    # take_lease: configured takeover
    with SpotRobot(settings_for(fake, take_lease=True), creds, LOG) as taker:
        assert fake.lease_owner.startswith("monologue-test")
        assert taker.status().lease_held
    assert "TakeLease" in fake.calls
    assert fake.lease_owner == ""


def test_estop_cut_mid_motion_refuses_commands(standing: SpotRobot, fake: FakeSpot) -> None:
    fake.when("RobotCommandFeedback", standing.estop_cut, after=3)
    with pytest.raises(SpotFault) as err:
        standing.move(0.2, 0.0, 0.0, duration_s=3.0)
    assert err.value.cause == SpotFaultCause.ESTOP
    assert err.value.kind == FaultKind.EMERGENCY_STOP
    assert not fake.motors_on
    assert fake.endpoint_levels() == {"tablet": estop_pb2.ESTOP_LEVEL_NONE, "monologue-test": estop_pb2.ESTOP_LEVEL_CUT}
    status = standing.status()
    assert status.estopped and not status.powered and status.fault() == FaultKind.EMERGENCY_STOP
    assert "e-stopped (software_estop)" in status.describe()
    with pytest.raises(SpotFault) as power:
        standing.power_on()
    assert power.value.cause == SpotFaultCause.ESTOP
    with pytest.raises(SpotFault) as stand:
        standing.stand()
    assert stand.value.cause == SpotFaultCause.NOT_POWERED
    # settle is the same endpoint at another level; release lets us power on again
    standing.estop_release()
    standing.power_on()
    standing.stand()
    standing.estop_settle()
    assert fake.endpoint_levels()["monologue-test"] == estop_pb2.ESTOP_LEVEL_SETTLE_THEN_CUT
    _wait_for("motors off after settling", lambda: not fake.motors_on)
    assert fake.posture_history()[-3:] == ["settling", "sat", "motors off"]


def _wait_for(what: str, cond: Callable[[], bool], timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


# ---- issue 31: the e-stop mode (settle | cut) and the robot's e-stop configuration ------------------------------

def test_estop_settles_by_default_sitting_before_power_is_cut(standing: SpotRobot, fake: FakeSpot) -> None:
    assert standing.cfg.estop_mode == "settle"
    n = len(fake.posture_history())
    standing.estop()
    assert fake.endpoint_levels()["monologue-test"] == estop_pb2.ESTOP_LEVEL_SETTLE_THEN_CUT
    _wait_for("motors off", lambda: not fake.motors_on)
    events = fake.posture_history()[n:]
    assert events == ["settling", "sat", "motors off"], events  # sat down before the power went; never fell
    assert standing.status().estopped


def test_estop_mode_cut_cuts_at_once_and_the_robot_drops(fake: FakeSpot, creds: SpotCredentials) -> None:
    with SpotRobot(settings_for(fake, estop_mode="cut"), creds, LOG) as robot:
        robot.power_on()
        robot.stand()
        n = len(fake.posture_history())
        robot.estop()
        assert not fake.motors_on  # immediately: no settling
        assert fake.endpoint_levels()["monologue-test"] == estop_pb2.ESTOP_LEVEL_CUT
        assert fake.posture_history()[n:] == ["fell", "motors off"]


def test_the_estop_level_survives_the_keepalive_check_ins(standing: SpotRobot, fake: FakeSpot) -> None:
    """Regression: the level was set on the endpoint, and the keep-alive's next periodic check-in asserted
    ESTOP_LEVEL_NONE again (the robot allowed to power on a few seconds after an e-stop)."""
    standing.estop_cut()
    n = fake.calls.count("EstopCheckIn")
    _wait_for("two periodic check-ins", lambda: fake.calls.count("EstopCheckIn") >= n + 2)
    assert fake.endpoint_levels()["monologue-test"] == estop_pb2.ESTOP_LEVEL_CUT and fake.estopped


def test_estop_mode_is_validated() -> None:
    with pytest.raises(ValueError, match="estop_mode"):
        SpotSettings(hostname="h", port=443, client_name="c", ca_cert_path="", rpc_timeout_s=1.0,
                     connect_timeout_s=1.0, command_timeout_s=1.0, feedback_period_s=0.1, take_lease=False,
                     lease_check_period_s=1.0, estop_timeout_s=9.0, max_linear_velocity=0.5,
                     max_angular_velocity=0.8, max_arm_reach=1.0, estop_mode="drop")


def test_our_endpoint_is_registered_beside_the_tablet(fake: FakeSpot, creds: SpotCredentials) -> None:
    assert fake.estop_config() == [("tablet", "PDB_rooted")]
    with SpotRobot(settings_for(fake), creds, LOG) as robot:
        # the tablet keeps its endpoint (and its registration: it is still checking in, the robot not e-stopped)
        assert fake.estop_config() == [("tablet", "PDB_rooted"), ("monologue-test", "monologue-test")]
        assert fake.endpoint_levels() == {"tablet": estop_pb2.ESTOP_LEVEL_NONE,
                                          "monologue-test": estop_pb2.ESTOP_LEVEL_NONE}
        robot.power_on()
        assert fake.motors_on
        # the tablet's own e-stop still stops the robot: both endpoints count
        fake.tablet_estop_level(estop_pb2.ESTOP_LEVEL_CUT)
        assert (fake.motors_on, robot.status().estopped) == (False, True)
    # a second run re-registers our endpoint in place (no new configuration: it works with the motors on)
    fake.tablet_estop_level(estop_pb2.ESTOP_LEVEL_NONE)
    n = fake.calls.count("SetEstopConfig")
    with SpotRobot(settings_for(fake), creds, LOG):
        assert fake.calls.count("SetEstopConfig") == n
        assert fake.estop_config() == [("tablet", "PDB_rooted"), ("monologue-test", "monologue-test")]
        assert fake.endpoint_levels()["monologue-test"] == estop_pb2.ESTOP_LEVEL_NONE


def test_estop_force_setup_replaces_the_configuration(fake: FakeSpot, creds: SpotCredentials) -> None:
    with SpotRobot(settings_for(fake, estop_force_setup=True), creds, LOG):
        assert fake.estop_config() == [("monologue-test", "PDB_rooted")]  # the tablet's endpoint is gone


def test_a_robot_without_endpoints_gets_ours_in_the_required_role(creds: SpotCredentials) -> None:
    with FakeSpot(username="operator", password=PASSWORD, tablet_estop=False) as bare:
        with SpotRobot(settings_for(bare), creds, LOG) as robot:
            assert bare.estop_config() == [("monologue-test", "PDB_rooted")]
            robot.power_on()
            assert bare.motors_on


def test_adding_our_endpoint_with_the_motors_on_is_a_clear_error(standing: SpotRobot, fake: FakeSpot,
                                                                  creds: SpotCredentials) -> None:
    """A new configuration needs the motors off (SetEstopConfig STATUS_MOTORS_ON): say so, change nothing."""
    before = fake.estop_config()
    other = SpotRobot(settings_for(fake, client_name="other-client"), creds, LOG)
    with pytest.raises(SpotFault) as err:
        other.connect()
    assert err.value.cause == SpotFaultCause.ESTOP and "motors off" in str(err.value)
    assert fake.estop_config() == before and fake.motors_on and fake.standing


def test_hardware_estop_shows_in_status(standing: SpotRobot, fake: FakeSpot) -> None:
    fake.press_estop()
    status = standing.status()
    assert status.estopped and status.estop_detail == "hardware_estop"
    assert status.fault() == FaultKind.EMERGENCY_STOP


def test_command_feedback_failure_is_a_clear_error(standing: SpotRobot, fake: FakeSpot) -> None:
    fake.fail_next_command(basic_command_pb2.RobotCommandFeedbackStatus.STATUS_COMMAND_TIMED_OUT)
    with pytest.raises(SpotFault) as err:
        standing.go_to(2.0, 0.0, 0.0, timeout_s=3.0)
    assert err.value.cause == SpotFaultCause.BEHAVIOR_FAULT
    assert "go to failed (STATUS_COMMAND_TIMED_OUT)" in str(err.value)
    assert "CAUSE_COMMAND_FAILURE" in str(err.value)
    assert standing.status().fault() == FaultKind.SAFETY_STOP
    with pytest.raises(SpotFault) as refused:  # the robot refuses commands until the fault is cleared
        standing.stand()
    assert refused.value.cause == SpotFaultCause.BEHAVIOR_FAULT
    assert standing.clear_behavior_faults() == 1
    assert standing.status().ok
    standing.go_to(0.5, 0.0, 0.0, timeout_s=3.0)


def test_cancel_stops_the_motion(standing: SpotRobot, fake: FakeSpot) -> None:
    cancel = threading.Event()
    fake.when("RobotCommandFeedback", cancel.set, after=2)
    with pytest.raises(MotionInterrupted):
        standing.move(0.2, 0.0, 0.0, duration_s=3.0, cancel=cancel)
    assert fake.commands()[-1][0] == "stop"


def test_silent_robot_gives_connection_lost_within_the_deadline(standing: SpotRobot, fake: FakeSpot) -> None:
    fake.go_silent()
    t0 = time.monotonic()
    with pytest.raises(SpotFault) as err:
        standing.stand()
    elapsed = time.monotonic() - t0
    assert err.value.cause == SpotFaultCause.CONNECTION_LOST
    assert err.value.kind == FaultKind.CONNECTION_LOST
    assert "TimedOutError" in str(err.value)
    assert elapsed < RPC_TIMEOUT_S + 2.0
    status = standing.status()
    assert not status.connected and status.fault() == FaultKind.CONNECTION_LOST
    t0 = time.monotonic()
    standing.close()  # bounded too: no RPC may wait for the silent robot longer than its deadline
    assert time.monotonic() - t0 < 6 * RPC_TIMEOUT_S + 2.0
    fake.resume()


def test_robot_going_away_mid_motion_is_connection_lost(standing: SpotRobot, fake: FakeSpot) -> None:
    gone = threading.Thread(target=fake.stop)  # the server cannot wait for its own handler to finish
    fake.when("RobotCommandFeedback", gone.start, after=3)
    t0 = time.monotonic()
    with pytest.raises(SpotFault) as err:
        standing.move(0.2, 0.0, 0.0, duration_s=5.0)
    gone.join(timeout=10.0)
    assert err.value.cause == SpotFaultCause.CONNECTION_LOST
    assert time.monotonic() - t0 < 3.0 + RPC_TIMEOUT_S


def test_no_robot_at_connect(creds: SpotCredentials) -> None:
    with FakeSpot() as gone:
        cfg = settings_for(gone)
    robot = SpotRobot(cfg, creds, LOG)  # the port is closed now
    t0 = time.monotonic()
    with pytest.raises(SpotFault) as err:
        robot.connect()
    assert err.value.cause == SpotFaultCause.CONNECTION_LOST
    assert time.monotonic() - t0 < RPC_TIMEOUT_S + 3.0
    assert not robot.connected


def test_wrong_password_is_auth_error_without_the_password(fake: FakeSpot) -> None:
    wrong = SpotCredentials.from_env({USERNAME_ENV: "operator", PASSWORD_ENV: "wrong-" + PASSWORD})
    with pytest.raises(SpotFault) as err:
        SpotRobot(settings_for(fake), wrong, LOG).connect()
    assert err.value.cause == SpotFaultCause.AUTH
    assert PASSWORD not in str(err.value) and PASSWORD not in repr(err.value.__cause__)
    assert fake.lease_owner == ""  # nothing was acquired


def test_missing_credentials_name_the_variables() -> None:
    with pytest.raises(SpotFault) as err:
        SpotCredentials.from_env({USERNAME_ENV: "operator"})
    assert PASSWORD_ENV in str(err.value) and err.value.cause == SpotFaultCause.AUTH
    creds = SpotCredentials.from_env({USERNAME_ENV: "operator", PASSWORD_ENV: PASSWORD})
    assert PASSWORD not in repr(creds) and PASSWORD not in str(creds)


def test_password_never_in_logs(fake: FakeSpot, creds: SpotCredentials, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # root: our logger, bosdyn's and grpc's
    with SpotRobot(settings_for(fake), creds, LOG) as robot:
        robot.power_on()
        robot.stand()
        robot.sit()
    wrong = SpotCredentials("operator", "wrong-" + PASSWORD)
    with pytest.raises(SpotFault):
        SpotRobot(settings_for(fake), wrong, LOG).connect()
    assert caplog.records, "nothing was logged: the capture is not working"
    assert any("connecting to Spot" in r.getMessage() for r in caplog.records)
    for record in caplog.records:
        assert PASSWORD not in record.getMessage()
        assert PASSWORD not in str(record.args)
        assert PASSWORD not in (record.exc_text or "")


def test_settings_are_validated(fake: FakeSpot) -> None:
    base = settings_for(fake)
    with pytest.raises(ValueError, match="rpc_timeout_s"):
        replace(base, rpc_timeout_s=0.0)
    with pytest.raises(ValueError, match="port"):
        replace(base, port=0)
    with pytest.raises(ValueError, match="hostname"):
        replace(base, hostname="")
