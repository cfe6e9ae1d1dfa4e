"""RGB-D frame -> 2D detections -> 3D objects in the base frame, with per-stage latencies.

Stages (seconds, for diagnostics): decode (raw image bytes -> arrays), detect (2D detector),
depth (robust box deprojection and place points), open3d (table plane and per-box clustering).
"""
from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .geometry import (
    ClusterConfig,
    FloatArray,
    Intrinsics,
    Plane,
    PlaneConfig,
    apply,
    boxes_overlap,
    check_transform,
    cluster_box,
    depth_to_points,
    invert,
    place_point,
    robust_box_depth,
    segment_table_plane,
)
from .object_detectors import Detection, Detector, GroundTruthObject, OracleDetector
from .scene import SceneObject

STAGES = ("decode", "detect", "depth", "open3d")


# -------------------------------------------------------------------------------------- pipeline --

@dataclass(frozen=True)
class Frame:
    """One aligned RGB-D observation. Depth is z-depth (m) registered to the colour image."""

    rgb: NDArray[np.uint8]
    depth_m: NDArray[np.floating[Any]]
    intrinsics: Intrinsics
    base_from_camera: FloatArray   # 4x4 base<-camera_optical
    stamp_s: float                 # observation time, s since the epoch

    def check(self) -> None:
        h, w = self.depth_m.shape[:2]
        if self.rgb.shape[:2] != (h, w):
            raise ValueError(f"colour {self.rgb.shape[:2]} and depth {(h, w)} are not aligned (sizes differ)")
        if (self.intrinsics.width, self.intrinsics.height) != (w, h):
            raise ValueError(f"intrinsics are for {self.intrinsics.width}x{self.intrinsics.height}, image is {w}x{h}")
        check_transform(self.base_from_camera, "camera->base transform")


@dataclass(frozen=True)
class PipelineConfig:
    """The first three fields are the node's parameters (score_threshold, use_open3d, cloud_stride;
    defaults in config/monologue.yaml only, see settings.CameraSettings.pipeline_config); the rest are
    algorithm constants."""

    min_score: float                           # drop detections below this score
    use_open3d: bool                           # table plane + clustering; off = deprojected box centres
    cloud_stride: int                          # px, use every n-th pixel for the point cloud
    inner_fraction: float = 0.5                # central part of the box used for depth (fraction)
    max_depth_m: float = 3.0                   # ignore depth beyond this (m)
    max_cluster_offset_m: float = 0.06         # max x-y offset (m) of a cluster from the box deprojection
    place_categories: tuple[str, ...] = ("bowl", "plate")
    place_margin_fraction: float = 0.2
    plane: PlaneConfig = field(default_factory=PlaneConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)


@dataclass(frozen=True)
class PipelineResult:
    objects: tuple[SceneObject, ...]           # detected now (visible), base frame
    detections: tuple[Detection, ...]          # the 2D detections they came from
    latencies_s: dict[str, float]              # per stage (s)
    table: Plane | None                        # fitted table plane, if any
    dropped: tuple[str, ...] = ()              # detections without usable depth, with the reason


def category_of(name: str, categories: Mapping[str, str] | None = None) -> str:
    """Configured category of an object name, else its last word ("red block" -> "block")."""
    if categories and name in categories:
        return categories[name]
    words = name.strip().split()
    return words[-1].lower() if words else "object"


class PerceptionPipeline:
    def __init__(self, detector: Detector, cfg: PipelineConfig,
                 categories: Mapping[str, str] | None = None, logger: logging.Logger | None = None) -> None:
        self.detector, self.cfg = detector, cfg
        self.categories = dict(categories or {})
        self._log = logger or logging.getLogger(__name__)

    def process(self, frame: Frame, candidates: Sequence[str],
                ground_truth: Sequence[GroundTruthObject] | None = None,
                decode_s: float = 0.0) -> PipelineResult:
        """Detect the candidates in the frame and ground them in 3D (base frame, m).

        `ground_truth` feeds the oracle detector (ignored by the others); `decode_s` is the time the
        caller spent decoding the frame, reported as the "decode" stage.
        """
        frame.check()
        cfg, k, t_bc = self.cfg, frame.intrinsics, frame.base_from_camera
        lat = {"decode": decode_s}
        t0 = time.perf_counter()
        if isinstance(self.detector, OracleDetector):
            self.detector.update(ground_truth or (), k, t_bc, frame.depth_m)
        dets = [d for d in self.detector.detect(frame.rgb, candidates) if d.score >= cfg.min_score]
        lat["detect"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        depth = np.where(frame.depth_m < cfg.max_depth_m, frame.depth_m, 0.0)
        anchors: dict[str, FloatArray] = {}
        dropped = []
        for d in dets:
            est = robust_box_depth(depth, d.box, cfg.inner_fraction, max_depth_m=cfg.max_depth_m)
            if est is None:
                dropped.append(f"{d.label}: no valid depth in its box")
                continue
            cu, cv = (d.box[0] + d.box[2]) / 2, (d.box[1] + d.box[3]) / 2
            anchors[d.label] = apply(t_bc, k.deproject(cu, cv, est.depth_m))
        places: dict[str, tuple[float, float, float]] = {}
        for d in dets:
            if d.label in anchors and category_of(d.label, self.categories) in cfg.place_categories:
                # IM-R: the point farthest from other objects' boxes, counting those that overlap
                # the plate's box (objects on or at it); an empty plate's point is its centre, so a
                # far-away neighbour does not push the block to the rim.
                others = [o.box for o in dets if o.label != d.label and boxes_overlap(o.box, d.box)]
                p = place_point(depth, k, t_bc, d.box, others, cfg.place_margin_fraction)
                if p is not None:
                    places[d.label] = (float(p[0]), float(p[1]), float(p[2]))
        lat["depth"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        plane: Plane | None = None
        clusters = {}
        if cfg.use_open3d and anchors:
            pts_cam, pix = depth_to_points(depth, k, cfg.cloud_stride, max_depth_m=cfg.max_depth_m)
            pts = apply(t_bc, pts_cam) if len(pts_cam) else pts_cam
            try:
                plane, _ = segment_table_plane(pts, cfg.plane)
            except ValueError as e:
                self._log.warning("table plane: %s; clustering without it", e)
            colors = frame.rgb[pix[:, 1], pix[:, 0]] if len(pix) else None
            for d in dets:
                if d.label not in anchors:
                    continue
                c = cluster_box(pts, pix, d.box, plane, cfg.cluster, prefer=anchors[d.label], colors=colors)
                if c is not None and float(np.hypot(*(np.asarray(c.center[:2]) - anchors[d.label][:2]))) \
                        <= cfg.max_cluster_offset_m:
                    clusters[d.label] = c
        lat["open3d"] = time.perf_counter() - t0

        objects = []
        for d in dets:
            if d.label not in anchors:
                continue
            a = anchors[d.label]
            if d.label in clusters:
                pos, size = clusters[d.label].center, clusters[d.label].size
            else:  # the box at its depth: width and height from the pinhole model, no depth extent
                z = float(apply(invert(t_bc), a)[2])
                pos = (float(a[0]), float(a[1]), float(a[2]))
                size = ((d.box[2] - d.box[0]) * z / k.fx, (d.box[3] - d.box[1]) * z / k.fy, 0.0)
            objects.append(SceneObject(
                name=d.label, category=category_of(d.label, self.categories), position=pos, size=size,
                visible=True, confidence=float(d.score), place_point=places.get(d.label)))
        for why in dropped:
            self._log.debug("dropped detection %s", why)
        return PipelineResult(tuple(objects), tuple(dets), lat, plane, tuple(dropped))
