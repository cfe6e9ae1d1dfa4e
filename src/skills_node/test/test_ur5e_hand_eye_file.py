"""The ur5e backend loads monologue-calibrate's file for the wrist camera; without it, the nominal
ur5e.hand_eye with a warning."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from monologue_vision.calibration.store import Calibration, write_calibration
from skills_node.core.arm_settings import ArmTf
from skills_node.robots.ur5e.plugin import load_hand_eye

NOMINAL = ArmTf(30.0, "camera_color_optical_frame", "camera_link", ((0.0, -0.075, 0.035), (0.0, 0.0, 0.0, 1.0)))


def _write(path: Path, child: str = "camera_color_optical_frame") -> Path:
    return write_calibration(path, Calibration(
        robot="ur5e", translation=(0.01, -0.07, 0.03), rotation=(0.0, 0.0, 0.7071068, 0.7071068),
        date=dt.datetime(2026, 11, 1, tzinfo=dt.UTC), method="tsai", samples=16,
        residuals={"translation_rms_mm": 0.5}, child_frame=child))


def test_the_calibration_file_replaces_the_nominal_mount(tmp_path: Path) -> None:
    tf, calibrated, message = load_hand_eye(NOMINAL, str(_write(tmp_path / "ur5e.yaml")))
    assert calibrated and "tsai, 16 samples" in message
    assert tf.camera_in_tool0[0] == (0.01, -0.07, 0.03)
    assert tf.camera_in_tool0[1] == pytest.approx((0.0, 0.0, 0.7071068, 0.7071068))


def test_the_default_path_is_per_robot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROS_HOME", str(tmp_path))
    tf, calibrated, message = load_hand_eye(NOMINAL, "")
    assert not calibrated and tf == NOMINAL and "monologue-calibrate" in message
    _write(tmp_path / "monologue" / "calibration" / "ur5e.yaml")
    assert load_hand_eye(NOMINAL, "")[1]


def test_a_file_for_other_frames_or_malformed_falls_back(tmp_path: Path) -> None:
    tf, calibrated, message = load_hand_eye(NOMINAL, str(_write(tmp_path / "a.yaml", child="camera_link")))
    assert not calibrated and tf == NOMINAL and "not tool0 -> camera_color_optical_frame" in message
    bad = tmp_path / "b.yaml"
    bad.write_text("translation: oops\n")
    tf, calibrated, message = load_hand_eye(NOMINAL, str(bad))
    assert not calibrated and tf == NOMINAL and "translation must be" in message
