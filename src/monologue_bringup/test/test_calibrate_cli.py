"""monologue-calibrate's arguments, its flange lookup at an image's stamp, and the file it writes."""
from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pytest

from monologue_bringup.calibrate import _interpolate, calibration_from, main, parse_args
from monologue_vision.calibration.handeye import HandEyeResult
from monologue_vision.calibration.transforms import make_transform, rotvec_to_matrix


def test_arguments() -> None:
    a = parse_args(["robot:=spot_realsense", "--auto", "method:=park", "poses:=18", "tool_frame:=hand",
                    "base_frame:=body", "out:=x.yaml"])
    assert (a.robot, a.auto, a.method, a.poses, a.tool_frame, a.base_frames, a.out) == (
        "spot_realsense", True, "park", 18, "hand", ("body",), "x.yaml")
    with pytest.raises(ValueError, match="method:=magic is not one of"):
        parse_args(["method:=magic"])
    with pytest.raises(ValueError, match="poses:= 3..60"):
        parse_args(["poses:=2"])
    with pytest.raises(ValueError, match="unknown argument"):
        parse_args(["speed:=3"])
    assert main(["method:=magic"]) == 2


def test_the_flange_pose_is_interpolated_at_the_image_stamp() -> None:
    a = make_transform(np.eye(3), (0.0, 0.0, 0.0))
    b = make_transform(rotvec_to_matrix((0.0, 0.0, 0.2)), (0.1, 0.0, 0.0))
    history = [(1.0, a), (2.0, b)]
    mid = _interpolate(history, 1.5)
    assert mid is not None and mid[0, 3] == pytest.approx(0.05)
    assert math.atan2(mid[1, 0], mid[0, 0]) == pytest.approx(0.1, abs=1e-3)
    exact = _interpolate(history, 2.0)
    assert exact is not None and np.allclose(exact, b)
    assert _interpolate(history, 3.0) is None and _interpolate([], 1.0) is None


def test_the_file_carries_the_mount_frame_method_and_residuals() -> None:
    x = make_transform(rotvec_to_matrix((0.0, 0.0, math.pi / 2)), (0.01, 0.02, 0.03))
    result = HandEyeResult(x, "daniilidis", 17, 0.3, 0.7, 0.02, 0.05)
    when = dt.datetime(2026, 11, 29, tzinfo=dt.UTC)
    cal = calibration_from(result, "spot_realsense", when, tool_frame="hand")
    assert cal.parent_frame == "hand" and cal.method == "daniilidis" and cal.samples == 17 and cal.date == when
    assert cal.translation == (0.01, 0.02, 0.03)
    assert cal.rotation == pytest.approx((0.0, 0.0, math.sqrt(0.5), math.sqrt(0.5)))
    assert cal.residuals["translation_max_mm"] == 0.7
