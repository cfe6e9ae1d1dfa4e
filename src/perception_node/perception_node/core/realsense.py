"""ROS-free conversions for realsense_publisher: RealSense intrinsics -> CameraInfo fields, depth
device units -> 16UC1 millimetres, RealSense colour format -> sensor_msgs encoding.

Inputs are plain values (no pyrealsense2 import), so these are tested without the SDK.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

# RealSense colour formats (`rs.format.X`, str() "format.X") published as-is, by sensor_msgs name.
COLOR_ENCODINGS = {"rgb8": "rgb8", "bgr8": "bgr8", "rgba8": "rgba8", "bgra8": "bgra8"}
CHANNELS = {"rgb8": 3, "bgr8": 3, "rgba8": 4, "bgra8": 4}


@dataclass(frozen=True)
class CameraInfoFields:
    """The sensor_msgs/CameraInfo fields of one colour stream (pixels; row-major 3x3 / 3x4)."""

    width: int
    height: int
    distortion_model: str
    d: list[float]
    k: list[float]
    r: list[float]
    p: list[float]


def camera_info_fields(width: int, height: int, fx: float, fy: float, ppx: float, ppy: float,
                       model: str, coeffs: Sequence[float]) -> CameraInfoFields:
    """RealSense `rs.intrinsics` (focal lengths and principal point in pixels, `model` as str(rs.distortion.X)
    or its name, 5 `coeffs`) -> CameraInfo fields. Kannala-Brandt (T265 fisheye) is "equidistant" with
    4 coefficients; every other model is "plumb_bob" (k1 k2 p1 p2 k3, the RealSense order), as realsense-ros
    publishes it. The colour stream is unrectified and monocular: R = I, P = [K | 0]."""
    if width <= 0 or height <= 0 or fx <= 0 or fy <= 0:
        raise ValueError(f"bad intrinsics: {width}x{height} fx {fx} fy {fy}")
    name = str(model).rsplit(".", 1)[-1]
    cs = [float(c) for c in coeffs]
    dist, d = ("equidistant", cs[:4]) if name == "kannala_brandt4" else ("plumb_bob", (cs + [0.0] * 5)[:5])
    fx, fy, ppx, ppy = float(fx), float(fy), float(ppx), float(ppy)
    return CameraInfoFields(
        width=int(width), height=int(height), distortion_model=dist, d=d,
        k=[fx, 0.0, ppx, 0.0, fy, ppy, 0.0, 0.0, 1.0],
        r=[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        p=[fx, 0.0, ppx, 0.0, 0.0, fy, ppy, 0.0, 0.0, 0.0, 1.0, 0.0])


def depth_units_to_mm(units: NDArray[np.generic], depth_scale_m: float) -> NDArray[np.uint16]:
    """z16 depth in device units (`depth_scale_m` metres each: 0.001 on most D4xx, 0.0001 on D405)
    -> uint16 millimetres, rounded; 0 (no data) stays 0, beyond 65.535 m saturates at 65535."""
    if not depth_scale_m > 0:
        raise ValueError(f"depth scale must be > 0 m/unit, got {depth_scale_m}")
    mm = np.asarray(units, dtype=np.float64) * (float(depth_scale_m) * 1000.0)
    return np.clip(np.round(mm), 0, 65535).astype(np.uint16)


def color_encoding(rs_format: str) -> str:
    """str(rs.format.X) or X -> the sensor_msgs/Image encoding; ValueError for formats that would need
    conversion (yuyv, raw, ...): stream rgb8 (the node's live default) or record the bag in rgb8."""
    name = str(rs_format).rsplit(".", 1)[-1]
    if name not in COLOR_ENCODINGS:
        raise ValueError(f"colour format {name!r} is not supported; use one of {sorted(COLOR_ENCODINGS)}")
    return COLOR_ENCODINGS[name]
