"""A fake Boston Dynamics Spot at the gRPC boundary, for tests (no robot, no simulator in the SDK).

`FakeSpot` serves, over TLS on 127.0.0.1, the robot's services from bosdyn-api's own service definitions
(`bosdyn.api.*_service_pb2_grpc`): robot id, auth, directory, time sync, lease, estop, power, robot state
and robot command (with feedback). The real `bosdyn.client` code runs unchanged against it; point it at
`FakeSpot.port` with `Robot.update_secure_channel_port` and trust `FakeSpot.ca_cert_path`
(`Sdk.load_robots_ca_certificate`). The certificate (a throw-away CA and a server certificate for
`*.spot.robot`, the authorities the SDK uses) is made by the `openssl` command at start.

It behaves like the robot where this project depends on it:
- every response carries `header.error.code = CODE_OK` and echoes the request header;
- wrong credentials -> `STATUS_INVALID_LOGIN`;
- the body lease: acquire refuses while someone else holds it, take always wins; requests with an older
  lease get `LeaseUseResult.STATUS_OLDER`; `take_lease_as(...)` is the tablet taking control: running
  commands are overridden and our RetainLease calls fail;
- e-stop: motors are allowed only while at least one software endpoint is registered, checks in at
  `ESTOP_LEVEL_NONE` within its timeout, and the hardware e-stop (`press_estop()`) is released; when
  that stops holding, motors are cut, running commands report `STATUS_ROBOT_FROZEN`, and power on returns
  `STATUS_ESTOPPED`; robot commands without motor power return `STATUS_NOT_POWERED_ON`;
- stand / sit / SE2 velocity / SE2 trajectory commands run for a short simulated time, then report their
  end status; `fail_next_command(...)` makes the next command's feedback report a failure and adds a
  behaviour fault;
- `go_silent()` makes every RPC hang until `resume()` (the clients' deadlines expire), `stop()` takes the
  server away.
Every RPC is recorded in `FakeSpot.calls` by method name, in order; `when(call, action)` runs an action when
a given RPC arrives (a fault at an exact point of a motion).

The e-stop challenge/response is not verified (any response is accepted) and there is no kinematic
state (no frame tree, no odometry).
"""
from __future__ import annotations

import itertools
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped, unused-ignore]
from bosdyn.api import (  # type: ignore[import-untyped, unused-ignore]
    auth_pb2,
    auth_service_pb2_grpc,
    basic_command_pb2,
    directory_pb2,
    directory_service_pb2_grpc,
    estop_pb2,
    estop_service_pb2_grpc,
    header_pb2,
    lease_pb2,
    lease_service_pb2_grpc,
    power_pb2,
    power_service_pb2_grpc,
    robot_command_pb2,
    robot_command_service_pb2_grpc,
    robot_id_pb2,
    robot_id_service_pb2_grpc,
    robot_state_pb2,
    robot_state_service_pb2_grpc,
    time_sync_pb2,
    time_sync_service_pb2_grpc,
)
from bosdyn.api.spot import robot_command_pb2 as spot_command_pb2  # type: ignore[import-untyped, unused-ignore]

AUTHORITY = "api.spot.robot"
EPOCH = "fake-spot-epoch"
BODY = "body"
FEEDBACK = basic_command_pb2.RobotCommandFeedbackStatus

# (service name, service type) of every service the fake serves, as the real directory lists them.
SERVICES = (
    ("robot-id", "bosdyn.api.RobotIdService"),
    ("auth", "bosdyn.api.AuthService"),
    ("directory", "bosdyn.api.DirectoryService"),
    ("time-sync", "bosdyn.api.TimeSyncService"),
    ("lease", "bosdyn.api.LeaseService"),
    ("estop", "bosdyn.api.EstopService"),
    ("power", "bosdyn.api.PowerService"),
    ("robot-state", "bosdyn.api.RobotStateService"),
    ("robot-command", "bosdyn.api.RobotCommandService"),
)


def make_certificates(directory: Path) -> tuple[Path, Path, Path]:
    """A throw-away CA plus a server key and certificate for the SDK's authorities; returns
    (ca_cert, server_key, server_cert). Needs the `openssl` command."""
    if shutil.which("openssl") is None:
        raise RuntimeError("FakeSpot needs the openssl command to make its TLS certificate")
    ca_key, ca_crt = directory / "ca.key", directory / "ca.crt"
    key, csr, crt = directory / "server.key", directory / "server.csr", directory / "server.crt"
    ext = directory / "san.ext"
    ext.write_text("subjectAltName=DNS:api.spot.robot,DNS:*.spot.robot\n")

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=30)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out", str(ca_crt),
        "-days", "2", "-subj", "/CN=fake-spot-ca")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", "/CN=api.spot.robot")
    run("x509", "-req", "-in", str(csr), "-CA", str(ca_crt), "-CAkey", str(ca_key), "-CAcreateserial",
        "-out", str(crt), "-days", "2", "-extfile", str(ext))
    return ca_crt, key, crt


@dataclass
class _Endpoint:
    unique_id: str
    name: str
    role: str
    timeout_s: float
    level: int = estop_pb2.ESTOP_LEVEL_CUT
    last_check_in: float = 0.0  # time.monotonic() s


@dataclass
class _Command:
    command_id: int
    kind: str  # stand, sit, velocity, trajectory, stop, other
    start: float  # time.monotonic() s
    duration_s: float
    fail_status: int | None = None
    ended_status: int | None = None  # overridden / frozen, once it happens
    request: Any = None
    applied: bool = False  # its outcome (standing / sitting) has been applied to the state


@dataclass
class _State:
    lease_sequence: int = 0
    lease_owner: str = ""  # client name; "" = nobody
    returned: list[int] = field(default_factory=list)
    estop_config_id: str = "config-0"
    endpoints: dict[str, _Endpoint] = field(default_factory=dict)
    hardware_estop: bool = False
    motors_on: bool = False
    standing: bool = False
    behavior_faults: list[int] = field(default_factory=list)  # BehaviorFault.Cause
    commands: dict[int, _Command] = field(default_factory=dict)
    current: int | None = None  # id of the running mobility command


class FakeSpot:
    """The robot. Use as a context manager, or call start() / stop()."""

    def __init__(self, username: str = "user", password: str = "fake-spot-password",
                 serial: str = "fake-spot-0001", motion_duration_s: float = 0.2) -> None:
        self.username = username
        self.password = password
        self.serial = serial
        self.motion_duration_s = motion_duration_s  # s, simulated duration of stand, sit and trajectories
        self.calls: list[str] = []
        self._lock = threading.RLock()
        self._s = _State()
        self._ids = itertools.count(1)
        self._awake = threading.Event()
        self._awake.set()
        self._fail_next: int | None = None
        self._triggers: list[tuple[str, int, Callable[[], object]]] = []
        self._dir = Path(tempfile.mkdtemp(prefix="fake_spot_"))
        self._server: Any = None
        self.port = 0
        self.ca_cert_path = self._dir / "ca.crt"

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> FakeSpot:
        ca, key, crt = make_certificates(self._dir)
        self.ca_cert_path = ca
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=32))
        s = self._server
        robot_id_service_pb2_grpc.add_RobotIdServiceServicer_to_server(_RobotId(self), s)
        auth_service_pb2_grpc.add_AuthServiceServicer_to_server(_Auth(self), s)
        directory_service_pb2_grpc.add_DirectoryServiceServicer_to_server(_Directory(self), s)
        time_sync_service_pb2_grpc.add_TimeSyncServiceServicer_to_server(_TimeSync(self), s)
        lease_service_pb2_grpc.add_LeaseServiceServicer_to_server(_Lease(self), s)
        estop_service_pb2_grpc.add_EstopServiceServicer_to_server(_Estop(self), s)
        power_service_pb2_grpc.add_PowerServiceServicer_to_server(_Power(self), s)
        robot_state_service_pb2_grpc.add_RobotStateServiceServicer_to_server(_RobotState(self), s)
        robot_command_service_pb2_grpc.add_RobotCommandServiceServicer_to_server(_RobotCommand(self), s)
        creds = grpc.ssl_server_credentials([(key.read_bytes(), crt.read_bytes())])
        self.port = s.add_secure_port("127.0.0.1:0", creds)
        s.start()
        return self

    def stop(self) -> None:
        """Take the server away (connections drop; new calls fail)."""
        self._awake.set()
        if self._server is not None:
            self._server.stop(grace=None).wait(5.0)
            self._server = None
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> FakeSpot:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- fault injection -------------------------------------------------------------------------
    def go_silent(self) -> None:
        """Every RPC from now on hangs (until resume() or stop()): the clients' deadlines expire."""
        self._awake.clear()

    def resume(self) -> None:
        self._awake.set()

    def take_lease_as(self, owner: str = "tablet") -> None:
        """Someone else takes the body lease: our lease becomes older, the running command is overridden."""
        with self._lock:
            self._s.lease_sequence += 1
            self._s.lease_owner = owner
            self._end_current(FEEDBACK.STATUS_COMMAND_OVERRIDDEN)

    def press_estop(self) -> None:
        """The hardware e-stop (or the tablet's): motors are cut at once."""
        with self._lock:
            self._s.hardware_estop = True
            self._update_estop()

    def release_estop(self) -> None:
        with self._lock:
            self._s.hardware_estop = False

    def when(self, call: str, action: Callable[[], object], after: int = 1) -> None:
        """Run `action` (in the server's thread, before answering) when the `after`-th `call` RPC arrives,
        e.g. `when("RobotCommandFeedback", spot.take_lease_as)`: a fault exactly mid-motion."""
        with self._lock:
            self._triggers.append((call, self.calls.count(call) + after, action))

    def fail_next_command(self, status: int = FEEDBACK.STATUS_COMMAND_TIMED_OUT) -> None:
        """The next robot command is accepted, then its feedback reports `status` and a behaviour fault
        (CAUSE_COMMAND_FAILURE) appears in the robot state."""
        self._fail_next = status

    # -- observation -----------------------------------------------------------------------------
    @property
    def lease_owner(self) -> str:
        with self._lock:
            return self._s.lease_owner

    @property
    def motors_on(self) -> bool:
        with self._lock:
            self._update_estop()
            return self._s.motors_on

    @property
    def standing(self) -> bool:
        with self._lock:
            self._advance()
            return self._s.standing

    @property
    def estopped(self) -> bool:
        with self._lock:
            return self._estopped()

    def endpoint_levels(self) -> dict[str, int]:
        """EstopStopLevel of each registered endpoint, by endpoint name."""
        with self._lock:
            return {e.name: e.level for e in self._s.endpoints.values()}

    def commands(self) -> list[tuple[str, Any]]:
        """(kind, RobotCommandRequest) of every accepted robot command, in order."""
        with self._lock:
            return [(c.kind, c.request) for c in self._s.commands.values()]

    # -- internals (called with the lock held unless noted) --------------------------------------
    def _enter(self, name: str, request: Any, context: Any) -> None:
        """Record the call, run the triggers it fires, hang while silent (without the lock)."""
        with self._lock:
            self.calls.append(name)
            count = self.calls.count(name)
            fired = [t for t in self._triggers if t[0] == name and t[1] <= count]
            self._triggers = [t for t in self._triggers if t not in fired]
        for _, _, action in fired:
            action()
        while not self._awake.wait(0.05):
            if not context.is_active():
                return

    def _header(self, header: Any, request: Any) -> None:
        header.request_header.CopyFrom(request.header)
        header.request_received_timestamp.GetCurrentTime()
        header.response_timestamp.GetCurrentTime()
        header.error.code = header_pb2.CommonError.CODE_OK

    def _lease_proto(self) -> Any:
        return lease_pb2.Lease(resource=BODY, epoch=EPOCH, sequence=[self._s.lease_sequence],
                               client_names=[self._s.lease_owner])

    def _check_lease(self, lease: Any, result: Any) -> bool:
        """Fill a LeaseUseResult for `lease`; True when it is the current lease."""
        result.attempted_lease.CopyFrom(lease)
        result.latest_known_lease.CopyFrom(self._lease_proto())
        if self._s.lease_owner:
            result.owner.client_name = self._s.lease_owner
        if lease.resource != BODY or lease.epoch != EPOCH or not lease.sequence:
            result.status = lease_pb2.LeaseUseResult.STATUS_INVALID_LEASE
        elif lease.sequence[0] < self._s.lease_sequence:
            result.status = lease_pb2.LeaseUseResult.STATUS_OLDER
        elif lease.sequence[0] in self._s.returned or not self._s.lease_owner:
            result.status = lease_pb2.LeaseUseResult.STATUS_REVOKED
        else:
            result.status = lease_pb2.LeaseUseResult.STATUS_OK
        return bool(result.status == lease_pb2.LeaseUseResult.STATUS_OK)

    def _estopped(self) -> bool:
        s = self._s
        if s.hardware_estop or not s.endpoints:
            return True
        now = time.monotonic()
        return any(e.level != estop_pb2.ESTOP_LEVEL_NONE or now - e.last_check_in > e.timeout_s
                   for e in s.endpoints.values())

    def _update_estop(self) -> None:
        if self._s.motors_on and self._estopped():
            self._cut_motors(FEEDBACK.STATUS_ROBOT_FROZEN)

    def _cut_motors(self, status: int) -> None:
        self._s.motors_on = False
        self._s.standing = False
        self._end_current(status)

    def _end_current(self, status: int) -> None:
        cur = self._s.commands.get(self._s.current) if self._s.current is not None else None
        if cur is not None and cur.ended_status is None and not self._finished(cur):
            cur.ended_status = status
        self._s.current = None

    def _finished(self, c: _Command) -> bool:
        return time.monotonic() - c.start >= c.duration_s

    def _advance(self) -> None:
        """Apply the outcome of finished stand / sit commands."""
        self._update_estop()
        for c in self._s.commands.values():
            if c.ended_status is None and c.fail_status is None and not c.applied and self._finished(c):
                c.applied = True
                if c.kind == "stand":
                    self._s.standing = True
                elif c.kind == "sit":
                    self._s.standing = False

    def _feedback(self, c: _Command, fb: Any) -> None:
        self._advance()
        sync = fb.synchronized_feedback.mobility_command_feedback
        if c.ended_status is not None:
            sync.status = c.ended_status
            return
        done = self._finished(c)
        if c.fail_status is not None and done:
            sync.status = c.fail_status
            return
        sync.status = FEEDBACK.STATUS_PROCESSING
        if c.kind == "stand":
            sync.stand_feedback.status = (basic_command_pb2.StandCommand.Feedback.STATUS_IS_STANDING if done
                                          else basic_command_pb2.StandCommand.Feedback.STATUS_IN_PROGRESS)
        elif c.kind == "sit":
            sync.sit_feedback.status = (basic_command_pb2.SitCommand.Feedback.STATUS_IS_SITTING if done
                                        else basic_command_pb2.SitCommand.Feedback.STATUS_IN_PROGRESS)
        elif c.kind == "trajectory":
            t = basic_command_pb2.SE2TrajectoryCommand.Feedback
            sync.se2_trajectory_feedback.status = t.STATUS_AT_GOAL if done else t.STATUS_GOING_TO_GOAL
        elif c.kind == "velocity":
            sync.se2_velocity_feedback.SetInParent()
            if done:  # past its end time, as on the robot
                sync.status = FEEDBACK.STATUS_COMMAND_TIMED_OUT
        elif c.kind == "stop":
            sync.stop_feedback.SetInParent()


def _kind(command: Any) -> str:
    if command.HasField("synchronized_command"):
        mob = command.synchronized_command.mobility_command
        which = mob.WhichOneof("command")
        return {"stand_request": "stand", "sit_request": "sit", "se2_velocity_request": "velocity",
                "se2_trajectory_request": "trajectory", "stop_request": "stop"}.get(which or "", "other")
    if command.HasField("full_body_command"):
        return "stop" if command.full_body_command.HasField("stop_request") else "other"
    return "other"


def mobility_params(request: Any) -> Any:
    """The spot.MobilityParams packed into a RobotCommandRequest, or None."""
    mob = request.command.synchronized_command.mobility_command
    if not mob.HasField("params"):
        return None
    params = spot_command_pb2.MobilityParams()
    mob.params.Unpack(params)
    return params


class _Servicer:
    def __init__(self, spot: FakeSpot) -> None:
        self.spot = spot


class _RobotId(_Servicer, robot_id_service_pb2_grpc.RobotIdServiceServicer):  # type: ignore[misc]
    def GetRobotId(self, request: Any, context: Any) -> Any:  # noqa: N802 (gRPC method name)
        self.spot._enter("GetRobotId", request, context)
        r = robot_id_pb2.RobotIdResponse()
        self.spot._header(r.header, request)
        r.robot_id.serial_number = self.spot.serial
        r.robot_id.species = "spot"
        r.robot_id.nickname = "fake-spot"
        r.robot_id.software_release.version.major_version = 5
        r.robot_id.software_release.version.minor_version = 2
        return r


class _Auth(_Servicer, auth_service_pb2_grpc.AuthServiceServicer):  # type: ignore[misc]
    def GetAuthToken(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.spot._enter("GetAuthToken", request, context)
        r = auth_pb2.GetAuthTokenResponse()
        self.spot._header(r.header, request)
        if request.username == self.spot.username and request.password == self.spot.password:
            r.status = auth_pb2.GetAuthTokenResponse.STATUS_OK
            r.token = "fake-token-" + self.spot.serial
        else:
            r.status = auth_pb2.GetAuthTokenResponse.STATUS_INVALID_LOGIN
        return r


class _Directory(_Servicer, directory_service_pb2_grpc.DirectoryServiceServicer):  # type: ignore[misc]
    @staticmethod
    def _entry(name: str, type_: str) -> Any:
        return directory_pb2.ServiceEntry(name=name, type=type_, authority=AUTHORITY)

    def ListServiceEntries(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.spot._enter("ListServiceEntries", request, context)
        r = directory_pb2.ListServiceEntriesResponse()
        self.spot._header(r.header, request)
        r.service_entries.extend(self._entry(n, t) for n, t in SERVICES)
        return r

    def GetServiceEntry(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.spot._enter("GetServiceEntry", request, context)
        r = directory_pb2.GetServiceEntryResponse()
        self.spot._header(r.header, request)
        for n, t in SERVICES:
            if n == request.service_name:
                r.status = directory_pb2.GetServiceEntryResponse.STATUS_OK
                r.service_entry.CopyFrom(self._entry(n, t))
                return r
        r.status = directory_pb2.GetServiceEntryResponse.STATUS_NONEXISTENT_SERVICE
        return r


class _TimeSync(_Servicer, time_sync_service_pb2_grpc.TimeSyncServiceServicer):  # type: ignore[misc]
    def TimeSyncUpdate(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.spot._enter("TimeSyncUpdate", request, context)
        r = time_sync_pb2.TimeSyncUpdateResponse()
        self.spot._header(r.header, request)
        r.clock_identifier = request.clock_identifier or "fake-spot-clock"
        r.state.status = time_sync_pb2.TimeSyncState.STATUS_OK  # same host clock: skew 0
        r.state.best_estimate.clock_skew.SetInParent()
        r.state.best_estimate.round_trip_time.nanos = 1_000_000
        r.state.measurement_time.GetCurrentTime()
        return r


class _Lease(_Servicer, lease_service_pb2_grpc.LeaseServiceServicer):  # type: ignore[misc]
    def _grant(self, request: Any, response: Any) -> None:
        s = self.spot._s
        s.lease_sequence += 1
        s.lease_owner = request.header.client_name
        self.spot._end_current(FEEDBACK.STATUS_COMMAND_OVERRIDDEN)
        response.lease.CopyFrom(self.spot._lease_proto())
        response.lease_owner.client_name = s.lease_owner

    def AcquireLease(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.spot._enter("AcquireLease", request, context)
        r = lease_pb2.AcquireLeaseResponse()
        with self.spot._lock:
            self.spot._header(r.header, request)
            s = self.spot._s
            if request.resource != BODY:
                r.status = lease_pb2.AcquireLeaseResponse.STATUS_INVALID_RESOURCE
            elif s.lease_owner and s.lease_owner != request.header.client_name:
                r.status = lease_pb2.AcquireLeaseResponse.STATUS_RESOURCE_ALREADY_CLAIMED
                r.lease_owner.client_name = s.lease_owner
            else:
                r.status = lease_pb2.AcquireLeaseResponse.STATUS_OK
                self._grant(request, r)
        return r

    def TakeLease(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.spot._enter("TakeLease", request, context)
        r = lease_pb2.TakeLeaseResponse()
        with self.spot._lock:
            self.spot._header(r.header, request)
            if request.resource != BODY:
                r.status = lease_pb2.TakeLeaseResponse.STATUS_INVALID_RESOURCE
            else:
                r.status = lease_pb2.TakeLeaseResponse.STATUS_OK
                self._grant(request, r)
        return r

    def ReturnLease(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.spot._enter("ReturnLease", request, context)
        r = lease_pb2.ReturnLeaseResponse()
        with self.spot._lock:
            self.spot._header(r.header, request)
            result = lease_pb2.LeaseUseResult()
            if self.spot._check_lease(request.lease, result):
                self.spot._s.returned.append(self.spot._s.lease_sequence)
                self.spot._s.lease_owner = ""
                r.status = lease_pb2.ReturnLeaseResponse.STATUS_OK
            else:
                r.status = lease_pb2.ReturnLeaseResponse.STATUS_NOT_ACTIVE_LEASE
        return r

    def RetainLease(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.spot._enter("RetainLease", request, context)
        r = lease_pb2.RetainLeaseResponse()
        with self.spot._lock:
            self.spot._header(r.header, request)
            self.spot._check_lease(request.lease, r.lease_use_result)
        return r

    def ListLeases(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.spot._enter("ListLeases", request, context)
        r = lease_pb2.ListLeasesResponse()
        with self.spot._lock:
            self.spot._header(r.header, request)
            res = r.resources.add()
            res.resource = BODY
            if self.spot._s.lease_owner:
                res.lease.CopyFrom(self.spot._lease_proto())
                res.lease_owner.client_name = self.spot._s.lease_owner
        return r


class _Estop(_Servicer, estop_service_pb2_grpc.EstopServiceServicer):  # type: ignore[misc]
    def _config(self) -> Any:
        s = self.spot._s
        cfg = estop_pb2.EstopConfig(unique_id=s.estop_config_id)
        for e in s.endpoints.values():
            ep = cfg.endpoints.add(unique_id=e.unique_id, name=e.name, role=e.role)
            ep.timeout.FromNanoseconds(int(e.timeout_s * 1e9))
        return cfg

    def GetEstopConfig(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.spot._enter("GetEstopConfig", request, context)
        r = estop_pb2.GetEstopConfigResponse()
        with self.spot._lock:
            self.spot._header(r.header, request)
            r.active_config.CopyFrom(self._config())
        return r

    def SetEstopConfig(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.spot._enter("SetEstopConfig", request, context)
        r = estop_pb2.SetEstopConfigResponse()
        with self.spot._lock:
            s = self.spot._s
            self.spot._header(r.header, request)
            if request.target_config_id != s.estop_config_id:
                r.status = estop_pb2.SetEstopConfigResponse.STATUS_INVALID_ID
            elif s.motors_on:
                r.status = estop_pb2.SetEstopConfigResponse.STATUS_MOTORS_ON
            else:
                s.estop_config_id = f"config-{next(self.spot._ids)}"
                # The new configuration's endpoints are slots; they hold the motors until registered.
                s.endpoints = {}
                for ep in request.config.endpoints:
                    uid = f"endpoint-{next(self.spot._ids)}"
                    s.endpoints[uid] = _Endpoint(uid, ep.name, ep.role, ep.timeout.ToNanoseconds() / 1e9)
                r.status = estop_pb2.SetEstopConfigResponse.STATUS_SUCCESS
            r.active_config.CopyFrom(self._config())
        return r

    def RegisterEstopEndpoint(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.spot._enter("RegisterEstopEndpoint", request, context)
        r = estop_pb2.RegisterEstopEndpointResponse()
        with self.spot._lock:
            s = self.spot._s
            self.spot._header(r.header, request)
            r.request.CopyFrom(request)
            if request.target_config_id != s.estop_config_id:
                r.status = estop_pb2.RegisterEstopEndpointResponse.STATUS_CONFIG_MISMATCH
                return r
            slot = next((e for e in s.endpoints.values() if e.role == request.target_endpoint.role), None)
            if slot is None:
                r.status = estop_pb2.RegisterEstopEndpointResponse.STATUS_ENDPOINT_MISMATCH
                return r
            new = request.new_endpoint
            slot.name = new.name
            slot.timeout_s = new.timeout.ToNanoseconds() / 1e9
            slot.level = estop_pb2.ESTOP_LEVEL_CUT
            slot.last_check_in = time.monotonic()
            r.new_endpoint.CopyFrom(new)
            r.new_endpoint.unique_id = slot.unique_id
            r.status = estop_pb2.RegisterEstopEndpointResponse.STATUS_SUCCESS
        return r

    def DeregisterEstopEndpoint(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.spot._enter("DeregisterEstopEndpoint", request, context)
        r = estop_pb2.DeregisterEstopEndpointResponse()
        with self.spot._lock:
            s = self.spot._s
            self.spot._header(r.header, request)
            r.request.CopyFrom(request)
            if s.endpoints.pop(request.target_endpoint.unique_id, None) is None:
                r.status = estop_pb2.DeregisterEstopEndpointResponse.STATUS_ENDPOINT_MISMATCH
            else:
                r.status = estop_pb2.DeregisterEstopEndpointResponse.STATUS_SUCCESS
            self.spot._update_estop()
        return r

    def EstopCheckIn(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.spot._enter("EstopCheckIn", request, context)
        r = estop_pb2.EstopCheckInResponse()
        with self.spot._lock:
            self.spot._header(r.header, request)
            r.request.CopyFrom(request)
            ep = self.spot._s.endpoints.get(request.endpoint.unique_id)
            r.challenge = int(time.monotonic_ns() & 0xFFFFFFFF)
            if ep is None:
                r.status = estop_pb2.EstopCheckInResponse.STATUS_ENDPOINT_UNKNOWN
                return r
            ep.level = request.stop_level
            ep.last_check_in = time.monotonic()
            self.spot._update_estop()
            r.status = estop_pb2.EstopCheckInResponse.STATUS_OK
        return r

    def GetEstopSystemStatus(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.spot._enter("GetEstopSystemStatus", request, context)
        r = estop_pb2.GetEstopSystemStatusResponse()
        with self.spot._lock:
            self.spot._header(r.header, request)
            r.status.stop_level = estop_pb2.ESTOP_LEVEL_CUT if self.spot._estopped() else estop_pb2.ESTOP_LEVEL_NONE
            for e in self.spot._s.endpoints.values():
                ews = r.status.endpoints.add(stop_level=e.level)
                ews.endpoint.unique_id, ews.endpoint.name, ews.endpoint.role = e.unique_id, e.name, e.role
        return r


class _Power(_Servicer, power_service_pb2_grpc.PowerServiceServicer):  # type: ignore[misc]
    def PowerCommand(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.spot._enter("PowerCommand", request, context)
        r = power_pb2.PowerCommandResponse()
        with self.spot._lock:
            s = self.spot._s
            self.spot._header(r.header, request)
            r.power_command_id = next(self.spot._ids)
            if not self.spot._check_lease(request.lease, r.lease_use_result):
                r.status = power_pb2.STATUS_UNKNOWN
                return r
            if request.request == power_pb2.PowerCommandRequest.REQUEST_ON_MOTORS:
                if self.spot._estopped():
                    r.status = power_pb2.STATUS_ESTOPPED
                    return r
                s.motors_on = True
            elif request.request == power_pb2.PowerCommandRequest.REQUEST_OFF_MOTORS:
                self.spot._cut_motors(FEEDBACK.STATUS_ROBOT_FROZEN)
            r.status = power_pb2.STATUS_SUCCESS
        return r

    def PowerCommandFeedback(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.spot._enter("PowerCommandFeedback", request, context)
        r = power_pb2.PowerCommandFeedbackResponse()
        self.spot._header(r.header, request)
        r.status = power_pb2.STATUS_SUCCESS
        return r


class _RobotState(_Servicer, robot_state_service_pb2_grpc.RobotStateServiceServicer):  # type: ignore[misc]
    def GetRobotState(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.spot._enter("GetRobotState", request, context)
        r = robot_state_pb2.RobotStateResponse()
        with self.spot._lock:
            spot, s = self.spot, self.spot._s
            spot._advance()
            spot._header(r.header, request)
            st = r.robot_state
            st.power_state.motor_power_state = (robot_state_pb2.PowerState.STATE_ON if s.motors_on
                                                else robot_state_pb2.PowerState.STATE_OFF)
            hw = st.estop_states.add(name="hardware_estop", type=robot_state_pb2.EStopState.TYPE_HARDWARE)
            hw.state = (robot_state_pb2.EStopState.STATE_ESTOPPED if s.hardware_estop
                        else robot_state_pb2.EStopState.STATE_NOT_ESTOPPED)
            sw = st.estop_states.add(name="software_estop", type=robot_state_pb2.EStopState.TYPE_SOFTWARE)
            software_estopped = spot._estopped() and not s.hardware_estop
            sw.state = (robot_state_pb2.EStopState.STATE_ESTOPPED if software_estopped
                        else robot_state_pb2.EStopState.STATE_NOT_ESTOPPED)
            for i, cause in enumerate(s.behavior_faults):
                st.behavior_fault_state.faults.add(behavior_fault_id=i + 1, cause=cause,
                                                   status=robot_state_pb2.BehaviorFault.STATUS_CLEARABLE)
            st.behavior_state.state = (robot_state_pb2.BehaviorState.STATE_STANDING if s.standing
                                       else robot_state_pb2.BehaviorState.STATE_NOT_READY)
        return r


class _RobotCommand(_Servicer, robot_command_service_pb2_grpc.RobotCommandServiceServicer):  # type: ignore[misc]
    def RobotCommand(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.spot._enter("RobotCommand", request, context)
        r = robot_command_pb2.RobotCommandResponse()
        with self.spot._lock:
            spot, s = self.spot, self.spot._s
            spot._advance()
            spot._header(r.header, request)
            if not spot._check_lease(request.lease, r.lease_use_result):
                r.status = robot_command_pb2.RobotCommandResponse.STATUS_UNKNOWN
                return r
            kind = _kind(request.command)
            if not s.motors_on and kind != "stop":
                r.status = robot_command_pb2.RobotCommandResponse.STATUS_NOT_POWERED_ON
                r.message = "motors are off"
                return r
            if s.behavior_faults:
                r.status = robot_command_pb2.RobotCommandResponse.STATUS_BEHAVIOR_FAULT
                r.message = "clear the behaviour faults first"
                return r
            duration = spot.motion_duration_s
            if kind == "velocity":
                end = request.command.synchronized_command.mobility_command.se2_velocity_request.end_time
                # end_time is robot time; the fake's clock is the client's (skew 0).
                duration = max(0.0, end.ToNanoseconds() / 1e9 - time.time())
            elif kind == "stop":
                duration = 0.0
            spot._end_current(FEEDBACK.STATUS_COMMAND_OVERRIDDEN)
            cid = next(spot._ids)
            cmd = _Command(cid, kind, time.monotonic(), duration, request=request)
            if spot._fail_next is not None:
                cmd.fail_status, spot._fail_next = spot._fail_next, None
                s.behavior_faults.append(robot_state_pb2.BehaviorFault.CAUSE_COMMAND_FAILURE)
            s.commands[cid] = cmd
            s.current = cid
            r.status = robot_command_pb2.RobotCommandResponse.STATUS_OK
            r.robot_command_id = cid
        return r

    def RobotCommandFeedback(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.spot._enter("RobotCommandFeedback", request, context)
        r = robot_command_pb2.RobotCommandFeedbackResponse()
        with self.spot._lock:
            self.spot._header(r.header, request)
            cmd = self.spot._s.commands.get(request.robot_command_id)
            if cmd is None:
                r.status = robot_command_pb2.RobotCommandFeedbackResponse.STATUS_UNKNOWN
                r.message = "unknown command id"
                r.feedback.synchronized_feedback.mobility_command_feedback.status = FEEDBACK.STATUS_UNKNOWN
                return r
            self.spot._feedback(cmd, r.feedback)
        return r

    def ClearBehaviorFault(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.spot._enter("ClearBehaviorFault", request, context)
        r = robot_command_pb2.ClearBehaviorFaultResponse()
        with self.spot._lock:
            self.spot._header(r.header, request)
            if not self.spot._check_lease(request.lease, r.lease_use_result):
                return r
            faults = self.spot._s.behavior_faults
            idx = request.behavior_fault_id - 1
            if 0 <= idx < len(faults):
                faults.pop(idx)
                r.status = robot_command_pb2.ClearBehaviorFaultResponse.STATUS_CLEARED
            else:
                r.status = robot_command_pb2.ClearBehaviorFaultResponse.STATUS_NOT_CLEARED
        return r
