"""The Spot connection layer on the Boston Dynamics SDK (bosdyn-client), ROS-free, in the spirit of
spot_wrapper: one small class, `SpotRobot`, that owns the SDK objects and hides their threads.

What it does, in order, on `connect()`:
1. TLS channel to `hostname:port` (the robot's CA: the SDK's bundled one, or `ca_cert_path`);
2. authentication with `BOSDYN_CLIENT_USERNAME` / `BOSDYN_CLIENT_PASSWORD` from the environment only
   (`SpotCredentials.from_env`; the password is never logged, never in a repr or an error message);
3. time sync (robot commands carry robot-clock end times);
4. a software e-stop endpoint of ours, registered *beside* the endpoints of the robot's e-stop configuration
   (the tablet's): a new configuration with the active one's endpoints plus ours (EstopClient.get_config /
   set_config, then register; our own endpoint left from an earlier run is re-registered in place). Only with
   `estop_force_setup` is the configuration replaced by ours alone (`force_simple_setup`, as the SDK
   examples do). `EstopKeepAlive` checks it in; `estop()` asserts the configured `estop_mode` (`settle`:
   SETTLE_THEN_CUT, the robot sits, then power is cut; `cut`: power cut at once, a standing robot drops),
   `estop_cut()`, `estop_settle()` and `estop_release()` a given level, through the keep-alive so that its
   periodic check-ins keep that level. If this process dies, the endpoint times out and the robot settles;
5. the body lease: acquired, or taken when `take_lease` is set, and kept alive by `LeaseKeepAlive`; it is
   returned by `close()`, which every exit path reaches (context manager, failed connect). A lease taken by
   someone else (the tablet) is detected by the keep-alive and by the next command, and reported as a
   `SpotFault` with cause `LEASE_LOST`.
Then `power_on()`, `stand()`, `sit()`, `power_off()`, `move()` (body-frame SE2 velocity for a duration),
`go_to()` (an SE2 trajectory relative to the body), `go_to_odom()` (to a pose in the odometry frame) and
`stop()`; `body_pose()` reads odom_T_body from the kinematic state, `kinematics()` odom_T_body and
body_T_hand with their acquisition time (for a camera mounted on the arm or the body); `status()` reads
the robot state into a `SpotStatus` shaped like the UR5e backend's `ArmStatus` (`ok`, `fault()` ->
`FaultKind`, `describe()`).
GraphNav: `navigate_to_waypoint()` (navigate_to + navigation feedback), `graph_nav_waypoint()`.
Cameras: `get_images()` (ImageClient.get_image, RAW pixels) -> `SpotImage` (pixels, intrinsics, poses).
Arm: `pick_in_image()` (ManipulationApi PickObjectInImage; a failed grasp raises `GraspFailed`, not a
fault), `holding()`, `arm_stow()`, `arm_carry()`, `arm_reach()` (hand to a body-frame point, refused beyond
`max_arm_reach`), `gripper_open()`, `gripper_close()`.

Errors: every SDK failure becomes a `SpotFault` (an `ArmFault`, so the skills layer treats it as a robot
fault) with a `SpotFaultCause`; motions over the configured velocity limits are refused before anything is
sent (`MotionRefused(Refusal.SPEED)`), and so are walk goals farther than `max_go_to_distance` from where
the body stands (`Refusal.DISTANCE`) and velocity commands longer than `max_move_duration`
(`Refusal.DURATION`); a cancelled motion is stopped and raises `MotionInterrupted`.
Every RPC carries a deadline (`rpc_timeout_s`), every blocking command a time limit: a silent or lost
robot gives `SpotFault(CONNECTION_LOST)` within those, never a hang.
"""
from __future__ import annotations

import contextlib
import glob
import io
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import bosdyn.client  # type: ignore[import-untyped, unused-ignore]
from bosdyn.api import (  # type: ignore[import-untyped, unused-ignore]
    arm_command_pb2,
    basic_command_pb2,
    estop_pb2,
    geometry_pb2,
    gripper_command_pb2,
    image_pb2,
    manipulation_api_pb2,
    robot_state_pb2,
)
from bosdyn.api.graph_nav import graph_nav_pb2  # type: ignore[import-untyped, unused-ignore]
from bosdyn.client import exceptions as sdk_errors  # type: ignore[import-untyped, unused-ignore]
from bosdyn.client.auth import AuthClient, InvalidLoginError  # type: ignore[import-untyped, unused-ignore]
from bosdyn.client.directory import DirectoryClient  # type: ignore[import-untyped, unused-ignore]
from bosdyn.client.estop import (  # type: ignore[import-untyped, unused-ignore]
    EstopClient,
    EstopEndpoint,
    EstopKeepAlive,
    MotorsOnError,
)
from bosdyn.client.frame_helpers import (  # type: ignore[import-untyped, unused-ignore]
    BODY_FRAME_NAME,
    GRAV_ALIGNED_BODY_FRAME_NAME,
    HAND_FRAME_NAME,
    ODOM_FRAME_NAME,
    get_a_tform_b,
    get_odom_tform_body,
)
from bosdyn.client.graph_nav import GraphNavClient, GraphNavServiceResponseError  # type: ignore[import-untyped, unused-ignore]
from bosdyn.client.image import ImageClient, build_image_request  # type: ignore[import-untyped, unused-ignore]
from bosdyn.client.lease import (  # type: ignore[import-untyped, unused-ignore]
    LeaseClient,
    LeaseKeepAlive,
    LeaseNotOwnedByWallet,
    NoSuchLease,
    ResourceAlreadyClaimedError,
)
from bosdyn.client.manipulation_api_client import ManipulationApiClient  # type: ignore[import-untyped, unused-ignore]
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

from skills_node.core.arm import ArmFault, FaultKind, MotionInterrupted, MotionRefused, Refusal

USERNAME_ENV = "BOSDYN_CLIENT_USERNAME"
PASSWORD_ENV = "BOSDYN_CLIENT_PASSWORD"

_FEEDBACK = basic_command_pb2.RobotCommandFeedbackStatus
_TRAJ = basic_command_pb2.SE2TrajectoryCommand.Feedback
_STAND = basic_command_pb2.StandCommand.Feedback
_SIT = basic_command_pb2.SitCommand.Feedback
_ESTOPPED = robot_state_pb2.EStopState.STATE_ESTOPPED
_MOTORS_ON = robot_state_pb2.PowerState.STATE_ON
_STANDING_STATES = (robot_state_pb2.BehaviorState.STATE_STANDING, robot_state_pb2.BehaviorState.STATE_STEPPING)
_NAMED_ARM = arm_command_pb2.NamedArmPositionsCommand.Feedback
_CARTESIAN = arm_command_pb2.ArmCartesianCommand.Feedback
_CLAW = gripper_command_pb2.ClawGripperCommand.Feedback
_MANIP = manipulation_api_pb2.ManipulationFeedbackState
_NAV = graph_nav_pb2.NavigationFeedbackResponse
_NAV_FAILURES = {  # navigation feedback status -> what it means
    _NAV.STATUS_NO_ROUTE: "no route to the waypoint",
    _NAV.STATUS_NO_LOCALIZATION: "GraphNav is not localized to the map",
    _NAV.STATUS_NOT_LOCALIZED_TO_ROUTE: "GraphNav is not localized to the route",
    _NAV.STATUS_LOST: "GraphNav is lost (localization failed on the way)",
    _NAV.STATUS_STUCK: "the robot is stuck (blocked path)",
    _NAV.STATUS_ROBOT_IMPAIRED: "the robot is impaired",
    _NAV.STATUS_COMMAND_TIMED_OUT: "the navigation command expired",
    _NAV.STATUS_CONSTRAINT_FAULT: "a route constraint was violated",
    _NAV.STATUS_COMMAND_OVERRIDDEN: "another command overrode the navigation",
    _NAV.STATUS_LEASE_ERROR: "lease error",
    _NAV.STATUS_AREA_CALLBACK_ERROR: "an area callback failed",
}
_GRASP_FAILURES = (_MANIP.MANIP_STATE_GRASP_FAILED, _MANIP.MANIP_STATE_GRASP_PLANNING_NO_SOLUTION,
                   _MANIP.MANIP_STATE_GRASP_FAILED_TO_RAYCAST_INTO_MAP, _MANIP.MANIP_STATE_PLACE_FAILED,
                   _MANIP.MANIP_STATE_PLACE_FAILED_TO_RAYCAST_INTO_MAP)
HAND_COLOR_FRAME = "hand_color_image_sensor"
ESTOP_MODES = ("settle", "cut")  # SpotSettings.estop_mode: SETTLE_THEN_CUT (sit first) | CUT (at once)
ARM_TRAJECTORY_S = 2.0  # s, time of an arm_reach trajectory (at most half its timeout)

Vec3 = tuple[float, float, float]  # m
Quat = tuple[float, float, float, float]  # x, y, z, w (unit)
Pose3 = tuple[Vec3, Quat]


class SpotFaultCause(Enum):
    """Why a Spot operation failed (finer than FaultKind; `kind` below maps it)."""

    CONNECTION_LOST = "connection lost"  # unreachable, silent (deadline), TLS or proxy error
    AUTH = "authentication failed"
    LEASE_LOST = "lease lost"  # taken by another client (tablet), revoked, or already claimed
    ESTOP = "e-stopped"
    NOT_POWERED = "motors off"
    BEHAVIOR_FAULT = "behaviour fault"
    COMMAND_FAILED = "command failed"  # refused, or its feedback reported failure
    NAVIGATION_FAILED = "navigation failed"  # GraphNav: lost, stuck, no route, not localized, impaired
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
    SpotFaultCause.NAVIGATION_FAILED: FaultKind.COMMAND_FAILED,
    SpotFaultCause.TIMEOUT: FaultKind.TIMEOUT,
}


class SpotFault(ArmFault):
    """A Spot failure; `kind` (FaultKind) is what the skills layer reports, `cause` the Spot detail."""

    def __init__(self, cause: SpotFaultCause, reason: str) -> None:
        # ArmFault prefixes the kind ("lease lost: ..."); name the cause only where it says more than that.
        super().__init__(cause.kind, reason if cause.value == cause.kind.value else f"{cause.value}: {reason}")
        self.cause = cause


class GraspFailed(Exception):
    """The grasp did not succeed (ManipulationApi feedback: GRASP_FAILED, planning found no solution, the
    pixel's ray hit nothing...) while the robot is fine: the skill failed, not the robot (not an ArmFault)."""

    def __init__(self, state: str, reason: str = "") -> None:
        super().__init__(f"grasp failed ({state}){': ' + reason if reason else ''}")
        self.state = state  # the ManipulationFeedbackState name, e.g. "MANIP_STATE_GRASP_FAILED"


@dataclass(frozen=True)
class SpotImage:
    """One image from Spot's image service, decoded, with what is needed to use it geometrically."""

    source: str  # e.g. "hand_color_image", "hand_depth_in_hand_color_frame"
    encoding: str  # "rgb8" | "16UC1" (depth, units of 1/depth_scale m)
    width: int  # px
    height: int  # px
    data: bytes  # row-major, no padding
    depth_scale: float  # depth units per m (Spot: 1000 -> mm); 0.0 for colour
    fx: float  # px, pinhole intrinsics
    fy: float
    cx: float
    cy: float
    frame_name: str  # the sensor frame, e.g. "hand_color_image_sensor" (optical: z forward, x right, y down)
    odom_from_sensor: Pose3  # at acquisition, from the response's transforms_snapshot
    odom_from_body: Pose3
    stamp_s: float  # acquisition time, local wall-clock s (robot clock converted by time sync)
    response: Any = field(repr=False, compare=False)  # the raw bosdyn ImageResponse (for ManipulationApi)


@dataclass(frozen=True)
class SpotKinematics:
    """Poses from one robot state's kinematic frame tree, at its acquisition time."""

    odom_from_body: Pose3
    body_from_hand: Pose3 | None  # None: the frame tree has no `hand` (a Spot without an arm)
    stamp_s: float  # acquisition time, local wall-clock s (robot clock converted by time sync)


def ca_cert_problem(path: str) -> str | None:
    """Why `path` (a robot CA certificate: a file or a glob, as bosdyn-client reads it) cannot be used, or
    None ("" = the CA bundled with bosdyn-client). The SDK reports a missing file as an IOError that would
    look like a lost connection; this says what is wrong before connecting."""
    if not path:
        return None
    if not [c for c in glob.glob(os.path.expanduser(path)) if os.path.isfile(c)]:
        return f"no file matches {path!r} (the robot's CA certificate, PEM; \"\" = the one bundled with bosdyn-client)"
    return None


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
    max_arm_reach: float  # m from the body origin: arm_reach targets beyond are refused before sending
    # m from where the body stands now: farther go_to / go_to_odom goals are refused before sending (the
    # robot table's YAML sets it; the default is for callers that build settings in code)
    max_go_to_distance: float = 8.0
    max_move_duration: float = 10.0  # s: longer move() (velocity) commands are refused before sending
    estop_mode: str = "settle"  # estop(): settle (sit, then cut motor power) | cut (cut at once: it drops)
    estop_force_setup: bool = False  # True: replace the robot's e-stop configuration by our endpoint alone

    def __post_init__(self) -> None:
        if not self.hostname:
            raise ValueError("hostname must not be empty")
        if not 0 < self.port < 65536:
            raise ValueError(f"port must be 1..65535, got {self.port}")
        for name in ("rpc_timeout_s", "connect_timeout_s", "command_timeout_s", "feedback_period_s",
                     "lease_check_period_s", "estop_timeout_s", "max_linear_velocity", "max_angular_velocity",
                     "max_arm_reach", "max_go_to_distance", "max_move_duration"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f"{name} must be > 0, got {value}")
        if self.estop_mode not in ESTOP_MODES:
            raise ValueError(f"estop_mode must be one of {' | '.join(ESTOP_MODES)}, got {self.estop_mode!r}")
        problem = ca_cert_problem(self.ca_cert_path)
        if problem:
            raise ValueError(f"ca_cert_path: {problem}")


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
    holding: bool = False  # the gripper holds something (manipulator_state.is_gripper_holding_item)
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
        if self.holding:
            words.append("holding an item")
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
            RobotStateClient, RobotCommandClient, ImageClient, ManipulationApiClient, GraphNavClient)


def _mobility_feedback(fb: Any) -> Any:
    return fb.synchronized_feedback.mobility_command_feedback


def _arm_feedback(fb: Any) -> Any:
    return fb.synchronized_feedback.arm_command_feedback


def _gripper_feedback(fb: Any) -> Any:
    """The gripper part; its claw feedback has the goal status."""
    return fb.synchronized_feedback.gripper_command_feedback


def _pose3(pose: Any) -> Pose3:
    """A bosdyn math_helpers.SE3Pose as ((x, y, z) m, (qx, qy, qz, qw))."""
    return ((float(pose.x), float(pose.y), float(pose.z)),
            (float(pose.rot.x), float(pose.rot.y), float(pose.rot.z), float(pose.rot.w)))


def _jpeg_to_rgb(data: bytes, what: str) -> bytes:
    """Decode a JPEG image to RGB bytes (Pillow)."""
    try:
        from PIL import Image as PilImage
    except ImportError as e:
        raise SpotFault(SpotFaultCause.COMMAND_FAILED, f"{what} is a JPEG and Pillow is not installed") from e
    with PilImage.open(io.BytesIO(data)) as im:
        return im.convert("RGB").tobytes()


def _describe_sdk_error(e: BaseException) -> str:
    """The SDK error's class and message (SDK messages never contain the password)."""
    text = str(e).strip()
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


class SpotRobot:
    """One Spot, through bosdyn-client. Thread-safe for one motion at a time plus status() from others.

    `connect()` then power_on / stand / move / go_to / sit / power_off; `close()` (or leaving the `with`
    block) stops motion, returns the lease and stops the keep-alives, on every exit path.
    Outcomes: methods return on success; raise `SpotFault` (robot fault: lease lost, e-stop, behaviour
    fault, motors off, feedback failure, navigation failure, timeout, connection lost), `MotionRefused`
    (over the velocity limits, beyond the arm's reach, outside the image; nothing sent), `MotionInterrupted`
    (cancelled; a stop was sent) or, from `pick_in_image` only, `GraspFailed` (the robot is fine).
    `status()`, `body_pose()`, `kinematics()`, `holding()`, `graph_nav_waypoint()` and `get_images()` may be
    called from other threads while a motion runs.
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
        self._optional_clients: dict[str, Any] = {}  # service name -> client (image, manipulation, graph nav)
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
        sdk = bosdyn.client.create_standard_sdk(
            c.client_name, cert_resource_glob=os.path.expanduser(c.ca_cert_path) if c.ca_cert_path else None)
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
        # Clients of optional services: created on first use (a robot without an arm or a map still connects).
        lease_client = robot.ensure_client(LeaseClient.default_service_name)
        self._lease_client = lease_client
        # E-stop first: the robot will not power on without a live endpoint.
        estop_client = robot.ensure_client(EstopClient.default_service_name)
        endpoint = EstopEndpoint(estop_client, c.client_name, c.estop_timeout_s)
        if c.estop_force_setup:
            endpoint.force_simple_setup()  # replaces the robot's e-stop configuration with our endpoint
            self._log.warning("e-stop: the robot's configuration replaced by endpoint %s alone (estop_force_setup)",
                              c.client_name)
        else:
            self._register_estop_beside(estop_client, endpoint)
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

    def _register_estop_beside(self, client: Any, endpoint: Any) -> None:
        """Register `endpoint` beside the robot's e-stop endpoints (the tablet's stay). Our endpoint (by name) left
        in the active configuration by an earlier run is re-registered in place (no configuration change, so
        this works with the motors on); otherwise a configuration of the active one's endpoints (unique ids kept)
        plus ours is set (the robot allows that only with the motors off) and ours registered in it. Ours takes
        the role the SDK requires in every configuration (`PDB_rooted`) unless another endpoint already has it;
        then a role of its own (our client name), so that registering by role finds our slot."""
        c = self.cfg
        active = client.get_config()
        mine = [e for e in active.endpoints if e.name == c.client_name]
        if len(mine) == 1:
            endpoint.role = mine[0].role
            endpoint.register(active.unique_id)
            self._log.info("e-stop: endpoint %s re-registered in the robot's configuration %s", c.client_name,
                           active.unique_id)
            return
        kept = [e for e in active.endpoints if e.name != c.client_name]
        if any(e.role == EstopEndpoint.REQUIRED_ROLE for e in kept):
            endpoint.role = c.client_name
        config = estop_pb2.EstopConfig()
        for e in kept:
            config.endpoints.add().CopyFrom(e)
        config.endpoints.add().CopyFrom(endpoint.to_proto())
        try:
            new = client.set_config(config, active.unique_id)
        except MotorsOnError as e:
            raise SpotFault(SpotFaultCause.ESTOP, "the robot's e-stop configuration can only gain our endpoint with "
                            "the motors off: sit Spot and power it off from the tablet, then start again (or set "
                            "spot.estop_force_setup to replace the configuration, also with the motors off)") from e
        endpoint.register(new.unique_id)
        names = ", ".join(f"{e.name or '?'} ({e.role})" for e in kept) or "none"
        self._log.info("e-stop: endpoint %s (%s) registered beside the robot's: %s", c.client_name, endpoint.role,
                       names)

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
        self._optional_clients = {}
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
    # Levels go through the keep-alive: its periodic check-ins assert the level it was last given (a level set
    # on the endpoint alone would be undone by the next check-in, which asserts ESTOP_LEVEL_NONE).
    def estop(self) -> None:
        """The software e-stop as configured (`estop_mode`): settle (sit, then cut) or cut at once."""
        if self.cfg.estop_mode == "cut":
            self.estop_cut()
        else:
            self.estop_settle()

    def estop_cut(self) -> None:
        """Cut motor power at once (the robot falls if standing)."""
        self._estop_level("cut", lambda ka: ka.stop())

    def estop_settle(self) -> None:
        """Sit down, then cut motor power (SETTLE_THEN_CUT)."""
        self._estop_level("settle then cut", lambda ka: ka.settle_then_cut())

    def estop_release(self) -> None:
        """Allow motion again (motors stay off until power_on())."""
        self._estop_level("release", lambda ka: ka.allow())

    def _estop_level(self, what: str, call: Callable[[Any], None]) -> None:
        keepalive = self._estop_keepalive
        if self._robot is None or keepalive is None:
            raise SpotFault(SpotFaultCause.CONNECTION_LOST, f"e-stop {what}: not connected")
        try:
            call(keepalive)
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

    def _check_distance(self, distance: float, what: str) -> None:
        """Refuse (DISTANCE) a walk goal `distance` m from where the body stands now beyond max_go_to_distance."""
        if distance > self.cfg.max_go_to_distance:
            raise MotionRefused(Refusal.DISTANCE, f"{what} is {distance:.2f} m away, farther than the limit "
                                                  f"{self.cfg.max_go_to_distance:g} m")

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
        if duration_s > self.cfg.max_move_duration:
            raise MotionRefused(Refusal.DURATION, f"move for {duration_s:g} s is longer than the limit "
                                                  f"{self.cfg.max_move_duration:g} s")
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
        self._check_distance(math.hypot(x, y), f"go_to({x:.2f}, {y:.2f})")
        self._log.info("go to (%.2f, %.2f) m, %.2f rad in the body frame", x, y, yaw)
        command = RobotCommandBuilder.synchro_se2_trajectory_point_command(
            x, y, yaw, frame_name=GRAV_ALIGNED_BODY_FRAME_NAME, params=self._mobility_params())
        self._run(command, "go to", timeout_s, time.time() + timeout_s,
                  lambda fb: fb.se2_trajectory_feedback.status == _TRAJ.STATUS_AT_GOAL, cancel)

    def go_to_odom(self, x: float, y: float, yaw: float, timeout_s: float,
                   cancel: threading.Event | None = None) -> None:
        """Walk to (x, y) m, heading yaw rad, in the odometry frame `odom` (fixed in the world: after an
        interrupted walk, the same target still means the same place)."""
        if not all(math.isfinite(v) for v in (x, y, yaw, timeout_s)) or timeout_s <= 0.0:
            raise MotionRefused(Refusal.INVALID_TARGET, f"go_to_odom({x}, {y}, {yaw}, timeout {timeout_s}) is invalid")
        here = self.body_pose()  # odometry now (SpotFault if it cannot be read: nothing is sent either)
        self._check_distance(math.hypot(x - here[0], y - here[1]), f"go_to_odom({x:.2f}, {y:.2f})")
        self._log.info("go to (%.2f, %.2f) m, %.2f rad in odom", x, y, yaw)
        command = RobotCommandBuilder.synchro_se2_trajectory_point_command(
            x, y, yaw, frame_name=ODOM_FRAME_NAME, params=self._mobility_params())
        self._run(command, "go to", timeout_s, time.time() + timeout_s,
                  lambda fb: fb.se2_trajectory_feedback.status == _TRAJ.STATUS_AT_GOAL, cancel)

    # -- GraphNav --------------------------------------------------------------------------------
    def navigate_to_waypoint(self, waypoint_id: str, timeout_s: float, cancel: threading.Event | None = None) -> None:
        """Walk to a waypoint of the map loaded on the robot (GraphNav navigate_to, then navigation feedback
        until STATUS_REACHED_GOAL). Lost, stuck, no route, not localized, impaired -> SpotFault
        (NAVIGATION_FAILED unless the lease, an e-stop, a behaviour fault or the motors explain it)."""
        if not waypoint_id or not math.isfinite(timeout_s) or timeout_s <= 0.0:
            raise MotionRefused(Refusal.INVALID_TARGET,
                                f"navigate_to_waypoint({waypoint_id!r}, timeout {timeout_s}) is invalid")
        self._require()
        client = self._client(GraphNavClient, "navigate")
        what = f"navigate to waypoint {waypoint_id}"
        self._log.info("%s", what)
        c = self.cfg
        with self._motion_slot(what):
            try:
                # the robot's own expiry a little after ours: our time limit stops it (TIMEOUT + stop command)
                cid = client.navigate_to(waypoint_id, cmd_duration=timeout_s + c.rpc_timeout_s, timeout=c.rpc_timeout_s)
            except Exception as e:
                raise self._fault_from(e, what) from e

            def poll() -> bool:
                try:
                    fb = client.navigation_feedback(cid, timeout=c.rpc_timeout_s)
                except Exception as e:
                    raise self._fault_from(e, f"{what} feedback") from e
                if fb.status == _NAV.STATUS_REACHED_GOAL:
                    return True
                if fb.status in (_NAV.STATUS_FOLLOWING_ROUTE, _NAV.STATUS_UNKNOWN):
                    return False
                name = _NAV.Status.Name(fb.status)
                raise self._robot_fault(what, name) or SpotFault(
                    SpotFaultCause.NAVIGATION_FAILED, f"{what}: {_NAV_FAILURES.get(fb.status, name)} ({name})")

            self._follow(what, timeout_s, cancel, poll)

    def graph_nav_waypoint(self) -> str:
        """The waypoint GraphNav is localized at ("" when not localized)."""
        self._require()
        client = self._client(GraphNavClient, "graph nav localization")
        try:
            state = client.get_localization_state(timeout=self.cfg.rpc_timeout_s)
        except Exception as e:
            raise self._fault_from(e, "graph nav localization") from e
        return str(state.localization.waypoint_id)

    # -- arm -------------------------------------------------------------------------------------
    def _arm(self, command: Any, what: str, timeout_s: float, cancel: threading.Event | None,
             done: Callable[[Any], bool], gripper: bool = False) -> None:
        if not math.isfinite(timeout_s) or timeout_s <= 0.0:
            raise MotionRefused(Refusal.INVALID_TARGET, f"{what}: timeout {timeout_s} s must be > 0")
        self._log.info("%s", what)
        self._run(command, what, timeout_s, None, done, cancel,
                  feedback=_gripper_feedback if gripper else _arm_feedback)

    def arm_stow(self, timeout_s: float, cancel: threading.Event | None = None) -> None:
        """Fold the arm onto the body."""
        self._arm(RobotCommandBuilder.arm_stow_command(), "arm stow", timeout_s, cancel,
                  lambda fb: fb.named_arm_position_feedback.status == _NAMED_ARM.STATUS_COMPLETE)

    def arm_carry(self, timeout_s: float, cancel: threading.Event | None = None) -> None:
        """Hold the hand in front of the body (the carry pose, for walking with an object)."""
        self._arm(RobotCommandBuilder.arm_carry_command(), "arm carry", timeout_s, cancel,
                  lambda fb: fb.named_arm_position_feedback.status == _NAMED_ARM.STATUS_COMPLETE)

    def arm_reach(self, x: float, y: float, z: float, timeout_s: float,
                  cancel: threading.Event | None = None) -> None:
        """Move the hand to (x, y, z) m in the body frame, gripper pointing forward. Refused
        (MotionRefused INVALID_TARGET, nothing sent) beyond `max_arm_reach` m from the body origin."""
        if not all(math.isfinite(v) for v in (x, y, z)):
            raise MotionRefused(Refusal.INVALID_TARGET, f"arm target ({x}, {y}, {z}) is not finite")
        reach = math.sqrt(x * x + y * y + z * z)
        if reach > self.cfg.max_arm_reach:
            raise MotionRefused(Refusal.INVALID_TARGET, f"arm target ({x:.2f}, {y:.2f}, {z:.2f}) m is {reach:.2f} m "
                                f"from the body, beyond the reach limit {self.cfg.max_arm_reach:.2f} m")
        if not math.isfinite(timeout_s) or timeout_s <= 0.0:
            raise MotionRefused(Refusal.INVALID_TARGET, f"arm reach: timeout {timeout_s} s must be > 0")
        seconds = min(ARM_TRAJECTORY_S, timeout_s / 2.0)
        command = RobotCommandBuilder.arm_pose_command(x, y, z, 1.0, 0.0, 0.0, 0.0, BODY_FRAME_NAME, seconds)
        self._arm(command, f"arm reach to ({x:.2f}, {y:.2f}, {z:.2f}) m", timeout_s, cancel,
                  lambda fb: fb.arm_cartesian_feedback.status == _CARTESIAN.STATUS_TRAJECTORY_COMPLETE)

    def gripper_open(self, timeout_s: float, cancel: threading.Event | None = None) -> None:
        """Open the gripper (lets go of what it holds)."""
        self._arm(RobotCommandBuilder.claw_gripper_open_command(), "gripper open", timeout_s, cancel,
                  lambda fb: fb.claw_gripper_feedback.status == _CLAW.STATUS_AT_GOAL, gripper=True)

    def gripper_close(self, timeout_s: float, cancel: threading.Event | None = None) -> None:
        """Close the gripper (done at the closed position or when squeezing something)."""
        self._arm(RobotCommandBuilder.claw_gripper_close_command(), "gripper close", timeout_s, cancel,
                  lambda fb: fb.claw_gripper_feedback.status in (_CLAW.STATUS_AT_GOAL, _CLAW.STATUS_APPLYING_FORCE),
                  gripper=True)

    def pick_in_image(self, image: SpotImage, pixel: tuple[float, float], timeout_s: float,
                      cancel: threading.Event | None = None) -> None:
        """Grasp what is at `pixel` (u, v px) of `image` (ManipulationApi PickObjectInImage with the image's
        frame tree, sensor frame and camera model), following the feedback until GRASP_SUCCEEDED.
        A failed grasp with the robot fine -> GraspFailed(state); lease, e-stop, faults -> SpotFault."""
        u, v = pixel
        if not (math.isfinite(u) and math.isfinite(v) and 0.0 <= u < image.width and 0.0 <= v < image.height):
            raise MotionRefused(Refusal.INVALID_TARGET, f"pixel ({u}, {v}) is outside the {image.width}x"
                                f"{image.height} image {image.source}")
        if not math.isfinite(timeout_s) or timeout_s <= 0.0:
            raise MotionRefused(Refusal.INVALID_TARGET, f"grasp: timeout {timeout_s} s must be > 0")
        self._require()
        client = self._client(ManipulationApiClient, "grasp")
        shot = image.response.shot
        pick = manipulation_api_pb2.PickObjectInImage(
            pixel_xy=geometry_pb2.Vec2(x=u, y=v), transforms_snapshot_for_camera=shot.transforms_snapshot,
            frame_name_image_sensor=shot.frame_name_image_sensor, camera_model=image.response.source.pinhole)
        request = manipulation_api_pb2.ManipulationApiRequest(pick_object_in_image=pick)
        what = f"grasp at pixel ({u:.0f}, {v:.0f}) of {image.source}"
        self._log.info("%s", what)
        c = self.cfg
        with self._motion_slot(what):
            try:
                cid = client.manipulation_api_command(manipulation_api_request=request,
                                                      timeout=c.rpc_timeout_s).manipulation_cmd_id
            except Exception as e:
                raise self._fault_from(e, what) from e
            fb_request = manipulation_api_pb2.ManipulationApiFeedbackRequest(manipulation_cmd_id=cid)

            def poll() -> bool:
                try:
                    fb = client.manipulation_api_feedback_command(manipulation_api_feedback_request=fb_request,
                                                                  timeout=c.rpc_timeout_s)
                except Exception as e:
                    raise self._fault_from(e, f"{what} feedback") from e
                if fb.current_state == _MANIP.MANIP_STATE_GRASP_SUCCEEDED:
                    return True
                if fb.current_state in _GRASP_FAILURES:
                    name = _MANIP.Name(fb.current_state)
                    fault = self._robot_fault(what, name)
                    if fault is not None:
                        raise fault
                    raise GraspFailed(name)
                return False

            self._follow(what, timeout_s, cancel, poll)

    def holding(self) -> bool:
        """True when the gripper holds something (the robot state's manipulator state)."""
        state = self._robot_state("holding")
        return bool(state.manipulator_state.is_gripper_holding_item)

    # -- cameras ---------------------------------------------------------------------------------
    def get_images(self, sources: Sequence[str]) -> list[SpotImage]:
        """One image per source, taken together (ImageClient.get_image, RAW pixels: RGB for colour sources,
        16-bit depth for sources named *depth*), decoded, with intrinsics and poses at acquisition."""
        if self._robot is None:
            raise SpotFault(SpotFaultCause.CONNECTION_LOST, f"images: not connected to {self.cfg.hostname}")
        client = self._client(ImageClient, "images")
        fmt = image_pb2.Image
        requests = [build_image_request(
            src, quality_percent=100, image_format=fmt.FORMAT_RAW,
            pixel_format=fmt.PIXEL_FORMAT_DEPTH_U16 if "depth" in src else fmt.PIXEL_FORMAT_RGB_U8) for src in sources]
        try:
            responses = client.get_image(requests, timeout=self.cfg.rpc_timeout_s)
        except Exception as e:
            raise self._fault_from(e, f"images {list(sources)}") from e
        return [self._decode_image(r) for r in responses]

    def _decode_image(self, response: Any) -> SpotImage:
        shot, source = response.shot, response.source
        img = shot.image
        rows, cols = int(img.rows), int(img.cols)
        what = f"image {source.name}"
        fmt = image_pb2.Image
        depth_scale = 0.0
        if img.format == fmt.FORMAT_JPEG:
            data, encoding = _jpeg_to_rgb(img.data, what), "rgb8"
        elif img.format == fmt.FORMAT_RAW and img.pixel_format == fmt.PIXEL_FORMAT_RGB_U8:
            data, encoding = bytes(img.data), "rgb8"
        elif img.format == fmt.FORMAT_RAW and img.pixel_format == fmt.PIXEL_FORMAT_GREYSCALE_U8:
            data, encoding = bytes(b for px in img.data for b in (px, px, px)), "rgb8"
        elif img.format == fmt.FORMAT_RAW and img.pixel_format == fmt.PIXEL_FORMAT_DEPTH_U16:
            data, encoding = bytes(img.data), "16UC1"
            depth_scale = float(source.depth_scale) or 1000.0
        else:
            raise SpotFault(SpotFaultCause.COMMAND_FAILED, f"{what}: unsupported format "
                            f"{fmt.Format.Name(img.format)} / {fmt.PixelFormat.Name(img.pixel_format)}")
        expected = rows * cols * (2 if encoding == "16UC1" else 3)
        if len(data) != expected:
            raise SpotFault(SpotFaultCause.COMMAND_FAILED, f"{what}: {len(data)} bytes for {cols}x{rows} {encoding}")
        snapshot = shot.transforms_snapshot
        try:
            sensor = get_a_tform_b(snapshot, ODOM_FRAME_NAME, shot.frame_name_image_sensor)
            body = get_odom_tform_body(snapshot)
        except Exception as e:
            raise SpotFault(SpotFaultCause.COMMAND_FAILED, f"{what}: bad frame tree ({_describe_sdk_error(e)})") from e
        if sensor is None or body is None:
            raise SpotFault(SpotFaultCause.COMMAND_FAILED, f"{what}: no odom -> {shot.frame_name_image_sensor} "
                            "transform in its frame tree")
        stamp = self._robot.time_sync.get_robot_time_converter().local_seconds_from_robot_timestamp(
            shot.acquisition_time)
        k = source.pinhole.intrinsics
        return SpotImage(
            source=str(source.name), encoding=encoding, width=cols, height=rows, data=data, depth_scale=depth_scale,
            fx=float(k.focal_length.x), fy=float(k.focal_length.y), cx=float(k.principal_point.x),
            cy=float(k.principal_point.y), frame_name=str(shot.frame_name_image_sensor),
            odom_from_sensor=_pose3(sensor), odom_from_body=_pose3(body), stamp_s=float(stamp), response=response)

    def _client(self, client_class: Any, what: str) -> Any:
        """The SDK client of an optional service (image, manipulation, graph nav), made on first use."""
        name = client_class.default_service_name
        client = self._optional_clients.get(name)
        if client is None:
            try:
                client = self._robot.ensure_client(name)
            except Exception as e:
                raise SpotFault(SpotFaultCause.COMMAND_FAILED, f"{what}: the robot has no {name} service "
                                f"({_describe_sdk_error(e)})") from e
            self._optional_clients[name] = client
        return client

    # -- pose ------------------------------------------------------------------------------------
    def body_pose(self) -> tuple[float, float, float]:
        """odom_T_body as (x m, y m, yaw rad), from the robot state's kinematic frame tree."""
        state = self._robot_state("body pose")
        try:
            pose = get_odom_tform_body(state.kinematic_state.transforms_snapshot)
        except Exception as e:
            raise SpotFault(SpotFaultCause.COMMAND_FAILED,
                            f"body pose: bad frame tree ({_describe_sdk_error(e)})") from e
        if pose is None:
            raise SpotFault(SpotFaultCause.COMMAND_FAILED, "body pose: no odom -> body transform in the robot state")
        return (float(pose.x), float(pose.y), float(pose.rot.to_yaw()))

    def kinematics(self) -> SpotKinematics:
        """odom_T_body and body_T_hand from the robot state's kinematic frame tree, stamped with its
        acquisition time converted to local time (as SpotImage.stamp_s): the TF of a camera on the arm."""
        state = self._robot_state("kinematics")
        kin = state.kinematic_state
        try:
            body = get_odom_tform_body(kin.transforms_snapshot)
            hand = get_a_tform_b(kin.transforms_snapshot, BODY_FRAME_NAME, HAND_FRAME_NAME)
        except Exception as e:
            raise SpotFault(SpotFaultCause.COMMAND_FAILED,
                            f"kinematics: bad frame tree ({_describe_sdk_error(e)})") from e
        if body is None:
            raise SpotFault(SpotFaultCause.COMMAND_FAILED, "kinematics: no odom -> body transform in the robot state")
        robot = self._robot
        if robot is None:
            raise SpotFault(SpotFaultCause.CONNECTION_LOST, f"kinematics: not connected to {self.cfg.hostname}")
        stamp = robot.time_sync.get_robot_time_converter().local_seconds_from_robot_timestamp(
            kin.acquisition_timestamp)
        return SpotKinematics(_pose3(body), _pose3(hand) if hand is not None else None, float(stamp))

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

    @contextlib.contextmanager
    def _motion_slot(self, what: str) -> Iterator[None]:
        """One motion (walk, arm, grasp, navigation) at a time."""
        if not self._motion.acquire(timeout=self.cfg.rpc_timeout_s):
            raise SpotFault(SpotFaultCause.COMMAND_FAILED, f"{what}: another motion is running")
        try:
            yield
        finally:
            self._motion.release()

    def _follow(self, what: str, timeout_s: float, cancel: threading.Event | None, poll: Callable[[], bool]) -> None:
        """Call `poll()` every feedback period until it returns True (done) or raises (failure); cancel ->
        stop + MotionInterrupted; a lost lease -> SpotFault; past `timeout_s` -> stop + SpotFault(TIMEOUT)."""
        period = self.cfg.feedback_period_s
        deadline = time.monotonic() + timeout_s
        while True:
            if cancel is not None and cancel.wait(period):
                self._stop_quietly()
                raise MotionInterrupted(f"{what} cancelled")
            if cancel is None:
                time.sleep(period)
            if self._lease_lost.is_set():
                raise SpotFault(SpotFaultCause.LEASE_LOST, f"{what}: {self._lease_lost_reason}")
            if poll():
                self._log.info("%s done", what)
                return
            if time.monotonic() > deadline:
                self._stop_quietly()
                raise SpotFault(SpotFaultCause.TIMEOUT, f"{what} did not finish within {timeout_s:.1f} s")

    def _run(self, command: Any, what: str, timeout_s: float, end_time: float | None,
             done: Callable[[Any], bool], cancel: threading.Event | None, done_at_end: bool = False,
             feedback: Callable[[Any], Any] = _mobility_feedback) -> None:
        """Send `command` and follow its feedback (`feedback(RobotCommandFeedback)`: the mobility, arm or
        gripper part, which has a `status`) until `done(part)`, failure, cancel or `timeout_s`. Every RPC
        has the rpc deadline."""
        self._require()
        with self._motion_slot(what):
            c = self.cfg
            try:
                cid = self._command_client.robot_command(command, end_time_secs=end_time, timeout=c.rpc_timeout_s)
            except Exception as e:
                raise self._fault_from(e, what) from e

            def poll() -> bool:
                try:
                    response = self._command_client.robot_command_feedback(cid, timeout=c.rpc_timeout_s)
                except Exception as e:
                    raise self._fault_from(e, f"{what} feedback") from e
                part = feedback(response.feedback)
                if part.status == _FEEDBACK.STATUS_PROCESSING:
                    return bool(done(part))
                if done_at_end and part.status == _FEEDBACK.STATUS_COMMAND_TIMED_OUT and \
                        end_time is not None and time.time() >= end_time:
                    return True
                raise self._command_failure(what, _FEEDBACK.Status.Name(part.status))

            self._follow(what, timeout_s, cancel, poll)

    def _stop_quietly(self) -> None:
        try:
            self._command_client.robot_command(RobotCommandBuilder.stop_command(), timeout=self.cfg.rpc_timeout_s)
        except Exception as e:  # noqa: BLE001 - the caller reports the original problem
            self._log.warning("stop command failed: %s", _describe_sdk_error(e))

    def _command_failure(self, what: str, feedback_status: str) -> SpotFault:
        """Classify a command whose feedback stopped processing: lease, e-stop, fault or plain failure."""
        return self._robot_fault(what, feedback_status) or SpotFault(
            SpotFaultCause.COMMAND_FAILED, f"{what} failed: feedback {feedback_status}")

    def _robot_fault(self, what: str, feedback_status: str) -> SpotFault | None:
        """The robot-side reason a command stopped (lease gone, e-stop, behaviour fault, motors off), or None
        when the robot is fine (then the command itself failed)."""
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
        if not status.connected:
            return SpotFault(SpotFaultCause.CONNECTION_LOST, f"{what} stopped ({feedback_status}): {status.detail}")
        return None

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
            holding=bool(state.manipulator_state.is_gripper_holding_item),
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
        if isinstance(e, GraphNavServiceResponseError):  # lost, stuck, no path, not localized, impaired...
            return SpotFault(SpotFaultCause.NAVIGATION_FAILED, text)
        if isinstance(e, sdk_errors.ResponseError):
            return SpotFault(SpotFaultCause.COMMAND_FAILED, text)
        if isinstance(e, (sdk_errors.RpcError, OSError)):
            return SpotFault(SpotFaultCause.CONNECTION_LOST, f"{text} (robot {self.cfg.hostname}:{self.cfg.port})")
        name = type(e).__name__
        if "Timed" in name or "Timeout" in name:  # the SDK's CommandTimedOutError classes
            return SpotFault(SpotFaultCause.TIMEOUT, text)
        return SpotFault(SpotFaultCause.COMMAND_FAILED, text)
