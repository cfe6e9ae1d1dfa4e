"""Hand-eye calibration core: degenerate pose sets are refused, the solver recovers a known mount from
exact synthetic samples, the board is detected in its own image, and the calibration file round-trips."""
from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import numpy as np
import pytest

from monologue_vision.calibration.board import BoardDetector, BoardSpec
from monologue_vision.calibration.handeye import Sample, solve, transform_error
from monologue_vision.calibration.poses import DegeneratePoseSet, check_pose_set, plan_poses, require_pose_set
from monologue_vision.calibration.store import (
    Calibration,
    calibration_status,
    default_calibration_path,
    read_calibration,
    write_calibration,
)
from monologue_vision.calibration.transforms import (
    Mat,
    invert,
    make_transform,
    matrix_to_quat,
    quat_to_matrix,
    rotvec_to_matrix,
)

MOUNT = make_transform(rotvec_to_matrix((0.02, -0.03, 1.6)), (-0.07, 0.01, 0.03))  # optical frame in tool0
BOARD = make_transform(rotvec_to_matrix((math.pi, 0.0, 0.1)), (0.5, 0.05, 0.0))  # board in base


def _samples(tools: list[Mat]) -> list[Sample]:
    return [Sample(t, invert(t @ MOUNT) @ BOARD) for t in tools]


def test_a_planned_set_passes_and_recovers_the_mount_exactly() -> None:
    tools = plan_poses((0.5, 0.05, 0.0), MOUNT, count=16)
    report = check_pose_set(tools)
    assert report.ok, report.problems
    assert report.rotation_spread_deg > 40.0 and report.axis_spread_deg > 60.0
    result = solve(_samples(tools), "tsai")
    mm, deg = transform_error(result.tool_from_camera, MOUNT)
    assert mm < 0.01 and deg < 0.001
    assert result.translation_rms_mm < 0.01 and result.samples == 16


def test_too_few_samples_are_refused() -> None:
    tools = plan_poses((0.5, 0.0, 0.0), MOUNT, count=6)
    with pytest.raises(DegeneratePoseSet, match="too few samples: 6"):
        require_pose_set(tools)


def test_translations_only_have_no_rotation_spread() -> None:
    start = plan_poses((0.5, 0.0, 0.0), MOUNT, count=1)[0]
    tools = [start @ make_transform(np.eye(3), (0.01 * i, -0.01 * i, 0.0)) for i in range(15)]
    problems = check_pose_set(tools).problems
    assert any("rotation spread 0.0 deg" in p for p in problems)
    assert any("nearly parallel" in p for p in problems)


def test_rotations_about_one_axis_only_are_refused() -> None:
    start = plan_poses((0.5, 0.0, 0.0), MOUNT, count=1)[0]
    tools = [start @ make_transform(rotvec_to_matrix((0.0, 0.0, math.radians(8 * i))), (0.0, 0.0, 0.0))
             for i in range(15)]
    report = check_pose_set(tools)
    assert report.rotation_spread_deg > 100.0
    assert report.problems and all("nearly parallel" in p for p in report.problems)
    with pytest.raises(DegeneratePoseSet):
        solve(_samples(tools), "park")


def test_unknown_method_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown hand-eye method"):
        solve(_samples(plan_poses((0.5, 0.0, 0.0), MOUNT)), "magic")


def test_the_board_is_detected_at_its_pose_in_its_own_image() -> None:
    spec = BoardSpec()
    px = 60  # px per square: the image is a camera at 1 m with f = px / square_length (px)
    image = spec.image(px_per_square=px, margin_px=40)
    f = px / spec.square_length
    k = np.array([[f, 0.0, 40.0 - 0.5], [0.0, f, 40.0 - 0.5], [0.0, 0.0, 1.0]])
    seen = BoardDetector(spec, k).detect(image)
    assert seen is not None and seen.corners == (spec.squares_x - 1) * (spec.squares_y - 1)
    assert np.allclose(seen.camera_from_board[:3, 3], (0.0, 0.0, 1.0), atol=2e-3)
    assert np.allclose(seen.camera_from_board[:3, :3], np.eye(3), atol=1e-2)
    assert BoardDetector(spec, k).detect(np.full_like(image, 255)) is None


def test_the_file_round_trips_and_its_age_is_checked(tmp_path: Path) -> None:
    when = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)
    cal = Calibration(robot="ur5e", translation=(-0.07, 0.01, 0.03), rotation=matrix_to_quat(MOUNT[:3, :3]),
                      date=when, method="park", samples=17,
                      residuals={"translation_rms_mm": 0.42, "rotation_rms_deg": 0.031})
    path = write_calibration(tmp_path / "calibration" / "ur5e.yaml", cal)
    back = read_calibration(path)
    assert back.date == when and back.method == "park" and back.samples == 17
    assert back.residuals["translation_rms_mm"] == pytest.approx(0.42)
    assert back.parent_frame == "tool0" and back.child_frame == "camera_color_optical_frame"
    assert np.allclose(quat_to_matrix(back.rotation), MOUNT[:3, :3]) and back.translation == cal.translation
    ok, message = calibration_status(path, 30.0, now=when + dt.timedelta(days=10))
    assert ok and "10.0 days old" in message and "0.4 mm" in message
    ok, message = calibration_status(path, 30.0, now=when + dt.timedelta(days=45))
    assert not ok and "45 days old" in message and "monologue-calibrate" in message


def test_missing_and_malformed_files_are_not_ok(tmp_path: Path) -> None:
    ok, message = calibration_status(tmp_path / "none.yaml", 30.0)
    assert not ok and "no hand-eye calibration" in message
    bad = tmp_path / "bad.yaml"
    bad.write_text("translation: [0, 0]\nrotation: [0, 0, 0, 1]\ndate: '2026-11-01T00:00:00+00:00'\n")
    ok, message = calibration_status(bad, 30.0)
    assert not ok and "translation must be a list of 3 numbers" in message
    with pytest.raises(ValueError, match="bad.yaml"):
        read_calibration(bad)


def test_default_path_is_per_robot_under_ros_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ROS_HOME", str(tmp_path))
    assert default_calibration_path("ur5e") == tmp_path / "monologue" / "calibration" / "ur5e.yaml"
    with pytest.raises(ValueError):
        default_calibration_path("../x")
