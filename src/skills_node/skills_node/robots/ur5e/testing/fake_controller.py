"""A fake UR e-Series controller at the protocol level: the real ur_rtde library connects to it over TCP.

It serves, on one loopback address (ur_rtde's ports are fixed: one fake per address, 127.0.0.x):
- the dashboard server (29999): the text protocol ur_rtde's DashboardClient speaks (robotmode, safetymode,
  safetystatus, play, stop, pause, power on/off, brake release, unlock protective stop, load, running,
  programState, PolyscopeVersion, is in remote control, get serial number, get robot model, quit ...);
- the primary, secondary and real-time client interfaces (30001/30002/30003): they take URScript programs; the
  primary interface greets with a version message;
- RTDE (30004): protocol version 2, the URControl version, output and input recipes (unknown names are answered
  NOT_FOUND and input fields another connection owns IN_USE, like the controller), start / pause, output data
  packages at the requested frequency (at most `max_frequency`, an e-Series' 500 Hz), input data packages;
- ur_rtde's control script (rtde_control.script, uploaded by RTDEControlInterface to the script port): this module
  does what the script does for the commands RtdeArm uses, through the same registers (input_int_register_0 =
  command, input_double_register_0.. = arguments, output_int_register_0 = ready / done, output_int_register_2 =
  async progress): moveJ, moveL (synchronous and asynchronous), stopL, stopJ, speedStop, servoStop, setTcp,
  setPayload (and set_target_payload), zeroFtSensor, triggerProtectiveStop, isSteady, getTCPOffset,
  watchdog set-up (accepted, not enforced) and "stop script". Other commands are acknowledged (done) and logged
  as unsupported; other programs sent to the script ports are logged and not run.

The arm is fake_rtde's FakeUrController (the same simulated arm, table, suction and protective stops); every
command that reaches the controller is recorded in its `commands` in the same form as the API-level fake's.

ur_rtde's constructors hold the GIL (pybind11 does not release it in py::init), so the client and this server must
not share a Python process: run it as a process (console script `fake_ur_controller`, or
`FakeControllerProcess` in tests) and inject faults through the JSON-lines control port (`--control-port`,
`RemoteController`). Connection faults are emulated on the sockets: `drop` closes every connection and stops
listening (connection refused), `silence` keeps the connections open but stops answering and sending.

Where the API-level fake (fake_rtde.py) stays, and why:
- a ur_rtde constructor that hangs on a host that accepts connections but never answers: ur_rtde's RTDE handshake
  has no timeout and its constructors hold the GIL, so nothing else in the test process could run (not even the
  test's time limit); RtdeArm guards it with its probe (tested against silent sockets) and, without the probe, with
  a helper thread, which only the API-level fake can exercise (test_ur5e_rtde.py skips that case for "protocol");
- in-process tests that need the simulated arm's state synchronously (test_arm_backend.py, test_safety*.py) and
  the system tests' `ur5e.rtde_factory` (fake_rtde:factories_from_env).
Not emulated: servo / speed / force modes, paths, jogging, contact detection, inverse kinematics, custom scripts
(not used by RtdeArm: acknowledged and recorded as ("unsupported", name)); the 5 s wait before a protective stop can
be unlocked; the RTDE watchdog (accepted, not enforced). Linear moves do not update joint positions (no IK).
Found with it (ur_rtde 1.6.5, see RtdeArm._drop_interfaces): RTDEIOInterface's destructor aborts the process after a
lost connection; every interface's destructor sleeps 0.5 s holding the GIL; RTDEControlInterface reconnects by
itself and, once that succeeded, keeps reconnecting (holding the input registers); a command on a lost connection
waits for ur_rtde's 300 s command timeout.
Units: m, rad, s, N, kg, Hz.
"""
from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skills_node.core.arm import RobotMode, SafetyMode, TcpPose

from ..core.rtde import RtdeFactories, library_factories
from .fake_rtde import DOWN_POSE, HOME_Q, FakeObject, FakeUrController

LOG = logging.getLogger("fake_ur_controller")

# ----- RTDE protocol ---------------------------------------------------------------------------
RTDE_REQUEST_PROTOCOL_VERSION = 86  # 'V'
RTDE_GET_URCONTROL_VERSION = 118  # 'v'
RTDE_TEXT_MESSAGE = 77  # 'M'
RTDE_DATA_PACKAGE = 85  # 'U'
RTDE_CONTROL_PACKAGE_SETUP_OUTPUTS = 79  # 'O'
RTDE_CONTROL_PACKAGE_SETUP_INPUTS = 73  # 'I'
RTDE_CONTROL_PACKAGE_START = 83  # 'S'
RTDE_CONTROL_PACKAGE_PAUSE = 80  # 'P'

_FORMAT = {"DOUBLE": "d", "INT32": "i", "UINT32": "I", "UINT64": "Q", "UINT8": "B", "BOOL": "?",
           "VECTOR6D": "6d", "VECTOR3D": "3d", "VECTOR6INT32": "6i", "VECTOR6UINT32": "6I"}

_OUTPUTS: dict[str, str] = {
    **{n: "VECTOR6D" for n in (
        "target_q", "target_qd", "target_qdd", "target_current", "target_moment", "actual_q", "actual_qd",
        "actual_current", "joint_control_output", "actual_TCP_pose", "actual_TCP_speed", "actual_TCP_force",
        "target_TCP_pose", "target_TCP_speed", "joint_temperatures", "actual_joint_voltage", "ft_raw_wrench",
        "payload_inertia", "actual_current_window", "actual_current_as_torque")},
    **{n: "VECTOR3D" for n in ("actual_tool_accelerometer", "payload_cog", "elbow_position", "elbow_velocity")},
    **{n: "DOUBLE" for n in (
        "timestamp", "actual_execution_time", "speed_scaling", "target_speed_fraction", "actual_momentum",
        "actual_main_voltage", "actual_robot_voltage", "actual_robot_current", "standard_analog_input0",
        "standard_analog_input1", "standard_analog_output0", "standard_analog_output1", "payload",
        "tool_analog_input0", "tool_analog_input1", "tool_output_current", "tool_temperature")},
    **{n: "INT32" for n in ("robot_mode", "safety_mode", "safety_status", "tool_output_voltage")},
    "joint_mode": "VECTOR6INT32",
    "actual_digital_input_bits": "UINT64", "actual_digital_output_bits": "UINT64",
    **{n: "UINT32" for n in ("runtime_state", "robot_status_bits", "safety_status_bits", "analog_io_types",
                             "output_bit_registers0_to_31", "output_bit_registers32_to_63", "tool_mode",
                             "euromap67_input_bits", "euromap67_output_bits")},
    **{f"output_int_register_{i}": "INT32" for i in range(48)},
    **{f"output_double_register_{i}": "DOUBLE" for i in range(48)},
}
_INPUTS: dict[str, str] = {
    **{f"input_int_register_{i}": "INT32" for i in range(48)},
    **{f"input_double_register_{i}": "DOUBLE" for i in range(48)},
    **{n: "UINT8" for n in ("standard_digital_output_mask", "standard_digital_output", "tool_digital_output_mask",
                            "tool_digital_output", "configurable_digital_output_mask", "configurable_digital_output",
                            "standard_analog_output_mask", "standard_analog_output_type")},
    **{n: "DOUBLE" for n in ("speed_slider_fraction", "standard_analog_output_0", "standard_analog_output_1")},
    "speed_slider_mask": "UINT32", "input_bit_registers0_to_31": "UINT32", "input_bit_registers32_to_63": "UINT32",
    "external_force_torque": "VECTOR6D",
}

# ur_rtde's control-script protocol (RTDEControlInterface / rtde_control.script)
READY, DONE = 1, 2  # output_int_register_0
CMD_NAMES = {1: "moveJ", 2: "moveJ_IK", 3: "moveL", 4: "moveL_FK", 6: "forceMode", 7: "forceModeStop",
             8: "zeroFtSensor", 9: "speedJ", 10: "speedL", 11: "servoJ", 12: "servoC", 15: "speedStop",
             16: "servoStop", 17: "setPayload", 18: "teachMode", 19: "endTeachMode", 24: "servoL",
             29: "setTcp", 31: "triggerProtectiveStop", 33: "stopL", 34: "stopJ", 35: "setWatchdog",
             40: "getTCPOffset", 47: "isSteady", 65: "setTargetPayload", 99: "watchdog", 255: "stopScript"}
REALTIME_CMDS = {6, 9, 10, 11, 24, 25, 26, 27, 38, 58, 66, 67, 68, 69, 70, 71}
CONTROL_SCRIPT_MARK = "RTDE Control Script Loaded"

SAFETY_BIT = {"normal": 0, "protective": 2, "robot_estop": 6, "estop": 7}


@dataclass(frozen=True)
class ControllerPorts:
    dashboard: int = 29999
    primary: int = 30001
    secondary: int = 30002
    script: int = 30003
    rtde: int = 30004


@dataclass
class ControllerState:
    """What the dashboard server and the pendant show (beside the arm model's stops)."""

    powered: bool = True
    brakes_released: bool = True
    remote_control: bool = True
    polyscope_version: tuple[int, int, int, int] = (5, 15, 0, 1250)
    serial_number: str = "20235500001"
    loaded_program: str = ""


# ----- the control script ----------------------------------------------------------------------
class ControlScript:
    """ur_rtde's control script running on the fake controller (one at a time)."""

    def __init__(self, robot: FakeUrController, reg_offset: int, stop: threading.Event) -> None:
        self.robot = robot
        self.off = reg_offset
        self._stop = stop
        self._cond = threading.Condition()
        self._inputs: dict[str, Any] = {}
        self._changed = False
        self.out_int: dict[int, int] = {}
        self.out_double: dict[int, float] = {}
        self._executing = False
        self._async_active = False
        self._wr_count = 0
        self._op_id = 0
        self.alive = True
        self._write_async(-1)  # reset_async_progress()
        self.out_int[self.off + 0] = READY  # signal_ready()
        self._thread = threading.Thread(target=self._loop, name="fake-ur-script", daemon=True)
        self._thread.start()

    # registers
    def on_inputs(self, values: dict[str, Any]) -> None:
        with self._cond:
            self._inputs.update(values)
            self._changed = True
            self._cond.notify()

    def _int(self, i: int) -> int:
        return int(self._inputs.get(f"input_int_register_{i + self.off}", 0))

    def _double(self, i: int) -> float:
        return float(self._inputs.get(f"input_double_register_{i + self.off}", 0.0))

    def _doubles(self, first: int, n: int) -> list[float]:
        return [self._double(first + k) for k in range(n)]

    def _write_async(self, value: int) -> None:
        """The script's write_async_progress_register()."""
        self._wr_count = 0 if self._wr_count >= 127 else self._wr_count + 1
        if value == 0:
            self._op_id = 0 if self._op_id >= 127 else self._op_id + 1
        reg = self._wr_count * 65536 + self._op_id * 16777216
        if value >= 0:
            reg += min(value, 32767) + 32768
        self.out_int[self.off + 2] = reg
        self._async_active = value >= 0

    def poll(self) -> None:
        """Per output package: an asynchronous move that ended signals 'finished' (its move_thread ends)."""
        if self._async_active and self.alive and not self.robot._running():
            self._write_async(-1)

    def end(self) -> None:
        """The program stopped (dashboard stop, a fault, stop script, a new program)."""
        self.alive = False
        with self._cond:
            self._cond.notify()

    # main loop
    def _loop(self) -> None:
        while not self._stop.is_set() and self.alive:
            with self._cond:
                if not self._changed:
                    self._cond.wait(0.1)
                if not self._changed:
                    continue
                self._changed = False
                cmd = self._int(0)
            if not self.robot.program_running:  # stopped by a fault or from the dashboard
                self.alive = False
                break
            if cmd in REALTIME_CMDS:
                self._unsupported(cmd)
                self.out_int[self.off + 0] = READY
            elif cmd == 0:
                self._executing = False
                self.out_int[self.off + 0] = READY
            elif not self._executing:
                self._executing = True
                if not self._process(cmd):
                    self.alive = False
                    self.robot.program_running = False
                    break
                self.out_int[self.off + 0] = DONE

    def _unsupported(self, cmd: int) -> None:
        name = CMD_NAMES.get(cmd, f"command {cmd}")
        LOG.warning("control script: %s is not emulated by the fake controller", name)
        self.robot._record("unsupported", name)

    def _process(self, cmd: int) -> bool:
        """process_cmd(); False ends the program (stop script)."""
        r = self.robot
        if cmd in (1, 3):  # moveJ / moveL: 6 values, speed, acceleration, async
            target, speed, acc, asynchronous = self._doubles(0, 6), self._double(6), self._double(7), self._int(1) == 1
            r._record(CMD_NAMES[cmd], [round(v, 6) for v in target], speed, acc, asynchronous)
            if self._async_active:
                self._write_async(-1)  # stop_async_move() of the previous one
            ok = r._start("joint" if cmd == 1 else "linear", target, speed)
            if asynchronous and ok:
                self._write_async(0)
            while ok and not asynchronous and r._running() and not self._stop.wait(0.002):
                pass  # movel / movej block the script until the arm arrives
        elif cmd in (33, 34, 15, 16):  # stopL / stopJ (deceleration, async); speedStop / servoStop (deceleration)
            if cmd in (33, 34):
                r._record(CMD_NAMES[cmd], self._double(0), self._int(1) == 1)
            else:
                r._record(CMD_NAMES[cmd], self._double(0))
            r._stop()
            if self._async_active:
                self._write_async(-1)
        elif cmd == 29:
            pose = self._doubles(0, 6)
            r._record("setTcp", pose)
            r.tcp_offset = pose
        elif cmd in (17, 65):
            mass, cog = self._double(0), self._doubles(1, 3)
            r._record("setPayload", mass, cog)
            r.payload = (mass, cog)
        elif cmd == 8:
            r._record("zeroFtSensor")
            with r._lock:
                r._advance()
                r._ft_offset = r._force_z
        elif cmd == 31:
            r._record("triggerProtectiveStop")
            r.trigger_protective_stop()
        elif cmd == 35:
            r._record("setWatchdog", self._double(0))
        elif cmd == 40:
            for k, v in enumerate(r.tcp_offset):
                self.out_double[self.off + k] = float(v)
        elif cmd == 47:
            self.out_int[self.off + 1] = 0 if r._running() else 1
        elif cmd == 255:
            r._record("stopScript")
            return False
        else:
            self._unsupported(cmd)
        return True


# ----- connections -----------------------------------------------------------------------------
class _Conn:
    def __init__(self, sock: socket.socket, kind: str) -> None:
        self.sock = sock
        self.kind = kind
        self.buf = b""


class FakeUrControllerServer:
    """The controller's TCP servers around one simulated arm. start() / close(); thread-safe."""

    def __init__(self, robot: FakeUrController, host: str = "127.0.0.1", ports: ControllerPorts | None = None,
                 max_frequency: float = 500.0, state: ControllerState | None = None,
                 script_start_delay_s: float = 0.0) -> None:
        self.robot = robot
        self.host = host
        self.ports = ports or ControllerPorts()
        self.max_frequency = max_frequency  # Hz, the controller's cycle
        self.state = state or ControllerState()
        self.script_start_delay_s = script_start_delay_s  # s from a received program to its first cycle
        self._stop = threading.Event()
        self._lock = threading.RLock()
        self._listeners: dict[str, socket.socket] = {}
        self._conns: list[_Conn] = []
        self._owners: dict[str, int] = {}  # input field -> id of the connection that set it up
        self._inputs: dict[str, Any] = {}
        self.script: ControlScript | None = None
        self.silent = False
        self.listening = False
        self._refuser: socket.socket | None = None
        self.refused = 0  # dashboard connections closed at once while the network was dropped
        self.programs: list[str] = []  # first line of every program received on a script port
        self.clients: list[str] = []  # ur_rtde interfaces seen, in order (by their recipes)
        self.events: list[tuple[str, str]] = []  # dashboard commands and programs received, in order
        self._t0 = time.monotonic()
        robot.program_running = False  # nothing runs until a program is sent

    # ----- life cycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self._listen()

    def _refuse(self, listener: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                sock, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.refused += 1
            _close(sock)

    def _listen(self) -> None:
        with self._lock:
            if self.listening:
                return
            if self._refuser is not None:
                _close(self._refuser)
                self._refuser = None
            for kind, port in (("dashboard", self.ports.dashboard), ("primary", self.ports.primary),
                               ("secondary", self.ports.secondary), ("script", self.ports.script),
                               ("rtde", self.ports.rtde)):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                _bind(s, self.host, port)
                s.listen(16)
                s.settimeout(0.1)
                self._listeners[kind] = s
                threading.Thread(target=self._accept, args=(kind, s), name=f"fake-ur-{kind}", daemon=True).start()
            self.listening = True

    def close(self) -> None:
        self._stop.set()
        self.drop(listen=False)
        if self._refuser is not None:
            _close(self._refuser)
        if self.script is not None:
            self.script.end()

    def drop(self, listen: bool = False) -> None:
        """The network is gone: close every connection; connections are refused, except that the dashboard port
        accepts and closes them at once and counts them in `refused` (so a test can see ur_rtde's own attempt)."""
        with self._lock:
            for s in self._listeners.values():
                _close(s)  # shutdown() first: it stops listening at once (close() waits for a blocked accept())
            self._listeners.clear()
            self.listening = False
            if self._refuser is not None:
                _close(self._refuser)
                self._refuser = None
            if not self._stop.is_set():
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                _bind(s, self.host, self.ports.dashboard)
                s.listen(16)
                s.settimeout(0.1)
                self._refuser = s
                threading.Thread(target=self._refuse, args=(s,), name="fake-ur-refuse", daemon=True).start()
            for c in self._conns:
                _close(c.sock)
            self._conns.clear()
            self._owners.clear()
        if listen:
            self._listen()

    def silence(self) -> None:
        """The controller stops answering: connections stay open, nothing is sent, nothing is answered."""
        self.silent = True

    def restore(self) -> None:
        """The network is back: new connections are served (the old ones stay closed)."""
        with self._lock:
            if self.silent:
                self.silent = False
                for c in self._conns:
                    _close(c.sock)
                self._conns.clear()
                self._owners.clear()
        self._listen()

    def reset(self, spec: dict[str, Any], host: str | None = None) -> None:
        """Back to a freshly started controller with the scene `spec` (tests reuse one process), listening on `host`
        from now on if given: ur_rtde interfaces of earlier tests that reconnect by themselves find nobody there."""
        self.drop()
        if self._refuser is not None:
            _close(self._refuser)
            self._refuser = None
        if host:
            self.host = host
        self._end_program()
        r = self.robot
        with r._lock:
            r._segment = None
            r.q = list(HOME_Q)
            r.pose = TcpPose(0.40, 0.0, 0.30, *DOWN_POSE).as_list()
            r.objects = [FakeObject(**o) for o in spec.get("objects", [])]
            r.fault_below_z = spec.get("fault_below_z")
            r.held = None
            r._force_z = r._ft_offset = 0.0
            r.protective_stopped = r.emergency_stopped = r.program_running = False
            r.std_out, r.tool_out = [False] * 8, [False] * 2
            r.tcp_offset = [0.0] * 6
            r.payload = (0.0, [0.0, 0.0, 0.0])
            r.commands.clear()
        r.set_time_scale(float(spec.get("time_scale", 1.0)))
        self.state = ControllerState()
        self.silent = False
        self.clients.clear()
        self.refused = 0
        self.events.clear()
        self.programs.clear()
        self._inputs.clear()
        self._listen()

    def _accept(self, kind: str, listener: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                sock, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed by drop()
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Conn(sock, kind)
            with self._lock:
                self._conns.append(conn)
            serve = {"dashboard": self._serve_dashboard, "rtde": self._serve_rtde}.get(kind, self._serve_script)
            threading.Thread(target=self._run, args=(serve, conn), name=f"fake-ur-{kind}-conn", daemon=True).start()

    def _run(self, serve: Callable[[_Conn], None], conn: _Conn) -> None:
        try:
            serve(conn)
        except OSError:
            pass
        finally:
            with self._lock:
                if conn in self._conns:
                    self._conns.remove(conn)
                for name in [n for n, owner in self._owners.items() if owner == id(conn)]:
                    del self._owners[name]
            _close(conn.sock)

    def _read(self, conn: _Conn, timeout: float) -> bytes | None:
        """Bytes received within timeout (s): b"" = nothing yet, None = the peer closed."""
        try:
            ready, _, _ = select.select([conn.sock], [], [], max(0.0, timeout))
        except (OSError, ValueError):
            return None
        if not ready:
            return b""
        try:
            data = conn.sock.recv(65536)
        except OSError:
            return None
        return data if data else None

    def _gone(self, conn: _Conn) -> bool:
        return self._stop.is_set() or conn not in self._conns

    # ----- dashboard server --------------------------------------------------------------------
    def _serve_dashboard(self, conn: _Conn) -> None:
        greeted = False
        while not self._gone(conn):
            if self.silent:
                self._stop.wait(0.05)
                continue
            if not greeted:
                conn.sock.sendall(b"Connected: Universal Robots Dashboard Server\n")
                greeted = True
            data = self._read(conn, 0.1)
            if data is None:
                return
            conn.buf += data
            while b"\n" in conn.buf and not self.silent:
                line, conn.buf = conn.buf.split(b"\n", 1)
                answer = self.dashboard(line.decode(errors="replace").strip())
                conn.sock.sendall(answer.encode() + b"\n")
                if answer == "Disconnected":
                    return

    def dashboard(self, command: str) -> str:
        """The dashboard server's answer to one command line."""
        r, st = self.robot, self.state
        cmd = command.lower()
        self.events.append(("dashboard", command))
        if cmd == "robotmode":
            return f"Robotmode: {RobotMode(self.robot_mode()).name}"
        if cmd == "safetymode":
            return f"Safetymode: {SafetyMode(self.safety_mode()).name}"
        if cmd == "safetystatus":
            return f"Safetystatus: {SafetyMode(self.safety_mode()).name}"
        if cmd == "polyscopeversion":
            return "URSoftware {}.{}.{}.{} (Nov 29 2026)".format(*st.polyscope_version)
        if cmd == "is in remote control":
            return "true" if st.remote_control else "false"
        if cmd == "get serial number":
            return st.serial_number
        if cmd == "get robot model":
            return "UR5"
        if cmd == "running":
            return f"Program running: {'true' if r.program_running else 'false'}"
        if cmd == "programstate":
            name = st.loaded_program or "<unnamed>"
            return f"{'PLAYING' if r.program_running else 'STOPPED'} {name}"
        if cmd == "get loaded program":
            return f"Loaded program: {st.loaded_program}" if st.loaded_program else "No program loaded"
        if cmd.startswith("load "):
            st.loaded_program = command[5:].strip()
            return f"Loading program: {st.loaded_program}"
        if cmd == "play":
            if not st.loaded_program or r.protective_stopped or r.emergency_stopped or not st.powered:
                return "Failed to execute: play"
            return "Starting program"  # a loaded .urp is not emulated: nothing runs
        if cmd == "stop":  # also when nothing runs (ur_rtde stops the old script, then sends "stop" and wants this)
            self._end_program()
            return "Stopped"
        if cmd == "pause":
            return "Pausing program" if r.program_running else "Failed to execute: pause"
        if cmd == "power on":
            st.powered = True
            return "Powering on"
        if cmd == "power off":
            st.powered, st.brakes_released = False, False
            self._end_program()
            return "Powering off"
        if cmd == "brake release":
            st.brakes_released = st.powered
            return "Brake releasing"
        if cmd == "unlock protective stop":
            r.unlock_protective_stop()  # (the controller waits 5 s after the stop: not emulated)
            return "Protective stop releasing"
        if cmd == "close safety popup":
            return "closing safety popup"
        if cmd == "close popup":
            return "closing popup"
        if cmd.startswith("popup "):
            return "showing popup"
        if cmd.startswith("addtolog "):
            return "Added log message"
        if cmd == "isprogramsaved":
            return f"true {st.loaded_program}"
        if cmd == "restart safety":
            return "Restarting safety"
        if cmd == "quit":
            return "Disconnected"
        if cmd == "shutdown":
            return "Shutting down"
        return f"could not understand: '{command}'"

    def robot_mode(self) -> int:
        st = self.state
        if not st.powered:
            return int(RobotMode.POWER_OFF)
        if self.robot.emergency_stopped or not st.brakes_released:
            return int(RobotMode.IDLE)
        return int(RobotMode.RUNNING)

    def safety_mode(self) -> int:
        r = self.robot
        if r.emergency_stopped:
            return int(SafetyMode.ROBOT_EMERGENCY_STOP)
        return int(SafetyMode.PROTECTIVE_STOP if r.protective_stopped else SafetyMode.NORMAL)

    # ----- script ports -------------------------------------------------------------------------
    def _serve_script(self, conn: _Conn) -> None:
        if conn.kind == "primary" and not self.silent:
            conn.sock.sendall(self._version_message())
        text = ""
        while not self._gone(conn):
            data = self._read(conn, 0.1)
            if data is None:
                return
            if self.silent or not data:
                continue
            text += data.decode(errors="replace")
            text = self._take_programs(text)

    def _take_programs(self, text: str) -> str:
        """Run every complete top-level program ("def name():" ... "end" at column 0) in `text`; the rest."""
        lines = text.split("\n")
        start = None
        for i, line in enumerate(lines[:-1]):
            if start is None and (line.startswith("def ") or line.startswith("sec ")):
                start = i
            elif start is not None and line.rstrip() == "end":
                self._program("\n".join(lines[start:i + 1]))
                return self._take_programs("\n".join(lines[i + 1:]))
        return text

    def _program(self, program: str) -> None:
        first = program.split("\n", 1)[0]
        self.programs.append(first)
        r = self.robot
        if CONTROL_SCRIPT_MARK not in program:
            LOG.warning("program %r received: only ur_rtde's control script is emulated; ignored", first)
            self.events.append(("program", first))
            return
        offset = 24 if "reg_offset_int = 24" in program else 0
        self.events.append(("program", first))
        if self.script_start_delay_s > 0:
            self._stop.wait(self.script_start_delay_s)
        self._end_program()  # a new program replaces the running one
        if r.protective_stopped or r.emergency_stopped or not self.state.powered:
            LOG.warning("program not started: the robot is stopped (protective / emergency stop or power off)")
            return
        with self._lock:
            r.program_running = True
            self.script = ControlScript(r, offset, self._stop)
            self.script.on_inputs(dict(self._inputs))

    def _end_program(self) -> None:
        r = self.robot
        with self._lock:
            script, self.script = self.script, None
            r.program_running = False
        if script is not None:
            script.end()
        r._stop()

    def _version_message(self) -> bytes:
        """Primary interface: the robot-message 'version' package it sends first."""
        major, minor, bugfix, build = self.state.polyscope_version
        name = b"URControl"
        body = struct.pack(">QbB", 0, -2, 3) + struct.pack(">B", len(name)) + name
        body += struct.pack(">BBii", major, minor, bugfix, build) + b"29-11-2026, 12:00:00"
        return struct.pack(">iB", len(body) + 5, 20) + body

    # ----- RTDE ---------------------------------------------------------------------------------
    def _serve_rtde(self, conn: _Conn) -> None:
        outputs: list[tuple[str, str]] = []
        period = 0.0
        recipes: dict[int, list[tuple[str, str]]] = {}
        started = False
        next_send = 0.0
        while not self._gone(conn):
            if self.silent:
                self._stop.wait(0.05)
                continue
            now = time.monotonic()
            wait = max(0.0, next_send - now) if started else 0.1
            data = self._read(conn, min(wait, 0.1))
            if data is None:
                return
            conn.buf += data
            while len(conn.buf) >= 3 and not self.silent:
                size, kind = struct.unpack_from(">HB", conn.buf)
                if size < 3 or len(conn.buf) < size:
                    break
                payload, conn.buf = conn.buf[3:size], conn.buf[size:]
                if kind == RTDE_REQUEST_PROTOCOL_VERSION:
                    version = struct.unpack_from(">H", payload)[0] if len(payload) >= 2 else 0
                    self._send(conn, kind, struct.pack(">B", 1 if version in (1, 2) else 0))
                elif kind == RTDE_GET_URCONTROL_VERSION:
                    self._send(conn, kind, struct.pack(">IIII", *self.state.polyscope_version))
                elif kind == RTDE_CONTROL_PACKAGE_SETUP_OUTPUTS:
                    freq = struct.unpack_from(">d", payload)[0]
                    names = [n for n in payload[8:].decode().split(",") if n]
                    types = [_OUTPUTS.get(n, "NOT_FOUND") for n in names]
                    ok = "NOT_FOUND" not in types and 0 < freq
                    if ok:
                        outputs = list(zip(names, types))
                        period = 1.0 / min(freq, self.max_frequency)
                    self._send(conn, kind, struct.pack(">B", 1 if ok else 0) + ",".join(types).encode())
                    self._note_client(names)
                elif kind == RTDE_CONTROL_PACKAGE_SETUP_INPUTS:
                    self._setup_inputs(conn, payload, recipes)
                elif kind == RTDE_CONTROL_PACKAGE_START:
                    started = bool(outputs)
                    next_send = time.monotonic()
                    self._send(conn, kind, struct.pack(">B", 1 if started else 0))
                elif kind == RTDE_CONTROL_PACKAGE_PAUSE:
                    started = False
                    self._send(conn, kind, struct.pack(">B", 1))
                elif kind == RTDE_DATA_PACKAGE and payload:
                    self._apply_inputs(payload, recipes)
            if started and not self.silent and time.monotonic() >= next_send:
                conn.sock.sendall(self._data_package(outputs))
                next_send = max(next_send + period, time.monotonic() - period)

    def _send(self, conn: _Conn, kind: int, payload: bytes) -> None:
        conn.sock.sendall(struct.pack(">HB", len(payload) + 3, kind) + payload)

    def _note_client(self, names: Sequence[str]) -> None:
        if "runtime_state" in names and len(names) < 20:
            self.clients.append("RTDEControlInterface")
        elif "actual_TCP_pose" in names:
            self.clients.append("RTDEReceiveInterface")

    def _setup_inputs(self, conn: _Conn, payload: bytes, recipes: dict[int, list[tuple[str, str]]]) -> None:
        names = [n for n in payload.decode().split(",") if n]
        with self._lock:
            types = []
            for n in names:
                owner = self._owners.get(n)
                types.append(_INPUTS.get(n, "NOT_FOUND") if owner in (None, id(conn)) else "IN_USE")
            ok = all(t in _FORMAT for t in types)
            recipe_id = 0
            if ok:
                recipe_id = len(recipes) + 1
                recipes[recipe_id] = list(zip(names, types))
                for n in names:
                    self._owners[n] = id(conn)
        if names == ["input_int_register_23"] and not recipes.get(2):
            self.clients.append("RTDEIOInterface")
        self._send(conn, RTDE_CONTROL_PACKAGE_SETUP_INPUTS, struct.pack(">B", recipe_id) + ",".join(types).encode())

    def _apply_inputs(self, payload: bytes, recipes: dict[int, list[tuple[str, str]]]) -> None:
        recipe = recipes.get(payload[0])
        if recipe is None:
            LOG.warning("input data package for unknown recipe %d ignored", payload[0])
            return
        fmt = ">" + "".join(_FORMAT[t] for _, t in recipe)
        if struct.calcsize(fmt) != len(payload) - 1:
            LOG.warning("input data package of %d bytes does not match recipe %d; ignored", len(payload) - 1,
                        payload[0])
            return
        flat = list(struct.unpack(fmt, payload[1:]))
        values: dict[str, Any] = {}
        for name, typ in recipe:
            n = int(_FORMAT[typ][0]) if _FORMAT[typ][0].isdigit() else 1
            values[name] = flat[:n] if n > 1 else flat[0]
            del flat[:n]
        with self._lock:
            self._inputs.update(values)
            script = self.script
        self._io(values)
        if script is not None and any(k.startswith("input_") for k in values):
            script.on_inputs(values)

    def _io(self, values: dict[str, Any]) -> None:
        """What the controller does with the IO fields of an input package (RTDEIOInterface)."""
        r = self.robot
        for bank, name, width in (("standard", "setStandardDigitalOut", 8), ("tool", "setToolDigitalOut", 2)):
            mask = int(values.get(f"{bank}_digital_output_mask", 0))
            level = int(values.get(f"{bank}_digital_output", 0))
            for pin in range(width):
                if mask >> pin & 1:
                    r._record(name, pin, bool(level >> pin & 1))
                    r._set_output(bank, pin, bool(level >> pin & 1))
        if int(values.get("speed_slider_mask", 0)) & 1:
            r._record("setSpeedSlider", float(values.get("speed_slider_fraction", 1.0)))

    def _data_package(self, outputs: list[tuple[str, str]]) -> bytes:
        values = self.output_values([n for n, _ in outputs])
        flat: list[Any] = []
        fmt = ">B"
        for (name, typ) in outputs:
            fmt += _FORMAT[typ]
            v = values.get(name, 0)
            if isinstance(v, (list, tuple)):
                flat.extend(v)
            else:
                flat.append(v)
        body = struct.pack(fmt, 1, *flat)
        return struct.pack(">HB", len(body) + 3, RTDE_DATA_PACKAGE) + body

    def output_values(self, names: Sequence[str]) -> dict[str, Any]:
        """The output fields of one data package, from the simulated arm now."""
        r = self.robot
        script = self.script
        if script is not None:
            script.poll()
        with r._lock:
            r._advance()
            pose, q, force = list(r.pose), list(r.q), [0.0, 0.0, r._force_z - r._ft_offset, 0.0, 0.0, 0.0]
            moving = r._segment is not None
            held, pstop, estop, running = r.held, r.protective_stopped, r.emergency_stopped, r.program_running
            std_out, tool_out = list(r.std_out), list(r.tool_out)
        mass, cog = r.payload
        safety_bits = 1 << SAFETY_BIT["normal"] if not (pstop or estop) else 0
        if pstop:
            safety_bits |= 1 << SAFETY_BIT["protective"]
        if estop:
            safety_bits |= 1 << SAFETY_BIT["robot_estop"] | 1 << SAFETY_BIT["estop"]
        out_bits = sum(1 << i for i, v in enumerate(std_out) if v)
        out_bits |= sum(1 << (16 + i) for i, v in enumerate(tool_out) if v)
        values: dict[str, Any] = {
            "timestamp": round((time.monotonic() - self._t0) / 0.002) * 0.002,
            "actual_TCP_pose": pose, "target_TCP_pose": pose, "actual_q": q, "target_q": q,
            "actual_TCP_force": force, "robot_mode": self.robot_mode(), "safety_mode": self.safety_mode(),
            "safety_status": self.safety_mode(), "runtime_state": 2 if running else 1,
            "robot_status_bits": (1 if self.state.powered else 0) | (2 if running else 0),
            "safety_status_bits": safety_bits, "actual_digital_output_bits": out_bits,
            "actual_digital_input_bits": (1 << r.vacuum_input_bit) if held is not None else 0,
            "speed_scaling": 1.0, "target_speed_fraction": 1.0, "payload": mass, "payload_cog": cog,
            "joint_mode": [253] * 6, "actual_main_voltage": 48.0, "actual_robot_voltage": 48.0,
            "joint_temperatures": [30.0] * 6, "actual_tool_accelerometer": [0.0, 0.0, 9.81],
        }
        if not moving:
            values["actual_TCP_speed"] = [0.0] * 6
        for name in names:
            if name.startswith("output_int_register_") and script is not None:
                values[name] = script.out_int.get(int(name.rsplit("_", 1)[1]), 0)
            elif name.startswith("output_double_register_") and script is not None:
                values[name] = script.out_double.get(int(name.rsplit("_", 1)[1]), 0.0)
            elif name not in values:
                typ = _OUTPUTS[name]
                n = int(_FORMAT[typ][0]) if _FORMAT[typ][0].isdigit() else 1
                values[name] = [0] * n if n > 1 else 0
        return values

    # ----- snapshot (control port, state file) --------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        r = self.robot
        with r._lock:
            r._advance()
            return {
                "tcp_pose": list(r.pose), "q": list(r.q), "held": r.held.name if r.held else None,
                "objects": [{"name": o.name, "x": o.x, "y": o.y, "z": o.z, "size": o.size} for o in r.objects],
                "protective_stop": r.protective_stopped, "emergency_stop": r.emergency_stopped,
                "program_running": r.program_running, "tool_out": list(r.tool_out), "std_out": list(r.std_out),
                "tcp_offset": list(r.tcp_offset), "clients": list(self.clients), "programs": list(self.programs),
                "listening": self.listening, "silent": self.silent, "refused": self.refused,
            }


def _bind(sock: socket.socket, host: str, port: int, timeout_s: float = 2.0) -> None:
    """Bind, retrying for timeout_s (s) while a just-closed listener of the same port is still going away."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            sock.bind((host, port))
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


# ----- the control port (test control / fault injection) --------------------------------------
class ControlPort:
    """JSON lines: {"op": name, ...} -> {"ok": true, "result": ...} | {"ok": false, "error": "..."}.

    ops: state, commands, clear_commands, trigger_protective_stop, unlock_protective_stop, press_emergency_stop,
    release_emergency_stop, drop, silence, restore, set_time_scale{scale}, set_remote_control{on},
    set_power{on}."""

    def __init__(self, server: FakeUrControllerServer, port: int) -> None:
        self.server = server
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((server.host, port))
        self.sock.listen(4)
        self.sock.settimeout(0.1)
        self.port = int(self.sock.getsockname()[1])
        threading.Thread(target=self._accept, name="fake-ur-control", daemon=True).start()

    def _accept(self) -> None:
        while not self.server._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(0.2)
        buf = b""
        with conn:
            while not self.server._stop.is_set():
                try:
                    data = conn.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    return
                if not data:
                    return
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    try:
                        reply = {"ok": True, "result": self.handle(json.loads(line))}
                    except Exception as e:  # noqa: BLE001 - reported to the client
                        reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
                    conn.sendall(json.dumps(reply).encode() + b"\n")

    def handle(self, msg: dict[str, Any]) -> Any:
        s, r, op = self.server, self.server.robot, msg.get("op")
        if op == "state":
            return s.snapshot()
        if op == "commands":
            with r._lock:
                return [[name, list(args)] for name, args in r.commands]
        if op == "events":
            return [list(e) for e in s.events]
        if op == "reset":
            s.reset(dict(msg.get("scene", {})), msg.get("host"))
            return None
        if op == "clear_commands":
            with r._lock:
                r.commands.clear()
            return None
        if op == "trigger_protective_stop":
            r.trigger_protective_stop()
        elif op == "unlock_protective_stop":
            r.unlock_protective_stop()
        elif op == "press_emergency_stop":
            r.press_emergency_stop()
        elif op == "release_emergency_stop":
            with r._lock:
                r.emergency_stopped = False
        elif op == "drop":
            s.drop()
        elif op == "silence":
            s.silence()
        elif op == "restore":
            s.restore()
        elif op == "set_time_scale":
            r.set_time_scale(float(msg["scale"]))
        elif op == "set_remote_control":
            s.state.remote_control = bool(msg["on"])
        elif op == "set_power":
            s.state.powered = bool(msg["on"])
        else:
            raise ValueError(f"unknown op {op!r}")
        if not r.program_running and s.script is not None:
            s._end_program()
        return None


class RemoteController:
    """Client of a fake controller's control port (tests, fault injection)."""

    def __init__(self, host: str, port: int, timeout_s: float = 5.0) -> None:
        self._sock = socket.create_connection((host, port), timeout=timeout_s)
        self._buf = b""
        self._lock = threading.Lock()

    def call(self, op: str, **args: Any) -> Any:
        with self._lock:
            self._sock.sendall(json.dumps({"op": op, **args}).encode() + b"\n")
            while b"\n" not in self._buf:
                chunk = self._sock.recv(65536)
                if not chunk:
                    raise ConnectionError("the fake controller closed its control port")
                self._buf += chunk
            line, self._buf = self._buf.split(b"\n", 1)
        reply = json.loads(line)
        if not reply["ok"]:
            raise RuntimeError(reply["error"])
        return reply["result"]

    def commands(self) -> list[tuple[str, tuple[Any, ...]]]:
        return [(name, tuple(args)) for name, args in self.call("commands")]

    def state(self) -> dict[str, Any]:
        result: dict[str, Any] = self.call("state")
        return result

    def close(self) -> None:
        self._sock.close()


class RemoteUr:
    """The test controls of fake_rtde's FakeUrController, on a fake controller process (so tests written against
    the API-level fake run against the protocol-level one): state reads and fault injection over the control port."""

    def __init__(self, remote: RemoteController, host: str, scene: dict[str, Any]) -> None:
        self.remote = remote
        self.host = host  # the address ur_rtde connects to
        self.scene = scene

    def reset(self) -> None:
        """A fresh controller on a fresh loopback address (see FakeUrControllerServer.reset)."""
        self.host = fresh_loopback_address()
        self.remote.call("reset", scene=self.scene, host=self.host)

    def factories(self) -> RtdeFactories:
        return library_factories()  # the real ur_rtde

    @property
    def commands(self) -> list[tuple[str, tuple[Any, ...]]]:
        return self.remote.commands()

    def motion_commands(self) -> list[tuple[str, tuple[Any, ...]]]:
        keep = {"moveL", "moveJ", "stopL", "stopJ", "setToolDigitalOut", "setStandardDigitalOut", "zeroFtSensor"}
        return [c for c in self.commands if c[0] in keep]

    @property
    def constructed(self) -> list[str]:
        return list(self.remote.state()["clients"])

    @property
    def events(self) -> list[tuple[str, str]]:
        return [(a, b) for a, b in self.remote.call("events")]

    @property
    def pose(self) -> list[float]:
        return list(self.remote.state()["tcp_pose"])

    @property
    def tool_out(self) -> list[bool]:
        return list(self.remote.state()["tool_out"])

    @property
    def objects(self) -> list[FakeObject]:
        return [FakeObject(o["name"], o["x"], o["y"], size=o["size"], z=o["z"]) for o in self.remote.state()["objects"]]

    def get(self, name: str) -> FakeObject:
        return next(o for o in self.objects if o.name == name)

    def set_time_scale(self, scale: float) -> None:
        self.remote.call("set_time_scale", scale=scale)

    def trigger_protective_stop(self) -> None:
        self.remote.call("trigger_protective_stop")

    def unlock_protective_stop(self) -> None:
        self.remote.call("unlock_protective_stop")

    def press_emergency_stop(self) -> None:
        self.remote.call("press_emergency_stop")

    def drop_connection(self, silent: bool = False) -> None:
        self.remote.call("silence" if silent else "drop")

    def restore_connection(self) -> None:
        self.remote.call("restore")

    @property
    def refused(self) -> int:
        """Dashboard connections the dropped network turned away (ur_rtde's own reconnection attempts)."""
        return int(self.remote.state()["refused"])

    @property
    def refuse_connect(self) -> bool:
        return not self.remote.state()["listening"]

    @refuse_connect.setter
    def refuse_connect(self, on: bool) -> None:
        self.remote.call("drop" if on else "restore")

    @property
    def hang_connect(self) -> bool:
        return bool(self.remote.state()["silent"])

    @hang_connect.setter
    def hang_connect(self, on: bool) -> None:
        self.remote.call("silence" if on else "restore")

    def release(self) -> None:
        """Nothing blocks in the test process (the API-level fake's release())."""


def loopback_address(tag: int) -> str:
    """A loopback address of this process (ur_rtde's ports are fixed): 127.<pid>.<tag>, tag 2..254."""
    pid = os.getpid()
    return f"127.{(pid >> 8) & 255}.{pid & 255}.{tag}"


_next_tag = itertools.count()


def fresh_loopback_address() -> str:
    """A loopback address of this process not handed out lately (tags 16..254, in turn)."""
    return loopback_address(16 + next(_next_tag) % 239)


@dataclass
class FakeControllerProcess:
    """`fake_ur_controller` as a child process (tests): start() waits for it to listen, bounded."""

    host: str
    scene: dict[str, Any] = field(default_factory=dict)
    extra_args: list[str] = field(default_factory=list)
    start_timeout_s: float = 20.0

    def start(self) -> RemoteController:
        control_port = _free_port(self.host)
        cmd = [sys.executable, "-m", "skills_node.robots.ur5e.testing.fake_controller", "--host", self.host,
               "--control-port", str(control_port), "--scene-json", json.dumps(self.scene),
               "--parent-pid", str(os.getpid()), *self.extra_args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        line = _readline(self.proc, self.start_timeout_s)
        if "listening on" not in line:
            self.stop()
            raise RuntimeError(f"fake_ur_controller did not start: {line!r}")
        threading.Thread(target=self._drain, daemon=True).start()
        self.remote = RemoteController(self.host, control_port)
        return self.remote

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            sys.stderr.write("[fake_ur] " + line)

    def stop(self) -> None:
        if getattr(self, "remote", None) is not None:
            self.remote.close()
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(5.0)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5.0)


def _free_port(host: str) -> int:
    s = socket.socket()
    s.bind((host, 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


def _readline(proc: subprocess.Popen[str], timeout_s: float) -> str:
    """The child's first output line, or "" after timeout_s (s)."""
    box: list[str] = []
    assert proc.stdout is not None
    out = proc.stdout
    t = threading.Thread(target=lambda: box.append(out.readline()), daemon=True)
    t.start()
    t.join(timeout_s)
    return box[0] if box else ""


# ----- process entry point ---------------------------------------------------------------------
def robot_from_scene(spec: dict[str, Any], on_command: Callable[[str, tuple[Any, ...], float], None] | None = None
                     ) -> FakeUrController:
    """The simulated arm of a scene (fake_rtde's MONOLOGUE_FAKE_RTDE schema, plus an optional "installation":
    the pendant's TCP offset (m, rad), payload mass (kg) and centre of gravity (m) at power-on)."""
    robot = FakeUrController(
        time_scale=float(spec.get("time_scale", 1.0)),
        objects=[FakeObject(**o) for o in spec.get("objects", [])],
        fault_below_z=spec.get("fault_below_z"),
        on_command=on_command,
    )
    installation = spec.get("installation") or {}
    if "tcp_offset" in installation:
        robot.tcp_offset = [float(v) for v in installation["tcp_offset"]]
    if "payload_mass" in installation:
        robot.payload = (float(installation["payload_mass"]),
                         [float(v) for v in installation.get("payload_cog", [0.0, 0.0, 0.0])])
    return robot


def _write_state(server: FakeUrControllerServer, path: Path, period_s: float, stop: threading.Event) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    while not stop.wait(period_s):
        tmp.write_text(json.dumps(server.snapshot()))
        os.replace(tmp, path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fake_ur_controller", description="A fake UR e-Series controller for ur_rtde.")
    p.add_argument("--host", default="127.0.0.1", help="loopback address to bind (one fake per address)")
    p.add_argument("--dashboard-port", type=int, default=29999)
    p.add_argument("--primary-port", type=int, default=30001)
    p.add_argument("--secondary-port", type=int, default=30002)
    p.add_argument("--script-port", type=int, default=30003)
    p.add_argument("--rtde-port", type=int, default=30004)
    p.add_argument("--control-port", type=int, default=0, help="JSON-lines test-control port (0 = none)")
    p.add_argument("--scene", default="", help="scene JSON file (time_scale, objects, fault_below_z)")
    p.add_argument("--scene-json", default="", help="the scene as a JSON string")
    p.add_argument("--time-scale", type=float, default=None, help="simulated s per real s (overrides the scene)")
    p.add_argument("--max-frequency", type=float, default=500.0, help="Hz, highest RTDE output rate")
    p.add_argument("--state-file", default="", help="write the arm and objects here as JSON (<= 30 Hz)")
    p.add_argument("--log", default="", help="append every command that reached the controller as a JSON line")
    p.add_argument("--fault", choices=("remote_off", "protective_stop", "estop", "power_off"), action="append",
                   default=[], help="start in this state")
    p.add_argument("--parent-pid", type=int, default=0, help="exit when this process is gone (tests)")
    p.add_argument("--ready-file", default="", help="create this file once every port accepts connections "
                   "(the dry run starts the nodes after it exists)")
    p.add_argument("--verbose", action="store_true")
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO if a.verbose else logging.WARNING, stream=sys.stdout,
                        format="fake_ur_controller: %(message)s")
    spec: dict[str, Any] = {}
    if a.scene:
        spec = json.loads(Path(a.scene).read_text(encoding="utf-8"))
    elif a.scene_json:
        spec = json.loads(a.scene_json)
    if a.time_scale is not None:
        spec["time_scale"] = a.time_scale
    log_lock = threading.Lock()

    def log(name: str, args: tuple[Any, ...], taken: float) -> None:
        if a.log:
            with log_lock, open(a.log, "a", encoding="utf-8") as f:
                f.write(json.dumps({"t": taken, "cmd": name, "args": list(args)}) + "\n")

    robot = robot_from_scene(spec, on_command=log)
    ports = ControllerPorts(a.dashboard_port, a.primary_port, a.secondary_port, a.script_port, a.rtde_port)
    server = FakeUrControllerServer(robot, a.host, ports, max_frequency=a.max_frequency)
    if "remote_off" in a.fault:
        server.state.remote_control = False
    if "power_off" in a.fault:
        server.state.powered = server.state.brakes_released = False
    if "protective_stop" in a.fault:
        robot.trigger_protective_stop()
    if "estop" in a.fault:
        robot.press_emergency_stop()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server.start()
    if a.control_port:
        ControlPort(server, a.control_port)
    if a.state_file:
        threading.Thread(target=_write_state, args=(server, Path(a.state_file), 1 / 30, stop), daemon=True).start()
    print(f"fake_ur_controller listening on {a.host}", flush=True)
    if a.ready_file:
        tmp = Path(a.ready_file + ".tmp")
        tmp.write_text(a.host + "\n", encoding="utf-8")
        tmp.replace(a.ready_file)  # atomically: a reader never sees a half-written file
    while not stop.wait(0.5):
        if a.parent_pid and not _alive(a.parent_pid):
            break  # the test process died without stopping us
    server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
