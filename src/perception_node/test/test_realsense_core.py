"""realsense_publisher's ROS-free conversions: intrinsics -> CameraInfo, depth units -> 16UC1 mm,
RealSense colour format -> encoding."""
from __future__ import annotations

import numpy as np
import pytest

from monologue_vision.images import decode_depth
from perception_node.core.realsense import camera_info_fields, color_encoding, depth_units_to_mm


def test_camera_info_from_intrinsics() -> None:
    f = camera_info_fields(640, 480, 610.5, 612.25, 321.0, 239.5, "distortion.inverse_brown_conrady",
                           [0.1, -0.2, 0.001, 0.002, 0.03])
    assert (f.width, f.height, f.distortion_model) == (640, 480, "plumb_bob")
    assert f.k == [610.5, 0.0, 321.0, 0.0, 612.25, 239.5, 0.0, 0.0, 1.0]
    assert f.p == [610.5, 0.0, 321.0, 0.0, 0.0, 612.25, 239.5, 0.0, 0.0, 0.0, 1.0, 0.0]
    assert f.r == [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    assert f.d == [0.1, -0.2, 0.001, 0.002, 0.03]


def test_camera_info_models() -> None:
    fish = camera_info_fields(848, 800, 286.0, 286.0, 424.0, 400.0, "kannala_brandt4", [0.1, 0.2, 0.3, 0.4, 0.0])
    assert fish.distortion_model == "equidistant" and fish.d == [0.1, 0.2, 0.3, 0.4]
    assert camera_info_fields(4, 3, 1.0, 1.0, 2.0, 1.5, "distortion.none", []).d == [0.0] * 5
    with pytest.raises(ValueError, match="bad intrinsics"):
        camera_info_fields(0, 480, 600.0, 600.0, 320.0, 240.0, "none", [0.0] * 5)


@pytest.mark.parametrize("scale", [0.001, 0.0001, 0.00025])
def test_depth_units_to_mm(scale: float) -> None:
    units = np.array([[0, 1, 1000], [4000, 65535, 12345]], np.uint16)
    mm = depth_units_to_mm(units, scale)
    assert mm.dtype == np.uint16 and mm.shape == units.shape
    assert np.all(np.abs(mm - units.astype(np.float64) * scale * 1000) <= 0.5 + 1e-6)  # rounded to the mm
    if scale == 0.001:
        assert np.array_equal(mm, units)
    assert mm[0, 0] == 0  # no data stays no data
    # and the perception node reads it back as metres (to the mm)
    back = decode_depth(mm.tobytes(), 3, 2, "16UC1")
    assert np.allclose(back, units * scale, atol=0.0005 + 1e-9)


def test_depth_saturates_and_rejects_bad_scale() -> None:
    assert depth_units_to_mm(np.array([65535], np.uint16), 0.01)[0] == 65535  # 655 m
    with pytest.raises(ValueError, match="depth scale"):
        depth_units_to_mm(np.zeros(2, np.uint16), 0.0)


def test_color_encoding() -> None:
    assert color_encoding("format.rgb8") == "rgb8" and color_encoding("bgra8") == "bgra8"
    with pytest.raises(ValueError, match="yuyv"):
        color_encoding("format.yuyv")
