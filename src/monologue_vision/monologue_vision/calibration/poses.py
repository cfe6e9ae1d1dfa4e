"""Arm poses for an eye-in-hand calibration: a plan around the board, and the degenerate-set check.

AX = XB (Tsai-Lenz and the others) is solvable only when the relative motions between samples rotate
about at least two non-parallel axes, and its accuracy grows with the rotation between samples. A set is
refused when it has too few samples, spans too little rotation, or rotates about (nearly) one axis only.
All poses are 4x4 transforms of the flange (tool0) in the robot's base frame, lengths in m.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .transforms import Mat, invert, look_at, make_transform, matrix_to_rotvec, rotvec_to_matrix

MIN_SAMPLES = 10  # fewer refused: each sample's detection noise then weighs too much (15-20 are planned)
MIN_ROTATION_SPREAD_DEG = 20.0  # deg, the largest rotation between two samples must reach this
MIN_AXIS_ANGLE_DEG = 30.0  # deg, the relative rotation axes must spread at least this far apart
MIN_MOTION_DEG = 5.0  # deg, relative rotations smaller than this have no reliable axis (ignored)


class DegeneratePoseSet(ValueError):
    """The pose set cannot determine the hand-eye transform; the message says why and what to add."""


@dataclass(frozen=True)
class PoseSetReport:
    samples: int
    rotation_spread_deg: float  # largest rotation between two samples
    axis_spread_deg: float  # largest angle (0..90) between the axes of two relative rotations
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def check_pose_set(
    base_from_tool: Sequence[Mat],
    min_samples: int = MIN_SAMPLES,
    min_rotation_spread_deg: float = MIN_ROTATION_SPREAD_DEG,
    min_axis_angle_deg: float = MIN_AXIS_ANGLE_DEG,
) -> PoseSetReport:
    """Measures a set of flange poses and lists every reason it is degenerate."""
    rots = [np.asarray(t, dtype=np.float64)[:3, :3] for t in base_from_tool]
    spread, axes = 0.0, []
    for i in range(len(rots)):
        for j in range(i + 1, len(rots)):
            rel = matrix_to_rotvec(rots[i].T @ rots[j])  # motion between the two, in flange i
            angle = math.degrees(float(np.linalg.norm(rel)))
            spread = max(spread, angle)
            if angle >= MIN_MOTION_DEG:
                axes.append(rots[i] @ (rel / np.linalg.norm(rel)))  # axis in the base frame
    axis_spread = 0.0
    for i in range(len(axes)):
        for j in range(i + 1, len(axes)):
            c = min(1.0, abs(float(np.dot(axes[i], axes[j]))))
            axis_spread = max(axis_spread, math.degrees(math.acos(c)))
    problems = []
    if len(rots) < min_samples:
        problems.append(f"too few samples: {len(rots)} < {min_samples} (plan 15-20 poses)")
    if spread < min_rotation_spread_deg:
        problems.append(f"rotation spread {spread:.1f} deg < {min_rotation_spread_deg:g} deg: tilt the camera "
                        "more between poses")
    if axis_spread < min_axis_angle_deg:
        problems.append(f"rotation axes nearly parallel (they spread {axis_spread:.1f} deg < {min_axis_angle_deg:g} "
                        "deg): rotate about at least two different axes (tilt forward/back and left/right, "
                        "and turn about the optical axis)")
    return PoseSetReport(len(rots), spread, axis_spread, tuple(problems))


def require_pose_set(base_from_tool: Sequence[Mat], **thresholds: float) -> PoseSetReport:
    """check_pose_set, raising DegeneratePoseSet listing every problem."""
    report = check_pose_set(base_from_tool, **thresholds)  # type: ignore[arg-type]
    if not report.ok:
        raise DegeneratePoseSet("degenerate pose set: " + "; ".join(report.problems))
    return report


def plan_poses(
    board_center: Sequence[float] | Mat,
    tool_from_camera: Mat,
    count: int = 16,
    distance: float = 0.35,
    tilts_deg: Sequence[float] = (15.0, 28.0),
    roll_deg: float = 30.0,
    board_normal: Sequence[float] | Mat = (0.0, 0.0, 1.0),
    azimuth_offset_deg: float = 0.0,
) -> list[Mat]:
    """`count` flange poses (base frame) whose camera looks at `board_center` (m) from `distance` (m).

    The first looks straight along -board_normal; the others come from alternating tilts (deg, from the
    normal) at azimuths spread by the golden angle, each turned about the optical axis by -roll, 0 or
    +roll deg: rotations about three axes. `tool_from_camera` is the nominal mount (4x4, the optical frame
    in the flange); a mount error of a few cm only shifts where the board appears in the image.
    """
    if count < 1 or distance <= 0.0:
        raise ValueError("count >= 1 and distance > 0 m required")
    c = np.asarray(board_center, dtype=np.float64)
    n = np.asarray(board_normal, dtype=np.float64)
    n /= np.linalg.norm(n)
    ref = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = ref - np.dot(ref, n) * n
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(n, e1)
    camera_to_tool = invert(np.asarray(tool_from_camera, dtype=np.float64))
    golden = math.pi * (3.0 - math.sqrt(5.0))
    poses = []
    for i in range(count):
        if i == 0:
            tilt, az = 0.0, 0.0
        else:
            tilt = math.radians(tilts_deg[(i - 1) % len(tilts_deg)])
            az = math.radians(azimuth_offset_deg) + i * golden
        direction = math.cos(tilt) * n + math.sin(tilt) * (math.cos(az) * e1 + math.sin(az) * e2)
        eye = c + distance * direction
        roll = math.radians(roll_deg) * ((i % 3) - 1)
        view = c - eye
        up = rotvec_to_matrix(view / np.linalg.norm(view) * roll) @ e1
        camera = look_at(eye, c, up)
        poses.append(camera @ camera_to_tool)
    return poses


def describe_pose(base_from_tool: Mat) -> str:
    """One line for the user: flange position (m) and rotation vector (rad), as the UR pendant shows them."""
    p = base_from_tool[:3, 3]
    r = matrix_to_rotvec(base_from_tool[:3, :3])
    return (f"x={p[0]:+.3f} y={p[1]:+.3f} z={p[2]:+.3f} m  "
            f"rx={r[0]:+.3f} ry={r[1]:+.3f} rz={r[2]:+.3f} rad")


def offset_pose(base_from_tool: Mat, translation: Sequence[float], rotvec: Sequence[float]) -> Mat:
    """base_from_tool composed with a local offset (m, rad): e.g. flange -> TCP."""
    return np.asarray(base_from_tool, dtype=np.float64) @ make_transform(rotvec_to_matrix(rotvec), translation)
