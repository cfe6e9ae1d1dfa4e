"""The Spot connection layer on the Boston Dynamics SDK (bosdyn-client), ROS-free, in the spirit of
spot_wrapper: one small class, `SpotRobot`, that owns the SDK objects and hides their threads.

What it does, in order, on `connect()`:
1. TLS channel to `hostname:port` (the robot's CA: the SDK's bundled one, or `ca_cert_path`);
2. authentication with `BOSDYN_CLIENT_USERNAME` / `BOSDYN_CLIENT_PASSWORD` from the environment only
   (`SpotCredentials.from_env`; the password is never logged, never in a repr or an error message);
3. time sync (robot commands carry robot-clock end times);
4. a software e-stop endpoint: the configuration is replaced by one endpoint of ours (`force_simple_setup`,
   like the SDK examples) and checked in by `EstopKeepAlive`; `estop_cut()`, `estop_settle()` and
   `estop_release()` set its level. If this process dies, the endpoint times out and the robot stops;
5. the body lease: acquired, or taken when `take_lease` is set, and kept alive by `LeaseKeepAlive`; it is
   returned by `close()`, which every exit path reaches (context manager, failed connect). A lease taken by
   someone else (the tablet) is detected by the keep-alive and by the next command, and reported as a
   `SpotFault` with cause `LEASE_LOST`.
Then `power_on()`, `stand()`, `sit()`, `power_off()`, `move()` (body-frame SE2 velocity for a duration),
`go_to()` (an SE2 trajectory relative to the body) and `stop()`; `status()` reads the robot state into a
`SpotStatus` shaped like the UR5e backend's `ArmStatus` (`ok`, `fault()` -> `FaultKind`, `describe()`).

Errors: every SDK failure becomes a `SpotFault` (an `ArmFault`, so the skills layer treats it as a robot
fault) with a `SpotFaultCause`; motions over the configured velocity limits are refused before anything is
sent (`MotionRefused(Refusal.SPEED)`); a cancelled motion is stopped and raises `MotionInterrupted`.
Every RPC carries a deadline (`rpc_timeout_s`), every blocking command a time limit: a silent or lost
robot gives `SpotFault(CONNECTION_LOST)` within those, never a hang.
"""
from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import bosdyn.client  # type: ignore[import-untyped, unused-ignore]
from bosdyn.api import basic_command_pb2, geometry_pb2, robot_state_pb2  # type: ignore[import-untyped, unused-ignore]
from bosdyn.client import exceptions as sdk_errors  # type: ignore[import-untyped, unused-ignore]
from bosdyn.client.auth import AuthClient, InvalidLoginError  # type: ignore[import-untyped, unused-ignore]
from bosdyn.client.directory import DirectoryClient  # type: ignore[import-untyped, unused-ignore]
from bosdyn.client.estop import EstopClient, EstopEndpoint, EstopKeepAlive  # type: ignore[import-untyped, unused-ignore]
from bosdyn.client.frame_helpers import GRAV_ALIGNED_BODY_FRAME_NAME  # type: ignore[import-untyped, unused-ignore]
from bosdyn.client.lease import (  # type: ignore[import-untyped, unused-ignore]
    LeaseClient,
    LeaseKeepAlive,
    LeaseNotOwnedByWallet,
    NoSuchLease,
    ResourceAlreadyClaimedError,
)
from bosdyn.client.power import EstoppedError, PowerClient  # type: ignore[import-untyped, unused-ignore]
from bosdyn.client.robot_command import (  # type: ignore[import-untyped, unused-ignore]
    BehaviorFaultError,
    NotPoweredOnError,
    RobotCommandBuilder,
    RobotCommandClient,
)
from bosdyn.client.robot_id import RobotIdClient  # type: ignore[import-untyped, unused-ignore]
from bosdyn.client.robot_state import RobotStateClient  # type: ignore[import-untyped, unused-ignore]
from bosdyn.client.time_sync import TimeSyncClient  # type: ignore[import-untyped, unused-ignore]

from .arm import ArmFault, FaultKind, MotionInterrupted, MotionRefused, Refusal

USERNAME_ENV = "BOSDYN_CLIENT_USERNAME"
PASSWORD_ENV = "BOSDYN_CLIENT_PASSWORD"

_FEEDBACK = basic_command_pb2.RobotCommandFeedbackStatus
_TRAJ = basic_command_pb2.SE2TrajectoryCommand.Feedback
_STAND = basic_command_pb2.StandCommand.Feedback
_SIT = basic_command_pb2.SitCommand.Feedback
_ESTOPPED = robot_state_pb2.EStopState.STATE_ESTOPPED
_MOTORS_ON = robot_state_pb2.PowerState.STATE_ON
_STANDING_STATES = (robot_state_pb2.BehaviorState.STATE_STANDING, robot_state_pb2.BehaviorState.STATE_STEPPING)


class SpotFaultCause(Enum):
    """Why a Spot operation failed (finer than FaultKind; `kind` below maps it)."""

    CONNECTION_LOST = "connection lost"  # unreachable, silent (deadline), TLS or proxy error
    AUTH = "authentication failed"
    LEASE_LOST = "lease lost"  # taken by another client (tablet), revoked, or already claimed
    ESTOP = "e-stopped"
    NOT_POWERED = "motors off"
    BEHAVIOR_FAULT = "behaviour fault"
    COMMAND_FAILED = "command failed"  # refused, or its feedback reported failure
    TIMEOUT = "timeout"  # a command did not finish within its time limit

    @property
    def kind(self) -> FaultKind:
        return _CAUSE_KIND[self]


_CAUSE_KIND = {
    SpotFaultCause.CONNECTION_LOST: FaultKind.CONNECTION_LOST,
    SpotFaultCause.AUTH: FaultKind.CONNECTION_LOST,
    SpotFaultCause.LEASE_LOST: FaultKind.LEASE_LOST,  # the robot is not ours to move
    SpotFaultCause.ESTOP: FaultKind.EMERGENCY_STOP,
    SpotFaultCause.NOT_POWERED: FaultKind.NOT_RUNNING,
    SpotFaultCause.BEHAVIOR_FAULT: FaultKind.SAFETY_STOP,
    SpotFaultCause.COMMAND_FAILED: FaultKind.COMMAND_FAILED,
    SpotFaultCause.TIMEOUT: FaultKind.TIMEOUT,
}


class SpotFault(ArmFault):
    """A Spot failure; `kind` (FaultKind) is what the skills layer reports, `cause` the Spot detail."""

    def __init__(self, cause: SpotFaultCause, reason: str) -> None:
        # ArmFault prefixes the kind ("lease lost: ..."); name the cause only where it says more than that.
        super().__init__(cause.kind, reason if cause.value == cause.kind.value else f"{cause.value}: {reason}")
        self.cause = cause


@dataclass(frozen=True)
class SpotCredentials:
    """Robot login. Only ever built from the environment; the password never appears in a repr."""

    username: str
    password: str = field(repr=False)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SpotCredentials:
        env = os.environ if environ is None else environ
        username, password = env.get(USERNAME_ENV, ""), env.get(PASSWORD_ENV, "")
        missing = [name for name, value in ((USERNAME_ENV, username), (PASSWORD_ENV, password)) if not value]
        if missing:
            raise SpotFault(SpotFaultCause.AUTH, f"set {' and '.join(missing)} in the environment")
        return cls(username, password)


@dataclass(frozen=True)
class SpotSettings:
    """Connection and motion settings (values come from the robot's YAML; no defaults here)."""

    hostname: str  # robot address (IP or DNS name)
    port: int  # TLS port of the robot's API, 443 on the robot
    client_name: str  # shown on the tablet as the lease / e-stop owner
    ca_cert_path: str  # robot CA certificate (PEM); "" = the one bundled with bosdyn-client
    rpc_timeout_s: float  # s, deadline of every RPC
    connect_timeout_s: float  # s, time sync must be established within this
    command_timeout_s: float  # s, limit for power on/off, stand, sit
    feedback_period_s: float  # s, between command feedback requests
    take_lease: bool  # True: take the body lease even if someone holds it; False: acquire only
    lease_check_period_s: float  # s, lease keep-alive (RetainLease) period
    estop_timeout_s: float  # s, the robot cuts motors when our endpoint is silent this long
    max_linear_velocity: float  # m/s, per axis, body frame
    max_angular_velocity: float  # rad/s, yaw

    def __post_init__(self) -> None:
        if not self.hostname:
            raise ValueError("hostname must not be empty")
        if not 0 < self.port < 65536:
            raise ValueError(f"port must be 1..65535, got {self.port}")
        for name in ("rpc_timeout_s", "connect_timeout_s", "command_timeout_s", "feedback_period_s",
                     "lease_check_period_s", "estop_timeout_s", "max_linear_velocity", "max_angular_velocity"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f"{name} must be > 0, got {value}")


@dataclass(frozen=True)
class SpotStatus:
    """A snapshot of Spot's health, shaped like ArmStatus (`ok`, `fault()`, `describe()`)."""

    connected: bool
    estopped: bool = False
    estop_detail: str = ""  # names of the e-stops that are stopping the robot
    behavior_faults: tuple[str, ...] = ()  # e.g. ("CAUSE_FALL",)
    powered: bool = False  # motor power on
    standing: bool = False
    lease_held: bool = False  # we hold the body lease
    detail: str = ""  # extra words, e.g. why the connection was lost

    @property
    def ok(self) -> bool:
        """True when Spot can move: connected, not e-stopped, no behaviour fault, powered, lease held."""
        return self.fault() is None

    def fault(self) -> FaultKind | None:
        """The most severe fault this status shows, or None when ok."""
        if not self.connected:
            return FaultKind.CONNECTION_LOST
        if self.estopped:
            return FaultKind.EMERGENCY_STOP
        if self.behavior_faults:
            return FaultKind.SAFETY_STOP
        if not self.lease_held:
            return FaultKind.LEASE_LOST
        if not self.powered:
            return FaultKind.NOT_RUNNING
        return None

    def describe(self) -> str:
        """One line for logs and error messages."""
        if not self.connected:
            return f"not connected{': ' + self.detail if self.detail else ''}"
        words = ["motors on" if self.powered else "motors off", "standing" if self.standing else "not standing",
                 "lease held" if self.lease_held else "lease not held"]
        if self.estopped:
            words.append(f"e-stopped ({self.estop_detail})" if self.estop_detail else "e-stopped")
        if self.behavior_faults:
            words.append("behaviour faults: " + ", ".join(self.behavior_faults))
        if self.detail:
            words.append(self.detail)
        return ", ".join(words)


def _with_deadline(client_class: Any, timeout_s: float) -> Any:
    """A subclass of the SDK client class whose RPCs get `timeout_s` when the caller gives no timeout
    (and, for the auth client, loggers that never print the credentials).

    The SDK's default deadline is 20 s and several of its helpers (keep-alives, e-stop setup, directory)
    pass none, so without this a silent robot would block those calls for 20 s."""

    class Bounded(client_class):  # type: ignore[misc, valid-type, unused-ignore]
        def call(self, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("timeout") is None:
                kwargs["timeout"] = timeout_s
            return super().call(*args, **kwargs)

        def call_async(self, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("timeout") is None:
                kwargs["timeout"] = timeout_s
            return super().call_async(*args, **kwargs)

        def update_from(self, other: Any) -> None:
            super().update_from(other)
            if issubclass(client_class, AuthClient):
                # bosdyn-client logs every request and response at DEBUG, and GetAuthToken's carry the
                # password and the user token: keep this client's loggers (and their children) above DEBUG.
                self.logger.setLevel(max(self.logger.getEffectiveLevel(), logging.INFO))

    Bounded.__name__ = Bounded.__qualname__ = f"Bounded{client_class.__name__}"
    return Bounded


_CLIENTS = (RobotIdClient, AuthClient, DirectoryClient, TimeSyncClient, LeaseClient, EstopClient, PowerClient,
            RobotStateClient, RobotCommandClient)


def _describe_sdk_error(e: BaseException) -> str:
    """The SDK error's class and message (SDK messages never contain the password)."""
    text = str(e).strip()
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


class SpotRobot:
    """One Spot, through bosdyn-client. Thread-safe for one motion at a time plus status() from others.

    `connect()` then power_on / stand / move / go_to / sit / power_off; `close()` (or leaving the `with`
    block) stops motion, returns the lease and stops the keep-alives, on every exit path.
    Outcomes: methods return on success; raise `SpotFault` (robot fault: lease lost, e-stop, behaviour
    fault, motors off, feedback failure, timeout, connection lost), `MotionRefused` (over the velocity
    limits; nothing sent) or `MotionInterrupted` (cancelled; a stop was sent).
    """

    def __init__(
        self,
        settings: SpotSettings,
        credentials: SpotCredentials,
        logger: logging.Logger,
        on_fault: Callable[[SpotFault], None] | None = None,
    ) -> None:
        self.cfg = settings
        self._credentials = credentials
        self._log = logger
        self._on_fault = on_fault
        self._robot: Any = None
        self._lease_client: Any = None
        self._command_client: Any = None
        self._state_client: Any = None
        self._power_client: Any = None
        self._lease_keepalive: Any = None
        self._estop_endpoint: Any = None
        self._estop_keepalive: Any = None
        self._lease_lost = threading.Event()
        self._lease_lost_reason = ""
        self._fault_lock = threading.Lock()
        self._motion = threading.Lock()  # one motion at a time

    # -- connection ------------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return self._robot is not None

    @property
    def lease_lost(self) -> bool:
        return self._lease_lost.is_set()

    def connect(self) -> None:
        """Authenticate, sync time, register the e-stop endpoint, acquire (or take) the lease.
        On any failure everything already set up is released and SpotFault is raised."""
        c = self.cfg
        self._log.info("connecting to Spot at %s:%d as %s [client %s]", c.hostname, c.port,
                       self._credentials.username, c.client_name)
        try:
            self._connect()
        except SpotFault:
            self.close()
            raise
        except Exception as e:
            self.close()
            raise self._fault_from(e, f"connecting to {c.hostname}:{c.port}") from e
        except BaseException:
            self.close()
            raise
        self._log.info("connected to Spot %s: e-stop endpoint registered, lease %s", c.hostname,
                       "taken" if c.take_lease else "acquired")

    def _connect(self) -> None:
        c = self.cfg
        sdk = bosdyn.client.create_standard_sdk(c.client_name, cert_resource_glob=c.ca_cert_path or None)
        for client_class in _CLIENTS:
            sdk.register_service_client(_with_deadline(client_class, c.rpc_timeout_s))
        robot = sdk.create_robot(c.hostname)
        robot.update_secure_channel_port(c.port)
        self._robot = robot
        try:
            robot.authenticate(self._credentials.username, self._credentials.password, timeout=c.rpc_timeout_s)
        except InvalidLoginError as e:
            raise SpotFault(SpotFaultCause.AUTH, f"the robot at {c.hostname} rejected the login of user "
                            f"{self._credentials.username!r} (check {USERNAME_ENV} / {PASSWORD_ENV})") from e
        robot.sync_with_directory()  # RPC deadline: see _with_deadline
        robot.time_sync.wait_for_sync(timeout_sec=c.connect_timeout_s)
        if not robot.time_sync.has_established_time_sync:
            raise SpotFault(SpotFaultCause.CONNECTION_LOST, f"no time sync within {c.connect_timeout_s:.1f} s")
        self._state_client = robot.ensure_client(RobotStateClient.default_service_name)
        self._power_client = robot.ensure_client(PowerClient.default_service_name)
        self._command_client = robot.ensure_client(RobotCommandClient.default_service_name)
        lease_client = robot.ensure_client(LeaseClient.default_service_name)
        self._lease_client = lease_client
        # E-stop first: the robot will not power on without a live endpoint.
        estop_client = robot.ensure_client(EstopClient.default_service_name)
        endpoint = EstopEndpoint(estop_client, c.client_name, c.estop_timeout_s)
        endpoint.force_simple_setup()  # replaces the robot's e-stop configuration with our endpoint
        self._estop_endpoint = endpoint
        self._estop_keepalive = EstopKeepAlive(endpoint, rpc_timeout_seconds=c.rpc_timeout_s)
        # Lease.
        try:
            if c.take_lease:
                lease_client.take(timeout=c.rpc_timeout_s)
            else:
                lease_client.acquire(timeout=c.rpc_timeout_s)
        except ResourceAlreadyClaimedError as e:
            raise SpotFault(SpotFaultCause.LEASE_LOST, "the body lease is held by another client (the tablet?); "
                            "release it there, or set take_lease") from e
        self._lease_lost.clear()
        self._lease_keepalive = LeaseKeepAlive(lease_client, rpc_interval_seconds=c.lease_check_period_s,
                                               on_failure_callback=self._on_lease_failure, return_at_exit=True)

    def close(self) -> None:
        """Stop, return the lease, stop the keep-alives and the SDK's threads. Safe to call twice."""
        robot, self._robot = self._robot, None
        if robot is None:
            return
        if self._command_client is not None and not self._lease_lost.is_set():
            try:
                self._command_client.robot_command(RobotCommandBuilder.stop_command(), timeout=self.cfg.rpc_timeout_s)
            except Exception as e:  # noqa: BLE001 - best effort on the way out
                self._log.debug("stop on close failed: %s", _describe_sdk_error(e))
        if self._lease_keepalive is not None:
            try:
                self._lease_keepalive.shutdown()  # returns the lease (return_at_exit)
            except Exception as e:  # noqa: BLE001
                self._log.warning("could not return the lease: %s", _describe_sdk_error(e))
            self._lease_keepalive = None
        if self._estop_keepalive is not None:
            # Our endpoint stays registered: when its check-ins stop the robot e-stops itself, which is the
            # safe state for a robot nobody is driving.
            self._estop_keepalive.shutdown()
            self._estop_keepalive = None
        robot.__exit__(None, None, None)  # stops the SDK's time-sync and token threads
        self._log.info("disconnected from Spot %s", self.cfg.hostname)

    def __enter__(self) -> SpotRobot:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _on_lease_failure(self, error: Exception) -> None:
        """LeaseKeepAlive callback (its thread): a RetainLease failed."""
        if isinstance(error, (sdk_errors.LeaseUseError, NoSuchLease, LeaseNotOwnedByWallet)):
            with self._fault_lock:  # the keep-alive thread and a motion may both see it: report once
                if self._lease_lost.is_set():
                    return
                self._lease_lost_reason = f"another client took the body lease ({_describe_sdk_error(error)})"
                self._lease_lost.set()
            fault = SpotFault(SpotFaultCause.LEASE_LOST, self._lease_lost_reason)
            self._log.error("%s", fault)
            if self._on_fault is not None:
                self._on_fault(fault)
        else:
            self._log.warning("lease keep-alive failed: %s", _describe_sdk_error(error))

    def _require(self) -> Any:
        if self._robot is None:
            raise SpotFault(SpotFaultCause.CONNECTION_LOST, f"not connected to {self.cfg.hostname}")
        if self._lease_lost.is_set():
            raise SpotFault(SpotFaultCause.LEASE_LOST, self._lease_lost_reason)
        return self._robot

    # -- e-stop ----------------------------------------------------------------------------------
    def estop_cut(self) -> None:
        """Cut motor power at once (the robot falls if standing)."""
        self._estop_level("cut", lambda ep: ep.stop(timeout=self.cfg.rpc_timeout_s))

    def estop_settle(self) -> None:
        """Sit down, then cut motor power."""
        self._estop_level("settle then cut", lambda ep: ep.settle_then_cut(timeout=self.cfg.rpc_timeout_s))

    def estop_release(self) -> None:
        """Allow motion again (motors stay off until power_on())."""
        self._estop_level("release", lambda ep: ep.allow(timeout=self.cfg.rpc_timeout_s))

    def _estop_level(self, what: str, call: Callable[[Any], None]) -> None:
        if self._robot is None or self._estop_endpoint is None:
            raise SpotFault(SpotFaultCause.CONNECTION_LOST, f"e-stop {what}: not connected")
        try:
            call(self._estop_endpoint)
        except Exception as e:
            raise self._fault_from(e, f"e-stop {what}") from e
        self._log.warning("software e-stop: %s", what)

    # -- power and posture ------------------------------------------------------------------------
    def power_on(self) -> None:
        robot = self._require()
        self._log.info("powering on the motors")
        try:
            robot.power_on(timeout_sec=self.cfg.command_timeout_s, update_frequency=1.0 / self.cfg.feedback_period_s,
                           timeout=self.cfg.rpc_timeout_s)
        except Exception as e:
            raise self._fault_from(e, "power on") from e

    def power_off(self) -> None:
        """Sit down if standing, then cut motor power."""
        robot = self._require()
        if self.status().standing:
            self.sit()
        self._log.info("powering off the motors")
        try:
            robot.power_off(cut_immediately=True, timeout_sec=self.cfg.command_timeout_s,
                            update_frequency=1.0 / self.cfg.feedback_period_s, timeout=self.cfg.rpc_timeout_s)
        except Exception as e:
            raise self._fault_from(e, "power off") from e

    def stand(self, cancel: threading.Event | None = None) -> None:
        self._log.info("stand")
        self._run(RobotCommandBuilder.synchro_stand_command(), "stand", self.cfg.command_timeout_s, None,
                  lambda fb: fb.stand_feedback.status == _STAND.STATUS_IS_STANDING, cancel)

    def sit(self, cancel: threading.Event | None = None) -> None:
        self._log.info("sit")
        self._run(RobotCommandBuilder.synchro_sit_command(), "sit", self.cfg.command_timeout_s, None,
                  lambda fb: fb.sit_feedback.status == _SIT.STATUS_IS_SITTING, cancel)

    # -- motion ----------------------------------------------------------------------------------
    def _check_velocity(self, vx: float, vy: float, vyaw: float) -> None:
        values = (vx, vy, vyaw)
        if not all(math.isfinite(v) for v in values):
            raise MotionRefused(Refusal.INVALID_TARGET, f"velocity {values} is not finite")
        lin, ang = self.cfg.max_linear_velocity, self.cfg.max_angular_velocity
        if abs(vx) > lin or abs(vy) > lin or abs(vyaw) > ang:
            raise MotionRefused(Refusal.SPEED, f"velocity ({vx:.2f}, {vy:.2f}) m/s, {vyaw:.2f} rad/s exceeds the "
                                f"limits {lin:.2f} m/s, {ang:.2f} rad/s")

    def _mobility_params(self) -> Any:
        """Mobility params carrying the configured velocity limits (the robot enforces them too)."""
        params = RobotCommandBuilder.mobility_params()
        lin, ang = self.cfg.max_linear_velocity, self.cfg.max_angular_velocity
        params.vel_limit.max_vel.CopyFrom(geometry_pb2.SE2Velocity(linear=geometry_pb2.Vec2(x=lin, y=lin), angular=ang))
        params.vel_limit.min_vel.CopyFrom(
            geometry_pb2.SE2Velocity(linear=geometry_pb2.Vec2(x=-lin, y=-lin), angular=-ang))
        return params

    def move(self, vx: float, vy: float, vyaw: float, duration_s: float,
             cancel: threading.Event | None = None) -> None:
        """Walk with a body-frame velocity (vx, vy m/s; vyaw rad/s) for `duration_s` s, then stop."""
        self._check_velocity(vx, vy, vyaw)
        if not (math.isfinite(duration_s) and duration_s > 0.0):
            raise MotionRefused(Refusal.INVALID_TARGET, f"duration {duration_s} s must be > 0")
        self._log.info("move at (%.2f, %.2f) m/s, %.2f rad/s for %.1f s", vx, vy, vyaw, duration_s)
        command = RobotCommandBuilder.synchro_velocity_command(vx, vy, vyaw, params=self._mobility_params())
        end = time.time() + duration_s
        # The robot ends a velocity command at its end time with STATUS_COMMAND_TIMED_OUT: that is success.
        self._run(command, "move", duration_s + self.cfg.command_timeout_s, end, lambda fb: False, cancel,
                  done_at_end=True)

    def go_to(self, x: float, y: float, yaw: float, timeout_s: float, cancel: threading.Event | None = None) -> None:
        """Walk to (x, y) m, heading yaw rad, relative to the body now (gravity-aligned body frame)."""
        if not all(math.isfinite(v) for v in (x, y, yaw, timeout_s)) or timeout_s <= 0.0:
            raise MotionRefused(Refusal.INVALID_TARGET, f"go_to({x}, {y}, {yaw}, timeout {timeout_s}) is invalid")
        self._log.info("go to (%.2f, %.2f) m, %.2f rad in the body frame", x, y, yaw)
        command = RobotCommandBuilder.synchro_se2_trajectory_point_command(
            x, y, yaw, frame_name=GRAV_ALIGNED_BODY_FRAME_NAME, params=self._mobility_params())
        self._run(command, "go to", timeout_s, time.time() + timeout_s,
                  lambda fb: fb.se2_trajectory_feedback.status == _TRAJ.STATUS_AT_GOAL, cancel)

    def stop(self) -> None:
        """Stop walking (a stop command; best effort, bounded by rpc_timeout_s)."""
        self._require()
        try:
            self._command_client.robot_command(RobotCommandBuilder.stop_command(), timeout=self.cfg.rpc_timeout_s)
        except Exception as e:
            raise self._fault_from(e, "stop") from e

    def clear_behavior_faults(self) -> int:
        """Clear the clearable behaviour faults; returns how many were cleared."""
        self._require()
        state = self._robot_state("clear behaviour faults")
        cleared = 0
        for f in state.behavior_fault_state.faults:
            if f.status == robot_state_pb2.BehaviorFault.STATUS_CLEARABLE:
                try:
                    if self._command_client.clear_behavior_fault(f.behavior_fault_id, timeout=self.cfg.rpc_timeout_s):
                        cleared += 1
                except Exception as e:
                    raise self._fault_from(e, "clear behaviour fault") from e
        return cleared

    def _run(self, command: Any, what: str, timeout_s: float, end_time: float | None,
             done: Callable[[Any], bool], cancel: threading.Event | None, done_at_end: bool = False) -> None:
        """Send `command` and follow its feedback until `done(mobility feedback)`, failure, cancel or
        `timeout_s`. Every RPC has the rpc deadline."""
        self._require()
        if not self._motion.acquire(timeout=self.cfg.rpc_timeout_s):
            raise SpotFault(SpotFaultCause.COMMAND_FAILED, f"{what}: another motion is running")
        try:
            c = self.cfg
            deadline = time.monotonic() + timeout_s
            try:
                cid = self._command_client.robot_command(command, end_time_secs=end_time, timeout=c.rpc_timeout_s)
            except Exception as e:
                raise self._fault_from(e, what) from e
            while True:
                if cancel is not None and cancel.wait(c.feedback_period_s):
                    self._stop_quietly()
                    raise MotionInterrupted(f"{what} cancelled")
                if cancel is None:
                    time.sleep(c.feedback_period_s)
                if self._lease_lost.is_set():
                    raise SpotFault(SpotFaultCause.LEASE_LOST, f"{what}: {self._lease_lost_reason}")
                try:
                    response = self._command_client.robot_command_feedback(cid, timeout=c.rpc_timeout_s)
                except Exception as e:
                    raise self._fault_from(e, f"{what} feedback") from e
                mobility = response.feedback.synchronized_feedback.mobility_command_feedback
                if mobility.status == _FEEDBACK.STATUS_PROCESSING:
                    if done(mobility):
                        self._log.info("%s done", what)
                        return
                elif done_at_end and mobility.status == _FEEDBACK.STATUS_COMMAND_TIMED_OUT and \
                        end_time is not None and time.time() >= end_time:
                    self._log.info("%s done", what)
                    return
                else:
                    raise self._command_failure(what, _FEEDBACK.Status.Name(mobility.status))
                if time.monotonic() > deadline:
                    self._stop_quietly()
                    raise SpotFault(SpotFaultCause.TIMEOUT, f"{what} did not finish within {timeout_s:.1f} s")
        finally:
            self._motion.release()

    def _stop_quietly(self) -> None:
        try:
            self._command_client.robot_command(RobotCommandBuilder.stop_command(), timeout=self.cfg.rpc_timeout_s)
        except Exception as e:  # noqa: BLE001 - the caller reports the original problem
            self._log.warning("stop command failed: %s", _describe_sdk_error(e))

    def _command_failure(self, what: str, feedback_status: str) -> SpotFault:
        """Classify a command whose feedback stopped processing: lease, e-stop, fault or plain failure."""
        if self._lease_is_gone():
            return SpotFault(SpotFaultCause.LEASE_LOST,
                             f"{what} stopped ({feedback_status}): {self._lease_lost_reason}")
        try:
            status = self.status()
        except SpotFault:
            status = SpotStatus(connected=False)
        if status.estopped:
            return SpotFault(SpotFaultCause.ESTOP, f"{what} stopped ({feedback_status}): {status.describe()}")
        if status.behavior_faults:
            return SpotFault(SpotFaultCause.BEHAVIOR_FAULT, f"{what} failed ({feedback_status}): {status.describe()}")
        if status.connected and not status.powered:
            return SpotFault(SpotFaultCause.NOT_POWERED, f"{what} stopped ({feedback_status}): {status.describe()}")
        return SpotFault(SpotFaultCause.COMMAND_FAILED, f"{what} failed: feedback {feedback_status}")

    def _lease_is_gone(self) -> bool:
        """Check the lease now (one RetainLease) instead of waiting for the keep-alive."""
        if self._lease_lost.is_set():
            return True
        try:
            lease = self._lease_client.lease_wallet.get_lease()
            self._lease_client.retain_lease(lease, timeout=self.cfg.rpc_timeout_s)
        except (sdk_errors.LeaseUseError, NoSuchLease, LeaseNotOwnedByWallet) as e:
            self._on_lease_failure(e)
        except Exception as e:  # noqa: BLE001 - connection problems are classified elsewhere
            self._log.debug("lease check failed: %s", _describe_sdk_error(e))
        return self._lease_lost.is_set()

    # -- state -----------------------------------------------------------------------------------
    def _robot_state(self, what: str) -> Any:
        if self._robot is None:
            raise SpotFault(SpotFaultCause.CONNECTION_LOST, f"{what}: not connected to {self.cfg.hostname}")
        try:
            return self._state_client.get_robot_state(timeout=self.cfg.rpc_timeout_s)
        except Exception as e:
            raise self._fault_from(e, what) from e

    def status(self) -> SpotStatus:
        """The robot state as a SpotStatus; `connected=False` (with the reason) when it cannot be read."""
        try:
            state = self._robot_state("robot state")
        except SpotFault as e:
            return SpotStatus(connected=False, detail=e.reason)
        stops = [s.name for s in state.estop_states if s.state == _ESTOPPED]
        faults = tuple(robot_state_pb2.BehaviorFault.Cause.Name(f.cause) for f in state.behavior_fault_state.faults)
        return SpotStatus(
            connected=True,
            estopped=bool(stops),
            estop_detail=", ".join(stops),
            behavior_faults=faults,
            powered=state.power_state.motor_power_state == _MOTORS_ON,
            standing=state.behavior_state.state in _STANDING_STATES,
            lease_held=not self._lease_lost.is_set() and self._lease_keepalive is not None,
        )

    # -- errors ----------------------------------------------------------------------------------
    def _fault_from(self, e: BaseException, what: str) -> SpotFault:
        """Map an SDK exception to a SpotFault."""
        if isinstance(e, SpotFault):
            return e
        text = f"{what}: {_describe_sdk_error(e)}"
        if isinstance(e, (sdk_errors.LeaseUseError, NoSuchLease, LeaseNotOwnedByWallet, ResourceAlreadyClaimedError)):
            self._lease_is_gone()
            return SpotFault(SpotFaultCause.LEASE_LOST, text)
        if isinstance(e, EstoppedError):
            return SpotFault(SpotFaultCause.ESTOP, text)
        if isinstance(e, NotPoweredOnError):
            return SpotFault(SpotFaultCause.NOT_POWERED, text)
        if isinstance(e, BehaviorFaultError):
            return SpotFault(SpotFaultCause.BEHAVIOR_FAULT, text)
        if isinstance(e, InvalidLoginError):
            return SpotFault(SpotFaultCause.AUTH, text)
        if isinstance(e, sdk_errors.ResponseError):
            return SpotFault(SpotFaultCause.COMMAND_FAILED, text)
        if isinstance(e, (sdk_errors.RpcError, OSError)):
            return SpotFault(SpotFaultCause.CONNECTION_LOST, f"{text} (robot {self.cfg.hostname}:{self.cfg.port})")
        name = type(e).__name__
        if "Timed" in name or "Timeout" in name:  # the SDK's CommandTimedOutError classes
            return SpotFault(SpotFaultCause.TIMEOUT, text)
        return SpotFault(SpotFaultCause.COMMAND_FAILED, text)
