"""A fake UR5e behind ur_rtde's Python API, for tests (no URSim here: it needs Docker).

The same simulated arm also runs behind a protocol-level fake controller that the real ur_rtde connects to over
TCP (fake_controller.py); this API-level stand-in stays where that cannot be used (see fake_controller.py).

`FakeUrController` simulates one robot on a table with suction-pickable objects; the classes
`RTDEControlInterface`, `RTDEReceiveInterface` and `RTDEIOInterface` bound to it have ur_rtde 1.6.5's
names, signatures and behaviour where this project depends on it:
- constructors raise `RuntimeError("Error: Could not connect to: <host> at 30004, verify the IP")` when
  the robot is unreachable, or block (like a silent host) until `release()`;
- asynchronous moveL / moveJ run in (scaled) real time; `getAsyncOperationProgressEx()` reports them;
  stopL / stopJ halt them; speeds and accelerations outside ur_rtde's ranges raise ValueError;
- the TCP cannot pass through the table or objects: pressing raises the TCP force (stiffness N/m), and
  above `protective_force` N the robot protective-stops, as does passing below `fault_below_z`;
- after a protective or emergency stop commands return False and the control script stops running
  until `reuploadScript()`;
- a dropped connection makes `isConnected()` false and commands raise RuntimeError; a silent one keeps
  `isConnected()` true, freezes the data (timestamp) and makes commands block;
- the controller runs at `control_period` (2 ms: an e-Series controller's 500 Hz): a command (control
  and IO interface) is taken at the next control cycle, and the call returns then, as ur_rtde's do when
  the control script has picked the command up. The fake is never faster than the SDK: a stop reaches
  the simulated arm up to one cycle after it was sent, and `on_command` gets that cycle's wall time.
Suction: the configured digital output attaches the object under the TCP; a vacuum sensor input bit
is set while something is held; switching off drops the object on whatever is below it.
Linear moves do not update the joint positions (no inverse kinematics); joint moves update both.
Every command is recorded in `FakeUrController.commands` as (method, args), in the cycle it took effect.
"""
from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from skills_node.core.arm import RobotMode, SafetyMode, TcpPose
from skills_node.core.kinematics import forward_kinematics

from ..core.rtde import RtdeFactories

UR_TOOL_VELOCITY_MAX = 3.0  # m/s
UR_TOOL_ACCELERATION_MAX = 150.0  # m/s^2
UR_JOINT_VELOCITY_MAX = 3.14  # rad/s
UR_JOINT_ACCELERATION_MAX = 40.0  # rad/s^2
DOWN_POSE = (0.0, math.pi, 0.0)
HOME_Q = (math.pi, -math.pi / 2, math.pi / 2, -math.pi / 2, -math.pi / 2, 0.0)  # rad: tool down above x ~ 0.5 m


def _verify(value: float, lo: float, hi: float) -> None:
    if math.isnan(value):
        raise ValueError("The value is considered NaN")
    if not lo <= value <= hi:
        raise ValueError(f"The value is not within [{lo:g};{hi:g}]")


@dataclass
class FakeObject:
    """A box on the table: centre x, y (m), bottom z (m), edge `size` (m)."""

    name: str
    x: float
    y: float
    size: float = 0.04
    z: float = 0.0  # bottom
    liftable: bool = True

    @property
    def top(self) -> float:
        return self.z + self.size

    def under(self, x: float, y: float) -> bool:
        h = self.size / 2
        return abs(x - self.x) <= h and abs(y - self.y) <= h


@dataclass
class _Segment:
    kind: str  # "linear" | "joint"
    start: list[float]  # pose or q
    target: list[float]
    speed: float  # m/s or rad/s
    t0: float  # sim s
    length: float  # m or rad


@dataclass
class FakeUrController:
    """The simulated robot and table. Thread-safe."""

    time_scale: float = 1.0  # simulated seconds per real second
    max_step: float = 0.1  # s, most simulated time one state update may cover: a test process starved of
    # CPU slows the simulated robot down instead of letting it run far past a contact between two polls
    table_z: float = 0.0  # m
    objects: list[FakeObject] = field(default_factory=list)
    tcp_offset: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    stiffness: float = 1000.0  # N/m, contact stiffness (suction-cup bellows on a rigid table / object)
    protective_force: float = 150.0  # N, protective stop above this contact force
    fault_below_z: float | None = None  # m, protective stop when the TCP passes below
    suction_output: tuple[str, int] = ("tool", 0)
    vacuum_input_bit: int = 16  # tool digital input 0
    refuse_connect: bool = False
    hang_connect: bool = False
    control_period: float = 0.002  # s, the controller's cycle (e-Series: 500 Hz); 0 = commands take effect at once
    on_command: Callable[[str, tuple[Any, ...], float], None] | None = None  # name, args, wall time (s) taken

    def __post_init__(self) -> None:
        self._lock = threading.RLock()
        self._t_real = time.monotonic()  # real time of the last clock update
        self._t_start, self._wall_start = self._t_real, time.time()  # the first control cycle (monotonic, wall)
        self._t_sim = 0.0  # simulated time at that moment
        self.q = list(HOME_Q)
        self.pose = TcpPose(0.40, 0.0, 0.30, *DOWN_POSE).as_list()
        self.commands: list[tuple[str, tuple[Any, ...]]] = []
        self.constructed: list[str] = []
        self._segment: _Segment | None = None
        self._force_z = 0.0  # N
        self._ft_offset = 0.0  # N, zeroFtSensor
        self.protective_stopped = False
        self.emergency_stopped = False
        self.program_running = True
        self.connected = True
        self.silent = False
        self.generation = 0  # bumped by every drop: interfaces made before it stay dead, like ur_rtde's
        self._frozen_ts: dict[int, float] = {}  # generation -> timestamp its receive interface shows
        self._release = threading.Event()
        self.std_out = [False] * 8
        self.tool_out = [False] * 2
        self.held: FakeObject | None = None
        self.payload: tuple[float, list[float]] = (0.0, [0.0, 0.0, 0.0])  # kg, m: the last setPayload

    # ----- test controls --------------------------------------------------------------------
    def factories(self) -> RtdeFactories:
        return RtdeFactories(
            control=lambda host: RTDEControlInterface(host, controller=self),
            receive=lambda host: RTDEReceiveInterface(host, controller=self),
            io=lambda host: RTDEIOInterface(host, controller=self),
        )

    def release(self) -> None:
        """Unblock everything that hangs (constructors of a silent host, commands after a silent drop)."""
        self._release.set()

    def trigger_protective_stop(self) -> None:
        with self._lock:
            self._advance()
            self._halt_for_fault()
            self.protective_stopped = True

    def unlock_protective_stop(self) -> None:
        """What the operator does on the pendant (the control script stays stopped)."""
        with self._lock:
            self.protective_stopped = False

    def press_emergency_stop(self) -> None:
        with self._lock:
            self._advance()
            self._halt_for_fault()
            self.emergency_stopped = True

    def drop_connection(self, silent: bool = False) -> None:
        """Lose the network: cleanly (isConnected() false) or silently (data freezes, commands block)."""
        with self._lock:
            self._advance()
            self._frozen_ts[self.generation] = self._sim_now()
            if silent:
                self.silent = True
            else:
                self.connected = False

    def restore_connection(self) -> None:
        """The network is back: new interfaces connect; the old ones stay disconnected."""
        with self._lock:
            self.generation += 1
            self.connected, self.silent = True, False
        self._release.set()
        self._release = threading.Event()

    def alive(self, generation: int) -> bool:
        return self.connected and not self.silent and generation == self.generation

    def get(self, name: str) -> FakeObject:
        return next(o for o in self.objects if o.name == name)

    def motion_commands(self) -> list[tuple[str, tuple[Any, ...]]]:
        """Commands that move the arm or switch the end effector, in order."""
        keep = {"moveL", "moveJ", "stopL", "stopJ", "setToolDigitalOut", "setStandardDigitalOut", "zeroFtSensor"}
        with self._lock:
            return [c for c in self.commands if c[0] in keep]

    # ----- simulation -----------------------------------------------------------------------
    def set_time_scale(self, scale: float) -> None:
        """Change the speed of simulated time from now on (motions continue where they are)."""
        with self._lock:
            self._sim_now()
            self.time_scale = scale

    def _sim_now(self) -> float:
        with self._lock:
            now = time.monotonic()
            self._t_sim += min((now - self._t_real) * self.time_scale, self.max_step)
            self._t_real = now
            return self._t_sim

    def _next_cycle(self) -> float:
        """Wait for the controller's next control cycle; its wall time (s). Cycles are counted from the
        controller's start, whatever the caller's timing (the controller does not wait for anyone)."""
        period = self.control_period
        if period <= 0.0:
            return time.time()
        now = time.monotonic()
        cycle = self._t_start + (math.floor((now - self._t_start) / period) + 1) * period
        time.sleep(cycle - now)  # an overslept caller returns late; the controller took the command at `cycle`
        return self._wall_start + (cycle - self._t_start)

    def _record(self, name: str, *args: Any) -> None:
        taken = self._next_cycle()
        with self._lock:
            self.commands.append((name, args))
        if self.on_command is not None:
            self.on_command(name, args, taken)

    def _floor(self, x: float, y: float) -> float:
        """Lowest z the TCP can reach at (x, y): the surface below plus a held object's height."""
        surface = self.table_z
        for o in self.objects:
            if o is not self.held and o.under(x, y):
                surface = max(surface, o.top)
        return surface + (self.held.size if self.held is not None else 0.0)

    def _halt_for_fault(self) -> None:
        self._segment = None
        self.program_running = False

    def _advance(self) -> None:
        """Bring the simulated state up to the current time (call with the lock held)."""
        seg = self._segment
        if seg is None or self.protective_stopped or self.emergency_stopped:
            return
        travelled = max(0.0, (self._sim_now() - seg.t0) * seg.speed)
        frac = 1.0 if seg.length <= 0 else min(1.0, travelled / seg.length)
        now = [a + (b - a) * frac for a, b in zip(seg.start, seg.target)]
        if seg.kind == "joint":
            self.q = now
            commanded = forward_kinematics(now, TcpPose.from_list(self.tcp_offset)).as_list()
        else:
            commanded = now
        floor = self._floor(commanded[0], commanded[1])
        pose = list(commanded)
        self._force_z = 0.0
        if commanded[2] < floor:
            pose[2] = floor
            self._force_z = self.stiffness * (floor - commanded[2])
        self.pose = pose
        if self.held is not None:
            self.held.x, self.held.y, self.held.z = pose[0], pose[1], pose[2] - self.held.size
        if self._force_z > self.protective_force or (self.fault_below_z is not None
                                                     and pose[2] < self.fault_below_z):
            self._halt_for_fault()
            self.protective_stopped = True
            return
        if frac >= 1.0:
            self._segment = None

    def _start(self, kind: str, target: list[float], speed: float) -> bool:
        with self._lock:
            self._advance()
            if self.protective_stopped or self.emergency_stopped or not self.program_running:
                return False
            start = list(self.q) if kind == "joint" else list(self.pose)
            if kind == "joint":
                length = max(abs(a - b) for a, b in zip(start, target))
            else:
                length = math.dist(start[:3], target[:3])
            self._segment = _Segment(kind, start, list(target), speed, self._sim_now(), length)
            return True

    def _stop(self) -> None:
        with self._lock:
            self._advance()
            self._segment = None

    def _running(self) -> bool:
        with self._lock:
            self._advance()
            return self._segment is not None

    def _set_output(self, kind: str, pin: int, level: bool) -> bool:
        with self._lock:
            self._advance()
            if self.emergency_stopped:
                return False
            (self.tool_out if kind == "tool" else self.std_out)[pin] = level
            if (kind, pin) == self.suction_output:
                self._suction(level)
            return True

    def _suction(self, on: bool) -> None:
        x, y, z = self.pose[0], self.pose[1], self.pose[2]
        if on and self.held is None:
            for o in sorted(self.objects, key=lambda o: -o.top):
                if o.under(x, y) and abs(z - o.top) <= 0.003:
                    if o.liftable:  # the topmost object touching the cup; a heavy one stays put
                        self.held = o
                    break
        elif not on and self.held is not None:
            o, self.held = self.held, None
            o.x, o.y = x, y
            o.z = self._floor_without(o, x, y)

    def _floor_without(self, obj: FakeObject, x: float, y: float) -> float:
        surface = self.table_z
        for o in self.objects:
            if o is not obj and o is not self.held and o.under(x, y) and o.top <= obj.top + 1e-9:
                surface = max(surface, o.top)
        return surface

    def _gate(self, generation: int) -> None:
        """What a command does on a lost connection."""
        if self.silent and generation == self.generation:
            self._release.wait()
            raise RuntimeError("RTDEControlInterface: Lost connection to robot...")
        if not self.alive(generation):
            raise RuntimeError("Error: Could not connect to: robot at 30004, verify the IP")

    def _construct(self, name: str, host: str) -> int:
        if self.refuse_connect or not self.connected:
            raise RuntimeError(f"Error: Could not connect to: {host} at 30004, verify the IP")
        if self.hang_connect or self.silent:
            self._release.wait()
            raise RuntimeError(f"Error: Could not connect to: {host} at 30004, verify the IP")
        with self._lock:
            self.constructed.append(name)
        return self.generation


class _AsyncStatus:
    def __init__(self, running: bool) -> None:
        self._running = running

    def isAsyncOperationRunning(self) -> bool:  # noqa: N802
        return self._running


class RTDEControlInterface:
    def __init__(self, hostname: str, frequency: float = -1.0, flags: int = 1, ur_cap_port: int = 50002,
                 rt_priority: int = 0, *, controller: FakeUrController) -> None:
        self._c = controller
        self._gen = controller._construct("RTDEControlInterface", hostname)

    def moveL(self, pose: list[float], speed: float = 0.25, acceleration: float = 1.2,  # noqa: N802
              asynchronous: bool = False) -> bool:
        _verify(speed, 0.0, UR_TOOL_VELOCITY_MAX)
        _verify(acceleration, 0.0, UR_TOOL_ACCELERATION_MAX)
        return self._move("moveL", "linear", pose, speed, acceleration, asynchronous)

    def moveJ(self, q: list[float], speed: float = 1.05, acceleration: float = 1.4,  # noqa: N802
              asynchronous: bool = False) -> bool:
        _verify(speed, 0.0, UR_JOINT_VELOCITY_MAX)
        _verify(acceleration, 0.0, UR_JOINT_ACCELERATION_MAX)
        return self._move("moveJ", "joint", q, speed, acceleration, asynchronous)

    def _move(self, name: str, kind: str, target: list[float], speed: float, acceleration: float,
              asynchronous: bool) -> bool:
        self._c._gate(self._gen)
        self._c._record(name, [round(v, 6) for v in target], speed, acceleration, asynchronous)
        ok = self._c._start(kind, list(target), speed)
        while ok and not asynchronous and self._c._running():  # blocking call: return on arrival
            time.sleep(0.001)
        return ok

    def moveUntilContact(self, xd: list[float], direction: list[float] | None = None,  # noqa: N802
                         acceleration: float = 1.2) -> bool:
        raise NotImplementedError("not used by RtdeArm (no travel bound); see robots/ur5e/core/rtde.py")

    def stopL(self, a: float = 10.0, asynchronous: bool = False) -> None:  # noqa: N802
        self._c._gate(self._gen)
        self._c._record("stopL", a, asynchronous)
        self._c._stop()

    def stopJ(self, a: float = 2.0, asynchronous: bool = False) -> None:  # noqa: N802
        self._c._gate(self._gen)
        self._c._record("stopJ", a, asynchronous)
        self._c._stop()

    def setTcp(self, tcp_offset: list[float]) -> bool:  # noqa: N802
        self._c._gate(self._gen)
        self._c._record("setTcp", list(tcp_offset))
        self._c.tcp_offset = list(tcp_offset)
        return True

    def setPayload(self, mass: float, cog: list[float]) -> bool:  # noqa: N802
        self._c._gate(self._gen)
        self._c._record("setPayload", mass, list(cog))
        self._c.payload = (mass, list(cog))
        return True

    def zeroFtSensor(self) -> bool:  # noqa: N802
        self._c._gate(self._gen)
        self._c._record("zeroFtSensor")
        with self._c._lock:
            self._c._advance()
            self._c._ft_offset = self._c._force_z
        return True

    def getAsyncOperationProgressEx(self) -> _AsyncStatus:  # noqa: N802
        return _AsyncStatus(self._c._running())

    def isProgramRunning(self) -> bool:  # noqa: N802
        return self._c.program_running

    def reuploadScript(self) -> bool:  # noqa: N802
        self._c._gate(self._gen)
        self._c._record("reuploadScript")
        with self._c._lock:
            if self._c.protective_stopped or self._c.emergency_stopped:
                return False
            self._c.program_running = True
        return True

    def isConnected(self) -> bool:  # noqa: N802
        return self._c.connected and self._gen == self._c.generation

    def disconnect(self) -> None:
        self._c._record("disconnect", "control")


class RTDEReceiveInterface:
    def __init__(self, hostname: str, frequency: float = -1.0, variables: list[str] | None = None,
                 verbose: bool = False, use_upper_range_registers: bool = False, rt_priority: int = 0, *,
                 controller: FakeUrController) -> None:
        self._c = controller
        self._gen = controller._construct("RTDEReceiveInterface", hostname)

    def _state(self) -> FakeUrController:
        with self._c._lock:
            self._c._advance()
        return self._c

    def getActualTCPPose(self) -> list[float]:  # noqa: N802
        return list(self._state().pose)

    def getActualQ(self) -> list[float]:  # noqa: N802
        return list(self._state().q)

    def getActualTCPForce(self) -> list[float]:  # noqa: N802
        c = self._state()
        return [0.0, 0.0, c._force_z - c._ft_offset, 0.0, 0.0, 0.0]

    def getActualDigitalInputBits(self) -> int:  # noqa: N802
        return (1 << self._c.vacuum_input_bit) if self._state().held is not None else 0

    def getActualDigitalOutputBits(self) -> int:  # noqa: N802
        c = self._state()
        bits = sum(1 << i for i, v in enumerate(c.std_out) if v)
        return bits | sum(1 << (16 + i) for i, v in enumerate(c.tool_out) if v)

    def getTimestamp(self) -> float:  # noqa: N802
        frozen = self._c._frozen_ts.get(self._gen)
        return frozen if frozen is not None else self._c._sim_now()

    def getRobotMode(self) -> int:  # noqa: N802
        return int(RobotMode.IDLE if self._state().emergency_stopped else RobotMode.RUNNING)

    def getSafetyMode(self) -> int:  # noqa: N802
        c = self._state()
        if c.emergency_stopped:
            return int(SafetyMode.ROBOT_EMERGENCY_STOP)
        return int(SafetyMode.PROTECTIVE_STOP if c.protective_stopped else SafetyMode.NORMAL)

    def isProtectiveStopped(self) -> bool:  # noqa: N802
        return self._state().protective_stopped

    def isEmergencyStopped(self) -> bool:  # noqa: N802
        return self._state().emergency_stopped

    def isConnected(self) -> bool:  # noqa: N802
        return self._c.connected and self._gen == self._c.generation

    def disconnect(self) -> None:
        self._c._record("disconnect", "receive")


class RTDEIOInterface:
    def __init__(self, hostname: str, verbose: bool = False, use_upper_range_registers: bool = False, *,
                 controller: FakeUrController) -> None:
        self._c = controller
        self._gen = controller._construct("RTDEIOInterface", hostname)

    def setStandardDigitalOut(self, output_id: int, signal_level: bool) -> bool:  # noqa: N802
        return self._digital_out("setStandardDigitalOut", "standard", 7, output_id, signal_level)

    def setToolDigitalOut(self, output_id: int, signal_level: bool) -> bool:  # noqa: N802
        return self._digital_out("setToolDigitalOut", "tool", 1, output_id, signal_level)

    def _digital_out(self, command: str, bank: str, last_id: int, output_id: int, signal_level: bool) -> bool:
        """ur_rtde's range check (outputs 0..last_id), then the command on the controller."""
        if not 0 <= output_id <= last_id:
            raise ValueError(f"The value is not within [0;{last_id}]")
        self._c._gate(self._gen)
        self._c._record(command, output_id, signal_level)
        return self._c._set_output(bank, output_id, signal_level)

    def isConnected(self) -> bool:  # noqa: N802
        return self._c.connected and self._gen == self._c.generation

    def disconnect(self) -> None:
        self._c._record("disconnect", "io")


# ----- selection by a ROS parameter (system tests) ------------------------------------------
ENV_SCENE = "MONOLOGUE_FAKE_RTDE"  # JSON: {"time_scale": 20, "objects": [{"name", "x", "y", "size", "liftable"}]}
ENV_LOG = "MONOLOGUE_FAKE_RTDE_LOG"  # path: every command is appended as a JSON line


def factories_from_env() -> RtdeFactories:
    """Factories of a fake robot described by $MONOLOGUE_FAKE_RTDE, logging commands to $MONOLOGUE_FAKE_RTDE_LOG.

    Selected with the skills node parameter
    `ur5e.rtde_factory:=skills_node.robots.ur5e.testing.fake_rtde:factories_from_env`.
    """
    spec: dict[str, Any] = json.loads(os.environ.get(ENV_SCENE, "{}"))
    log_path = os.environ.get(ENV_LOG, "")
    log_lock = threading.Lock()

    def log(name: str, args: tuple[Any, ...], taken: float) -> None:
        if log_path:  # t: the wall time (s) of the control cycle that took the command
            with log_lock, open(log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"t": taken, "cmd": name, "args": list(args)}) + "\n")

    controller = FakeUrController(
        time_scale=float(spec.get("time_scale", 1.0)),
        objects=[FakeObject(**o) for o in spec.get("objects", [])],
        fault_below_z=spec.get("fault_below_z"),
        on_command=log,
    )
    return controller.factories()
