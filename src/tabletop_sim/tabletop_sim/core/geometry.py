"""Poses and rotations (numpy only). Quaternions are (x, y, z, w), as in ROS; MuJoCo's are (w, x, y, z)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Vec = npt.NDArray[np.float64]

# Nominal pick orientation of the TCP: tool z axis pointing straight down (-z of base_link), tool x
# along base x, tool y along -base y. This is a rotation of pi about base x: quaternion
# (x, y, z, w) = (1, 0, 0, 0), rotation vector (pi, 0, 0).
TOOL_DOWN_QUAT: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)


@dataclass(frozen=True)
class Pose:
    """A rigid transform: position (m) and unit quaternion (x, y, z, w), in base_link unless stated."""

    position: tuple[float, float, float]
    orientation: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)

    @staticmethod
    def from_matrix(pos: Vec, rot: Vec) -> Pose:
        q = mat_to_quat(rot)
        return Pose((float(pos[0]), float(pos[1]), float(pos[2])),
                    (float(q[0]), float(q[1]), float(q[2]), float(q[3])))

    def rotation(self) -> Vec:
        return quat_to_mat(np.asarray(self.orientation, dtype=np.float64))

    def translation(self) -> Vec:
        return np.asarray(self.position, dtype=np.float64)

    def is_finite(self) -> bool:
        return all(math.isfinite(v) for v in (*self.position, *self.orientation))


def normalize_quat(q: Vec) -> Vec:
    n = float(np.linalg.norm(q))
    if n < 1e-9:
        raise ValueError("quaternion has zero length")
    return np.asarray(q, dtype=np.float64) / n


def quat_to_mat(q: Vec) -> Vec:
    """(x, y, z, w) -> 3x3 rotation matrix."""
    x, y, z, w = (float(v) for v in normalize_quat(q))
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def mat_to_quat(m: Vec) -> Vec:
    """3x3 rotation matrix -> (x, y, z, w) with w >= 0 (Shepperd's method)."""
    t = float(m[0, 0] + m[1, 1] + m[2, 2])
    if t > 0:
        s = math.sqrt(t + 1.0) * 2
        q = [(m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, 0.25 * s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2
        q = [0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s, (m[2, 1] - m[1, 2]) / s]
    elif m[1, 1] > m[2, 2]:
        s = math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2
        q = [(m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s, (m[0, 2] - m[2, 0]) / s]
    else:
        s = math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2
        q = [(m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s, (m[1, 0] - m[0, 1]) / s]
    out = normalize_quat(np.array(q, dtype=np.float64))
    return -out if out[3] < 0 else out


def wxyz_to_xyzw(q: Vec) -> Vec:
    return np.array([q[1], q[2], q[3], q[0]], dtype=np.float64)


def xyzw_to_wxyz(q: Vec) -> Vec:
    return np.array([q[3], q[0], q[1], q[2]], dtype=np.float64)


def rotation_error(current: Vec, target: Vec) -> Vec:
    """Rotation vector (rad, base frame) that turns rotation matrix `current` into `target`."""
    return rotvec_from_mat(target @ current.T)


def rotvec_from_mat(r: Vec) -> Vec:
    """Rotation matrix -> rotation vector (axis * angle, rad), robust near 0 and pi."""
    cos = max(-1.0, min(1.0, (float(np.trace(r)) - 1.0) / 2.0))
    angle = math.acos(cos)
    if angle < 1e-7:
        return np.zeros(3)
    if angle > math.pi - 1e-4:
        # Near pi: the axis is the column of R + I with the largest norm.
        b = r + np.eye(3)
        col = b[:, int(np.argmax(np.linalg.norm(b, axis=0)))]
        axis = col / np.linalg.norm(col)
        return np.asarray(axis * angle, dtype=np.float64)
    axis = np.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]]) / (2 * math.sin(angle))
    return np.asarray(axis * angle, dtype=np.float64)


def mat_from_rotvec(v: Vec) -> Vec:
    """Rotation vector (rad) -> rotation matrix (Rodrigues)."""
    angle = float(np.linalg.norm(v))
    if angle < 1e-12:
        return np.eye(3)
    k = v / angle
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.asarray(np.eye(3) + math.sin(angle) * kx + (1 - math.cos(angle)) * kx @ kx, dtype=np.float64)


def interpolate_rotation(r0: Vec, r1: Vec, u: float) -> Vec:
    """Geodesic interpolation (slerp) between rotation matrices, u in [0, 1]."""
    return np.asarray(mat_from_rotvec(rotvec_from_mat(r1 @ r0.T) * u) @ r0, dtype=np.float64)


def rotation_angle(r0: Vec, r1: Vec) -> float:
    """Angle (rad) of the rotation between two rotation matrices."""
    return float(np.linalg.norm(rotvec_from_mat(r1 @ r0.T)))


def transform_point(pose: Pose, p: Vec) -> Vec:
    """Pose applied to a point: R p + t."""
    return np.asarray(pose.rotation() @ p + pose.translation(), dtype=np.float64)


def invert(pose: Pose) -> Pose:
    r = pose.rotation()
    return Pose.from_matrix(-r.T @ pose.translation(), r.T)


def compose(a: Pose, b: Pose) -> Pose:
    """a * b: b expressed in a's parent frame."""
    return Pose.from_matrix(a.rotation() @ b.translation() + a.translation(), a.rotation() @ b.rotation())
