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
- e-stop: motors are allowed only while at least one software endpoint is registered, every endpoint checks
  in at `ESTOP_LEVEL_NONE` within its timeout, and the hardware e-stop (`press_estop()`) is released. The
  stop level is the most restrictive one: the hardware e-stop or an endpoint at `ESTOP_LEVEL_CUT` cuts motor
  power at once (a standing robot drops: "fell" in `posture_history()`); an endpoint at
  `ESTOP_LEVEL_SETTLE_THEN_CUT`, or one silent past its timeout, makes the robot sit (SETTLE_S s, scaled as
  the other motions; behaviour state TRANSITION, "settling"), then cuts power ("sat", "motors off"). Running
  commands report `STATUS_ROBOT_FROZEN`, power on returns `STATUS_ESTOPPED`; robot commands without motor
  power return `STATUS_NOT_POWERED_ON`;
- the e-stop configuration starts as the robot's own with the operator's tablet registered and checking in
  (`tablet_estop`, endpoint "tablet", role PDB_rooted); SetEstopConfig (motors off only, a PDB_rooted
  endpoint required) keeps the registration of every endpoint it lists by unique id, the others are slots
  until registered; RegisterEstopEndpoint fills the slot named by the target's unique id, else by its role;
- stand / sit / SE2 velocity / SE2 trajectory commands run for a short simulated time, then report their
  end status; `fail_next_command(...)` makes the next command's feedback report a failure and adds a
  behaviour fault;
- its clock runs `clock_skew_s` ahead of this host's (time sync reports that skew; acquisition times and
  command end times are on the robot's clock);
- `go_silent()` makes every RPC hang until `resume()` (the clients' deadlines expire), `stop()` takes the
  server away.
Every RPC is recorded in `FakeSpot.calls` by method name, in order; `when(call, action)` runs an action when
a given RPC arrives (a fault at an exact point of a motion).

Kinematics and the world (see also testing/fake_spot_world.py):
- the robot state carries a kinematic frame tree (body root; odom, vision, hand, hand_color_image_sensor)
  and the manipulator state (gripper opening, holding an item, stowed); SE2 trajectories (body frame or
  `odom`), velocity commands and GraphNav navigation move odom_T_body along a straight path; with
  `time_scale` set a walk takes (distance / speed + turn / yaw rate) * time_scale s (speed: the command's
  mobility velocity limits), an arm move its trajectory time * time_scale, a grasp GRASP_S * time_scale;
  without it (None) every motion takes `motion_duration_s`;
- arm commands (stow, carry, cartesian pose) and claw gripper commands, with feedback; the hand camera's
  pose is the hand's (stowed and carry: the same look pose LOOK_HAND, high above the body, pitched
  down, so a surface in front is in view; after a grasp, at the grasp point; after arm_pose, at the target);
- with a `world` (FakeKitchen): ImageService (hand colour RGB, RAW or JPEG, and hand depth in the hand
  colour frame, 16-bit mm, ray-cast exactly from the world's boxes, with pinhole intrinsics and the frame
  tree at acquisition), ManipulationApiService (PickObjectInImage: the pixel's ray through the request's
  own frame tree and camera model; succeeds iff it hits a graspable box within GRASP_REACH of the body;
  else GRASP_PLANNING_NO_SOLUTION, or GRASP_FAILED_TO_RAYCAST_INTO_MAP when it hits nothing), gripper
  open puts the held object down where the hand is, the drawer opens when its grasped handle is pulled
  out, GraphNavService (a waypoint per location at its stand pose; localized at start; navigate_to walks);
- faults: `fail_next_grasp(state)`, `fail_next_navigation(status, fraction)` (stops part-way: STUCK,
  LOST - which also loses the localization -, ...), `lose_localization()`; lease taken and e-stop end a
  grasp (GRASP_FAILED) and a navigation (COMMAND_OVERRIDDEN / ROBOT_IMPAIRED) like any command;
  `phantom_next_grasp()`: the next grasp reports success and the gripper reports holding an item, but the
  object stays where it was (a mis-grasp the robot misreports: only the camera shows it).

The e-stop challenge/response is not verified (any response is accepted).
"""
from __future__ import annotations

import itertools
import math
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import grpc  # type: ignore[import-untyped, unused-ignore]
import numpy as np
from bosdyn.api import (  # type: ignore[import-untyped, unused-ignore]
    arm_command_pb2,
    auth_pb2,
    auth_service_pb2_grpc,
    basic_command_pb2,
    directory_pb2,
    directory_service_pb2_grpc,
    estop_pb2,
    estop_service_pb2_grpc,
    geometry_pb2,
    gripper_command_pb2,
    header_pb2,
    image_pb2,
    image_service_pb2_grpc,
    lease_pb2,
    lease_service_pb2_grpc,
    manipulation_api_pb2,
    manipulation_api_service_pb2_grpc,
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
from bosdyn.api.graph_nav import graph_nav_pb2, graph_nav_service_pb2_grpc  # type: ignore[import-untyped, unused-ignore]
from bosdyn.api.spot import robot_command_pb2 as spot_command_pb2  # type: ignore[import-untyped, unused-ignore]
from bosdyn.client import frame_helpers  # type: ignore[import-untyped, unused-ignore]
from bosdyn.client.math_helpers import Quat, SE2Pose, SE3Pose  # type: ignore[import-untyped, unused-ignore]

from .fake_spot_world import BODY_HEIGHT, FakeKitchen, nearest

T = TypeVar("T")

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
    ("image", "bosdyn.api.ImageService"),
    ("manipulation", "bosdyn.api.ManipulationApiService"),
    ("graph-nav-service", "bosdyn.api.graph_nav.GraphNavService"),
)
Pose2 = tuple[float, float, float]  # x m, y m, yaw rad (odom)
HandPose = tuple[float, float, float, float]  # x, y, z m in the body frame, pitch rad (+ = looking down)
LOOK_HAND: HandPose = (-0.1, 0.0, 0.75, math.radians(38.0))  # stowed and carry: the hand camera's look pose
GRASP_REACH = 1.3  # m from the body origin: farther grasp targets have no solution
GRASP_S = 2.0  # s, a grasp (scaled by time_scale)
SETTLE_S = 2.0  # s, SETTLE_THEN_CUT: sitting down before motor power is cut (scaled by time_scale)
REQUIRED_ESTOP_ROLE = "PDB_rooted"  # every e-stop configuration needs an endpoint of this role
TABLET = "tablet"  # name of the operator's tablet e-stop endpoint
NAMED_ARM_S = 1.0  # s, stow / carry
GRIPPER_S = 0.5  # s
WALK_SPEED, WALK_YAW_RATE = 1.0, 1.0  # m/s, rad/s when a command carries no velocity limits
NAV_SPEED, NAV_YAW_RATE = 0.5, 0.8  # m/s, rad/s: GraphNav's walking speed
COLOR_SOURCE, DEPTH_SOURCE = "hand_color_image", "hand_depth_in_hand_color_frame"
SENSOR_FRAME = "hand_color_image_sensor"
HAND_FRAME = "hand"
# optical frame (z forward, x right, y down) in the hand frame (x forward, y left, z up)
HAND_T_SENSOR = SE3Pose(0.0, 0.0, 0.0, Quat.from_matrix(np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0],
                                                                  [0.0, -1.0, 0.0]])))
MANIP = manipulation_api_pb2
PHANTOM = -1  # _Command.fail_status of a phantom grasp (reported held, nothing taken)
NAV = graph_nav_pb2.NavigationFeedbackResponse


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
    simulated: bool = False  # the tablet's: the fake checks it in itself (it never times out)


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
    path: Callable[[float], Pose2] | None = None  # body pose (odom) after t s of this command (walks)
    ended_at: float | None = None  # time.monotonic() s when it was overridden / frozen
    arm_target: HandPose | None = None  # arm_pose: where the hand goes
    grasp: tuple[int, str | None, tuple[float, float, float] | None] | None = None  # final state, box, hit
    end_time_s: float | None = None  # navigation: expiry, robot clock (s)


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
    body: Pose2 = (0.0, 0.0, 0.0)  # odom_T_body when no walk is running
    motion: int | None = None  # id of the command moving the body
    hand: HandPose = LOOK_HAND  # body_T_hand
    stowed: bool = True
    gripper_open_pct: float = 0.0
    holding: bool = False  # without a world: what the gripper reports
    localized: bool = True  # GraphNav
    settle_start: float | None = None  # time.monotonic() s a SETTLE_THEN_CUT began sitting down
    history: list[tuple[float, str]] = field(default_factory=list)  # (time.monotonic() s, posture event)
    phantom_hold: bool = False  # the gripper reports an item that a phantom grasp left where it was


class FakeSpot:
    """The robot. Use as a context manager, or call start() / stop()."""

    def __init__(self, username: str = "user", password: str = "fake-spot-password",
                 serial: str = "fake-spot-0001", motion_duration_s: float = 0.2, world: FakeKitchen | None = None,
                 time_scale: float | None = None, image_size: tuple[int, int] = (640, 480),
                 focal_length_px: float = 552.0, waypoints: dict[str, Pose2] | None = None,
                 clock_skew_s: float = 0.0, tablet_estop: bool = True) -> None:
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
        self.port = 0  # TLS port; set before start() to bind that one (0: any free port)
        self.ca_cert_path = self._dir / "ca.crt"
        self.world = world
        self.time_scale = time_scale  # None: every motion takes motion_duration_s
        self.image_size = image_size  # px, (width, height) of both hand images
        self.focal_length_px = focal_length_px  # px (fx = fy; principal point at the centre)
        self.waypoints: dict[str, Pose2] = dict(waypoints or {})  # GraphNav waypoint id -> pose (odom)
        self.clock_skew_s = clock_skew_s  # s, the robot's clock minus this host's (time sync reports it)
        self.raw_color = True  # False: the colour camera answers JPEG whatever is asked (as some sources do)
        if world is not None:
            self._s.body = world.body
            self._s.holding = world.holding is not None
            self.waypoints.update({world.waypoint_ids[loc]: pose for loc, pose in world.stand_poses.items()
                                   if loc in world.waypoint_ids})
        self._fail_grasp: int | None = None
        self._fail_nav: tuple[int, float] | None = None
        self._phantom_grasp = False
        if tablet_estop:  # the robot's own configuration: the operator's tablet, registered and checking in
            self._s.endpoints["endpoint-tablet"] = _Endpoint("endpoint-tablet", TABLET, REQUIRED_ESTOP_ROLE, 9.0,
                                                             estop_pb2.ESTOP_LEVEL_NONE, simulated=True)

    # -- the robot's clock ----------------------------------------------------------------------
    def robot_time_s(self) -> float:
        """Now on the robot's clock (s): this host's clock plus `clock_skew_s`."""
        return time.time() + self.clock_skew_s

    def _stamp_robot_now(self, ts: Any) -> None:
        """Set a Timestamp proto to now, robot clock."""
        ts.FromNanoseconds(time.time_ns() + int(round(self.clock_skew_s * 1e9)))

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
        image_service_pb2_grpc.add_ImageServiceServicer_to_server(_Image(self), s)
        manipulation_api_service_pb2_grpc.add_ManipulationApiServiceServicer_to_server(_Manipulation(self), s)
        graph_nav_service_pb2_grpc.add_GraphNavServiceServicer_to_server(_GraphNav(self), s)
        creds = grpc.ssl_server_credentials([(key.read_bytes(), crt.read_bytes())])
        self.port = s.add_secure_port(f"127.0.0.1:{self.port}", creds)  # 0: any free port
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

    def fail_next_grasp(self, state: int = MANIP.MANIP_STATE_GRASP_FAILED) -> None:
        """The next grasp runs, then reports `state` (a ManipulationFeedbackState) and holds nothing."""
        self._fail_grasp = state

    def fail_next_navigation(self, status: int = NAV.STATUS_STUCK, fraction: float = 0.5) -> None:
        """The next navigation stops after `fraction` of its path and reports `status` (STATUS_LOST also
        loses the localization)."""
        self._fail_nav = (status, fraction)

    def phantom_next_grasp(self) -> None:
        """The next grasp reports GRASP_SUCCEEDED and the gripper holding an item, but the object stays where it
        was (until the gripper opens): the robot's own report is wrong, the hand camera shows the object."""
        self._phantom_grasp = True

    def tablet_estop_level(self, level: int) -> None:
        """The tablet's e-stop endpoint asserts `level` (EstopStopLevel), e.g. its own SETTLE_THEN_CUT."""
        with self._lock:
            for e in self._s.endpoints.values():
                if e.simulated:
                    e.level = level
            self._update_estop()

    def lose_localization(self) -> None:
        with self._lock:
            self._s.localized = False

    def localize(self) -> None:
        with self._lock:
            self._s.localized = True

    # -- observation -----------------------------------------------------------------------------
    def _now(self, read: Callable[[], T]) -> T:
        """`read()` of the state advanced to now (motions in progress moved on), under the lock."""
        with self._lock:
            self._advance()
            return read()

    @property
    def body_pose(self) -> Pose2:
        """odom_T_body now (x m, y m, yaw rad)."""
        return self._now(self._body_now)

    @property
    def hand_pose(self) -> HandPose:
        return self._now(lambda: self._s.hand)

    @property
    def holding(self) -> bool:
        return self._now(self._holding)

    def set_body_pose(self, pose: Pose2) -> None:
        """Teleport (a test's setup): odom_T_body."""
        with self._lock:
            self._s.body = pose
            self._s.motion = None
            self._sync_world()

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
        return self._now(lambda: self._s.standing)

    @property
    def estopped(self) -> bool:
        with self._lock:
            return self._estopped()

    def estop_config(self) -> list[tuple[str, str]]:
        """(name, role) of every endpoint of the active e-stop configuration, in order."""
        with self._lock:
            return [(e.name, e.role) for e in self._s.endpoints.values()]

    def posture_history(self) -> list[str]:
        """Posture and power events in order: stood, sat, settling (a SETTLE_THEN_CUT sitting down), fell (motor
        power cut while standing or sitting down), motors on, motors off."""
        with self._lock:
            self._advance()
            return [event for _, event in self._s.history]

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

    def _stop_level(self) -> int:
        """The system's stop level: the most restrictive of the hardware e-stop and every endpoint (a silent
        endpoint settles, as the robot does when a check-in is overdue)."""
        s = self._s
        if s.hardware_estop or not s.endpoints:
            return int(estop_pb2.ESTOP_LEVEL_CUT)
        now = time.monotonic()
        cut, settle = estop_pb2.ESTOP_LEVEL_CUT, estop_pb2.ESTOP_LEVEL_SETTLE_THEN_CUT
        levels = [e.level if e.simulated or now - e.last_check_in <= e.timeout_s or e.level == cut else settle
                  for e in s.endpoints.values()]
        if estop_pb2.ESTOP_LEVEL_CUT in levels or estop_pb2.ESTOP_LEVEL_UNKNOWN in levels:
            return int(estop_pb2.ESTOP_LEVEL_CUT)
        if estop_pb2.ESTOP_LEVEL_SETTLE_THEN_CUT in levels:
            return int(estop_pb2.ESTOP_LEVEL_SETTLE_THEN_CUT)
        return int(estop_pb2.ESTOP_LEVEL_NONE)

    def _estopped(self) -> bool:
        return bool(self._stop_level() != estop_pb2.ESTOP_LEVEL_NONE)

    def _event(self, event: str, at: float | None = None) -> None:
        self._s.history.append((time.monotonic() if at is None else at, event))

    def _update_estop(self) -> None:
        s = self._s
        if not s.motors_on:
            s.settle_start = None
            return
        level = self._stop_level()
        if level == estop_pb2.ESTOP_LEVEL_CUT:
            self._cut_motors(FEEDBACK.STATUS_ROBOT_FROZEN)
        elif level == estop_pb2.ESTOP_LEVEL_SETTLE_THEN_CUT:
            now = time.monotonic()
            if s.settle_start is None:  # sit down: whatever ran is frozen
                self._end_current(FEEDBACK.STATUS_ROBOT_FROZEN)
                s.settle_start = now
                self._event("settling", now)
            duration = self._duration(SETTLE_S) if s.standing else 0.0
            if now - s.settle_start >= duration:
                at = s.settle_start + duration
                if s.standing:
                    s.standing = False
                    self._event("sat", at)
                s.settle_start = None
                s.motors_on = False
                self._event("motors off", at)
        elif s.settle_start is not None:  # released while sitting down: it stops where it is, sitting
            s.settle_start = None
            if s.standing:
                s.standing = False
                self._event("sat")

    def _cut_motors(self, status: int) -> None:
        if self._s.standing or self._s.settle_start is not None:
            self._event("fell")  # motor power cut on a standing robot: it drops
        self._s.motors_on = False
        self._s.standing = False
        self._s.settle_start = None
        self._end_current(status)
        self._event("motors off")

    def _end_current(self, status: int) -> None:
        cur = self._s.commands.get(self._s.current) if self._s.current is not None else None
        if cur is not None and cur.ended_status is None and not self._finished(cur):
            self._s.body = self._body_now()  # a walk stops where it is
            cur.ended_status = status
            cur.ended_at = time.monotonic()
            if self._s.motion == cur.command_id:
                self._s.motion = None
        self._s.current = None

    def _finished(self, c: _Command) -> bool:
        return time.monotonic() - c.start >= c.duration_s

    def _duration(self, nominal_s: float) -> float:
        return self.motion_duration_s if self.time_scale is None else nominal_s * self.time_scale

    def _body_now(self) -> Pose2:
        s = self._s
        cur = s.commands.get(s.motion) if s.motion is not None else None
        if cur is None or cur.path is None:
            return s.body
        t = min(time.monotonic() - cur.start, cur.duration_s)
        return cur.path(t)

    def _holding(self) -> bool:
        if self._s.phantom_hold:
            return True
        return self.world.holding is not None if self.world is not None else self._s.holding

    def _odom_t_body(self) -> Any:
        x, y, yaw = self._body_now()
        return SE3Pose(x, y, BODY_HEIGHT, Quat.from_yaw(yaw))

    def _body_t_hand(self, hand: HandPose | None = None) -> Any:
        x, y, z, pitch = self._s.hand if hand is None else hand
        return SE3Pose(x, y, z, Quat.from_pitch(pitch))

    def _sync_world(self) -> None:
        if self.world is not None:
            self.world.set_body(self._body_now(), settled=self._s.motion is None)
            p = self._odom_t_body() * self._body_t_hand()
            self.world.set_hand((p.x, p.y, p.z))

    def _snapshot(self, snap: Any) -> None:
        """Fill a FrameTreeSnapshot: body (root) -> odom, vision, flat_body, hand -> hand_color_image_sensor."""
        body_t_odom = self._odom_t_body().inverse()

        def edge(child: str, parent: str, pose: Any) -> None:
            e = snap.child_to_parent_edge_map[child]
            e.parent_frame_name = parent
            e.parent_tform_child.CopyFrom(pose.to_proto())

        edge("body", "", SE3Pose.from_identity())
        edge("odom", "body", body_t_odom)
        edge("vision", "body", body_t_odom)
        edge(HAND_FRAME, "body", self._body_t_hand())
        edge(SENSOR_FRAME, HAND_FRAME, HAND_T_SENSOR)

    def _advance(self) -> None:
        """Apply the outcome of finished commands (posture, walks, arm, gripper, grasps, navigation)."""
        self._update_estop()
        s = self._s
        for c in s.commands.values():
            if c.applied or c.ended_status is not None or not self._finished(c):
                continue
            c.applied = True
            if c.path is not None:  # a walk (also a failed one: it stopped part-way)
                s.body = c.path(c.duration_s)
                if s.motion == c.command_id:
                    s.motion = None
                if c.kind == "navigate" and c.fail_status == NAV.STATUS_LOST:
                    s.localized = False
                continue
            if c.fail_status is not None and c.fail_status != PHANTOM:
                continue
            if c.kind == "stand":
                s.standing = True
                self._event("stood", c.start + c.duration_s)
            elif c.kind == "sit":
                s.standing = False
                self._event("sat", c.start + c.duration_s)
            elif c.kind in ("stow", "carry"):
                s.hand, s.stowed = LOOK_HAND, c.kind == "stow"
            elif c.kind == "arm_pose" and c.arm_target is not None:
                s.hand, s.stowed = c.arm_target, False
                self._sync_world()
                if self.world is not None:
                    self.world.move_handle()
            elif c.kind == "gripper_open":
                s.gripper_open_pct = 100.0
                s.holding = s.phantom_hold = False
                self._sync_world()
                if self.world is not None:
                    self.world.release_at()
            elif c.kind == "gripper_close":
                s.gripper_open_pct = 0.0
            elif c.kind == "grasp" and c.grasp is not None:
                state, box, hit = c.grasp
                if state == MANIP.MANIP_STATE_GRASP_SUCCEEDED and box is not None and hit is not None:
                    p = self._odom_t_body().inverse().transform_point(*hit)
                    s.hand, s.stowed, s.gripper_open_pct, s.holding = (p[0], p[1], p[2], 0.0), False, 0.0, True
                    self._sync_world()
                    if c.kind == "grasp" and c.fail_status == PHANTOM:  # reported held; the object stays put
                        s.phantom_hold = True
                    elif self.world is not None:
                        self.world.grasp_at(box)
        self._sync_world()

    def _feedback(self, c: _Command, fb: Any) -> None:
        self._advance()
        if c.kind in ("stow", "carry", "arm_pose"):
            sync = fb.synchronized_feedback.arm_command_feedback
        elif c.kind in ("gripper_open", "gripper_close"):
            sync = fb.synchronized_feedback.gripper_command_feedback
        else:
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
        elif c.kind in ("stow", "carry"):
            named = arm_command_pb2.NamedArmPositionsCommand.Feedback
            sync.named_arm_position_feedback.status = named.STATUS_COMPLETE if done else named.STATUS_IN_PROGRESS
        elif c.kind == "arm_pose":
            cart = arm_command_pb2.ArmCartesianCommand.Feedback
            sync.arm_cartesian_feedback.status = (cart.STATUS_TRAJECTORY_COMPLETE if done
                                                  else cart.STATUS_IN_PROGRESS)
        elif c.kind in ("gripper_open", "gripper_close"):
            claw = gripper_command_pb2.ClawGripperCommand.Feedback
            if not done:
                sync.claw_gripper_feedback.status = claw.STATUS_IN_PROGRESS
            elif c.kind == "gripper_close" and self._holding():
                sync.claw_gripper_feedback.status = claw.STATUS_APPLYING_FORCE
            else:
                sync.claw_gripper_feedback.status = claw.STATUS_AT_GOAL

    def _trajectory(self, c: _Command, mobility: Any) -> None:
        """An SE2 trajectory command: to its last point, in odom or the body frame (flat_body, body)."""
        req = mobility.se2_trajectory_request
        if not req.trajectory.points:
            return
        goal = req.trajectory.points[-1].pose
        target: Pose2 = (goal.position.x, goal.position.y, goal.angle)
        if req.se2_frame_name not in (frame_helpers.ODOM_FRAME_NAME, frame_helpers.VISION_FRAME_NAME):
            p = SE2Pose(*self._body_now()) * SE2Pose(*target)
            target = (p.x, p.y, p.angle)
        speed, yaw_rate = WALK_SPEED, WALK_YAW_RATE
        params = mobility_params_of(mobility)
        if params is not None and params.HasField("vel_limit"):
            speed = min(abs(params.vel_limit.max_vel.linear.x), abs(params.vel_limit.max_vel.linear.y)) or speed
            yaw_rate = abs(params.vel_limit.max_vel.angular) or yaw_rate
        self._start_walk(c, target, speed, yaw_rate)
        if self.time_scale is None:
            c.duration_s = self.motion_duration_s

    def _arm_pose(self, c: _Command, cart: Any) -> None:
        """An arm cartesian command: the hand goes to its last point (root frame body / flat_body / odom)."""
        points = cart.pose_trajectory_in_task.points
        if not points:
            return
        last = points[-1]
        pose = SE3Pose.from_proto(last.pose)
        if cart.root_frame_name in (frame_helpers.ODOM_FRAME_NAME, frame_helpers.VISION_FRAME_NAME):
            pose = self._odom_t_body().inverse() * pose
        c.arm_target = (pose.x, pose.y, pose.z, pose.rot.to_pitch())
        c.duration_s = self._duration(last.time_since_reference.ToNanoseconds() / 1e9)

    def _start_walk(self, c: _Command, goal: Pose2, speed: float, yaw_rate: float) -> None:
        """Make `c` move the body from where it is now to `goal` (odom) in a straight line."""
        start = self._body_now()
        dyaw = math.atan2(math.sin(goal[2] - start[2]), math.cos(goal[2] - start[2]))
        dist = math.dist(start[:2], goal[:2])
        if c.kind != "velocity":
            c.duration_s = self._duration(dist / speed + abs(dyaw) / yaw_rate)
        full = c.duration_s

        def path(t: float) -> Pose2:
            f = 1.0 if full <= 0.0 else min(1.0, max(0.0, t / full))
            return (start[0] + f * (goal[0] - start[0]), start[1] + f * (goal[1] - start[1]),
                    math.atan2(math.sin(start[2] + f * dyaw), math.cos(start[2] + f * dyaw)))

        c.path = path

    def _start_velocity(self, c: _Command, vx: float, vy: float, w: float) -> None:
        """Make `c` move the body with the body-frame twist (vx, vy m/s, w rad/s) for its duration."""
        x0, y0, th0 = self._body_now()

        def path(t: float) -> Pose2:
            th = th0 + w * t
            if abs(w) < 1e-9:
                return (x0 + (vx * math.cos(th0) - vy * math.sin(th0)) * t,
                        y0 + (vx * math.sin(th0) + vy * math.cos(th0)) * t, th0)
            return (x0 + (vx * (math.sin(th) - math.sin(th0)) + vy * (math.cos(th) - math.cos(th0))) / w,
                    y0 + (-vx * (math.cos(th) - math.cos(th0)) + vy * (math.sin(th) - math.sin(th0))) / w,
                    math.atan2(math.sin(th), math.cos(th)))

        c.path = path

    def _plan_grasp(self, request: Any) -> tuple[int, str | None, tuple[float, float, float] | None]:
        """(final ManipulationFeedbackState, box name, hit point in odom) of a grasp request."""
        if not request.HasField("pick_object_in_image") or self.world is None:
            return MANIP.MANIP_STATE_GRASP_FAILED_TO_RAYCAST_INTO_MAP, None, None
        pick = request.pick_object_in_image
        try:
            odom_t_cam = frame_helpers.get_a_tform_b(pick.transforms_snapshot_for_camera, frame_helpers.ODOM_FRAME_NAME,
                                                     pick.frame_name_image_sensor)
        except Exception:  # noqa: BLE001 - a bad frame tree: nothing to cast
            odom_t_cam = None
        k = pick.camera_model.intrinsics
        if odom_t_cam is None or k.focal_length.x <= 0 or k.focal_length.y <= 0:
            return MANIP.MANIP_STATE_GRASP_FAILED_TO_RAYCAST_INTO_MAP, None, None
        m = odom_t_cam.to_matrix()
        d_cam = np.array([(pick.pixel_xy.x - k.principal_point.x) / k.focal_length.x,
                          (pick.pixel_xy.y - k.principal_point.y) / k.focal_length.y, 1.0])
        boxes = self.world.boxes()
        t, which = self.world.cast(m[:3, 3][None, :], (m[:3, :3] @ d_cam)[None, :], boxes)
        if not np.isfinite(t[0]):
            return MANIP.MANIP_STATE_GRASP_FAILED_TO_RAYCAST_INTO_MAP, None, None
        hit = m[:3, 3] + t[0] * (m[:3, :3] @ d_cam)
        point = (float(hit[0]), float(hit[1]), float(hit[2]))
        body = self._odom_t_body()
        box = boxes[int(which[0])] if which[0] >= 0 else None
        if box is None or not box.graspable or self._holding() or \
                math.dist(point, (body.x, body.y, body.z)) > GRASP_REACH:
            return MANIP.MANIP_STATE_GRASP_PLANNING_NO_SOLUTION, None, point
        return MANIP.MANIP_STATE_GRASP_SUCCEEDED, box.name, point


def _kind(command: Any) -> str:
    if command.HasField("synchronized_command"):
        sync = command.synchronized_command
        if sync.HasField("mobility_command"):
            which = sync.mobility_command.WhichOneof("command")
            return {"stand_request": "stand", "sit_request": "sit", "se2_velocity_request": "velocity",
                    "se2_trajectory_request": "trajectory", "stop_request": "stop"}.get(which or "", "other")
        if sync.HasField("arm_command"):
            arm = sync.arm_command
            which = arm.WhichOneof("command")
            if which == "named_arm_position_command":
                named = arm_command_pb2.NamedArmPositionsCommand
                return {named.POSITIONS_STOW: "stow", named.POSITIONS_CARRY: "carry"}.get(
                    arm.named_arm_position_command.position, "other")
            return "arm_pose" if which == "arm_cartesian_command" else "other"
        if sync.HasField("gripper_command"):
            points = sync.gripper_command.claw_gripper_command.trajectory.points
            return "gripper_open" if points and points[-1].point < -0.05 else "gripper_close"  # 0 = closed, -pi/2 open
        return "other"
    if command.HasField("full_body_command"):
        return "stop" if command.full_body_command.HasField("stop_request") else "other"
    return "other"


def mobility_params(request: Any) -> Any:
    """The spot.MobilityParams packed into a RobotCommandRequest, or None."""
    return mobility_params_of(request.command.synchronized_command.mobility_command)


def mobility_params_of(mob: Any) -> Any:
    """The spot.MobilityParams packed into a MobilityCommand.Request, or None."""
    if not mob.HasField("params"):
        return None
    params = spot_command_pb2.MobilityParams()
    mob.params.Unpack(params)
    return params


class _Servicer:
    def __init__(self, spot: FakeSpot) -> None:
        self.spot = spot

    @contextmanager
    def _call(self, name: str, request: Any, context: Any, response: Any, advance: bool = False) -> Iterator[Any]:
        """One RPC: record it (triggers, silence; FakeSpot._enter), then, under the lock, advance the motions if
        asked and fill the response header; the handler fills the rest of `response`."""
        self.spot._enter(name, request, context)
        with self.spot._lock:
            if advance:
                self.spot._advance()
            self.spot._header(response.header, request)
            yield response


class _RobotId(_Servicer, robot_id_service_pb2_grpc.RobotIdServiceServicer):  # type: ignore[misc]
    def GetRobotId(self, request: Any, context: Any) -> Any:  # noqa: N802 (gRPC method name)
        with self._call("GetRobotId", request, context, robot_id_pb2.RobotIdResponse()) as r:
            r.robot_id.serial_number = self.spot.serial
            r.robot_id.species = "spot"
            r.robot_id.nickname = "fake-spot"
            r.robot_id.software_release.version.major_version = 5
            r.robot_id.software_release.version.minor_version = 2
        return r


class _Auth(_Servicer, auth_service_pb2_grpc.AuthServiceServicer):  # type: ignore[misc]
    def GetAuthToken(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self._call("GetAuthToken", request, context, auth_pb2.GetAuthTokenResponse()) as r:
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
        with self._call("ListServiceEntries", request, context, directory_pb2.ListServiceEntriesResponse()) as r:
            r.service_entries.extend(self._entry(n, t) for n, t in SERVICES)
        return r

    def GetServiceEntry(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self._call("GetServiceEntry", request, context, directory_pb2.GetServiceEntryResponse()) as r:
            for n, t in SERVICES:
                if n == request.service_name:
                    r.status = directory_pb2.GetServiceEntryResponse.STATUS_OK
                    r.service_entry.CopyFrom(self._entry(n, t))
                    return r
            r.status = directory_pb2.GetServiceEntryResponse.STATUS_NONEXISTENT_SERVICE
        return r


class _TimeSync(_Servicer, time_sync_service_pb2_grpc.TimeSyncServiceServicer):  # type: ignore[misc]
    def TimeSyncUpdate(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self._call("TimeSyncUpdate", request, context, time_sync_pb2.TimeSyncUpdateResponse()) as r:
            r.clock_identifier = request.clock_identifier or "fake-spot-clock"
            r.state.status = time_sync_pb2.TimeSyncState.STATUS_OK  # the skew is known exactly (same host)
            r.state.best_estimate.clock_skew.FromNanoseconds(int(round(self.spot.clock_skew_s * 1e9)))
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
        with self._call("AcquireLease", request, context, lease_pb2.AcquireLeaseResponse()) as r:
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
        with self._call("TakeLease", request, context, lease_pb2.TakeLeaseResponse()) as r:
            if request.resource != BODY:
                r.status = lease_pb2.TakeLeaseResponse.STATUS_INVALID_RESOURCE
            else:
                r.status = lease_pb2.TakeLeaseResponse.STATUS_OK
                self._grant(request, r)
        return r

    def ReturnLease(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self._call("ReturnLease", request, context, lease_pb2.ReturnLeaseResponse()) as r:
            result = lease_pb2.LeaseUseResult()
            if self.spot._check_lease(request.lease, result):
                self.spot._s.returned.append(self.spot._s.lease_sequence)
                self.spot._s.lease_owner = ""
                r.status = lease_pb2.ReturnLeaseResponse.STATUS_OK
            else:
                r.status = lease_pb2.ReturnLeaseResponse.STATUS_NOT_ACTIVE_LEASE
        return r

    def RetainLease(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self._call("RetainLease", request, context, lease_pb2.RetainLeaseResponse()) as r:
            self.spot._check_lease(request.lease, r.lease_use_result)
        return r

    def ListLeases(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self._call("ListLeases", request, context, lease_pb2.ListLeasesResponse()) as r:
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
        with self._call("GetEstopConfig", request, context, estop_pb2.GetEstopConfigResponse()) as r:
            r.active_config.CopyFrom(self._config())
        return r

    def SetEstopConfig(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self._call("SetEstopConfig", request, context, estop_pb2.SetEstopConfigResponse()) as r:
            s = self.spot._s
            if request.target_config_id != s.estop_config_id:
                r.status = estop_pb2.SetEstopConfigResponse.STATUS_INVALID_ID
            elif s.motors_on:
                r.status = estop_pb2.SetEstopConfigResponse.STATUS_MOTORS_ON
            elif not any(ep.role == REQUIRED_ESTOP_ROLE for ep in request.config.endpoints):
                r.status = estop_pb2.SetEstopConfigResponse.STATUS_UNKNOWN
                r.header.error.message = f"a configuration needs an endpoint of role {REQUIRED_ESTOP_ROLE}"
            else:
                s.estop_config_id = f"config-{next(self.spot._ids)}"
                # Endpoints listed by the unique id of a current one keep its registration; the others are
                # slots that hold the motors until registered.
                old, s.endpoints = s.endpoints, {}
                for ep in request.config.endpoints:
                    kept = old.get(ep.unique_id) if ep.unique_id else None
                    if kept is not None:
                        s.endpoints[kept.unique_id] = kept
                        continue
                    uid = f"endpoint-{next(self.spot._ids)}"
                    s.endpoints[uid] = _Endpoint(uid, ep.name, ep.role, ep.timeout.ToNanoseconds() / 1e9)
                r.status = estop_pb2.SetEstopConfigResponse.STATUS_SUCCESS
            r.active_config.CopyFrom(self._config())
        return r

    def RegisterEstopEndpoint(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self._call("RegisterEstopEndpoint", request, context, estop_pb2.RegisterEstopEndpointResponse()) as r:
            s = self.spot._s
            r.request.CopyFrom(request)
            if request.target_config_id != s.estop_config_id:
                r.status = estop_pb2.RegisterEstopEndpointResponse.STATUS_CONFIG_MISMATCH
                return r
            target = request.target_endpoint
            slot = (s.endpoints.get(target.unique_id) if target.unique_id else
                    next((e for e in s.endpoints.values() if e.role == target.role), None))
            if slot is None:
                r.status = estop_pb2.RegisterEstopEndpointResponse.STATUS_ENDPOINT_MISMATCH
                return r
            new = request.new_endpoint
            slot.name = new.name
            slot.simulated = False  # whoever registers there now checks in
            slot.timeout_s = new.timeout.ToNanoseconds() / 1e9
            slot.level = estop_pb2.ESTOP_LEVEL_CUT
            slot.last_check_in = time.monotonic()
            r.new_endpoint.CopyFrom(new)
            r.new_endpoint.unique_id = slot.unique_id
            r.status = estop_pb2.RegisterEstopEndpointResponse.STATUS_SUCCESS
        return r

    def DeregisterEstopEndpoint(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self._call("DeregisterEstopEndpoint", request, context, estop_pb2.DeregisterEstopEndpointResponse()) as r:
            s = self.spot._s
            r.request.CopyFrom(request)
            if s.endpoints.pop(request.target_endpoint.unique_id, None) is None:
                r.status = estop_pb2.DeregisterEstopEndpointResponse.STATUS_ENDPOINT_MISMATCH
            else:
                r.status = estop_pb2.DeregisterEstopEndpointResponse.STATUS_SUCCESS
            self.spot._update_estop()
        return r

    def EstopCheckIn(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self._call("EstopCheckIn", request, context, estop_pb2.EstopCheckInResponse()) as r:
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
        with self._call("GetEstopSystemStatus", request, context, estop_pb2.GetEstopSystemStatusResponse()) as r:
            r.status.stop_level = self.spot._stop_level()
            for e in self.spot._s.endpoints.values():
                ews = r.status.endpoints.add(stop_level=e.level)
                ews.endpoint.unique_id, ews.endpoint.name, ews.endpoint.role = e.unique_id, e.name, e.role
        return r


class _Power(_Servicer, power_service_pb2_grpc.PowerServiceServicer):  # type: ignore[misc]
    def PowerCommand(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self._call("PowerCommand", request, context, power_pb2.PowerCommandResponse()) as r:
            s = self.spot._s
            r.power_command_id = next(self.spot._ids)
            if not self.spot._check_lease(request.lease, r.lease_use_result):
                r.status = power_pb2.STATUS_UNKNOWN
                return r
            if request.request == power_pb2.PowerCommandRequest.REQUEST_ON_MOTORS:
                if self.spot._estopped():
                    r.status = power_pb2.STATUS_ESTOPPED
                    return r
                if not s.motors_on:
                    self.spot._event("motors on")
                s.motors_on = True
            elif request.request == power_pb2.PowerCommandRequest.REQUEST_OFF_MOTORS:
                self.spot._cut_motors(FEEDBACK.STATUS_ROBOT_FROZEN)
            r.status = power_pb2.STATUS_SUCCESS
        return r

    def PowerCommandFeedback(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self._call("PowerCommandFeedback", request, context, power_pb2.PowerCommandFeedbackResponse()) as r:
            r.status = power_pb2.STATUS_SUCCESS
        return r


class _RobotState(_Servicer, robot_state_service_pb2_grpc.RobotStateServiceServicer):  # type: ignore[misc]
    def GetRobotState(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self._call("GetRobotState", request, context, robot_state_pb2.RobotStateResponse(), advance=True) as r:
            spot, s = self.spot, self.spot._s
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
            st.behavior_state.state = (robot_state_pb2.BehaviorState.STATE_TRANSITION if s.settle_start is not None
                                       else robot_state_pb2.BehaviorState.STATE_STANDING if s.standing
                                       else robot_state_pb2.BehaviorState.STATE_NOT_READY)
            spot._stamp_robot_now(st.kinematic_state.acquisition_timestamp)
            spot._snapshot(st.kinematic_state.transforms_snapshot)
            m = st.manipulator_state
            m.gripper_open_percentage = s.gripper_open_pct
            m.is_gripper_holding_item = spot._holding()
            m.stow_state = (robot_state_pb2.ManipulatorState.STOWSTATE_STOWED if s.stowed
                            else robot_state_pb2.ManipulatorState.STOWSTATE_DEPLOYED)
        return r


class _RobotCommand(_Servicer, robot_command_service_pb2_grpc.RobotCommandServiceServicer):  # type: ignore[misc]
    def RobotCommand(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self._call("RobotCommand", request, context, robot_command_pb2.RobotCommandResponse(), advance=True) as r:
            spot, s = self.spot, self.spot._s
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
            sync = request.command.synchronized_command
            if kind == "velocity":
                end = sync.mobility_command.se2_velocity_request.end_time
                # end_time is robot time
                duration = max(0.0, end.ToNanoseconds() / 1e9 - spot.robot_time_s())
            elif kind == "stop":
                duration = 0.0
            elif kind in ("stow", "carry"):
                duration = spot._duration(NAMED_ARM_S)
            elif kind in ("gripper_open", "gripper_close"):
                duration = spot._duration(GRIPPER_S)
            spot._end_current(FEEDBACK.STATUS_COMMAND_OVERRIDDEN)
            cid = next(spot._ids)
            cmd = _Command(cid, kind, time.monotonic(), duration, request=request)
            if kind == "trajectory":
                spot._trajectory(cmd, sync.mobility_command)
            elif kind == "velocity":
                v = sync.mobility_command.se2_velocity_request.velocity
                spot._start_velocity(cmd, v.linear.x, v.linear.y, v.angular)
            elif kind == "arm_pose":
                spot._arm_pose(cmd, sync.arm_command.arm_cartesian_command)
            if spot._fail_next is not None:
                cmd.fail_status, spot._fail_next = spot._fail_next, None
                s.behavior_faults.append(robot_state_pb2.BehaviorFault.CAUSE_COMMAND_FAILURE)
                if cmd.path is not None:  # a failed walk stops half-way
                    cmd.duration_s /= 2.0
            s.commands[cid] = cmd
            s.current = cid
            if cmd.path is not None:
                s.motion = cid
            r.status = robot_command_pb2.RobotCommandResponse.STATUS_OK
            r.robot_command_id = cid
        return r

    def RobotCommandFeedback(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self._call("RobotCommandFeedback", request, context,
                        robot_command_pb2.RobotCommandFeedbackResponse()) as r:
            cmd = self.spot._s.commands.get(request.robot_command_id)
            if cmd is None:
                r.status = robot_command_pb2.RobotCommandFeedbackResponse.STATUS_UNKNOWN
                r.message = "unknown command id"
                r.feedback.synchronized_feedback.mobility_command_feedback.status = FEEDBACK.STATUS_UNKNOWN
                return r
            self.spot._feedback(cmd, r.feedback)
        return r

    def ClearBehaviorFault(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self._call("ClearBehaviorFault", request, context, robot_command_pb2.ClearBehaviorFaultResponse()) as r:
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


class _Image(_Servicer, image_service_pb2_grpc.ImageServiceServicer):  # type: ignore[misc]
    def _source(self, name: str) -> Any:
        w, h = self.spot.image_size
        f = self.spot.focal_length_px
        src = image_pb2.ImageSource(name=name, cols=w, rows=h)
        src.pinhole.intrinsics.focal_length.x = src.pinhole.intrinsics.focal_length.y = f
        src.pinhole.intrinsics.principal_point.x, src.pinhole.intrinsics.principal_point.y = w / 2.0, h / 2.0
        if name == DEPTH_SOURCE:
            src.depth_scale = 1000.0
            src.image_type = image_pb2.ImageSource.IMAGE_TYPE_DEPTH
            src.pixel_formats.append(image_pb2.Image.PIXEL_FORMAT_DEPTH_U16)
            src.image_formats.append(image_pb2.Image.FORMAT_RAW)
        else:
            src.image_type = image_pb2.ImageSource.IMAGE_TYPE_VISUAL
            src.pixel_formats.append(image_pb2.Image.PIXEL_FORMAT_RGB_U8)
            src.image_formats.extend([image_pb2.Image.FORMAT_JPEG, image_pb2.Image.FORMAT_RAW])
        return src

    def ListImageSources(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self._call("ListImageSources", request, context, image_pb2.ListImageSourcesResponse()) as r:
            if self.spot.world is not None:
                r.image_sources.extend([self._source(COLOR_SOURCE), self._source(DEPTH_SOURCE)])
        return r

    def GetImage(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.spot._enter("GetImage", request, context)
        r = image_pb2.GetImageResponse()
        spot = self.spot
        with spot._lock:
            spot._advance()
            spot._header(r.header, request)
            snapshot = geometry_pb2.FrameTreeSnapshot()
            spot._snapshot(snapshot)
            odom_t_cam = spot._odom_t_body() * spot._body_t_hand() * HAND_T_SENSOR
        world = spot.world
        rendered: tuple[Any, Any] | None = None
        for req in request.image_requests:
            out = r.image_responses.add()
            name = req.image_source_name
            if world is None or name not in (COLOR_SOURCE, DEPTH_SOURCE):
                out.status = image_pb2.ImageResponse.STATUS_UNKNOWN_CAMERA
                continue
            out.source.CopyFrom(self._source(name))
            fmt = image_pb2.Image
            wanted = req.pixel_format
            if name == DEPTH_SOURCE and wanted not in (fmt.PIXEL_FORMAT_UNKNOWN, fmt.PIXEL_FORMAT_DEPTH_U16) or \
                    name == COLOR_SOURCE and wanted not in (fmt.PIXEL_FORMAT_UNKNOWN, fmt.PIXEL_FORMAT_RGB_U8):
                out.status = image_pb2.ImageResponse.STATUS_UNSUPPORTED_PIXEL_FORMAT_REQUESTED
                continue
            if name == DEPTH_SOURCE and req.image_format == fmt.FORMAT_JPEG:
                out.status = image_pb2.ImageResponse.STATUS_UNSUPPORTED_IMAGE_FORMAT_REQUESTED
                continue
            if rendered is None:
                w, h = spot.image_size
                f = spot.focal_length_px
                rendered = world.render(odom_t_cam.to_matrix(), w, h, f, f, w / 2.0, h / 2.0)
            rgb, depth = rendered
            shot = out.shot
            spot._stamp_robot_now(shot.acquisition_time)  # robot clock
            shot.transforms_snapshot.CopyFrom(snapshot)
            shot.frame_name_image_sensor = SENSOR_FRAME
            img = shot.image
            img.rows, img.cols = rgb.shape[0], rgb.shape[1]
            if name == DEPTH_SOURCE:
                img.format, img.pixel_format = fmt.FORMAT_RAW, fmt.PIXEL_FORMAT_DEPTH_U16
                img.data = np.clip(np.round(depth * 1000.0), 0, 65535).astype("<u2").tobytes()
            elif req.image_format == fmt.FORMAT_RAW and spot.raw_color:
                img.format, img.pixel_format = fmt.FORMAT_RAW, fmt.PIXEL_FORMAT_RGB_U8
                img.data = rgb.tobytes()
            else:  # the robot's default: JPEG
                import io

                from PIL import Image as PilImage

                buf = io.BytesIO()
                PilImage.fromarray(rgb).save(buf, format="JPEG", quality=int(min(req.quality_percent or 75.0, 95.0)))
                img.format, img.pixel_format = fmt.FORMAT_JPEG, fmt.PIXEL_FORMAT_RGB_U8
                img.data = buf.getvalue()
            out.status = image_pb2.ImageResponse.STATUS_OK
        return r


class _Manipulation(_Servicer, manipulation_api_service_pb2_grpc.ManipulationApiServiceServicer):  # type: ignore[misc]
    def ManipulationApi(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self._call("ManipulationApi", request, context, MANIP.ManipulationApiResponse(), advance=True) as r:
            spot = self.spot
            if not spot._check_lease(request.lease, r.lease_use_result):
                return r
            plan = spot._plan_grasp(request)
            if spot._fail_grasp is not None:
                plan, spot._fail_grasp = (spot._fail_grasp, None, None), None
            phantom = spot._phantom_grasp and plan[0] == MANIP.MANIP_STATE_GRASP_SUCCEEDED
            spot._phantom_grasp = spot._phantom_grasp and not phantom
            if not spot._s.motors_on:
                plan = (MANIP.MANIP_STATE_GRASP_FAILED, None, None)
            spot._end_current(FEEDBACK.STATUS_COMMAND_OVERRIDDEN)
            cid = next(spot._ids)
            cmd = _Command(cid, "grasp", time.monotonic(), spot._duration(GRASP_S), request=request, grasp=plan,
                           fail_status=PHANTOM if phantom else None)
            spot._s.commands[cid] = cmd
            spot._s.current = cid
            r.manipulation_cmd_id = cid
        return r

    def ManipulationApiFeedback(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self._call("ManipulationApiFeedback", request, context,
                        MANIP.ManipulationApiFeedbackResponse(), advance=True) as r:
            spot = self.spot
            r.manipulation_cmd_id = request.manipulation_cmd_id
            cmd = spot._s.commands.get(request.manipulation_cmd_id)
            if cmd is None or cmd.grasp is None:
                r.current_state = MANIP.MANIP_STATE_UNKNOWN
            elif cmd.ended_status is not None:  # overridden (lease, stop) or frozen (e-stop)
                r.current_state = MANIP.MANIP_STATE_GRASP_FAILED
            elif spot._finished(cmd):
                r.current_state = cmd.grasp[0]
            elif time.monotonic() - cmd.start < cmd.duration_s / 2:
                r.current_state = MANIP.MANIP_STATE_MOVING_TO_GRASP
            else:
                r.current_state = MANIP.MANIP_STATE_GRASPING_OBJECT
        return r


class _GraphNav(_Servicer, graph_nav_service_pb2_grpc.GraphNavServiceServicer):  # type: ignore[misc]
    def GetLocalizationState(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self._call("GetLocalizationState", request, context,
                        graph_nav_pb2.GetLocalizationStateResponse(), advance=True) as r:
            spot = self.spot
            if spot._s.localized and spot.waypoints:
                body = spot._body_now()
                wid = nearest(spot.waypoints, body)
                loc = r.localization
                loc.waypoint_id = wid
                wp = spot.waypoints[wid]
                wp3 = SE3Pose(wp[0], wp[1], BODY_HEIGHT, Quat.from_yaw(wp[2]))
                loc.waypoint_tform_body.CopyFrom((wp3.inverse() * spot._odom_t_body()).to_proto())
                spot._stamp_robot_now(loc.timestamp)
        return r

    def NavigateTo(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self._call("NavigateTo", request, context, graph_nav_pb2.NavigateToResponse(), advance=True) as r:
            spot = self.spot
            s = spot._s
            for lease in request.leases:
                if not spot._check_lease(lease, r.lease_use_results.add()):
                    return r
            if not s.localized:
                r.status = graph_nav_pb2.NavigateToResponse.STATUS_NOT_LOCALIZED_TO_MAP
                return r
            goal = spot.waypoints.get(request.destination_waypoint_id)
            if goal is None:
                r.status = graph_nav_pb2.NavigateToResponse.STATUS_UNKNOWN_WAYPOINT
                return r
            end_s = request.end_time.ToNanoseconds() / 1e9  # robot clock
            if end_s and end_s < spot.robot_time_s():
                r.status = graph_nav_pb2.NavigateToResponse.STATUS_EXPIRED
                return r
            if not s.motors_on or not s.standing or s.behavior_faults:
                r.status = graph_nav_pb2.NavigateToResponse.STATUS_ROBOT_IMPAIRED
                return r
            spot._end_current(FEEDBACK.STATUS_COMMAND_OVERRIDDEN)
            cid = next(spot._ids)
            cmd = _Command(cid, "navigate", time.monotonic(), 0.0, request=request, end_time_s=end_s or None)
            spot._start_walk(cmd, goal, NAV_SPEED, NAV_YAW_RATE)
            if spot.time_scale is None:
                cmd.duration_s = spot.motion_duration_s
            if spot._fail_nav is not None:
                (cmd.fail_status, fraction), spot._fail_nav = spot._fail_nav, None
                cmd.duration_s *= fraction
            s.commands[cid] = cmd
            s.current = s.motion = cid
            r.status = graph_nav_pb2.NavigateToResponse.STATUS_OK
            r.command_id = cid
        return r

    def NavigationFeedback(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self._call("NavigationFeedback", request, context,
                        graph_nav_pb2.NavigationFeedbackResponse(), advance=True) as r:
            spot = self.spot
            r.command_id = request.command_id
            cmd = spot._s.commands.get(request.command_id)
            if cmd is None or cmd.kind != "navigate":
                r.status = NAV.STATUS_UNKNOWN
            elif cmd.ended_status is not None:
                r.status = (NAV.STATUS_ROBOT_IMPAIRED if cmd.ended_status == FEEDBACK.STATUS_ROBOT_FROZEN
                            else NAV.STATUS_COMMAND_OVERRIDDEN)
            elif spot._finished(cmd):
                r.status = cmd.fail_status if cmd.fail_status is not None else NAV.STATUS_REACHED_GOAL
            elif cmd.end_time_s is not None and spot.robot_time_s() > cmd.end_time_s:
                r.status = NAV.STATUS_COMMAND_TIMED_OUT
            else:
                r.status = NAV.STATUS_FOLLOWING_ROUTE
        return r
