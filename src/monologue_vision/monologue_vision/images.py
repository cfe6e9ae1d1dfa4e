"""Raw image bytes (as sensor_msgs/Image carries them, with their `encoding`) -> numpy arrays."""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

RgbImage = NDArray[np.uint8]  # HxWx3, RGB order
COLOR_CHANNELS = {"rgb8": 3, "bgr8": 3, "rgba8": 4, "bgra8": 4, "mono8": 1}


def decode_color(data: bytes, width: int, height: int, encoding: str, step: int = 0) -> RgbImage:
    """Image bytes (rgb8, bgr8, rgba8, bgra8, mono8; `step` bytes per row, 0 = packed) -> HxWx3
    uint8 RGB."""
    if encoding not in COLOR_CHANNELS:
        raise ValueError(f"unsupported colour encoding {encoding!r}; supported: {sorted(COLOR_CHANNELS)}")
    c = COLOR_CHANNELS[encoding]
    step = step or width * c
    buf = np.frombuffer(data, dtype=np.uint8)
    if buf.size < step * height or step < width * c:
        raise ValueError(f"colour image data too short: {buf.size} bytes for {width}x{height} {encoding} step {step}")
    a = buf[: step * height].reshape(height, step)[:, : width * c].reshape(height, width, c)
    if encoding == "mono8":
        return np.ascontiguousarray(np.repeat(a, 3, axis=2))
    if encoding.startswith("bgr"):
        a = a[:, :, 2::-1]
    return np.ascontiguousarray(a[:, :, :3])


def decode_depth(data: bytes, width: int, height: int, encoding: str, step: int = 0,
                 big_endian: bool = False) -> NDArray[np.float32]:
    """Depth image bytes -> HxW float32 metres (0 = no data). 16UC1/mono16 is millimetres (the
    RealSense and ROS convention), 32FC1 metres (NaN and inf become 0)."""
    dt: np.dtype[Any]
    if encoding in ("16UC1", "mono16"):
        dt, scale = np.dtype(np.uint16), 0.001
    elif encoding == "32FC1":
        dt, scale = np.dtype(np.float32), 1.0
    else:
        raise ValueError(f"unsupported depth encoding {encoding!r}; supported: 16UC1 (mm), 32FC1 (m)")
    dt = dt.newbyteorder(">" if big_endian else "<")
    step = step or width * dt.itemsize
    raw = np.frombuffer(data, dtype=np.uint8)
    if raw.size < step * height or step < width * dt.itemsize:
        raise ValueError(f"depth image data too short: {raw.size} bytes for {width}x{height} {encoding} step {step}")
    rows = raw[: step * height].reshape(height, step)[:, : width * dt.itemsize]
    d = np.ascontiguousarray(rows).view(dt).reshape(height, width).astype(np.float32) * np.float32(scale)
    d[~np.isfinite(d)] = 0.0
    return d


def check_image(image: RgbImage) -> None:
    """Raise ValueError unless `image` is HxWx3 uint8."""
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(f"expected an HxWx3 uint8 RGB image, got shape {image.shape} dtype {image.dtype}")
