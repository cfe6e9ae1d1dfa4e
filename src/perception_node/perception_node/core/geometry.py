"""RGB-D geometry: pinhole intrinsics, robust box deprojection, frame transforms, table-plane removal
and per-box clustering (open3d), and the IM real-tabletop place point for plates and bowls.

Conventions: images are indexed [row v, column u]; pixel (u, v) is the centre of that pixel
(OpenCV/ROS CameraInfo convention). Camera points are in the optical frame (x right, y down,
z forward), in metres. A "transform A<-B" is a 4x4 homogeneous matrix that maps points expressed
in frame B to frame A (i.e. the pose of B in A). Depth images are z-depth in metres, 0 or NaN = no data.
"""
from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
Box = tuple[float, float, float, float]  # x_min, y_min, x_max, y_max in pixels


@dataclass(frozen=True)
class Intrinsics:
    """Pinhole intrinsics in pixels of a `width` x `height` image (no distortion: the colour image
    of a RealSense or a simulator is rectified)."""

    fx: float
    fy: float
    cx: float
    cy: float
    width: int
    height: int

    def __post_init__(self) -> None:
        if self.fx <= 0 or self.fy <= 0:
            raise ValueError(f"focal lengths must be > 0 px (fx={self.fx}, fy={self.fy})")
        if self.width <= 0 or self.height <= 0:
            raise ValueError(f"image size must be > 0 px ({self.width}x{self.height})")

    @classmethod
    def from_k(cls, k: Sequence[float], width: int, height: int) -> Intrinsics:
        """From a row-major 3x3 camera matrix K (sensor_msgs/CameraInfo.k)."""
        if len(k) != 9:
            raise ValueError(f"K must have 9 elements, got {len(k)}")
        return cls(float(k[0]), float(k[4]), float(k[2]), float(k[5]), int(width), int(height))

    @classmethod
    def from_fov(cls, width: int, height: int, vertical_fov_rad: float) -> Intrinsics:
        """Square pixels, principal point at the image centre, vertical field of view in rad."""
        f = 0.5 * height / math.tan(0.5 * vertical_fov_rad)
        return cls(f, f, (width - 1) / 2.0, (height - 1) / 2.0, width, height)

    def project(self, points_cam: FloatArray) -> FloatArray:
        """Nx3 camera points (m) -> Nx2 pixel coordinates (u, v); points must have z > 0."""
        z = points_cam[:, 2]
        return np.stack([self.fx * points_cam[:, 0] / z + self.cx, self.fy * points_cam[:, 1] / z + self.cy], axis=1)

    def deproject(self, u: float, v: float, z: float) -> FloatArray:
        """Pixel (u, v) at z-depth z (m) -> camera point (m)."""
        return np.array([(u - self.cx) * z / self.fx, (v - self.cy) * z / self.fy, z], dtype=np.float64)


# ------------------------------------------------------------------------------------ transforms --

def transform_from_quaternion(translation: Sequence[float], quaternion_xyzw: Sequence[float]) -> FloatArray:
    """4x4 transform from a translation (m) and a unit quaternion (x, y, z, w), as in geometry_msgs."""
    x, y, z, w = (float(q) for q in quaternion_xyzw)
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if n < 1e-9:
        raise ValueError("quaternion has zero length")
    x, y, z, w = x / n, y / n, z / n, w / n
    t = np.eye(4)
    t[:3, :3] = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ]
    t[:3, 3] = [float(v) for v in translation]
    return t


def quaternion_from_matrix(t: FloatArray) -> tuple[float, float, float, float]:
    """Unit quaternion (x, y, z, w) of the rotation part of a 4x4 transform."""
    r = t[:3, :3]
    tr = float(np.trace(r))
    if tr > 0:
        s = math.sqrt(tr + 1.0) * 2
        return ((r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s, 0.25 * s)
    i = int(np.argmax(np.diag(r)))
    j, k = (i + 1) % 3, (i + 2) % 3
    s = math.sqrt(1.0 + r[i, i] - r[j, j] - r[k, k]) * 2
    q = [0.0, 0.0, 0.0, 0.0]
    q[i] = 0.25 * s
    q[j] = (r[j, i] + r[i, j]) / s
    q[k] = (r[k, i] + r[i, k]) / s
    q[3] = (r[k, j] - r[j, k]) / s
    return (q[0], q[1], q[2], q[3])


def transform_from_rpy(translation: Sequence[float], rpy_rad: Sequence[float]) -> FloatArray:
    """4x4 transform from a translation (m) and fixed-axis roll, pitch, yaw (rad), as in URDF."""
    roll, pitch, yaw = (float(a) for a in rpy_rad)
    cr, sr, cp, sp = math.cos(roll), math.sin(roll), math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    t = np.eye(4)
    t[:3, :3] = [
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ]
    t[:3, 3] = [float(v) for v in translation]
    return t


def look_at(eye: Sequence[float], target: Sequence[float], up: Sequence[float] = (0.0, 0.0, 1.0)) -> FloatArray:
    """Transform base<-camera_optical for a camera at `eye` (m) looking at `target` (m).

    The optical z axis points at the target; the image "up" (-y) is as close to `up` as possible.
    """
    e, c, u = (np.asarray(a, dtype=np.float64) for a in (eye, target, up))
    z = c - e
    z /= np.linalg.norm(z)
    x = np.cross(z, u)
    if np.linalg.norm(x) < 1e-6:  # looking along `up`: any x works
        x = np.cross(z, np.array([1.0, 0.0, 0.0]))
        if np.linalg.norm(x) < 1e-6:
            x = np.cross(z, np.array([0.0, 1.0, 0.0]))
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    t = np.eye(4)
    t[:3, 0], t[:3, 1], t[:3, 2], t[:3, 3] = x, y, z, e
    return t


def invert(t: FloatArray) -> FloatArray:
    """Inverse of a rigid 4x4 transform."""
    out = np.eye(4)
    out[:3, :3] = t[:3, :3].T
    out[:3, 3] = -t[:3, :3].T @ t[:3, 3]
    return out


def camera_to_base_from_hand_eye(base_to_tool0: FloatArray, tool0_to_camera: FloatArray) -> FloatArray:
    """base<-camera from the arm's forward kinematics (base<-tool0, the pose of tool0 in the base
    frame) and the hand-eye calibration (tool0<-camera, the pose of the camera in tool0)."""
    return base_to_tool0 @ tool0_to_camera


def apply(t: FloatArray, points: FloatArray) -> FloatArray:
    """Apply a 4x4 transform to Nx3 points (or one 3-vector)."""
    p = np.asarray(points, dtype=np.float64)
    if p.ndim == 1:
        return np.asarray(t[:3, :3] @ p + t[:3, 3], dtype=np.float64)
    return np.asarray(p @ t[:3, :3].T + t[:3, 3], dtype=np.float64)


def in_view(point_base: Sequence[float], k: Intrinsics, base_from_camera: FloatArray, margin_px: float = 0.0,
            max_depth_m: float = 3.0) -> bool:
    """True if a base-frame point (m) is in front of the camera, within `max_depth_m`, and projects
    at least `margin_px` inside the image."""
    p = apply(invert(base_from_camera), np.asarray(point_base, dtype=np.float64).reshape(1, 3))[0]
    if not 0.0 < p[2] <= max_depth_m:
        return False
    u, v = k.project(p.reshape(1, 3))[0]
    return bool(margin_px <= u <= k.width - margin_px and margin_px <= v <= k.height - margin_px)


def check_transform(t: FloatArray, what: str = "transform") -> FloatArray:
    """Return `t` as a float 4x4 array, or raise ValueError if it is not a rigid transform."""
    a = np.asarray(t, dtype=np.float64)
    if a.shape != (4, 4) or not np.all(np.isfinite(a)):
        raise ValueError(f"{what} must be a finite 4x4 matrix, got shape {a.shape}")
    r = a[:3, :3]
    if not np.allclose(r @ r.T, np.eye(3), atol=1e-4) or not np.allclose(a[3], [0, 0, 0, 1]):
        raise ValueError(f"{what} is not a rigid transform (rotation not orthonormal or bad last row)")
    return a


# ------------------------------------------------------------------------------------ boxes/depth --

def clip_box(box: Box, width: int, height: int) -> tuple[int, int, int, int]:
    """Integer pixel bounds [u0, u1) x [v0, v1) of a box, clipped to the image (may be empty)."""
    u0 = max(0, int(math.floor(box[0])))
    v0 = max(0, int(math.floor(box[1])))
    u1 = min(width, int(math.ceil(box[2])))
    v1 = min(height, int(math.ceil(box[3])))
    return u0, v0, max(u0, u1), max(v0, v1)


def shrink_box(box: Box, fraction: float) -> Box:
    """The central part of a box: `fraction` of its width and height, same centre."""
    cu, cv = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    hw, hh = (box[2] - box[0]) * fraction / 2, (box[3] - box[1]) * fraction / 2
    return (cu - hw, cv - hh, cu + hw, cv + hh)


def valid_depth_mask(depth_m: NDArray[np.floating[Any]], min_m: float, max_m: float) -> NDArray[np.bool_]:
    mask: NDArray[np.bool_] = np.isfinite(depth_m) & (depth_m > min_m) & (depth_m < max_m)
    return mask


@dataclass(frozen=True)
class DepthEstimate:
    depth_m: float        # robust z-depth of the box (m)
    n_valid: int          # pixels that contributed
    spread_m: float       # median absolute deviation of the inliers (m)


def robust_box_depth(
    depth_m: NDArray[np.floating[Any]], box: Box, inner_fraction: float = 0.5,
    min_depth_m: float = 0.05, max_depth_m: float = 5.0, mad_k: float = 3.0, min_pixels: int = 5,
) -> DepthEstimate | None:
    """Robust z-depth (m) of the object in `box`: the median of the valid depths in the central
    `inner_fraction` of the box after rejecting points farther than `mad_k` median absolute
    deviations (at least 5 mm) from the first median. None if fewer than `min_pixels` are valid.

    A single centre pixel (as in IM:L718-752) falls on a hole or an edge often enough on a RealSense
    that a statistic over the inner box is needed; the outlier pass drops the table and edge flyers.
    """
    h, w = depth_m.shape[:2]
    u0, v0, u1, v1 = clip_box(shrink_box(box, inner_fraction), w, h)
    if u1 - u0 < 1 or v1 - v0 < 1:
        u0, v0, u1, v1 = clip_box(box, w, h)
    patch = np.asarray(depth_m[v0:v1, u0:u1], dtype=np.float64)
    vals = patch[valid_depth_mask(patch, min_depth_m, max_depth_m)]
    if vals.size < min_pixels:
        return None
    med = float(np.median(vals))
    mad = float(np.median(np.abs(vals - med)))
    keep = vals[np.abs(vals - med) <= max(mad_k * 1.4826 * mad, 0.005)]
    if keep.size < min_pixels:
        keep = vals
    med2 = float(np.median(keep))
    return DepthEstimate(med2, int(keep.size), float(np.median(np.abs(keep - med2))))


def deproject_box_center(
    depth_m: NDArray[np.floating[Any]], box: Box, k: Intrinsics, base_from_camera: FloatArray,
    inner_fraction: float = 0.5,
) -> FloatArray | None:
    """Base-frame point (m) of the box centre at the box's robust depth; None without valid depth."""
    est = robust_box_depth(depth_m, box, inner_fraction)
    if est is None:
        return None
    cu, cv = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return apply(base_from_camera, k.deproject(cu, cv, est.depth_m))


def depth_to_points(
    depth_m: NDArray[np.floating[Any]], k: Intrinsics, stride: int = 1,
    min_depth_m: float = 0.05, max_depth_m: float = 5.0,
) -> tuple[FloatArray, NDArray[np.int64]]:
    """Camera-frame points (Nx3, m) of every `stride`-th valid pixel, and their (u, v) pixels (Nx2)."""
    if stride < 1:
        raise ValueError("stride must be >= 1")
    d = np.asarray(depth_m, dtype=np.float64)[::stride, ::stride]
    vs, us = np.nonzero(valid_depth_mask(d, min_depth_m, max_depth_m))
    z = d[vs, us]
    u = us.astype(np.float64) * stride
    v = vs.astype(np.float64) * stride
    pts = np.stack([(u - k.cx) * z / k.fx, (v - k.cy) * z / k.fy, z], axis=1)
    pix = np.stack([us * stride, vs * stride], axis=1).astype(np.int64)
    return pts, pix


# ------------------------------------------------------------------------------ plane + clusters --

def _o3d() -> Any:
    """open3d, imported on first use (the import takes seconds)."""
    return importlib.import_module("open3d")


def _cloud(points: FloatArray) -> Any:
    o3d = _o3d()
    pc = o3d.geometry.PointCloud()
    pc.points = o3d.utility.Vector3dVector(np.ascontiguousarray(points, dtype=np.float64))
    return pc


@dataclass(frozen=True)
class Plane:
    """Plane a*x + b*y + c*z + d = 0 in the base frame, unit normal (a, b, c) pointing up (+z)."""

    a: float
    b: float
    c: float
    d: float

    def signed_distance(self, points: FloatArray) -> FloatArray:
        return np.asarray(points @ np.array([self.a, self.b, self.c]) + self.d, dtype=np.float64)

    def height_at(self, x: float, y: float) -> float:
        """z (m) of the plane at (x, y); the plane must not be vertical."""
        return -(self.a * x + self.b * y + self.d) / self.c


@dataclass(frozen=True)
class PlaneConfig:
    distance_threshold_m: float = 0.006   # RANSAC inlier distance (m)
    ransac_n: int = 3
    iterations: int = 200
    max_tilt_rad: float = 0.35            # accept only planes within this angle of horizontal (rad)
    seed: int = 0                         # open3d's RANSAC seed, for repeatable results


def segment_table_plane(points_base: FloatArray, cfg: PlaneConfig = PlaneConfig()) -> tuple[Plane, NDArray[np.bool_]]:
    """The dominant (near-horizontal) plane of a base-frame cloud with open3d RANSAC, and its inlier mask.

    Raises ValueError if the cloud is too small or the best plane is tilted more than `max_tilt_rad`.
    """
    if len(points_base) < max(cfg.ransac_n, 10):
        raise ValueError(f"too few points ({len(points_base)}) to fit the table plane")
    o3d = _o3d()
    o3d.utility.random.seed(cfg.seed)
    model, inliers = _cloud(points_base).segment_plane(
        distance_threshold=cfg.distance_threshold_m, ransac_n=cfg.ransac_n, num_iterations=cfg.iterations)
    a, b, c, d = (float(v) for v in np.asarray(model).ravel())
    n = math.sqrt(a * a + b * b + c * c)
    a, b, c, d = a / n, b / n, c / n, d / n
    if c < 0:
        a, b, c, d = -a, -b, -c, -d
    tilt = math.acos(min(1.0, c))
    if tilt > cfg.max_tilt_rad:
        raise ValueError(f"dominant plane is tilted {math.degrees(tilt):.0f} deg from horizontal; no table found")
    mask = np.zeros(len(points_base), dtype=bool)
    mask[np.asarray(inliers, dtype=np.int64)] = True
    return Plane(a, b, c, d), mask


@dataclass(frozen=True)
class ClusterConfig:
    eps_m: float = 0.012            # DBSCAN neighbourhood radius (m)
    min_points: int = 8             # DBSCAN core-point neighbours
    min_cluster_points: int = 15    # smaller clusters are noise
    above_plane_m: float = 0.004    # points closer to the table than this (m) are table, not object
    chroma_tolerance: float = 0.08  # keep points whose rg-chromaticity is this close to the box's; 0 = off
    extend_to_support: bool = True  # objects rest on something: extend the extent down to it
    support_margin_m: float = 0.01  # look for the supporting object this far around the footprint (m)
    min_support_points: int = 5


@dataclass(frozen=True)
class Cluster:
    """An object's points: centre of their bounding box and extent (m, base frame)."""

    center: tuple[float, float, float]
    size: tuple[float, float, float]
    n_points: int


def chromaticity(rgb: NDArray[Any]) -> FloatArray:
    """Nx2 (r, g) chromaticity r/(r+g+b), g/(r+g+b): invariant to shading brightness."""
    c = np.asarray(rgb, dtype=np.float64)
    s = np.maximum(c.sum(axis=1, keepdims=True), 1.0)
    return np.asarray(c[:, :2] / s, dtype=np.float64)


def cluster_box(
    points_base: FloatArray, pixels: NDArray[np.int64], box: Box, plane: Plane | None,
    cfg: ClusterConfig = ClusterConfig(), prefer: FloatArray | None = None,
    colors: NDArray[Any] | None = None,
) -> Cluster | None:
    """The object in `box` from the above-table points whose pixels fall in it (open3d DBSCAN).

    - With `colors` (Nx3 RGB of each point), only points whose chromaticity matches the inner half
      of the box are kept, which separates a block from the differently coloured block under it.
    - The largest cluster wins, or the one nearest `prefer` (a base-frame point, m) when given.
    - The camera sees the top and some sides only, so with `extend_to_support` the bottom is
      extended down to what the object rests on: with colours, the top of differently coloured
      points just around and below its footprint (the block underneath), else the table plane.
    """
    all_above = np.ones(len(points_base), dtype=bool) if plane is None else \
        plane.signed_distance(points_base) > cfg.above_plane_m
    inside = all_above & ((pixels[:, 0] >= box[0]) & (pixels[:, 0] <= box[2]) &
                          (pixels[:, 1] >= box[1]) & (pixels[:, 1] <= box[3]))
    pts, pix = points_base[inside], pixels[inside]
    chroma_all: FloatArray | None = None
    ref: FloatArray | None = None
    if colors is not None and cfg.chroma_tolerance > 0 and len(pts):
        chroma_all = chromaticity(np.asarray(colors, dtype=np.float64))
        chroma = chroma_all[inside]
        inner = shrink_box(box, 0.5)
        core = ((pix[:, 0] >= inner[0]) & (pix[:, 0] <= inner[2]) & (pix[:, 1] >= inner[1]) & (pix[:, 1] <= inner[3]))
        ref = np.median(chroma[core] if core.any() else chroma, axis=0)
        pts = pts[np.linalg.norm(chroma - ref, axis=1) < cfg.chroma_tolerance]
    if len(pts) < cfg.min_cluster_points:
        return None
    labels = np.asarray(_cloud(pts).cluster_dbscan(eps=cfg.eps_m, min_points=cfg.min_points), dtype=np.int64)
    top = int(labels.max()) if labels.size else -1
    ids = [i for i in range(top + 1) if int(np.sum(labels == i)) >= cfg.min_cluster_points]
    if not ids:
        return None
    if prefer is not None:
        best = min(ids, key=lambda i: float(np.min(np.linalg.norm(pts[labels == i] - prefer, axis=1))))
    else:
        best = max(ids, key=lambda i: int(np.sum(labels == i)))
    sel = pts[labels == best]
    lo, hi = sel.min(axis=0), sel.max(axis=0)
    if cfg.extend_to_support and plane is not None:
        cx, cy = (lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2
        support = plane.height_at(cx, cy)
        if chroma_all is not None and ref is not None:
            # Differently coloured object points just around and below the footprint: what it stands on.
            m = cfg.support_margin_m
            near = all_above & (points_base[:, 0] > lo[0] - m) & (points_base[:, 0] < hi[0] + m) & \
                (points_base[:, 1] > lo[1] - m) & (points_base[:, 1] < hi[1] + m) & \
                (points_base[:, 2] <= lo[2] + 0.005) & \
                (np.linalg.norm(chroma_all - ref, axis=1) >= cfg.chroma_tolerance)
            if int(near.sum()) >= cfg.min_support_points:
                support = max(support, float(np.percentile(points_base[near, 2], 95)))
        lo[2] = min(lo[2], support)
    c, s = (lo + hi) / 2, hi - lo
    return Cluster((float(c[0]), float(c[1]), float(c[2])), (float(s[0]), float(s[1]), float(s[2])), int(len(sel)))


# ---------------------------------------------------------------------------------- place point --

def _box_distance(u: FloatArray, v: FloatArray, box: Box) -> FloatArray:
    """Euclidean pixel distance from points (u, v) to an axis-aligned box (0 inside)."""
    du = np.maximum(np.maximum(box[0] - u, 0.0), u - box[2])
    dv = np.maximum(np.maximum(box[1] - v, 0.0), v - box[3])
    return np.asarray(np.hypot(du, dv), dtype=np.float64)


def boxes_overlap(a: Box, b: Box) -> bool:
    """True if two pixel boxes (x0, y0, x1, y1) share any area."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def place_pixel(target: Box, others: Sequence[Box], margin_fraction: float = 0.2,
                grid: int = 21) -> tuple[float, float]:
    """IM real tabletop sorting place point (IM App. A.2): "a point in the target plate's bounding
    box that is farthest away from the bounding boxes of other objects", in pixels.

    The search grid covers the box shrunk by `margin_fraction` on each side, so the point stays on
    the plate rather than its rim. Ties (e.g. no other boxes) go to the point nearest the centre.
    """
    if not 0.0 <= margin_fraction < 0.5:
        raise ValueError("margin_fraction must be in [0, 0.5)")
    w, h = target[2] - target[0], target[3] - target[1]
    us = np.linspace(target[0] + margin_fraction * w, target[2] - margin_fraction * w, grid)
    vs = np.linspace(target[1] + margin_fraction * h, target[3] - margin_fraction * h, grid)
    uu, vv = np.meshgrid(us, vs)
    u, v = uu.ravel(), vv.ravel()
    cu, cv = (target[0] + target[2]) / 2, (target[1] + target[3]) / 2
    centre_dist = np.hypot(u - cu, v - cv)
    if not others:
        return float(cu), float(cv)
    clearance = np.min(np.stack([_box_distance(u, v, b) for b in others]), axis=0)
    # Maximise clearance; among (near-)equal clearances prefer the point nearest the centre.
    score = np.round(clearance, 3) - 1e-6 * centre_dist
    i = int(np.argmax(score))
    return float(u[i]), float(v[i])


def place_point(
    depth_m: NDArray[np.floating[Any]], k: Intrinsics, base_from_camera: FloatArray, target: Box,
    others: Sequence[Box], margin_fraction: float = 0.2, window_px: int = 9,
) -> FloatArray | None:
    """Base-frame place point (m) for a plate or bowl: `place_pixel` deprojected with the robust depth
    of a `window_px` square around it. None without valid depth there."""
    u, v = place_pixel(target, others, margin_fraction)
    half = window_px / 2
    est = robust_box_depth(depth_m, (u - half, v - half, u + half, v + half), inner_fraction=1.0)
    if est is None:
        return None
    return apply(base_from_camera, k.deproject(u, v, est.depth_m))
