"""The perception node's "camera" source: ROS messages in, core pipeline, ROS messages out.

Subscribes colour (`color_topic`), aligned depth (`depth_topic`, 16UC1 mm or 32FC1 m) and
CameraInfo (`info_topic`), pairs colour and depth by stamp (message_filters has no wheel), gets
base<-camera at the image's stamp from a /tf + /tf_static history (interpolated, as tf2 does) when
tf2_msgs is importable, else from `static_camera_pose`, and at most `process_rate` times a second
runs the pipeline on the newest pair. A pair newer than the newest transform waits for /tf up to
`tf_timeout` (s, wall clock) before it is dropped.
"""
from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from builtin_interfaces.msg import Duration
from diagnostic_msgs.msg import (
    DiagnosticArray,
    DiagnosticStatus,
    KeyValue,
)
from geometry_msgs.msg import Point, Vector3
from rclpy.callback_groups import CallbackGroup, MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

from monologue_common.qos import LATCHED
from monologue_domain.msgs import scene_object_to_msg
from monologue_interfaces.msg import DetectionQueries, SceneDescription
from monologue_vision.images import decode_color, decode_depth

from .core.geometry import Intrinsics, in_view, transform_from_quaternion
from .core.memory import ObjectMemory
from .core.object_detectors import Detection, GroundTruthObject, make_detector
from .core.overlay import draw_detections
from .core.pipeline import STAGES, Frame, PerceptionPipeline
from .core.scene import SceneObject
from .core.settings import PerceptionSettings
from .core.tf_tree import ExtrapolationError, TransformError, TransformTree

try:  # tf2_msgs is not on PyPI; the simulator vendors it, a full ROS install has it.
    from tf2_msgs.msg import TFMessage
except ImportError:  # pragma: no cover - depends on the installation
    TFMessage = None

if TYPE_CHECKING:  # generated messages (mypy sees them as Any: rosidl ships no type information)
    from geometry_msgs.msg import TransformStamped


def _stamp(msg: Image | TransformStamped) -> float:
    """The header stamp of an image or a transform, in s."""
    return float(msg.header.stamp.sec) + float(msg.header.stamp.nanosec) * 1e-9


class CameraSource:
    def __init__(self, node: Node, settings: PerceptionSettings, publish: Callable[[SceneDescription], None],
                 group: CallbackGroup) -> None:
        self.node, self._publish = node, publish
        self._log = logging.getLogger("perception.camera")
        p = self.p = settings.camera
        self._gt_topic = settings.ground_truth_topic
        pose = p.static_camera_pose
        self._static = transform_from_quaternion(pose[:3], pose[3:]) if pose else None
        if TFMessage is None and self._static is None:
            raise ValueError("tf2_msgs is not importable and static_camera_pose is [0.0]: no camera pose")
        det = make_detector(p.detector, self._log)
        self.pipeline = PerceptionPipeline(det, p.pipeline_config(), logger=self._log)
        self.memory = ObjectMemory(p.miss_updates_to_occlude)
        self.tf = TransformTree(cache_s=p.tf_cache, tolerance_s=p.tf_tolerance)
        self._lock = threading.Lock()
        self._color: Image | None = None
        self._depth: Image | None = None
        self._info: CameraInfo | None = None
        self._gt: SceneDescription | None = None
        self._last_processed = -1.0   # stamp (s) of the newest pair processed or dropped
        self._last_run = -math.inf    # monotonic time (s) of the last pipeline run
        self._pair_rx = 0.0           # monotonic time (s) the newest colour image arrived
        self._newest_stamp = -math.inf  # s, newest colour image stamp
        self._marker_ids: dict[str, int] = {}
        # ours: reliable; realsense2_camera's (SYSTEM_DEFAULT images, or SENSOR_DATA if so launched): best
        # effort, which matches either
        sensor_qos = QoSProfile(depth=2, reliability=ReliabilityPolicy.BEST_EFFORT if p.best_effort
                                else ReliabilityPolicy.RELIABLE)
        node.create_subscription(Image, p.color_topic, self._on_color, sensor_qos, callback_group=group)
        node.create_subscription(Image, p.depth_topic, self._on_depth, sensor_qos, callback_group=group)
        node.create_subscription(CameraInfo, p.info_topic, self._on_info, sensor_qos, callback_group=group)
        node.create_subscription(SceneDescription, self._gt_topic, self._on_gt, LATCHED,
                                 callback_group=group)
        self._queries: list[str] = []  # the running task's object names (planner), else []
        self._query_generation = 0
        node.create_subscription(DetectionQueries, "perception/queries", self._on_queries, LATCHED,
                                 callback_group=group)
        if TFMessage is not None:
            # Best effort: a reliable reader holds every later sample back until a lost one is
            # repaired (Fast DDS heartbeats come every 3 s); the history interpolates over a gap.
            tf_qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.BEST_EFFORT)
            node.create_subscription(TFMessage, "/tf", lambda m: self._on_tf(m, False), tf_qos, callback_group=group)
            static_qos = QoSProfile(depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                                    reliability=ReliabilityPolicy.RELIABLE)
            node.create_subscription(TFMessage, "/tf_static", lambda m: self._on_tf(m, True), static_qos,
                                     callback_group=group)
        self._markers = node.create_publisher(MarkerArray, "perception/markers", 10)
        self._overlay = node.create_publisher(Image, "perception/detections_image", 2)
        self._diag = node.create_publisher(DiagnosticArray, "/diagnostics", 10)
        # Polls faster than process_rate so that a pair waiting for /tf is taken as soon as it can be.
        node.create_timer(min(1.0 / p.process_rate, 0.05), self._tick,
                          callback_group=MutuallyExclusiveCallbackGroup())
        node.get_logger().info(
            f"camera source ({p.camera_driver}): detector {det.name}, colour {p.color_topic}, depth {p.depth_topic}, "
            f"pose from {'TF' if TFMessage is not None else 'static_camera_pose'}"
            f"{' (static fallback)' if TFMessage is not None and self._static is not None else ''}")

    # ------------------------------------------------------------------------------ inputs --
    def _on_color(self, msg: Image) -> None:
        with self._lock:
            self._color, self._pair_rx = msg, time.monotonic()
            self._newest_stamp = max(self._newest_stamp, _stamp(msg))

    def newest_image_stamp(self) -> float:
        """Stamp (s) of the newest colour image received so far; -inf before the first."""
        with self._lock:
            return self._newest_stamp

    def _on_depth(self, msg: Image) -> None:
        with self._lock:
            self._depth = msg

    def _on_info(self, msg: CameraInfo) -> None:
        with self._lock:
            self._info = msg

    def _on_gt(self, msg: SceneDescription) -> None:
        with self._lock:
            self._gt = msg

    def _on_queries(self, msg: DetectionQueries) -> None:
        """A new episode: look for its objects (none named: the configured candidates) and start a
        fresh object memory, as IM's memory belongs to one episode."""
        names = list(dict.fromkeys(n.strip() for n in msg.names if n.strip()))
        with self._lock:
            self._queries = names
            self._query_generation += 1
            self.memory.reset()
        self.node.get_logger().info(
            f"episode {msg.episode_id}: detecting {names if names else 'the configured candidates'}")

    def _on_tf(self, msg: TFMessage, static: bool) -> None:
        with self._lock:
            for t in msg.transforms:
                tr, q = t.transform.translation, t.transform.rotation
                self.tf.set(t.header.frame_id, t.child_frame_id,
                            transform_from_quaternion((tr.x, tr.y, tr.z), (q.x, q.y, q.z, q.w)), _stamp(t), static)

    def _camera_pose(self, frame_id: str, stamp: float) -> np.ndarray | None:
        """base<-camera at `stamp` (s); None if /tf has not reached the stamp yet (try again later).
        Raises ValueError if there is no transform at all."""
        if TFMessage is not None:
            try:
                return self.tf.lookup(self.p.base_frame, frame_id, stamp)
            except ExtrapolationError as e:
                if e.future:
                    return None
                why = str(e)
            except TransformError as e:
                why = str(e)
        else:
            why = "tf2_msgs is not importable"
        if self._static is not None:
            return self._static
        raise ValueError(f"no transform {self.p.base_frame} <- {frame_id}: {why}")

    # -------------------------------------------------------------------------- processing --
    def _tick(self) -> None:
        with self._lock:
            color, depth, info, gt, rx = self._color, self._depth, self._info, self._gt, self._pair_rx
        if color is None or depth is None or info is None:
            return
        t_c, t_d = _stamp(color), _stamp(depth)
        if abs(t_c - t_d) > self.p.sync_tolerance or max(t_c, t_d) <= self._last_processed:
            return
        if time.monotonic() - self._last_run < 1.0 / self.p.process_rate:
            return
        frame_id = color.header.frame_id or info.header.frame_id
        try:
            with self._lock:
                pose = self._camera_pose(frame_id, t_c)
            if pose is None:
                if time.monotonic() - rx < self.p.tf_timeout:
                    return  # /tf is behind the image: wait for it
                raise ValueError(f"no transform {self.p.base_frame} <- {frame_id} at {t_c:.3f} s within "
                                 f"tf_timeout {self.p.tf_timeout:.1f} s (newest at "
                                 f"{self.tf.newest_stamp(self.p.base_frame, frame_id):.3f} s)")
            self._last_processed, self._last_run = max(t_c, t_d), time.monotonic()
            self._process(color, depth, info, gt, pose)
        except ValueError as e:  # bad input: say why, keep running, keep the last description
            self._last_processed = max(t_c, t_d)
            self.node.get_logger().error(f"frame at {t_c:.3f} s dropped: {e}", throttle_duration_sec=5.0)

    def _process(self, color: Image, depth: Image, info: CameraInfo, gt: SceneDescription | None,
                 pose: np.ndarray) -> None:
        t0 = time.perf_counter()
        rgb = decode_color(bytes(color.data), color.width, color.height, color.encoding, color.step)
        d = decode_depth(bytes(depth.data), depth.width, depth.height, depth.encoding, depth.step,
                         bool(depth.is_bigendian))
        k = Intrinsics.from_k(list(info.k), info.width, info.height)
        decode_s = time.perf_counter() - t0
        truth = [GroundTruthObject(o.name, o.category, (o.pose.pose.position.x, o.pose.pose.position.y,
                                                        o.pose.pose.position.z), (o.size.x, o.size.y, o.size.z))
                 for o in (gt.objects if gt is not None else []) if o.category != "location"]
        with self._lock:
            queries, generation = list(self._queries), self._query_generation
        candidates = queries or list(self.p.candidates) or [o.name for o in truth]
        if not candidates:
            raise ValueError("no candidate object names (the planner's goal objects, parameter candidates, "
                             "or a ground-truth topic)")
        frame = Frame(rgb, d, k, pose, _stamp(color))
        result = self.pipeline.process(frame, candidates, truth, decode_s)
        with self._lock:
            if generation != self._query_generation:
                return  # a new episode's queries came in while this frame was processed
            objects = self.memory.update(
                list(result.objects), _stamp(color),
                in_view=lambda o: in_view(o.position, k, pose, self.p.view_margin))
        t1 = time.perf_counter()
        out = self._scene_msg(color, objects, gt)
        self._publish(out)
        self._markers.publish(self._marker_msg(out))
        if self._overlay.get_subscription_count() > 0:  # drawn only for someone watching
            self._overlay.publish(self._overlay_msg(color, rgb, result.detections))
        latencies = dict(result.latencies_s, publish=time.perf_counter() - t1)
        self._diagnostics(color, latencies, result.dropped, len(result.detections))

    def _scene_msg(self, color: Image, objects: list[SceneObject], gt: SceneDescription | None) -> SceneDescription:
        out = SceneDescription()
        out.header.stamp = color.header.stamp
        out.header.frame_id = self.p.base_frame
        out.source = self.pipeline.detector.name
        out.objects = [scene_object_to_msg(o, out.header) for o in objects]
        if gt is not None:  # named locations ("top left corner") are not perceived: pass them through
            out.objects.extend(o for o in gt.objects if o.category == "location")
            out.held_objects = list(gt.held_objects)
        return out

    @staticmethod
    def _overlay_msg(color: Image, rgb: np.ndarray, detections: tuple[Detection, ...]) -> Image:
        drawn = draw_detections(rgb, detections)
        h, w = drawn.shape[:2]
        return Image(header=color.header, height=h, width=w, encoding="rgb8", is_bigendian=0, step=w * 3,
                     data=drawn.tobytes())

    def _marker_msg(self, scene: SceneDescription) -> MarkerArray:
        arr = MarkerArray()
        life = self.p.marker_lifetime
        lifetime = Duration(sec=int(life), nanosec=int((life % 1) * 1e9))
        for o in scene.objects:
            if o.category == "location":
                continue
            mid = self._marker_ids.setdefault(o.name, len(self._marker_ids))
            colour = ColorRGBA(r=0.1, g=0.8, b=0.2, a=0.5) if o.visible else ColorRGBA(r=0.6, g=0.6, b=0.6, a=0.25)
            box = Marker(header=scene.header, ns="objects", id=mid, type=Marker.CUBE, action=Marker.ADD,
                         pose=o.pose.pose, color=colour, lifetime=lifetime)
            box.scale = Vector3(x=max(o.size.x, 0.005), y=max(o.size.y, 0.005), z=max(o.size.z, 0.005))
            text = Marker(header=scene.header, ns="labels", id=mid, type=Marker.TEXT_VIEW_FACING,
                          action=Marker.ADD, color=ColorRGBA(r=1.0, g=1.0, b=1.0, a=1.0), lifetime=lifetime,
                          text=f"{o.name} {o.confidence:.2f}{'' if o.visible else ' (occluded)'}")
            text.pose.position = Point(x=o.pose.pose.position.x, y=o.pose.pose.position.y,
                                       z=o.pose.pose.position.z + o.size.z / 2 + 0.03)
            text.pose.orientation.w = 1.0
            text.scale.z = 0.025
            arr.markers.extend([box, text])
        return arr

    def _diagnostics(self, color: Image, latencies: dict[str, float], dropped: tuple[str, ...], n: int) -> None:
        status = DiagnosticStatus(level=DiagnosticStatus.OK, name="perception: pipeline",
                                  hardware_id=color.header.frame_id,
                                  message=f"{n} detections, {len(self.memory.occluded())} occluded")
        if dropped:
            status.level, status.message = DiagnosticStatus.WARN, "; ".join(dropped)
        status.values = [KeyValue(key=f"{s}_ms", value=f"{latencies.get(s, 0.0) * 1000:.1f}")
                         for s in (*STAGES, "publish")]
        status.values.append(KeyValue(key="visible", value=", ".join(self.memory.visible())))
        status.values.append(KeyValue(key="occluded", value=", ".join(self.memory.occluded())))
        self._diag.publish(DiagnosticArray(header=color.header, status=[status]))

