"""Solving AX = XB with cv2.calibrateHandEye (eye-in-hand) and the residuals of the solution."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from .poses import require_pose_set
from .transforms import Mat, make_transform, rotation_angle

METHODS: dict[str, int] = {
    "tsai": cv2.CALIB_HAND_EYE_TSAI,
    "park": cv2.CALIB_HAND_EYE_PARK,
    "horaud": cv2.CALIB_HAND_EYE_HORAUD,
    "andreff": cv2.CALIB_HAND_EYE_ANDREFF,
    "daniilidis": cv2.CALIB_HAND_EYE_DANIILIDIS,
}


@dataclass(frozen=True)
class Sample:
    """One calibration pair: the flange in the base frame and the board in the camera, both at the image's
    capture time (4x4, m)."""

    base_from_tool: Mat
    camera_from_board: Mat


@dataclass(frozen=True)
class HandEyeResult:
    tool_from_camera: Mat  # 4x4: the camera's optical frame in the flange (m)
    method: str
    samples: int
    # Consistency of the board's pose in the base frame across samples (it does not move): per sample,
    # the distance from their mean. RMS and largest, mm and deg.
    translation_rms_mm: float
    translation_max_mm: float
    rotation_rms_deg: float
    rotation_max_deg: float


def solve(samples: Sequence[Sample], method: str = "tsai", check: bool = True, **thresholds: float) -> HandEyeResult:
    """The hand-eye transform from >= 3 samples; with `check`, a degenerate pose set raises
    poses.DegeneratePoseSet first (thresholds: check_pose_set's keyword arguments)."""
    if method not in METHODS:
        raise ValueError(f"unknown hand-eye method {method!r}; choose one of {sorted(METHODS)}")
    if check:
        require_pose_set([s.base_from_tool for s in samples], **thresholds)
    if len(samples) < 3:
        raise ValueError("calibrateHandEye needs at least 3 samples")
    try:
        r_rot, r_t = cv2.calibrateHandEye(
            [s.base_from_tool[:3, :3] for s in samples], [s.base_from_tool[:3, 3] for s in samples],
            [s.camera_from_board[:3, :3] for s in samples], [s.camera_from_board[:3, 3] for s in samples],
            method=METHODS[method])
    except cv2.error as e:  # e.g. andreff's "determinant(R) is null" on some sets
        raise ValueError(f"calibrateHandEye ({method}) failed: {str(e).strip().splitlines()[-1]}; "
                         "try another method (tsai, park)") from e
    x = make_transform(np.asarray(r_rot, dtype=np.float64), np.asarray(r_t, dtype=np.float64).ravel())
    if not np.all(np.isfinite(x)):
        raise ValueError(f"calibrateHandEye ({method}) returned no solution")
    t_rms, t_max, r_rms, r_max = residuals(samples, x)
    return HandEyeResult(x, method, len(samples), t_rms, t_max, r_rms, r_max)


def residuals(samples: Sequence[Sample], tool_from_camera: Mat) -> tuple[float, float, float, float]:
    """(translation RMS mm, max mm, rotation RMS deg, max deg) of the board pose in the base frame."""
    boards = [s.base_from_tool @ tool_from_camera @ s.camera_from_board for s in samples]
    mean_t = np.mean([b[:3, 3] for b in boards], axis=0)
    u, _, vt = np.linalg.svd(np.sum([b[:3, :3] for b in boards], axis=0))  # chordal mean rotation
    mean_r = u @ np.diag([1.0, 1.0, float(np.sign(np.linalg.det(u @ vt)))]) @ vt
    dt = np.array([1000.0 * float(np.linalg.norm(b[:3, 3] - mean_t)) for b in boards])
    dr = np.array([math.degrees(rotation_angle(mean_r.T @ b[:3, :3])) for b in boards])
    return (float(np.sqrt(np.mean(dt ** 2))), float(dt.max()), float(np.sqrt(np.mean(dr ** 2))), float(dr.max()))


def transform_error(a: Mat, b: Mat) -> tuple[float, float]:
    """(translation mm, rotation deg) between two 4x4 transforms."""
    return (1000.0 * float(np.linalg.norm(a[:3, 3] - b[:3, 3])), math.degrees(rotation_angle(a[:3, :3].T @ b[:3, :3])))
