"""ArmPort over ur_rtde 1.6.5 (RTDEControlInterface, RTDEReceiveInterface, RTDEIOInterface).

- Connection is guarded: before any ur_rtde constructor runs, the controller's dashboard server
  (greeting) and RTDE server (protocol handshake) must answer within `connect_timeout_s`, and the
  script port must accept. A host that accepts connections but never answers would otherwise hang
  the ur_rtde constructor forever while it holds the GIL.
- Every motion is sent asynchronously and then watched here, so stop() (stopL / stopJ) can
  interrupt it and a fault or a lost connection ends it with a clear error instead of a hang.
- A monitor thread polls the safety status every `monitor_period_s` (protective stop, emergency
  stop, safety and robot mode, connection and data freshness), reports changes, interrupts the
  running motion on a fault, and reconnects after a lost connection.
- Contact ("descend until 5 N", IM §4.2) is a slow asynchronous moveL bounded by max_travel, watched
  against the TCP force from the built-in force/torque sensor (zeroed first), and stopped with stopL.
  ur_rtde's moveUntilContact() is not used: it has no travel bound, no force threshold and cannot be
  interrupted by stopL while it runs.
Units: m, rad, s, N (ur_rtde's conventions).
"""
from __future__ import annotations

import ctypes
import importlib
import logging
import math
import socket
import struct
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

from skills_node.core.arm import (
    ArmFault,
    ArmStatus,
    FaultKind,
    MotionInterrupted,
    MotionRefused,
    Refusal,
    RobotMode,
    SafetyMode,
    TcpPose,
    Vector3,
    motion_duration,
)

T = TypeVar("T")
__all__ = ["RtdeArm", "RtdeArmConfig", "RtdeFactories", "UrPorts", "EndEffectorIO", "library_factories",
           "motion_duration", "probe_controller"]


# ----- the ur_rtde surface this module uses (the real classes and the test fake satisfy it) ---
class AsyncStatus(Protocol):
    def isAsyncOperationRunning(self) -> bool: ...  # noqa: N802 (ur_rtde's names)


class RtdeControl(Protocol):
    def moveL(self, pose: list[float], speed: float, acceleration: float,  # noqa: N802
              asynchronous: bool) -> bool: ...
    def moveJ(self, q: list[float], speed: float, acceleration: float,  # noqa: N802
              asynchronous: bool) -> bool: ...
    def stopL(self, a: float, asynchronous: bool) -> None: ...  # noqa: N802
    def stopJ(self, a: float, asynchronous: bool) -> None: ...  # noqa: N802
    def setTcp(self, tcp_offset: list[float]) -> bool: ...  # noqa: N802
    def setPayload(self, mass: float, cog: list[float]) -> bool: ...  # noqa: N802
    def zeroFtSensor(self) -> bool: ...  # noqa: N802
    def getAsyncOperationProgressEx(self) -> AsyncStatus: ...  # noqa: N802
    def isProgramRunning(self) -> bool: ...  # noqa: N802
    def reuploadScript(self) -> bool: ...  # noqa: N802
    def isConnected(self) -> bool: ...  # noqa: N802
    def disconnect(self) -> None: ...


class RtdeReceive(Protocol):
    def getActualTCPPose(self) -> list[float]: ...  # noqa: N802
    def getActualQ(self) -> list[float]: ...  # noqa: N802
    def getActualTCPForce(self) -> list[float]: ...  # noqa: N802
    def getActualDigitalInputBits(self) -> int: ...  # noqa: N802
    def getActualDigitalOutputBits(self) -> int: ...  # noqa: N802
    def getTimestamp(self) -> float: ...  # noqa: N802
    def getRobotMode(self) -> int: ...  # noqa: N802
    def getSafetyMode(self) -> int: ...  # noqa: N802
    def isProtectiveStopped(self) -> bool: ...  # noqa: N802
    def isEmergencyStopped(self) -> bool: ...  # noqa: N802
    def isConnected(self) -> bool: ...  # noqa: N802
    def disconnect(self) -> None: ...


class RtdeIO(Protocol):
    def setStandardDigitalOut(self, output_id: int, signal_level: bool) -> bool: ...  # noqa: N802
    def setToolDigitalOut(self, output_id: int, signal_level: bool) -> bool: ...  # noqa: N802
    def isConnected(self) -> bool: ...  # noqa: N802
    def disconnect(self) -> None: ...


@dataclass(frozen=True)
class RtdeFactories:
    """Constructors of the three interfaces, each taking the robot's host name or IP."""

    control: Callable[[str], RtdeControl]
    receive: Callable[[str], RtdeReceive]
    io: Callable[[str], RtdeIO]


def library_factories() -> RtdeFactories:
    """The real ur_rtde classes (imported here so the rest of the module works without ur_rtde)."""
    control = importlib.import_module("rtde_control")
    receive = importlib.import_module("rtde_receive")
    io = importlib.import_module("rtde_io")
    return RtdeFactories(
        control=lambda host: control.RTDEControlInterface(host),
        receive=lambda host: receive.RTDEReceiveInterface(host),
        io=lambda host: io.RTDEIOInterface(host),
    )


# ----- connection probe ----------------------------------------------------------------------
@dataclass(frozen=True)
class UrPorts:
    """TCP ports of a UR controller."""

    dashboard: int  # dashboard server (RTDEControlInterface needs it; UR's default 29999)
    rtde: int  # RTDE (30004)
    script: int  # URScript upload, real-time client interface (30003)


RTDE_REQUEST_PROTOCOL_VERSION = 86  # 'V'
RTDE_PROTOCOL_VERSION = 2


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("connection closed by the controller")
        data += chunk
    return data


def probe_controller(host: str, ports: UrPorts, timeout_s: float) -> None:
    """Check that `host` is a UR controller that answers, within timeout_s (s) per port.

    Raises ConnectionError with the reason. Reads the dashboard server's greeting, runs the RTDE
    protocol-version handshake, and opens the script port. Nothing is commanded.
    """
    def connect(port: int, what: str) -> socket.socket:
        try:
            return socket.create_connection((host, port), timeout=timeout_s)
        except TimeoutError as e:
            raise ConnectionError(f"{host}:{port} ({what}) did not accept a connection within {timeout_s:g} s; "
                                  "check the robot's IP address and network") from e
        except OSError as e:
            raise ConnectionError(f"cannot connect to {host}:{port} ({what}): {e}; is the robot on and "
                                  "reachable?") from e

    with connect(ports.dashboard, "dashboard server") as s:
        try:
            greeting = s.recv(256)
        except TimeoutError as e:
            raise ConnectionError(f"{host}:{ports.dashboard} accepts connections but sent no dashboard greeting "
                                  f"within {timeout_s:g} s; it is not answering like a UR controller") from e
        if b"Dashboard" not in greeting and b"Connected" not in greeting:
            raise ConnectionError(f"{host}:{ports.dashboard} answered {greeting[:60]!r}, not a UR dashboard server")
    with connect(ports.rtde, "RTDE") as s:
        try:
            s.sendall(struct.pack(">HBH", 5, RTDE_REQUEST_PROTOCOL_VERSION, RTDE_PROTOCOL_VERSION))
            size, kind = struct.unpack(">HB", _recv_exactly(s, 3))
            _recv_exactly(s, max(0, size - 3))
        except TimeoutError as e:
            raise ConnectionError(f"{host}:{ports.rtde} accepts connections but did not answer the RTDE handshake "
                                  f"within {timeout_s:g} s") from e
        if kind != RTDE_REQUEST_PROTOCOL_VERSION:
            raise ConnectionError(f"{host}:{ports.rtde} answered RTDE message type {kind}, expected "
                                  f"{RTDE_REQUEST_PROTOCOL_VERSION}")
    with connect(ports.script, "script port"):
        pass


# ----- configuration -------------------------------------------------------------------------
@dataclass(frozen=True)
class EndEffectorIO:
    """An on/off end effector on a digital output: a suction cup's vacuum valve or a pneumatic gripper."""

    output: Literal["tool", "standard"]  # tool flange output or control-box standard output
    pin: int  # 0-1 (tool) or 0-7 (standard)
    active_high: bool  # output level that means "on" (suction / gripper closed)
    sense_input: int  # bit in getActualDigitalInputBits() of a vacuum / grip sensor (0-7 standard,
    # 8-15 configurable, 16-17 tool); -1 = no sensor: holding() reports the commanded state
    sense_active_high: bool

    def __post_init__(self) -> None:
        if self.output not in ("tool", "standard"):
            raise ValueError(f"end effector output must be 'tool' or 'standard', got {self.output!r}")
        top = 1 if self.output == "tool" else 7
        if not 0 <= self.pin <= top:
            raise ValueError(f"{self.output} digital output pin must be 0-{top}, got {self.pin}")
        if not -1 <= self.sense_input <= 17:
            raise ValueError(f"sense_input must be -1 (none) or a digital input bit 0-17, got {self.sense_input}")

    @property
    def output_bit(self) -> int:
        """Bit of this output in getActualDigitalOutputBits()."""
        return 16 + self.pin if self.output == "tool" else self.pin


@dataclass(frozen=True)
class RtdeArmConfig:
    """The fields up to `ports` are the skills node's `ur5e.*` parameters (defaults in
    config/robots/ur5e.yaml only); the rest are constants of this driver."""

    host: str
    tcp_offset: tuple[float, ...]  # flange -> TCP: m, rad (rotation vector)
    payload_mass: float  # kg, tool + typical object
    payload_cog: tuple[float, ...]  # m from the flange
    end_effector: EndEffectorIO
    contact_force: float  # N along the motion that counts as contact (IM §4.2)
    contact_acceleration: float  # m/s^2 of the contact move
    stop_deceleration: float  # m/s^2, stopL on stop()/cancel
    monitor_period_s: float  # s between safety-status polls (and motion checks)
    command_timeout_s: float  # s a single ur_rtde call may take before the connection is declared lost
    connect_timeout_s: float  # s per probe step and per interface construction
    stale_timeout_s: float  # s without new RTDE data before the connection is declared lost
    reconnect_period_s: float  # s between reconnection attempts; 0 = never reconnect
    probe: bool  # probe the controller's ports before constructing the ur_rtde interfaces
    ports: UrPorts
    zero_ft_before_contact: bool = True  # zero the force/torque sensor before every contact move
    contact_stop_deceleration: float = 5.0  # m/s^2, stopL on contact
    stop_joint_deceleration: float = 3.0  # rad/s^2, stopJ
    motion_timeout_factor: float = 2.0  # motion time limit = factor * nominal duration + margin
    motion_timeout_margin_s: float = 5.0
    # s: no motion is watched longer; a motion whose time limit would be longer (an absurdly slow speed or
    # acceleration that passed the layer above) is refused before it is sent (every wait here is bounded)
    max_motion_time_s: float = 300.0
    settle_timeout_s: float = 0.5  # s a motion may report "not running" away from its target before it failed
    position_tolerance: float = 0.002  # m, target reached
    joint_tolerance: float = 0.005  # rad, joint target reached

    def __post_init__(self) -> None:
        if not self.host:
            raise ValueError("the robot host (IP address) is empty")
        if len(self.tcp_offset) != 6 or len(self.payload_cog) != 3:
            raise ValueError("tcp_offset needs 6 values (m, rad) and payload_cog 3 values (m)")
        if self.payload_mass < 0:
            raise ValueError("payload_mass must be >= 0 kg")
        for name in ("contact_force", "contact_acceleration", "stop_deceleration", "contact_stop_deceleration",
                     "stop_joint_deceleration", "monitor_period_s", "command_timeout_s", "connect_timeout_s",
                     "stale_timeout_s", "motion_timeout_factor", "settle_timeout_s", "position_tolerance",
                     "joint_tolerance", "max_motion_time_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be > 0, got {value}")
        if self.reconnect_period_s < 0 or self.motion_timeout_margin_s < 0:
            raise ValueError("reconnect_period_s and motion_timeout_margin_s must be >= 0")


_DISCONNECTED = ArmStatus(int(RobotMode.DISCONNECTED), int(SafetyMode.UNDEFINED_SAFETY_MODE),
                          protective_stop=False, emergency_stop=False, connected=False, detail="not connected yet")


class RtdeArm:
    """ArmPort for a UR e-Series arm through ur_rtde."""

    def __init__(
        self,
        config: RtdeArmConfig,
        factories: RtdeFactories,
        logger: logging.Logger,
        on_status: Callable[[ArmStatus], None] | None = None,
    ) -> None:
        self.cfg = config
        self._factories = factories
        self._log = logger
        self._on_status = on_status
        self._conn_lock = threading.RLock()  # guards the interface references
        self._ctrl: RtdeControl | None = None
        self._recv: RtdeReceive | None = None
        self._io: RtdeIO | None = None
        self._status = _DISCONNECTED
        self._status_lock = threading.Lock()
        self._last_ts: float | None = None
        self._last_ts_change = 0.0
        # Motion and stop commands are sent one at a time; a motion is interrupted once a stop was
        # sent after it (so a stop that races ahead of a motion command cannot be lost silently).
        self._cmd_lock = threading.Lock()
        self._sent_seq = 0  # number of motion commands sent
        self._stopped_seq = 0  # value of _sent_seq when the latest stop was sent
        self._motion_kind: Literal["linear", "joint", ""] = ""
        self._closing = threading.Event()
        self._monitor: threading.Thread | None = None
        self._last_attempt = 0.0

    # ----- connection -----------------------------------------------------------------------
    def connect(self) -> None:
        """One connection attempt; raises ArmFault(CONNECTION_LOST) with the reason. Never hangs on a
        silent host: the probe answers first, within connect_timeout_s."""
        c = self.cfg
        self._last_attempt = time.monotonic()
        self._drop_interfaces()
        if c.probe:
            try:
                probe_controller(c.host, c.ports, c.connect_timeout_s)
            except ConnectionError as e:
                self._set_status(_disconnected(str(e)))
                raise ArmFault(FaultKind.CONNECTION_LOST, str(e)) from e
        try:
            recv = self._construct("RTDEReceiveInterface", lambda: self._factories.receive(c.host))
            ctrl = self._construct("RTDEControlInterface", lambda: self._factories.control(c.host))
            io = self._construct("RTDEIOInterface", lambda: self._factories.io(c.host))
        except ArmFault as e:
            self._set_status(_disconnected(e.reason))
            raise
        with self._conn_lock:
            self._recv, self._ctrl, self._io = recv, ctrl, io
            self._last_ts = None
        self._call("setTcp", lambda: ctrl.setTcp(list(c.tcp_offset)), expect_true=True)
        self._call("setPayload", lambda: ctrl.setPayload(c.payload_mass, list(c.payload_cog)), expect_true=True)
        self._set_status(self._read_status())
        self._log.info("connected to the UR controller at %s: %s", c.host, self._status.describe())

    def start_monitor(self) -> None:
        """Start the safety monitor (also retries the connection every reconnect_period_s)."""
        if self._monitor is None:
            self._monitor = threading.Thread(target=self._monitor_loop, name="ur5e-monitor", daemon=True)
            self._monitor.start()

    def close(self) -> None:
        self._closing.set()
        if self._monitor is not None:
            self._monitor.join(timeout=2.0)
        self._drop_interfaces()

    def _construct(self, what: str, make: Callable[[], T]) -> T:
        try:
            return self._call(f"{what}({self.cfg.host})", make, timeout_s=self.cfg.connect_timeout_s)
        except ArmFault as e:
            raise ArmFault(FaultKind.CONNECTION_LOST, f"could not connect to the UR controller at {self.cfg.host}: "
                                                      f"{e.reason}") from e

    def _drop_interfaces(self) -> None:
        with self._conn_lock:
            ctrl, io, recv = self._ctrl, self._io, self._recv
            self._ctrl = self._recv = self._io = None
        lost = not self.status().connected
        if recv is not None and not lost:
            try:
                lost = not recv.isConnected()
            except RuntimeError:
                lost = True
        # ur_rtde 1.6.5's interfaces are disconnected, then never destroyed (a few leaked objects per connection;
        # found with the protocol-level fake, test_ur5e_rtde.py "protocol"):
        # - every destructor calls disconnect() again, which sleeps 0.5 s holding the GIL: the whole node froze;
        # - RTDEIOInterface has no receive thread and never notices a lost connection: its disconnect() and its
        #   destructor send an RTDE pause on the dead socket, which throws in the destructor and aborts the process
        #   (std::terminate). After a loss it is not disconnected either;
        # - RTDEControlInterface reconnects by itself from its receive thread after a loss; destroying it
        #   meanwhile crashed the process (segfault). (Known limit: if the controller is back before that attempt,
        #   ur_rtde 1.6.5 keeps reconnecting that interface, which holds the RTDE input registers: a new
        #   RTDEControlInterface then fails with "input registers are already in use" until the node restarts.)
        dropped = [i for i in (ctrl, io, recv) if i is not None]
        for iface in dropped:
            _pin(iface)
        self._disconnect_all([i for i in dropped if not (lost and i is io)])

    def _disconnect_all(self, interfaces: Sequence[RtdeControl | RtdeReceive | RtdeIO]) -> None:
        """disconnect() each, in parallel, 1 s at most (ur_rtde's control and receive interfaces sleep 0.5 s each)."""
        workers = [threading.Thread(target=self._disconnect, args=(i,), name="rtde:disconnect", daemon=True)
                   for i in interfaces]
        deadline = time.monotonic() + 1.0
        for w in workers:
            w.start()
        for w in workers:
            w.join(max(0.0, deadline - time.monotonic()))
            if w.is_alive():
                self._log.debug("disconnect did not return within 1 s")

    def _disconnect(self, iface: RtdeControl | RtdeReceive | RtdeIO) -> None:
        try:
            iface.disconnect()
        except RuntimeError as e:
            self._log.debug("disconnect: %s", e)

    # ----- guarded calls --------------------------------------------------------------------
    def _call(self, what: str, fn: Callable[[], T], timeout_s: float | None = None, expect_true: bool = False) -> T:
        """Run one ur_rtde call on a helper thread with a time limit; errors become ArmFault."""
        limit = self.cfg.command_timeout_s if timeout_s is None else timeout_s
        box: list[T] = []
        err: list[BaseException] = []

        def run() -> None:
            try:
                box.append(fn())
            except BaseException as e:  # noqa: B036 - re-raised in the caller's thread
                err.append(e)

        worker = threading.Thread(target=run, name=f"rtde:{what}", daemon=True)
        worker.start()
        worker.join(limit)
        if worker.is_alive():
            reason = f"{what} did not return within {limit:g} s"
            self._set_status(_disconnected(reason))
            raise ArmFault(FaultKind.CONNECTION_LOST, reason)
        if err:
            e = err[0]
            if isinstance(e, ArmFault):
                raise e
            if isinstance(e, RuntimeError):
                raise ArmFault(FaultKind.COMMAND_FAILED, f"{what}: {e}") from e
            if isinstance(e, ValueError):
                raise ArmFault(FaultKind.COMMAND_FAILED, f"{what} rejected by ur_rtde: {e}") from e
            raise e
        if expect_true and box[0] is False:
            raise self._command_failed(what)
        return box[0]

    @staticmethod
    def _local(what: str, fn: Callable[[], T]) -> T:
        """A ur_rtde call that only reads data the library already received (no network round trip)."""
        try:
            return fn()
        except RuntimeError as e:
            raise ArmFault(FaultKind.CONNECTION_LOST, f"{what}: {e}") from e

    def _command_failed(self, what: str) -> ArmFault:
        """ur_rtde returns False when the controller refuses (stops, script not running...)."""
        status = self._read_status()
        self._set_status(status)
        kind = status.fault()
        if kind is not None:
            return ArmFault(kind, f"{what} refused: {status.describe()}")
        return ArmFault(FaultKind.COMMAND_FAILED, f"{what} returned false ({status.describe()})")

    def _connected(self, pick: Callable[[], T | None]) -> T:
        with self._conn_lock:
            iface = pick()
        if iface is None:
            raise ArmFault(FaultKind.CONNECTION_LOST, f"not connected to {self.cfg.host}: {self.status().describe()}")
        return iface

    def _control(self) -> RtdeControl:
        return self._connected(lambda: self._ctrl)

    def _receive(self) -> RtdeReceive:
        return self._connected(lambda: self._recv)

    def _io_iface(self) -> RtdeIO:
        return self._connected(lambda: self._io)

    # ----- status and monitoring ------------------------------------------------------------
    def status(self) -> ArmStatus:
        with self._status_lock:
            return self._status

    def _set_status(self, status: ArmStatus) -> None:
        with self._status_lock:
            previous, self._status = self._status, status
        if status == previous:
            return
        if status.fault() is not None and status.fault() != previous.fault():
            self._log.error("UR5e fault: %s", status.describe())
        elif status.ok and not previous.ok:
            self._log.info("UR5e ready: %s", status.describe())
        else:
            self._log.info("UR5e status: %s", status.describe())
        if self._on_status is not None:
            try:
                self._on_status(status)
            except Exception as e:
                self._log.error("status callback failed: %s", e)

    def _read_status(self) -> ArmStatus:
        with self._conn_lock:
            recv, ctrl = self._recv, self._ctrl
        if recv is None or ctrl is None:
            return self.status() if not self.status().connected else _disconnected("interfaces closed")
        try:
            if not recv.isConnected() or not ctrl.isConnected():
                return _disconnected("ur_rtde reports the RTDE connection as lost")
            now, ts = time.monotonic(), recv.getTimestamp()
            if ts != self._last_ts:
                self._last_ts, self._last_ts_change = ts, now
            elif now - self._last_ts_change > self.cfg.stale_timeout_s:
                return _disconnected(f"no new data from the controller for {now - self._last_ts_change:.1f} s")
            return ArmStatus(
                robot_mode=int(recv.getRobotMode()),
                safety_mode=int(recv.getSafetyMode()),
                protective_stop=bool(recv.isProtectiveStopped()),
                emergency_stop=bool(recv.isEmergencyStopped()),
                connected=True,
            )
        except RuntimeError as e:
            return _disconnected(f"reading the robot state failed: {e}")

    def _monitor_loop(self) -> None:
        period = self.cfg.monitor_period_s
        while not self._closing.wait(period):
            with self._conn_lock:
                have = self._recv is not None
            if have:
                self._set_status(self._read_status())
            status = self.status()
            if (not status.connected and self.cfg.reconnect_period_s > 0
                    and time.monotonic() - self._last_attempt >= self.cfg.reconnect_period_s):
                try:
                    self.connect()
                except ArmFault as e:
                    self._log.warning("reconnection to %s failed: %s", self.cfg.host, e.reason)

    # ----- ArmPort: state -------------------------------------------------------------------
    def tcp_pose(self) -> TcpPose:
        return TcpPose.from_list(self._local("getActualTCPPose", self._receive().getActualTCPPose))

    def joint_positions(self) -> list[float]:
        return [float(v) for v in self._local("getActualQ", self._receive().getActualQ)]

    def holding(self) -> bool:
        ee, recv = self.cfg.end_effector, self._receive()
        if ee.sense_input >= 0:
            bits = self._local("getActualDigitalInputBits", recv.getActualDigitalInputBits)
            return bool((bits >> ee.sense_input) & 1) == ee.sense_active_high
        bits = self._local("getActualDigitalOutputBits", recv.getActualDigitalOutputBits)
        return bool((bits >> ee.output_bit) & 1) == ee.active_high

    # ----- ArmPort: commands ----------------------------------------------------------------
    def set_suction(self, on: bool) -> None:
        ee, io = self.cfg.end_effector, self._io_iface()
        level = on == ee.active_high
        if ee.output == "tool":
            self._call("setToolDigitalOut", lambda: io.setToolDigitalOut(ee.pin, level), expect_true=True)
        else:
            self._call("setStandardDigitalOut", lambda: io.setStandardDigitalOut(ee.pin, level), expect_true=True)

    def stop(self) -> None:
        """Decelerate now (stopL, or stopJ during a joint move) and interrupt the running motion.

        The running motion raises MotionInterrupted once this stop has been sent after its command."""
        ctrl = self._control()
        with self._cmd_lock:
            if self._motion_kind == "joint":
                self._call("stopJ", lambda: ctrl.stopJ(self.cfg.stop_joint_deceleration, False))
            else:
                self._call("stopL", lambda: ctrl.stopL(self.cfg.stop_deceleration, False))
            self._stopped_seq = self._sent_seq

    def _send_motion(self, what: str, send: Callable[[], bool]) -> int:
        """Send one asynchronous motion command; returns its sequence number."""
        with self._cmd_lock:
            self._call(what, send, expect_true=True)
            self._sent_seq += 1
            return self._sent_seq

    def move_linear(self, pose: TcpPose, speed: float, acceleration: float) -> None:
        ctrl = self._begin("linear")
        try:
            start = self.tcp_pose()
            limit = self._time_limit(motion_duration(start.distance_to(pose), speed, acceleration), "moveL")
            seq = self._send_motion("moveL", lambda: ctrl.moveL(pose.as_list(), speed, acceleration, True))
            self._await(seq, f"moveL to {pose}", limit, lambda: self._near(pose))
        finally:
            self._motion_kind = ""

    def move_joints(self, q: Sequence[float], speed: float, acceleration: float) -> None:
        ctrl = self._begin("joint")
        target = [float(v) for v in q]
        try:
            start = self.joint_positions()
            span = max(abs(a - b) for a, b in zip(start, target))
            limit = self._time_limit(motion_duration(span, speed, acceleration), "moveJ")
            seq = self._send_motion("moveJ", lambda: ctrl.moveJ(target, speed, acceleration, True))
            self._await(seq, f"moveJ to {[round(v, 3) for v in target]} rad", limit, lambda: self._near_joints(target))
        finally:
            self._motion_kind = ""

    def move_until_contact(self, direction: Vector3, speed: float, max_travel: float) -> bool:
        norm = math.sqrt(sum(c * c for c in direction))
        if norm < 1e-9:
            raise ValueError(f"contact direction {direction} is not a direction")
        unit = (direction[0] / norm, direction[1] / norm, direction[2] / norm)
        acc = self.cfg.contact_acceleration
        limit = self._time_limit(motion_duration(max_travel, speed, acc), "contact moveL")
        ctrl = self._begin("linear")
        try:
            if self.cfg.zero_ft_before_contact:
                self._call("zeroFtSensor", ctrl.zeroFtSensor, expect_true=True)
            start = self.tcp_pose()
            end = start.with_position(*(s + u * max_travel for s, u in zip(start.position, unit)))
            seq = self._send_motion("moveL", lambda: ctrl.moveL(end.as_list(), speed, acc, True))
            recv = self._receive()

            def touching() -> bool:
                force = recv.getActualTCPForce()
                return abs(sum(f * u for f, u in zip(force[:3], unit))) >= self.cfg.contact_force

            if not self._await(seq, f"contact move towards {end}", limit, lambda: self._near(end), touching):
                return False
            with self._cmd_lock:
                self._call("stopL", lambda: ctrl.stopL(self.cfg.contact_stop_deceleration, False))
            self._log.debug("contact after %.3f m", start.distance_to(self.tcp_pose()))
            return True
        finally:
            self._motion_kind = ""

    # ----- motion helpers -------------------------------------------------------------------
    def _begin(self, kind: Literal["linear", "joint"]) -> RtdeControl:
        status = self.status()
        fault = status.fault()
        if fault is not None:
            raise ArmFault(fault, f"the arm cannot move: {status.describe()}")
        ctrl = self._control()
        if not self._local("isProgramRunning", ctrl.isProgramRunning):
            self._log.warning("the ur_rtde control script is not running (after a stop?); uploading it again")
            self._call("reuploadScript", ctrl.reuploadScript, expect_true=True)
        self._motion_kind = kind
        return ctrl

    def _time_limit(self, nominal_s: float, what: str) -> float:
        """How long a motion of nominal duration `nominal_s` (s) is watched; MotionRefused (nothing sent)
        when that would exceed max_motion_time_s (or never end)."""
        limit = self.cfg.motion_timeout_factor * nominal_s + self.cfg.motion_timeout_margin_s
        if not limit <= self.cfg.max_motion_time_s:
            raise MotionRefused(Refusal.DURATION, f"{what} would take {nominal_s:.3g} s: its time limit "
                                                  f"{limit:.3g} s exceeds {self.cfg.max_motion_time_s:g} s")
        return limit

    def _await(self, seq: int, what: str, limit_s: float, at_target: Callable[[], bool],
               contact: Callable[[], bool] | None = None) -> bool:
        """Watch the asynchronous motion number `seq`. True if `contact` fired, False when the target was reached."""
        ctrl = self._control()
        deadline = time.monotonic() + limit_s
        idle_since: float | None = None
        while True:
            if self._stopped_seq >= seq:
                raise MotionInterrupted(f"{what} stopped on request")
            status = self.status()
            fault = status.fault()
            if fault is not None:
                if fault != FaultKind.CONNECTION_LOST:  # no stop can reach the robot then: ur_rtde's stopL would
                    self._stop_quietly()  # wait up to its 300 s command timeout for an answer that cannot come
                raise ArmFault(fault, f"during {what}: {status.describe()}")
            if contact is not None and self._local("getActualTCPForce", contact):
                return True
            running = self._local("getAsyncOperationProgressEx",
                                  lambda: ctrl.getAsyncOperationProgressEx().isAsyncOperationRunning())
            now = time.monotonic()
            if running:
                idle_since = None
            elif self._local("target check", at_target):
                return False
            else:
                idle_since = idle_since or now
                if now - idle_since > self.cfg.settle_timeout_s:
                    status = self._read_status()
                    self._set_status(status)
                    fault = status.fault()
                    if fault is not None:
                        raise ArmFault(fault, f"during {what}: {status.describe()}")
                    raise ArmFault(FaultKind.COMMAND_FAILED, f"{what} ended before reaching its target "
                                                             f"({status.describe()})")
            if now > deadline:
                self._stop_quietly()
                raise ArmFault(FaultKind.TIMEOUT, f"{what} did not finish within {limit_s:.1f} s; stopped")
            time.sleep(self.cfg.monitor_period_s)

    def _near(self, pose: TcpPose) -> bool:
        return self.tcp_pose().distance_to(pose) <= self.cfg.position_tolerance

    def _near_joints(self, q: Sequence[float]) -> bool:
        return max(abs(a - b) for a, b in zip(self.joint_positions(), q)) <= self.cfg.joint_tolerance

    def _stop_quietly(self) -> None:
        try:
            ctrl = self._control()
            if self._motion_kind == "joint":
                self._call("stopJ", lambda: ctrl.stopJ(self.cfg.stop_joint_deceleration, False), timeout_s=1.0)
            else:
                self._call("stopL", lambda: ctrl.stopL(self.cfg.stop_deceleration, False), timeout_s=1.0)
        except ArmFault as e:
            self._log.warning("could not stop the arm: %s", e.reason)


def _pin(obj: object) -> None:
    """Keep `obj` alive until the process ends, interpreter shutdown included (an extra reference: a module-level
    list would be cleared at shutdown and the object destroyed then)."""
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))


def _disconnected(detail: str) -> ArmStatus:
    return ArmStatus(int(RobotMode.DISCONNECTED), int(SafetyMode.UNDEFINED_SAFETY_MODE),
                     protective_stop=False, emergency_stop=False, connected=False, detail=detail)
