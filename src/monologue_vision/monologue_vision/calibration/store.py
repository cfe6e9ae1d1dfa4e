"""The per-robot hand-eye calibration file (YAML), its default path, and its status for the preflight check.

    robot: ur5e
    parent_frame: tool0                          # the flange (ur_description)
    child_frame: camera_color_optical_frame      # the colour camera's optical frame (realsense-ros)
    translation: [x, y, z]                       # m, child in parent
    rotation: [x, y, z, w]                       # unit quaternion, child in parent
    date: '2026-11-29T14:40:00+00:00'            # when it was solved (UTC, ISO 8601)
    method: tsai                                 # cv2.calibrateHandEye method
    samples: 16
    residuals: {translation_rms_mm: .., translation_max_mm: .., rotation_rms_deg: .., rotation_max_deg: ..}

No OpenCV here: the bring-up loads the file with numpy and PyYAML only.
"""
from __future__ import annotations

import datetime as dt
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

DEFAULT_DIR = Path("~/.ros/monologue/calibration")  # ~ expanded at run time
DEFAULT_MAX_AGE_DAYS = 30.0  # days; an older file is reported by calibration_status
PARENT_FRAME = "tool0"
CHILD_FRAME = "camera_color_optical_frame"
RESIDUAL_KEYS = ("translation_rms_mm", "translation_max_mm", "rotation_rms_deg", "rotation_max_deg")


def default_calibration_path(robot: str) -> Path:
    """~/.ros/monologue/calibration/<robot>.yaml (ROS_HOME replaces ~/.ros when set)."""
    if not robot or "/" in robot or robot.startswith("."):
        raise ValueError(f"not a robot name: {robot!r}")
    ros_home = os.environ.get("ROS_HOME")
    base = Path(ros_home) / "monologue" / "calibration" if ros_home else DEFAULT_DIR.expanduser()
    return base / f"{robot}.yaml"


@dataclass(frozen=True)
class Calibration:
    robot: str
    translation: tuple[float, float, float]  # m
    rotation: tuple[float, float, float, float]  # quaternion x, y, z, w
    date: dt.datetime  # UTC, timezone-aware
    method: str
    samples: int
    residuals: Mapping[str, float] = field(default_factory=dict)  # RESIDUAL_KEYS: mm and deg
    parent_frame: str = PARENT_FRAME
    child_frame: str = CHILD_FRAME

    def age_days(self, now: dt.datetime | None = None) -> float:
        now = now or dt.datetime.now(dt.UTC)
        return (now - self.date).total_seconds() / 86400.0

    def to_dict(self) -> dict[str, object]:
        return {
            "robot": self.robot, "parent_frame": self.parent_frame, "child_frame": self.child_frame,
            "translation": [float(v) for v in self.translation], "rotation": [float(v) for v in self.rotation],
            "date": self.date.astimezone(dt.UTC).isoformat(timespec="seconds"),
            "method": self.method, "samples": int(self.samples),
            "residuals": {k: round(float(v), 4) for k, v in self.residuals.items()},
        }


def write_calibration(path: Path, calibration: Calibration) -> Path:
    """Writes the file (creating its directory) atomically; returns the path."""
    path = Path(path).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    header = ("# Hand-eye calibration written by monologue-calibrate: pose of child_frame in parent_frame\n"
              "# (translation m, rotation quaternion x y z w), date UTC, residuals mm / deg.\n")
    tmp.write_text(header + yaml.safe_dump(calibration.to_dict(), sort_keys=False, default_flow_style=None))
    tmp.replace(path)
    return path


def _floats(value: object, n: int, what: str) -> tuple[float, ...]:
    if not isinstance(value, list | tuple) or len(value) != n:
        raise ValueError(f"{what} must be a list of {n} numbers, got {value!r}")
    out = tuple(float(v) for v in value)
    if not all(math.isfinite(v) for v in out):
        raise ValueError(f"{what} has a non-finite value: {value!r}")
    return out


def read_calibration(path: Path) -> Calibration:
    """Parses and checks a calibration file; ValueError (naming the file) when it is malformed."""
    path = Path(path).expanduser()
    try:
        data = yaml.safe_load(path.read_text())
        if not isinstance(data, dict):
            raise ValueError("not a YAML mapping")
        t = _floats(data.get("translation"), 3, "translation")
        q = _floats(data.get("rotation"), 4, "rotation")
        norm = math.sqrt(sum(v * v for v in q))
        if abs(norm - 1.0) > 1e-3:
            raise ValueError(f"rotation is not a unit quaternion (norm {norm:.4f})")
        date = data.get("date")
        when = date if isinstance(date, dt.datetime) else dt.datetime.fromisoformat(str(date))
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        residuals = data.get("residuals") or {}
        if not isinstance(residuals, dict):
            raise ValueError("residuals must be a mapping")
        return Calibration(
            robot=str(data.get("robot", "")), translation=(t[0], t[1], t[2]),
            rotation=(q[0] / norm, q[1] / norm, q[2] / norm, q[3] / norm), date=when,
            method=str(data.get("method", "")), samples=int(data.get("samples", 0)),
            residuals={str(k): float(v) for k, v in residuals.items()},
            parent_frame=str(data.get("parent_frame", PARENT_FRAME)),
            child_frame=str(data.get("child_frame", CHILD_FRAME)),
        )
    except (OSError, ValueError, TypeError, yaml.YAMLError) as e:
        raise ValueError(f"calibration file {path}: {e}") from e


def calibration_status(path: Path | str, max_age_days: float = DEFAULT_MAX_AGE_DAYS,
                       now: dt.datetime | None = None) -> tuple[bool, str]:
    """(ok, one line) for the preflight check: missing, unreadable or older than max_age_days is not ok."""
    p = Path(path).expanduser()
    if not p.is_file():
        return False, (f"no hand-eye calibration at {p}: the nominal mount (a few cm off) is used; "
                       "run monologue-calibrate")
    try:
        cal = read_calibration(p)
    except ValueError as e:
        return False, f"{e}; run monologue-calibrate again"
    age = cal.age_days(now)
    res = cal.residuals
    summary = (f"{cal.method}, {cal.samples} samples, residual {res.get('translation_rms_mm', float('nan')):.1f} mm / "
               f"{res.get('rotation_rms_deg', float('nan')):.2f} deg")
    if age > max_age_days:
        return False, (f"hand-eye calibration {p} is {age:.0f} days old (> {max_age_days:g}): run "
                       f"monologue-calibrate again ({summary})")
    if age < -1.0:
        return False, f"hand-eye calibration {p} is dated in the future ({cal.date.isoformat()}): check the clock"
    return True, f"hand-eye calibration {p}: {age:.1f} days old, {summary}"
