"""ROS-free conversions for realsense_publisher: RealSense intrinsics -> CameraInfo fields, depth
device units -> 16UC1 millimetres, RealSense colour format -> sensor_msgs encoding.

Inputs are plain values (no pyrealsense2 import), so these are tested without the SDK.
"""
from __future__ import annotations

import math
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


# RealSense timestamp domains (`rs.timestamp_domain.X`, str() "timestamp_domain.X"): how frame.get_timestamp()
# (ms) relates to the host clock.
HOST_DOMAINS = ("system_time", "global_time")  # the host's clock (global: the device clock mapped onto it)
# Optical frame in its camera_link, as realsense-ros publishes it: REP-103 optical (z forward, x right, y down)
# below a body frame (x forward, z up); quaternion x, y, z, w.
OPTICAL_IN_LINK_QUATERNION = (-0.5, 0.5, -0.5, 0.5)


class CaptureClock:
    """The capture time of a RealSense frame in the node's clock (s), from its timestamp (ms) and domain.

    - `system_time` / `global_time`: the timestamp is already host time (librealsense maps the device's
      clock onto the host's for global time; system time is when the host received the frame): used as it
      is, as realsense-ros does, unless it is more than `host_skew_s` from the node's clock (the node runs on
      simulated time): then as a device clock below, as are recordings (their timestamps are old).
    - `hardware_clock` (the device's own clock, ms since power-up), recordings and skewed clocks: the offset
      to the node's clock is the smallest (now - timestamp) seen, i.e. the fastest delivery (a frame cannot
      arrive before it was captured), so stamps keep the frames' true spacing and lag their capture by at
      most the fastest delivery latency seen. It is re-anchored when timestamps go backwards (a device
      reset, a looped bag starting over) or the mapping puts a frame more than `max_skew_s` in the past
      (clock drift).
    """

    def __init__(self, max_skew_s: float = 1.0, host_skew_s: float = 60.0) -> None:
        self._max_skew, self._host_skew = max_skew_s, host_skew_s
        self._offset: float | None = None  # s, node clock - device clock
        self._last = -math.inf  # s, the previous frame's timestamp

    def stamp(self, timestamp_ms: float, domain: str, now_s: float, recorded: bool = False) -> float:
        t = float(timestamp_ms) / 1000.0
        name = str(domain).rsplit(".", 1)[-1]
        if name in HOST_DOMAINS and not recorded and abs(now_s - t) <= self._host_skew:
            return t
        off, last = self._offset, self._last
        self._last = t
        if off is None or t < last or t + off < now_s - self._max_skew:
            off = now_s - t  # (re-)anchor: this frame taken as delivered at once
        self._offset = off = min(off, now_s - t)  # a faster delivery: the offset was too large
        return t + off
