"""4x4 homogeneous transforms, quaternions (x, y, z, w, as ROS) and rotation vectors (numpy only)."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Mat = npt.NDArray[np.float64]


def make_transform(rotation: Mat, translation: Sequence[float] | Mat) -> Mat:
    t = np.eye(4)
    t[:3, :3] = rotation
    t[:3, 3] = np.asarray(translation, dtype=np.float64)
    return t


def invert(t: Mat) -> Mat:
    r = t[:3, :3]
    return make_transform(r.T, -r.T @ t[:3, 3])


def quat_to_matrix(q: Sequence[float]) -> Mat:
    """Unit quaternion (x, y, z, w) -> 3x3 rotation matrix (normalised first)."""
    x, y, z, w = (float(v) for v in q)
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if n == 0.0 or not math.isfinite(n):
        raise ValueError(f"not a rotation quaternion: {tuple(q)}")
    x, y, z, w = x / n, y / n, z / n, w / n
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def matrix_to_quat(r: Mat) -> tuple[float, float, float, float]:
    """3x3 rotation matrix -> unit quaternion (x, y, z, w) with w >= 0."""
    m = np.asarray(r, dtype=np.float64)
    tr = float(np.trace(m))
    if tr > 0.0:
        s = math.sqrt(tr + 1.0) * 2.0
        q = ((m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, 0.25 * s)
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2.0
        q = (0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s, (m[2, 1] - m[1, 2]) / s)
    elif m[1, 1] > m[2, 2]:
        s = math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2.0
        q = ((m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s, (m[0, 2] - m[2, 0]) / s)
    else:
        s = math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2.0
        q = ((m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s, (m[1, 0] - m[0, 1]) / s)
    n = math.sqrt(sum(v * v for v in q))
    sign = -1.0 if q[3] < 0.0 else 1.0
    return (float(sign * q[0] / n), float(sign * q[1] / n), float(sign * q[2] / n), float(sign * q[3] / n))


def rotvec_to_matrix(v: Sequence[float] | Mat) -> Mat:
    """Rotation vector (axis * angle, rad) -> 3x3 rotation matrix (Rodrigues)."""
    a = np.asarray(v, dtype=np.float64)
    theta = float(np.linalg.norm(a))
    if theta < 1e-12:
        return np.eye(3)
    k = a / theta
    kx = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]], dtype=np.float64)
    out: Mat = np.eye(3) + math.sin(theta) * kx + (1.0 - math.cos(theta)) * (kx @ kx)
    return out


def matrix_to_rotvec(r: Mat) -> Mat:
    """3x3 rotation matrix -> rotation vector (rad); robust near 0 and pi."""
    x, y, z, w = matrix_to_quat(r)
    s = math.sqrt(x * x + y * y + z * z)
    if s < 1e-12:
        return np.zeros(3)
    angle = 2.0 * math.atan2(s, w)
    out: Mat = np.array([x, y, z], dtype=np.float64) * (angle / s)
    return out


def rotation_angle(r: Mat) -> float:
    """Angle (rad, 0..pi) of a rotation matrix."""
    return float(np.linalg.norm(matrix_to_rotvec(r)))


def look_at(eye: Sequence[float] | Mat, target: Sequence[float] | Mat,
            up_hint: Sequence[float] | Mat = (1.0, 0.0, 0.0)) -> Mat:
    """Pose of an optical frame (z forward, x right, y down) at `eye` looking at `target`; image 'up'
    (-y) is as close to `up_hint` as possible. Positions in m."""
    e, t = np.asarray(eye, dtype=np.float64), np.asarray(target, dtype=np.float64)
    z = t - e
    z /= np.linalg.norm(z)
    up = np.asarray(up_hint, dtype=np.float64)
    y = -(up - np.dot(up, z) * z)
    if np.linalg.norm(y) < 1e-6:
        raise ValueError("up_hint is parallel to the viewing direction")
    y /= np.linalg.norm(y)
    x = np.cross(y, z)
    return make_transform(np.column_stack([x, y, z]), e)
