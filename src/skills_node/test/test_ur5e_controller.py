"""The real ur_rtde library (RTDEReceiveInterface, RTDEControlInterface, RTDEIOInterface, DashboardClient) against the
protocol-level fake controller (issue 31): RTDE recipes and data, the script upload, the command registers, the
dashboard server, faults. The backend's operations on it: test_ur5e_rtde.py (parametrized over both fakes)."""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from skills_node.core.arm import TcpPose
from skills_node.robots.ur5e.core.rtde import (
    EndEffectorIO,
    RtdeArm,
    RtdeArmConfig,
    UrPorts,
    library_factories,
    probe_controller,
)
from skills_node.robots.ur5e.testing.fake_controller import (
    FakeControllerProcess,
    RemoteController,
    RemoteUr,
    loopback_address,
)
from skills_node.robots.ur5e.testing.fake_rtde import DOWN_POSE, HOME_Q, FakeObject

rtde_receive = pytest.importorskip("rtde_receive")
rtde_control = pytest.importorskip("rtde_control")
rtde_io = pytest.importorskip("rtde_io")
dashboard_client = pytest.importorskip("dashboard_client")

OBJECTS = [FakeObject("red block", 0.45, 0.10, size=0.04), FakeObject("blue plate", 0.60, 0.15, size=0.01)]
SCENE: dict[str, Any] = {"time_scale": 20.0, "objects": [asdict(o) for o in OBJECTS]}


@pytest.fixture(scope="module")
def controller() -> Iterator[RemoteUr]:
    """One fake controller process for the module, reset before every test."""
    proc = FakeControllerProcess(host=loopback_address(3), scene=SCENE)
    remote = proc.start()
    yield RemoteUr(remote, proc.host, SCENE)
    proc.stop()


@pytest.fixture
def ur(controller: RemoteUr) -> Iterator[RemoteUr]:
    controller.reset()
    yield controller


@pytest.fixture
def opened() -> Iterator[Callable[[Any], Any]]:
    """opened(interface) -> it, disconnected after the test."""
    made: list[Any] = []

    def keep(iface: Any) -> Any:
        made.append(iface)
        return iface

    yield keep
    for iface in made:
        iface.disconnect()


def eventually(check: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    """check() became true within timeout_s (s), polled every 5 ms."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def test_receive_interface_reads_the_simulated_arm(ur: RemoteUr, opened: Callable[[Any], Any]) -> None:
    recv = opened(rtde_receive.RTDEReceiveInterface(ur.host))
    assert recv.isConnected()
    assert recv.getActualTCPPose() == pytest.approx([0.40, 0.0, 0.30, *DOWN_POSE])
    assert recv.getActualQ() == pytest.approx(list(HOME_Q))
    assert recv.getRobotMode() == 7 and recv.getSafetyMode() == 1  # RUNNING, NORMAL
    assert not recv.isProtectiveStopped() and not recv.isEmergencyStopped()
    first = recv.getTimestamp()
    assert eventually(lambda: recv.getTimestamp() > first)
    assert ur.constructed == ["RTDEReceiveInterface"]


def test_unknown_output_variables_are_refused_like_the_controller(ur: RemoteUr) -> None:
    with pytest.raises(RuntimeError, match=r"not found by the controller: \[no_such_field\]"):
        rtde_receive.RTDEReceiveInterface(ur.host, -1.0, ["actual_TCP_pose", "no_such_field"])


def test_control_interface_uploads_its_script_and_commands_reach_the_registers(
        ur: RemoteUr, opened: Callable[[Any], Any]) -> None:
    ctrl = opened(rtde_control.RTDEControlInterface(ur.host))
    recv = opened(rtde_receive.RTDEReceiveInterface(ur.host))
    assert ctrl.isProgramRunning()
    assert ("program", "def rtde_control():") in ur.events
    # not 127.0.0.1: ur_rtde asks whether the pendant is in remote control
    assert ("dashboard", "is in remote control") in ur.events
    assert ctrl.setTcp([0.0, 0.0, 0.1, 0.0, 0.0, 0.0]) and ctrl.setPayload(0.4, [0.0, 0.0, 0.05])
    target = [0.45, 0.10, 0.25, *DOWN_POSE]
    assert ctrl.moveL(target, 0.25, 0.5, True)
    assert eventually(lambda: not ctrl.getAsyncOperationProgressEx().isAsyncOperationRunning())
    # each interface has its own data stream (500 Hz): the receive interface's may be a package behind
    assert eventually(lambda: recv.getActualTCPPose() == pytest.approx(target, abs=1e-9))
    q = [3.0, -1.5, 1.5, -1.5, -1.5, 0.0]
    assert ctrl.moveJ(q, 1.0, 2.0, False)  # synchronous: returns when the arm has arrived
    assert eventually(lambda: recv.getActualQ() == pytest.approx(q, abs=1e-9))
    ctrl.stopL(2.0, False)
    assert ur.commands == [
        ("setTcp", ([0.0, 0.0, 0.1, 0.0, 0.0, 0.0],)), ("setPayload", (0.4, [0.0, 0.0, 0.05])),
        ("moveL", (pytest.approx(target), 0.25, 0.5, True)), ("moveJ", (q, 1.0, 2.0, False)), ("stopL", (2.0, False))]


def test_io_interface_switches_the_tool_output(ur: RemoteUr, opened: Callable[[Any], Any]) -> None:
    recv = opened(rtde_receive.RTDEReceiveInterface(ur.host))
    io = opened(rtde_io.RTDEIOInterface(ur.host))
    assert io.setToolDigitalOut(0, True)
    assert eventually(lambda: recv.getActualDigitalOutputBits() == 1 << 16)
    assert io.setStandardDigitalOut(3, True)
    assert eventually(lambda: recv.getActualDigitalOutputBits() == (1 << 16) | (1 << 3))
    assert ur.commands == [("setToolDigitalOut", (0, True)), ("setStandardDigitalOut", (3, True))]


def test_input_registers_are_owned_by_one_connection(ur: RemoteUr, opened: Callable[[Any], Any]) -> None:
    opened(rtde_control.RTDEControlInterface(ur.host))
    with pytest.raises(RuntimeError, match="input registers are already in use"):
        rtde_control.RTDEControlInterface(ur.host)


def test_protective_stop_stops_the_script_until_unlocked_and_uploaded_again(
        ur: RemoteUr, opened: Callable[[Any], Any]) -> None:
    ctrl = opened(rtde_control.RTDEControlInterface(ur.host))
    recv = opened(rtde_receive.RTDEReceiveInterface(ur.host))
    ur.set_time_scale(1.0)
    assert ctrl.moveL([0.70, 0.30, 0.30, *DOWN_POSE], 0.1, 0.5, True)
    ur.trigger_protective_stop()
    assert eventually(recv.isProtectiveStopped)
    assert recv.getSafetyMode() == 3 and eventually(lambda: not ctrl.isProgramRunning())
    stopped_at = recv.getActualTCPPose()
    assert not ctrl.moveL([0.5, 0.0, 0.3, *DOWN_POSE], 0.25, 0.5, True)  # refused: the script is not running
    ctrl.reuploadScript()
    assert not eventually(ctrl.isProgramRunning, 0.3)  # a program cannot start during a protective stop
    db = opened(dashboard_client.DashboardClient(ur.host))
    db.connect()
    db.unlockProtectiveStop()
    assert eventually(lambda: not recv.isProtectiveStopped())
    assert ctrl.reuploadScript() and eventually(ctrl.isProgramRunning)
    assert recv.getActualTCPPose() == pytest.approx(stopped_at)
    assert ctrl.moveL([0.5, 0.0, 0.3, *DOWN_POSE], 0.25, 0.5, False)
    assert eventually(lambda: recv.getActualTCPPose() == pytest.approx([0.5, 0.0, 0.3, *DOWN_POSE], abs=1e-9))


def test_dashboard_server(ur: RemoteUr, opened: Callable[[Any], Any]) -> None:
    db = opened(dashboard_client.DashboardClient(ur.host))
    db.connect()
    assert db.isConnected()
    assert db.polyscopeVersion() == "5.15.0.1250"
    assert db.robotmode() == "Robotmode: RUNNING" and db.safetymode() == "Safetymode: NORMAL"
    assert db.isInRemoteControl() and db.getSerialNumber() == "20235500001"
    assert not db.running() and db.programState().startswith("STOPPED")
    with pytest.raises(RuntimeError, match="Failed to execute: play"):
        db.play()  # nothing loaded
    db.powerOff()
    assert db.robotmode() == "Robotmode: POWER_OFF"
    db.powerOn()
    db.brakeRelease()
    assert db.robotmode() == "Robotmode: RUNNING"
    ur.press_emergency_stop()
    assert db.safetystatus() == "Safetystatus: ROBOT_EMERGENCY_STOP"
    ur.remote.call("set_remote_control", on=False)
    assert not db.isInRemoteControl()
    with pytest.raises(RuntimeError, match="enable remote control"):
        rtde_control.RTDEControlInterface(ur.host)


def test_a_dropped_network_disconnects_and_a_restored_one_serves_new_interfaces(
        ur: RemoteUr, opened: Callable[[Any], Any]) -> None:
    recv = opened(rtde_receive.RTDEReceiveInterface(ur.host))
    ur.drop_connection()
    assert eventually(lambda: not recv.isConnected())
    with pytest.raises(RuntimeError, match=f"Could not connect to: {ur.host} at 30004"):
        rtde_receive.RTDEReceiveInterface(ur.host)
    ur.restore_connection()
    again = opened(rtde_receive.RTDEReceiveInterface(ur.host))
    assert again.isConnected() and again.getActualTCPPose() == pytest.approx([0.40, 0.0, 0.30, *DOWN_POSE])


def test_the_console_script_starts_in_a_fault_state_and_writes_the_state_file(tmp_path: Path) -> None:
    state_file = tmp_path / "arm.json"
    proc = FakeControllerProcess(host=loopback_address(4), scene=SCENE,
                                 extra_args=["--fault", "estop", "--state-file", str(state_file)])
    remote: RemoteController = proc.start()
    try:
        db = dashboard_client.DashboardClient(proc.host)
        db.connect()
        assert db.safetymode() == "Safetymode: ROBOT_EMERGENCY_STOP"
        db.disconnect()
        assert eventually(state_file.exists)
        state = json.loads(state_file.read_text())
        assert state["emergency_stop"] and state["tcp_pose"] == pytest.approx([0.40, 0.0, 0.30, *DOWN_POSE])
        assert {o["name"] for o in state["objects"]} == {o.name for o in OBJECTS}
        assert remote.state()["emergency_stop"]
    finally:
        proc.stop()


def test_rtde_arm_with_its_probe_connects_moves_and_refuses_a_silent_controller(ur: RemoteUr) -> None:
    """The dry run's configuration: the real ur_rtde, the probe on (as config/robots/ur5e.yaml)."""
    config = RtdeArmConfig(
        host=ur.host, tcp_offset=(0.0, 0.0, 0.1, 0.0, 0.0, 0.0), payload_mass=0.4, payload_cog=(0.0, 0.0, 0.05),
        end_effector=EndEffectorIO("tool", 0, active_high=True, sense_input=16, sense_active_high=True),
        contact_force=5.0, contact_acceleration=0.5, stop_deceleration=2.0, probe=True, monitor_period_s=0.004,
        connect_timeout_s=1.0, command_timeout_s=1.0, stale_timeout_s=0.3, reconnect_period_s=0.0,
        ports=UrPorts(dashboard=29999, rtde=30004, script=30003))
    arm = RtdeArm(config, library_factories(), logging.getLogger("test.ur5e"))
    try:
        arm.connect()
        assert arm.status().ok
        target = TcpPose(0.5, 0.0, 0.25, *DOWN_POSE)
        arm.move_linear(target, 0.25, 0.5)
        assert ur.motion_commands() == [("moveL", (pytest.approx(target.as_list()), 0.25, 0.5, True))]
    finally:
        arm.close()
    ur.hang_connect = True  # accepts connections, answers nothing
    with pytest.raises(ConnectionError, match="sent no dashboard greeting within 0.3 s"):
        probe_controller(ur.host, config.ports, 0.3)
