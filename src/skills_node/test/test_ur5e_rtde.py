"""RtdeArm against both fakes: connection guard, motions, contact, faults, monitoring, reconnection.

`robot` is parametrized: "api" is fake_rtde's stand-in for ur_rtde's classes (in process), "protocol" is the real
ur_rtde library over TCP against the fake controller process (fake_controller.py); the command-level assertions are
then on what arrived at the controller."""
from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, replace

import pytest

from skills_node.core.arm import ArmFault, ArmStatus, FaultKind, MotionInterrupted, SafetyMode, TcpPose
from skills_node.robots.ur5e.core.rtde import RtdeArm, RtdeArmConfig, UrPorts, motion_duration, probe_controller
from skills_node.robots.ur5e.testing.fake_controller import FakeControllerProcess, RemoteUr, loopback_address
from skills_node.robots.ur5e.testing.fake_rtde import DOWN_POSE, FakeObject, FakeUrController

Robot = FakeUrController | RemoteUr
TIME_SCALE = 20.0


@pytest.fixture(scope="module")
def controller_process() -> Iterator[RemoteUr]:
    """One fake controller process for the module's "protocol" runs, reset before each."""
    pytest.importorskip("rtde_control")
    proc = FakeControllerProcess(host=loopback_address(2))
    remote = proc.start()
    yield RemoteUr(remote, proc.host, {})
    proc.stop()


@pytest.fixture(params=["api", "protocol"])
def robot(request: pytest.FixtureRequest, robot_objects: list[FakeObject]) -> Iterator[Robot]:
    if request.param == "api":
        r = FakeUrController(time_scale=TIME_SCALE, objects=robot_objects)
        yield r
        r.release()
        return
    # reset() moves the controller to a fresh loopback address: after a silent drop, ur_rtde 1.6.5's
    # RTDEControlInterface reconnects by itself once its read times out (2.5 s) and, once that succeeded, keeps
    # reconnecting, holding the RTDE input registers; at the same address it would refuse the next tests' interfaces
    remote: RemoteUr = request.getfixturevalue("controller_process")
    remote.scene = {"time_scale": TIME_SCALE, "objects": [asdict(o) for o in robot_objects]}
    remote.reset()
    yield remote


@pytest.fixture
def arm_config(arm_config: RtdeArmConfig, robot: Robot) -> RtdeArmConfig:
    return replace(arm_config, host=robot.host) if isinstance(robot, RemoteUr) else arm_config


def eventually(check: Callable[[], bool], timeout_s: float = 2.0) -> bool:
    """check() is true within timeout_s (s): the real library's IO commands return before the controller applied
    them (the API-level fake applies them at once)."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


class TcpServer:
    """A local TCP server on an ephemeral port: `answer` (None = accept and never answer) per connection."""

    def __init__(self, answer: Callable[[socket.socket], None] | None) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self._answer = answer
        self._conns: list[socket.socket] = []
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.sock.settimeout(0.05)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._conns.append(conn)
            if self._answer is not None:
                self._answer(conn)

    def close(self) -> None:
        self._stop.set()
        for c in self._conns:
            c.close()
        self.sock.close()


def dashboard_like(conn: socket.socket) -> None:
    conn.sendall(b"Connected: Universal Robots Dashboard Server\n")


def rtde_like(conn: socket.socket) -> None:
    """Answers the RTDE protocol-version request as a UR controller does (accepted)."""

    def rtde() -> None:
        conn.settimeout(1.0)
        try:
            data = conn.recv(5)
        except OSError:
            return
        if len(data) == 5 and data[2] == 86:
            conn.sendall(struct.pack(">HBB", 4, 86, 1))

    threading.Thread(target=rtde, daemon=True).start()


@pytest.fixture
def servers() -> Iterator[Callable[..., TcpServer]]:
    made: list[TcpServer] = []

    def make(answer: Callable[[socket.socket], None] | None) -> TcpServer:
        made.append(TcpServer(answer))
        return made[-1]

    yield make
    for s in made:
        s.close()


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return int(port)


# ----- connection ------------------------------------------------------------------------------
def test_connect_sets_tcp_and_payload_and_reports_ok(arm: RtdeArm, robot: Robot) -> None:
    assert robot.commands[:2] == [("setTcp", ([0.0, 0.0, 0.1, 0.0, 0.0, 0.0],)), ("setPayload", (0.4, [0.0, 0.0, 0.05]))]
    assert robot.constructed == ["RTDEReceiveInterface", "RTDEControlInterface", "RTDEIOInterface"]
    assert arm.status().ok and arm.status().safety_mode == SafetyMode.NORMAL
    assert arm.tcp_pose() == TcpPose(0.40, 0.0, 0.30, *DOWN_POSE)


def test_unreachable_robot_is_a_clear_error_at_once(make_arm: Callable[..., RtdeArm], robot: Robot) -> None:
    robot.refuse_connect = True
    arm = make_arm(connect=False)
    started = time.monotonic()
    with pytest.raises(ArmFault) as err:
        arm.connect()
    assert err.value.kind == FaultKind.CONNECTION_LOST
    host = arm.cfg.host
    assert f"could not connect to the UR controller at {host}" in err.value.reason
    assert f"Could not connect to: {host} at 30004" in err.value.reason
    assert time.monotonic() - started < 0.5
    assert not arm.status().connected and "Could not connect" in arm.status().detail
    with pytest.raises(ArmFault, match="connection lost"):
        arm.move_linear(TcpPose(0.4, 0.0, 0.2, *DOWN_POSE), 0.1, 0.5)


def test_silent_host_fails_the_probe_within_the_timeout_and_nothing_is_constructed(
        make_arm: Callable[..., RtdeArm], robot: Robot, arm_config: RtdeArmConfig,
        servers: Callable[..., TcpServer]) -> None:
    silent = servers(None)  # accepts every connection, never says a word
    robot.hang_connect = True  # and a ur_rtde constructor would hang on it
    config = replace(arm_config, host="127.0.0.1", probe=True, connect_timeout_s=0.3,
                     ports=UrPorts(dashboard=silent.port, rtde=silent.port, script=silent.port))
    arm = make_arm(config, connect=False)
    started = time.monotonic()
    with pytest.raises(ArmFault) as err:
        arm.connect()
    assert time.monotonic() - started < 1.5
    assert "accepts connections but sent no dashboard greeting within 0.3 s" in err.value.reason
    assert robot.constructed == []


def test_probe_accepts_a_controller_that_answers(servers: Callable[..., TcpServer]) -> None:
    dash, rtde, script = servers(dashboard_like), servers(rtde_like), servers(None)
    probe_controller("127.0.0.1", UrPorts(dashboard=dash.port, rtde=rtde.port, script=script.port), 1.0)


def test_probe_names_the_closed_port() -> None:
    port = closed_port()
    with pytest.raises(ConnectionError, match=f"cannot connect to 127.0.0.1:{port} \\(dashboard server\\)"):
        probe_controller("127.0.0.1", UrPorts(dashboard=port, rtde=port, script=port), 0.5)


def test_probe_rejects_a_silent_rtde_server(servers: Callable[..., TcpServer]) -> None:
    dash, rtde = servers(dashboard_like), servers(None)
    with pytest.raises(ConnectionError, match="did not answer the RTDE handshake within 0.3 s"):
        probe_controller("127.0.0.1", UrPorts(dashboard=dash.port, rtde=rtde.port, script=closed_port()), 0.3)


def test_a_hanging_constructor_is_abandoned_after_the_connect_timeout(
        make_arm: Callable[..., RtdeArm], robot: Robot, arm_config: RtdeArmConfig) -> None:
    # Without the probe the guard is a helper thread with a time limit. (The real ur_rtde constructor
    # holds the GIL, which is why the probe above is on by default; so API-level fake only.)
    if isinstance(robot, RemoteUr):
        pytest.skip("ur_rtde's constructor holds the GIL while it hangs: only the API-level fake can hang it")
    robot.hang_connect = True
    arm = make_arm(replace(arm_config, connect_timeout_s=0.3), connect=False)
    started = time.monotonic()
    with pytest.raises(ArmFault, match="RTDEReceiveInterface\\(192.0.2.10\\) did not return within 0.3 s"):
        arm.connect()
    assert time.monotonic() - started < 1.0


# ----- motions -----------------------------------------------------------------------------------
def test_move_linear_is_async_and_waits_for_arrival(arm: RtdeArm, robot: Robot) -> None:
    target = TcpPose(0.5, 0.1, 0.25, *DOWN_POSE)
    arm.move_linear(target, 0.25, 0.5)
    assert robot.motion_commands() == [("moveL", (pytest.approx(target.as_list()), 0.25, 0.5, True))]
    assert arm.tcp_pose().distance_to(target) <= arm.cfg.position_tolerance  # "arrived", on data <= 2 ms old
    assert eventually(lambda: arm.tcp_pose().distance_to(target) < 1e-9)


def test_contact_stops_at_the_surface(arm: RtdeArm, robot: Robot) -> None:
    arm.move_linear(TcpPose(0.45, 0.10, 0.19, *DOWN_POSE), 0.25, 0.5)
    assert arm.move_until_contact((0.0, 0.0, -1.0), 0.05, 0.18) is True
    assert arm.tcp_pose().z == pytest.approx(robot.get("red block").top, abs=1e-6)
    assert [c[0] for c in robot.motion_commands()][-3:] == ["zeroFtSensor", "moveL", "stopL"]
    assert robot.motion_commands()[-1][1] == (5.0, False)  # contact_stop_deceleration


def test_contact_move_reports_no_contact_at_max_travel(arm: RtdeArm, robot: Robot) -> None:
    arm.move_linear(TcpPose(0.45, 0.10, 0.30, *DOWN_POSE), 0.25, 0.5)
    assert arm.move_until_contact((0.0, 0.0, -1.0), 0.05, 0.10) is False
    assert arm.tcp_pose().z == pytest.approx(0.20, abs=1e-6)


def test_stop_from_another_thread_interrupts_with_stopl(arm: RtdeArm, robot: Robot) -> None:
    robot.set_time_scale(1.0)
    threading.Timer(0.1, arm.stop).start()
    with pytest.raises(MotionInterrupted):
        arm.move_linear(TcpPose(0.70, 0.30, 0.30, *DOWN_POSE), 0.1, 0.5)
    assert robot.motion_commands()[-1] == ("stopL", (2.0, False))
    assert 0.40 < robot.pose[0] < 0.70


def test_stop_during_a_joint_move_uses_stopj(arm: RtdeArm, robot: Robot) -> None:
    robot.set_time_scale(1.0)
    threading.Timer(0.1, arm.stop).start()
    with pytest.raises(MotionInterrupted):
        arm.move_joints([3.0, -1.3, 1.3, -1.5708, -1.5708, 0.0], 0.2, 1.0)
    assert robot.motion_commands()[-1] == ("stopJ", (3.0, False))


def test_protective_stop_mid_motion_raises_and_flags_the_status(make_arm: Callable[..., RtdeArm],
                                                                robot: Robot) -> None:
    seen: list[ArmStatus] = []
    arm = make_arm(on_status=seen.append)
    robot.set_time_scale(2.0)
    threading.Timer(0.1, robot.trigger_protective_stop).start()
    with pytest.raises(ArmFault) as err:
        arm.move_linear(TcpPose(0.70, 0.30, 0.30, *DOWN_POSE), 0.1, 0.5)
    assert err.value.kind == FaultKind.PROTECTIVE_STOP
    assert "safety mode PROTECTIVE_STOP" in err.value.reason
    assert arm.status().protective_stop and arm.status().fault() == FaultKind.PROTECTIVE_STOP
    assert any(s.protective_stop for s in seen)
    with pytest.raises(ArmFault, match="protective stop"):  # refused up front while it lasts
        arm.move_linear(TcpPose(0.5, 0.0, 0.3, *DOWN_POSE), 0.1, 0.5)


def test_pressing_too_hard_protective_stops_like_the_robot(arm: RtdeArm, robot: Robot) -> None:
    with pytest.raises(ArmFault) as err:  # a plain moveL into the table (no contact watch)
        arm.move_linear(TcpPose(0.45, 0.10, -0.50, *DOWN_POSE), 0.25, 0.5)
    assert err.value.kind == FaultKind.PROTECTIVE_STOP


def test_emergency_stop_is_reported(arm: RtdeArm, robot: Robot) -> None:
    robot.press_emergency_stop()
    deadline = time.monotonic() + 2.0
    while arm.status().fault() != FaultKind.EMERGENCY_STOP and time.monotonic() < deadline:
        time.sleep(0.01)
    assert arm.status().emergency_stop and "ROBOT_EMERGENCY_STOP" in arm.status().describe()


def test_clean_connection_drop_mid_motion_is_reported_quickly(arm: RtdeArm, robot: Robot) -> None:
    robot.set_time_scale(1.0)
    threading.Timer(0.1, robot.drop_connection).start()
    started = time.monotonic()
    with pytest.raises(ArmFault) as err:
        arm.move_linear(TcpPose(0.70, 0.30, 0.30, *DOWN_POSE), 0.1, 0.5)
    assert time.monotonic() - started < 1.0
    assert err.value.kind == FaultKind.CONNECTION_LOST
    assert "RTDE connection as lost" in err.value.reason


def test_silent_connection_drop_is_detected_from_stale_data(arm: RtdeArm, robot: Robot) -> None:
    robot.set_time_scale(1.0)
    threading.Timer(0.1, lambda: robot.drop_connection(silent=True)).start()
    started = time.monotonic()
    with pytest.raises(ArmFault) as err:
        arm.move_linear(TcpPose(0.70, 0.30, 0.30, *DOWN_POSE), 0.1, 0.5)
    assert time.monotonic() - started < 2.0  # stale_timeout 0.3 s (no stopL is attempted on a lost connection)
    assert err.value.kind == FaultKind.CONNECTION_LOST and "no new data from the controller" in err.value.reason


def test_reconnects_after_the_network_returns(make_arm: Callable[..., RtdeArm], robot: Robot,
                                              arm_config: RtdeArmConfig) -> None:
    arm = make_arm(replace(arm_config, reconnect_period_s=0.1))
    robot.drop_connection()
    deadline = time.monotonic() + 3.0
    while arm.status().connected and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not arm.status().connected
    # The network returns after a failed reconnection attempt. (The old ur_rtde RTDEControlInterface tries once to
    # reconnect by itself unless RtdeArm disconnected it first; had that succeeded, ur_rtde 1.6.5 would reconnect it
    # again and again: it never clears its should_reconnect flag. A network back within milliseconds can do that.)
    assert eventually(lambda: "could not connect" in arm.status().detail)
    robot.restore_connection()
    while not arm.status().ok and time.monotonic() < deadline:
        time.sleep(0.01)
    assert arm.status().ok
    assert robot.constructed.count("RTDEControlInterface") == 2
    arm.move_linear(TcpPose(0.5, 0.0, 0.3, *DOWN_POSE), 0.25, 0.5)


def test_motion_timeout_stops_the_arm(make_arm: Callable[..., RtdeArm], robot: Robot,
                                      arm_config: RtdeArmConfig) -> None:
    arm = make_arm(replace(arm_config, motion_timeout_margin_s=0.1, motion_timeout_factor=1.0))
    robot.set_time_scale(0.1)  # the robot crawls (e.g. speed slider at 10 %)
    with pytest.raises(ArmFault) as err:
        arm.move_linear(TcpPose(0.45, 0.0, 0.30, *DOWN_POSE), 0.25, 0.5)
    assert err.value.kind == FaultKind.TIMEOUT
    assert robot.motion_commands()[-1][0] == "stopL"


def test_out_of_range_speed_is_rejected_like_ur_rtde(arm: RtdeArm) -> None:
    with pytest.raises(ArmFault, match="rejected by ur_rtde: The value is not within"):
        arm.move_linear(TcpPose(0.5, 0.0, 0.3, *DOWN_POSE), 5.0, 0.5)


def test_suction_io_and_vacuum_sense(arm: RtdeArm, robot: Robot) -> None:
    arm.move_linear(TcpPose(0.45, 0.10, 0.19, *DOWN_POSE), 0.25, 0.5)
    assert not arm.holding()
    arm.set_suction(True)  # nothing under the cup yet: output on, no vacuum
    assert eventually(lambda: robot.tool_out[0]) and not arm.holding()
    arm.move_until_contact((0.0, 0.0, -1.0), 0.05, 0.18)
    arm.set_suction(False)
    arm.set_suction(True)
    assert eventually(arm.holding)


def test_motion_duration_profiles() -> None:
    assert motion_duration(0.0, 0.25, 0.5) == 0.0
    assert motion_duration(1.0, 0.25, 0.5) == pytest.approx(4.0 + 0.5)  # trapezoid
    assert motion_duration(0.01, 0.25, 0.5) == pytest.approx(2 * (0.01 / 0.5) ** 0.5)  # triangle
