"""ROS wiring of the `spot` backend (rclpy adapter only), mirroring arm_ros.ArmRosBridge:

- robot/status from SpotRobot.status() (latched; on a timer, after every skill, at once on a lost lease);
- the `estop` topic (latches the skills and sets Spot's software e-stop as `spot.estop_mode` says: settle =
  sit, then cut motor power; cut = at once) and the `estop_reset` service
  (releases it and restores the start posture);
- Spot's hand camera for perception: `<ns>/color/image_raw` (rgb8), `<ns>/aligned_depth_to_color/image_raw`
  (16UC1 mm, aligned to colour), `<ns>/color/camera_info` and /tf odom -> body -> <sensor frame>, all stamped
  with the colour image's acquisition time (robot clock converted by time sync), at `spot.camera.rate` Hz;
- or, for a camera of our own (a RealSense on the arm, `spot.camera_mount`): /tf odom -> body -> hand from the
  robot state (stamped with its acquisition time) at `spot.camera_mount.rate` Hz and the mount, hand (or body)
  -> the camera's optical frame, on /tf_static;
- perception's scene description (`scene_topic`, odom frame) into the skills' SceneBuffer (the belief);
- the optional approval gate over the AskHuman action (`approval.mode: skill`).

The skills live in core/skills.py, the robot in core/robot.py, the settings in settings.py."""
from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from builtin_interfaces.msg import Time
from geometry_msgs.msg import TransformStamped
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Bool

from monologue_common.dedicated import DedicatedCallbacks
from monologue_common.qos import LATCHED
from monologue_domain.msgs import scene_objects_from_msg
from monologue_interfaces.msg import RobotStatus, SceneDescription
from monologue_interfaces.srv import ResetEstop
from skills_node.arm_ros import AskHumanApproval, transform_msg
from skills_node.core.safety import ApprovalGate

from .core.robot import SpotFault, SpotKinematics, SpotRobot, SpotStatus
from .core.skills import SceneBuffer, SpotKitchenSkills, compose3, invert3
from .settings import SpotBackendSettings, SpotCameraMountSettings

ODOM, BODY, HAND = "odom", "body", "hand"  # Spot's frame names (bosdyn.client.frame_helpers)


class SpotRosBridge:
    """robot/status, estop, estop_reset, the hand camera, the scene and the approval gate around a SpotRobot
    and its SpotKitchenSkills (attached once built: the skills need the gate and the scene first)."""

    def __init__(self, node: Node, logger: logging.Logger, robot: SpotRobot, scene: SceneBuffer,
                 s: SpotBackendSettings, frame_id: str) -> None:
        self._node = node
        self._log = logger
        self._robot = robot
        self._scene = scene
        self._backend: SpotKitchenSkills | None = None
        self._s = s
        self._frame_id = frame_id
        self._status_lock = threading.Lock()
        self.approval: ApprovalGate | None = (AskHumanApproval(node, s.approval_action, logger)
                                              if s.approval_mode != "off" else None)
        self._status_pub = node.create_publisher(RobotStatus, "robot/status", LATCHED)
        # The e-stop on a thread of its own (never queued behind the node's executor, a skill or status
        # reads); the reset (it powers on and stands: seconds) on the node's executor, so it never delays
        # an e-stop. _estop_lock and _estops order the two: a reset clears only the e-stops before it.
        self._estop_lock = threading.Lock()
        self._estops = 0  # e-stops received
        self._estop_thread = DedicatedCallbacks(node, "estop", logger)
        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self._estop_sub = node.create_subscription(Bool, "estop", self._on_estop, reliable,
                                                   callback_group=self._estop_thread.group)
        self._reset_srv = node.create_service(ResetEstop, "estop_reset", self._on_reset,
                                              callback_group=MutuallyExclusiveCallbackGroup())
        self._scene_sub = node.create_subscription(SceneDescription, s.scene_topic, self._on_scene, LATCHED,
                                                   callback_group=ReentrantCallbackGroup())
        self._timer = node.create_timer(1.0 / s.status_rate, self.publish_status,
                                        callback_group=MutuallyExclusiveCallbackGroup())
        self._camera: SpotCameraPublisher | None = None
        if s.camera.rate > 0.0:
            self._camera = SpotCameraPublisher(node, logger, robot, s)
        self._mount: SpotMountTfPublisher | None = None
        if s.camera_mount.rate > 0.0:
            self._mount = SpotMountTfPublisher(node, robot, s.camera_mount)
        self.publish_status()
        self._estop_thread.start()

    def attach(self, backend: SpotKitchenSkills) -> None:
        with self._estop_lock:
            if self._estops:  # an e-stop before the skills existed: they start latched
                backend.estop_reason, backend.estop_latched = "estop topic", True
            self._backend = backend
        self.publish_status()

    def close(self) -> None:
        self._estop_thread.close()
        self._timer.cancel()
        if self._camera is not None:
            self._camera.close()
        if self._mount is not None:
            self._mount.close()

    def start_posture(self) -> None:
        """Power on and stand as configured; a failure is logged and shows on robot/status (no raise)."""
        try:
            if self._s.power_on_at_start:
                self._robot.power_on()
            if self._s.stand_at_start:
                self._robot.stand()
        except SpotFault as e:
            self._log.error("Spot start posture: %s", e)
        self.publish_status()

    # ----- callbacks ------------------------------------------------------------------------
    def _on_scene(self, msg: SceneDescription) -> None:
        if msg.header.frame_id and msg.header.frame_id != ODOM:
            self._node.get_logger().error(
                f"{self._s.scene_topic} is in frame {msg.header.frame_id!r}, not {ODOM!r}: ignored (set "
                "perception's base_frame to odom)", throttle_duration_sec=10.0)
            return
        self._scene.update(scene_objects_from_msg(msg.objects))

    def _on_estop(self, msg: Bool) -> None:
        if not msg.data:
            return
        with self._estop_lock:
            self._estops += 1
            if self._backend is not None:
                self._backend.estop_reason = "estop topic"
                self._backend.estop_latched = True
        try:  # even before the skills are attached; spot.estop_mode: settle (sit, then cut) or cut at once
            self._robot.estop()
        except SpotFault as e:  # not connected: the robot's own endpoint timeout stops it
            self._log.error("could not set Spot's software e-stop: %s", e)
        self.publish_status()

    def _on_reset(self, _req: ResetEstop.Request, res: ResetEstop.Response) -> ResetEstop.Response:
        backend = self._backend
        with self._estop_lock:
            seen = self._estops
            was = backend is not None and backend.estop_latched
        try:
            if was:
                self._robot.estop_release()
        except SpotFault as e:
            res.success, res.message = False, f"could not release Spot's software e-stop: {e}"
            self.publish_status()
            return res
        with self._estop_lock:
            if self._estops != seen:  # an e-stop came during the release: it stays latched (and cut)
                res.success, res.message = False, "an e-stop arrived during the reset: still latched"
                self.publish_status()
                return res
            if backend is not None:
                backend.estop_latched, backend.estop_reason = False, ""
        res.success = True
        res.message = "e-stop reset" if was else "e-stop was not latched"
        if was:
            self.start_posture()
        self.publish_status()
        return res

    def publish_status(self) -> None:
        status = self._robot.status()
        msg = RobotStatus()
        msg.header.stamp = self._node.get_clock().now().to_msg()
        msg.header.frame_id = self._frame_id
        msg.backend = "spot"
        b = self._backend
        fill_spot_status(msg, status, b is not None and b.estop_latched, b.estop_reason if b is not None else "",
                         holding=b is not None and b.held is not None)
        with self._status_lock:
            self._status_pub.publish(msg)


def fill_spot_status(msg: RobotStatus, status: SpotStatus, estop_latched: bool, estop_reason: str,
                     holding: bool = False) -> None:
    """RobotStatus from a SpotStatus, as arm_ros.fill_status does for an ArmStatus. The UR mode numbers
    stay 0; their names carry Spot's state (MOTORS_OFF / SITTING / STANDING; NORMAL / ESTOPPED /
    BEHAVIOR_FAULT). protective_stop = a behaviour fault, emergency_stop = any e-stop of the robot."""
    msg.connected = status.connected
    msg.estop_latched, msg.estop_reason = estop_latched, estop_reason
    msg.protective_stop, msg.emergency_stop = bool(status.behavior_faults), status.estopped
    msg.robot_mode, msg.safety_mode = 0, 0
    msg.robot_mode_name = ("DISCONNECTED" if not status.connected else "MOTORS_OFF" if not status.powered
                           else "STANDING" if status.standing else "SITTING")
    msg.safety_mode_name = ("ESTOPPED" if status.estopped else "BEHAVIOR_FAULT" if status.behavior_faults
                            else "NORMAL")
    msg.ok = status.ok and not estop_latched
    faults = [] if status.ok else [status.describe()]
    if estop_latched:
        faults.insert(0, f"software e-stop latched ({estop_reason})")
    msg.fault = "; ".join(faults)
    msg.holding = holding


# ---- the hand camera -----------------------------------------------------------------------------------

def stamp_msg(t_s: float) -> Time:
    sec = int(t_s // 1)
    return Time(sec=sec, nanosec=min(int(round((t_s - sec) * 1e9)), 999_999_999))


def image_msg(image: Any, stamp: Time, frame_id: str) -> Image:
    """sensor_msgs/Image of a SpotImage: rgb8 as is; depth (16UC1 in 1/depth_scale m) as 16UC1 mm."""
    msg = Image()
    msg.header.stamp, msg.header.frame_id = stamp, frame_id
    msg.height, msg.width, msg.is_bigendian = int(image.height), int(image.width), 0
    if image.encoding == "rgb8":
        msg.encoding, msg.step, data = "rgb8", 3 * int(image.width), bytes(image.data)
    elif image.encoding == "16UC1":
        msg.encoding, msg.step = "16UC1", 2 * int(image.width)
        data = depth_to_mm(bytes(image.data), float(image.depth_scale))
    else:
        raise ValueError(f"image {image.source}: unsupported encoding {image.encoding!r}")
    if len(data) != msg.step * msg.height:
        raise ValueError(f"image {image.source}: {len(data)} bytes for {msg.width}x{msg.height} {msg.encoding}")
    msg.data = data
    return msg


def depth_to_mm(data: bytes, depth_scale: float) -> bytes:
    """Little-endian uint16 depth in units of 1/depth_scale m -> uint16 mm (0 stays 0 = no depth)."""
    if depth_scale == 1000.0:
        return data
    import numpy as np

    raw = np.frombuffer(data, dtype="<u2").astype(np.float64)
    return np.clip(np.rint(raw * (1000.0 / depth_scale)), 0, 65535).astype("<u2").tobytes()


def camera_info_msg(image: Any, stamp: Time, frame_id: str) -> CameraInfo:
    """Pinhole CameraInfo (no distortion: Spot's images come rectified) from a SpotImage's intrinsics (px)."""
    msg = CameraInfo()
    msg.header.stamp, msg.header.frame_id = stamp, frame_id
    msg.height, msg.width = int(image.height), int(image.width)
    fx, fy, cx, cy = float(image.fx), float(image.fy), float(image.cx), float(image.cy)
    msg.distortion_model = "plumb_bob"
    msg.d = [0.0] * 5
    msg.k = [fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0]
    msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    msg.p = [fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0]
    return msg


def camera_messages(color: Any, depth: Any | None, namespace: str
                    ) -> tuple[list[tuple[str, Any]], list[TransformStamped]]:
    """(topic, message) pairs and the /tf transforms of one colour (+ aligned depth) capture, all stamped
    with the colour image's acquisition time."""
    stamp = stamp_msg(float(color.stamp_s))
    frame = str(color.frame_name)
    out: list[tuple[str, Any]] = [(f"{namespace}/color/image_raw", image_msg(color, stamp, frame)),
                                  (f"{namespace}/color/camera_info", camera_info_msg(color, stamp, frame))]
    if depth is not None:
        out.append((f"{namespace}/aligned_depth_to_color/image_raw", image_msg(depth, stamp, frame)))
    body_sensor = compose3(invert3(color.odom_from_body), color.odom_from_sensor)
    tf = [transform_msg(stamp, ODOM, BODY, color.odom_from_body), transform_msg(stamp, BODY, frame, body_sensor)]
    return out, tf


class SpotCameraPublisher:
    """Reads the hand colour and aligned depth images at `spot.camera.rate` Hz and publishes them with their
    camera info and TF. A failed read (robot not reachable) is logged (throttled) and retried."""

    def __init__(self, node: Node, logger: logging.Logger, robot: SpotRobot, s: SpotBackendSettings) -> None:
        from tf2_msgs.msg import TFMessage

        self._node, self._log, self._robot = node, logger, robot
        c = self._c = s.camera
        self._tf_msg = TFMessage
        sensor_qos = QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE)
        self._pubs = {
            f"{c.namespace}/color/image_raw": node.create_publisher(Image, f"{c.namespace}/color/image_raw",
                                                                     sensor_qos),
            f"{c.namespace}/color/camera_info": node.create_publisher(CameraInfo, f"{c.namespace}/color/camera_info",
                                                                       sensor_qos),
            f"{c.namespace}/aligned_depth_to_color/image_raw": node.create_publisher(
                Image, f"{c.namespace}/aligned_depth_to_color/image_raw", sensor_qos),
        }
        self._tf = node.create_publisher(TFMessage, "/tf", 100)
        self._timer = node.create_timer(1.0 / c.rate, self.publish, callback_group=MutuallyExclusiveCallbackGroup())

    def publish(self) -> None:
        try:
            images: Sequence[Any] = self._robot.get_images([self._c.color_source, self._c.depth_source])
            by = {i.source: i for i in images}
            color = by.get(self._c.color_source)
            if color is None:
                raise ValueError(f"no {self._c.color_source} image in the response")
            msgs, tf = camera_messages(color, by.get(self._c.depth_source), self._c.namespace)
        except Exception as e:  # noqa: BLE001 - a sensor loop: say why (throttled) and try the next period
            self._node.get_logger().warning(f"Spot camera: {type(e).__name__}: {e}", throttle_duration_sec=5.0)
            return
        self._tf.publish(self._tf_msg(transforms=tf))  # the pose first: perception looks it up per image
        for topic, msg in msgs:
            self._pubs[topic].publish(msg)

    def close(self) -> None:
        self._timer.cancel()


# ---- a camera of our own on the arm (or the body) ------------------------------------------------------

def mount_transforms(kin: SpotKinematics, parent: str) -> list[TransformStamped]:
    """/tf of one robot state for a camera fixed to `parent` (hand | body): odom -> body, and body -> hand
    when the camera is on the hand, stamped with the state's acquisition time. ValueError when the camera is
    on the hand and the state has no hand frame."""
    stamp = stamp_msg(kin.stamp_s)
    out = [transform_msg(stamp, ODOM, BODY, kin.odom_from_body)]
    if parent == HAND:
        if kin.body_from_hand is None:
            raise ValueError("the robot state has no hand frame (no arm?): set spot.camera_mount.parent to body")
        out.append(transform_msg(stamp, BODY, HAND, kin.body_from_hand))
    return out


class SpotMountTfPublisher:
    """The pose of a camera of our own (a RealSense on the arm, its own node publishing the images): the
    mount `parent` -> `frame` once on /tf_static (latched), and odom -> body (-> hand) from the robot state at
    `rate` Hz on /tf, so that perception looks the camera's pose up at each image's stamp. A failed read
    (robot not reachable) is logged (throttled) and retried."""

    def __init__(self, node: Node, robot: SpotRobot, m: SpotCameraMountSettings) -> None:
        from tf2_msgs.msg import TFMessage

        self._node, self._robot, self._m = node, robot, m
        self._msg = TFMessage
        self._pub = node.create_publisher(TFMessage, "/tf", 100)
        static_qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                                reliability=ReliabilityPolicy.RELIABLE)
        self._static = node.create_publisher(TFMessage, "/tf_static", static_qos)
        self._static.publish(TFMessage(transforms=[
            transform_msg(node.get_clock().now().to_msg(), m.parent, m.frame, m.pose)]))
        self._timer = node.create_timer(1.0 / m.rate, self.publish, callback_group=MutuallyExclusiveCallbackGroup())

    def publish(self) -> None:
        try:
            tf = mount_transforms(self._robot.kinematics(), self._m.parent)
        except (SpotFault, ValueError) as e:  # not connected (robot/status says why), or no arm
            self._node.get_logger().warning(f"Spot camera mount TF: {e}", throttle_duration_sec=5.0)
            return
        self._pub.publish(self._msg(transforms=tf))

    def close(self) -> None:
        self._timer.cancel()
