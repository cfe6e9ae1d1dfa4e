"""Image decoding from raw sensor_msgs/Image bytes."""
from __future__ import annotations

import numpy as np
import pytest

from monologue_vision.images import check_image, decode_color, decode_depth


def test_decode_color_and_depth_round_trip() -> None:
    rgb = np.random.default_rng(0).integers(0, 255, (4, 5, 3), dtype=np.uint8)
    assert np.array_equal(decode_color(rgb.tobytes(), 5, 4, "rgb8"), rgb)
    assert np.array_equal(decode_color(rgb[:, :, ::-1].copy().tobytes(), 5, 4, "bgr8"), rgb)
    padded = np.zeros((4, 16), np.uint8)
    padded[:, :15] = rgb.reshape(4, 15)
    assert np.array_equal(decode_color(padded.tobytes(), 5, 4, "rgb8", step=16), rgb)
    mm = np.array([[0, 1000], [523, 65535]], dtype=np.uint16)
    assert np.allclose(decode_depth(mm.tobytes(), 2, 2, "16UC1"), [[0, 1.0], [0.523, 65.535]])
    m = np.array([[np.nan, 1.5], [np.inf, 0.25]], dtype=np.float32)
    assert np.allclose(decode_depth(m.tobytes(), 2, 2, "32FC1"), [[0, 1.5], [0, 0.25]])
    assert np.allclose(decode_depth(mm.astype(">u2").tobytes(), 2, 2, "16UC1", big_endian=True)[0, 1], 1.0)
    with pytest.raises(ValueError, match="too short"):
        decode_depth(b"\x00" * 3, 2, 2, "16UC1")
    with pytest.raises(ValueError, match="unsupported"):
        decode_color(b"", 1, 1, "yuv422")


def test_decode_color_bgra_mono_and_short_data() -> None:
    rgb = np.random.default_rng(1).integers(0, 255, (3, 2, 3), dtype=np.uint8)
    bgra = np.concatenate([rgb[:, :, ::-1], np.full((3, 2, 1), 255, np.uint8)], axis=2)
    assert np.array_equal(decode_color(bgra.tobytes(), 2, 3, "bgra8"), rgb)
    mono = rgb[:, :, 0].copy()
    out = decode_color(mono.tobytes(), 2, 3, "mono8")
    assert out.shape == (3, 2, 3) and np.array_equal(out[:, :, 2], mono)
    with pytest.raises(ValueError, match="too short"):
        decode_color(rgb.tobytes()[:-1], 2, 3, "rgb8")


def test_check_image_rejects_non_rgb() -> None:
    check_image(np.zeros((2, 2, 3), np.uint8))
    with pytest.raises(ValueError, match="HxWx3 uint8"):
        check_image(np.zeros((2, 2), np.uint8))
