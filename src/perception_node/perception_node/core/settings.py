"""Validated settings of the perception node and the RealSense publisher, from their ROS parameters
(defaults only in config/monologue.yaml; see monologue_common.core.settings). No rclpy here."""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from monologue_common.core.registry import UnknownPluginError
from monologue_common.core.settings import ParamReader

from .object_detectors import DETECTORS, DetectorConfig
from .pipeline import PipelineConfig

SOURCES = ("oracle", "camera")
# Who publishes the camera images (source `camera`): `topics` = color_topic, depth_topic, info_topic as set (the
# simulator, Spot's skills node); `pyrealsense2` = our realsense_publisher (the same parameters; the robot table's
# camera node); `realsense_ros` = the official realsense2_camera node, read on its own topics under
# realsense_ros_prefix with a best-effort subscription (matching its default and its SENSOR_DATA QoS), and the
# bring-up does not start our publisher (monologue_bringup.graph).
CAMERA_DRIVERS = ("topics", "pyrealsense2", "realsense_ros")
# realsense2_camera's topics under <camera_namespace>/<camera_name> (align_depth.enable:=true for the depth)
REALSENSE_ROS_TOPICS = ("color/image_raw", "aligned_depth_to_color/image_raw", "color/camera_info")
# Parameters every node has but not every node reads: rclpy's own, and the shared llm block of
# config/llm/*.yaml (`/**`).
NOT_MINE = ("use_sim_time", "start_type_description_service", "llm")


@dataclass(frozen=True)
class CameraSettings:
    """The `camera` source (RGB-D pipeline)."""

    detector: DetectorConfig
    candidates: tuple[str, ...]                 # object names to detect; () = names from the ground truth
    base_frame: str
    camera_driver: str                          # CAMERA_DRIVERS; the topics below are resolved for it
    color_topic: str
    depth_topic: str                            # 16UC1 (mm) or 32FC1 (m), aligned to colour
    info_topic: str
    static_camera_pose: tuple[float, ...]       # (x, y, z, qx, qy, qz, qw) base<-camera (m); () = TF only
    process_rate: float                         # Hz, at most
    sync_tolerance: float                       # s between colour and depth stamps
    tf_timeout: float                           # s (wall) an image may wait for /tf to reach its stamp
    tf_tolerance: float                         # s an image stamp may lie outside the TF history
    tf_cache: float                             # s of /tf history
    use_open3d: bool
    cloud_stride: int                           # px
    marker_lifetime: float                      # s
    miss_updates_to_occlude: int                # frames
    view_margin: float                          # px

    @property
    def best_effort(self) -> bool:
        """Subscribe the images best effort (the official driver's topics) rather than reliable (ours)."""
        return self.camera_driver == "realsense_ros"

    def pipeline_config(self) -> PipelineConfig:
        """The pipeline's configuration from these parameters (its other fields are algorithm constants)."""
        return PipelineConfig(min_score=self.detector.score_threshold, use_open3d=self.use_open3d,
                              cloud_stride=self.cloud_stride)


@dataclass(frozen=True)
class PerceptionSettings:
    source: str                                 # oracle | camera
    ground_truth_topic: str
    refresh_timeout: float                      # s to wait for a fresh observation
    camera: CameraSettings                      # read and checked for every source; used by `camera`
    unused: tuple[str, ...] = ()                # parameters set but not read


def _camera(r: ParamReader) -> CameraSettings:
    score = r.number("score_threshold", 0.0, 1.0)
    kind = r.string("detector", nonempty=True)
    if kind.strip():
        try:
            DETECTORS.get(kind)
        except UnknownPluginError as e:
            r.check(False, f"detector: {e}")
    detector = DetectorConfig(
        kind=kind,
        model_path=r.string("models.model_path"),
        clip_model_path=r.string("models.clip_model_path"),
        mdetr_checkpoint=r.string("models.mdetr_checkpoint"),
        mdetr_text_encoder_dir=r.string("models.mdetr_text_encoder_dir"),
        mdetr_model_name=r.string("models.mdetr_model_name", nonempty=True),
        score_threshold=score,
        text_threshold=r.number("text_threshold", 0.0, 1.0),
        allow_download=r.boolean("models.allow_download"),
        num_threads=r.integer("models.num_threads", 0),
    )
    pose = r.numbers("static_camera_pose", allow=(1, 7))
    r.check(len(pose) != 1 or pose == (0.0,),
            "static_camera_pose: [x, y, z, qx, qy, qz, qw] (m, unit quaternion) or [0.0] (TF only)")
    if len(pose) == 7:
        n = math.sqrt(sum(v * v for v in pose[3:]))
        r.check(abs(n - 1.0) < 1e-3, f"static_camera_pose: the quaternion must be unit length, got norm {n:g}")
    driver = r.string("camera_driver", CAMERA_DRIVERS)
    prefix = r.string("realsense_ros_prefix", nonempty=True).rstrip("/")
    r.check(prefix.startswith("/"),
            f"realsense_ros_prefix: an absolute namespace such as /camera/camera, got {prefix!r}")
    topics = (r.string("color_topic", nonempty=True), r.string("depth_topic", nonempty=True),
              r.string("info_topic", nonempty=True))
    if driver == "realsense_ros":
        topics = tuple(f"{prefix}/{t}" for t in REALSENSE_ROS_TOPICS)  # type: ignore[assignment]
    return CameraSettings(
        detector=detector,
        candidates=r.strings("candidates"),
        base_frame=r.string("base_frame", nonempty=True),
        camera_driver=driver,
        color_topic=topics[0],
        depth_topic=topics[1],
        info_topic=topics[2],
        static_camera_pose=pose if len(pose) == 7 else (),
        process_rate=r.number("process_rate", 0.0, low_open=True),
        sync_tolerance=r.number("sync_tolerance", 0.0, low_open=True),
        tf_timeout=r.number("tf_timeout", 0.0, low_open=True),
        tf_tolerance=r.number("tf_tolerance", 0.0),
        tf_cache=r.number("tf_cache", 0.0, low_open=True),
        use_open3d=r.boolean("use_open3d"),
        cloud_stride=r.integer("cloud_stride", 1),
        marker_lifetime=r.number("marker_lifetime", 0.0),
        miss_updates_to_occlude=r.integer("memory.miss_updates_to_occlude", 1),
        view_margin=r.number("memory.view_margin"),
    )


def settings_from_parameters(params: Mapping[str, object]) -> PerceptionSettings:
    """Check every parameter of the perception node; ValueError listing all problems at once."""
    r = ParamReader(params, "perception")
    source = r.string("source", SOURCES)
    gt_topic = r.string("ground_truth_topic", nonempty=True)
    refresh = r.number("refresh_timeout", 0.0, low_open=True)
    camera = _camera(r)
    r.finish()
    return PerceptionSettings(source, gt_topic, refresh, camera, tuple(r.unused(NOT_MINE)))


@dataclass(frozen=True)
class RealsenseSettings:
    """The realsense_publisher node."""

    serial: str                                 # "" = the only connected device
    bag_file: str                               # a recorded RealSense .bag to play instead of a device
    loop: bool                                  # replay the bag forever
    width: int                                  # px
    height: int                                 # px
    fps: int                                    # Hz
    frame_id: str                               # the images' frame: the colour optical frame
    link_frame: str                             # static link_frame -> frame_id on /tf_static ("" = none)
    namespace_prefix: str                       # topics <prefix>/color/image_raw, ...
    wait_timeout: float                         # s for a frame (and between reconnection attempts)
    bag_wait_for_subscribers: float = 0.0       # s; bag_file only: wait for a subscriber on each topic first
    unused: tuple[str, ...] = ()


def realsense_settings_from_parameters(params: Mapping[str, object]) -> RealsenseSettings:
    """Check every parameter of the RealSense publisher; ValueError listing all problems at once.
    `serial` may be an integer: `-p serial:=001622070408` arrives as one (real serials are digits)."""
    r = ParamReader(params, "realsense_publisher")
    raw = r.params.get("serial")
    if isinstance(raw, int) and not isinstance(raw, bool):
        serial = str(raw)
        r.read.add("serial")
    else:
        serial = r.string("serial")
    s = RealsenseSettings(
        serial=serial.strip(),
        bag_file=r.string("bag_file"),
        loop=r.boolean("loop"),
        width=r.integer("width", 1),
        height=r.integer("height", 1),
        fps=r.integer("fps", 1),
        frame_id=r.string("frame_id", nonempty=True),
        link_frame=r.string("link_frame"),
        namespace_prefix=r.string("namespace_prefix"),
        wait_timeout=r.number("wait_timeout", 0.0, low_open=True),
        bag_wait_for_subscribers=r.number("bag_wait_for_subscribers", 0.0),
    )
    r.check(s.link_frame != s.frame_id, f"link_frame: must differ from frame_id {s.frame_id!r} (or be '')")
    r.finish()
    return replace(s, unused=tuple(r.unused(NOT_MINE)))
