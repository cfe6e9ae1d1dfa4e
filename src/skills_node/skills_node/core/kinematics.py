"""Forward kinematics of Universal Robots arms (standard DH), so joint-space targets can be checked
against the Cartesian workspace before the arm moves. Lengths in m, angles in rad."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .arm import TcpPose

Matrix = list[list[float]]  # 4x4 homogeneous transform


@dataclass(frozen=True)
class DhParameters:
    """Standard Denavit-Hartenberg parameters of a 6-joint UR arm (m, rad)."""

    d: tuple[float, float, float, float, float, float]
    a: tuple[float, float, float, float, float, float]
    alpha: tuple[float, float, float, float, float, float]


# Universal Robots' published DH parameters of the UR5e.
UR5E_DH = DhParameters(
    d=(0.1625, 0.0, 0.0, 0.1333, 0.0997, 0.0996),
    a=(0.0, -0.425, -0.3922, 0.0, 0.0, 0.0),
    alpha=(math.pi / 2, 0.0, 0.0, math.pi / 2, -math.pi / 2, 0.0),
)


def _matmul(a: Matrix, b: Matrix) -> Matrix:
    return [[sum(a[i][k] * b[k][j] for k in range(4)) for j in range(4)] for i in range(4)]


def _dh(theta: float, d: float, a: float, alpha: float) -> Matrix:
    ct, st, ca, sa = math.cos(theta), math.sin(theta), math.cos(alpha), math.sin(alpha)
    return [[ct, -st * ca, st * sa, a * ct],
            [st, ct * ca, -ct * sa, a * st],
            [0.0, sa, ca, d],
            [0.0, 0.0, 0.0, 1.0]]


def rotvec_to_matrix(rx: float, ry: float, rz: float) -> list[list[float]]:
    """Rotation vector (axis times angle, rad) to a 3x3 rotation matrix (Rodrigues)."""
    theta = math.sqrt(rx * rx + ry * ry + rz * rz)
    if theta < 1e-12:
        return [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    kx, ky, kz = rx / theta, ry / theta, rz / theta
    c, s, v = math.cos(theta), math.sin(theta), 1.0 - math.cos(theta)
    return [[kx * kx * v + c, kx * ky * v - kz * s, kx * kz * v + ky * s],
            [kx * ky * v + kz * s, ky * ky * v + c, ky * kz * v - kx * s],
            [kx * kz * v - ky * s, ky * kz * v + kx * s, kz * kz * v + c]]


def matrix_to_rotvec(r: Sequence[Sequence[float]]) -> tuple[float, float, float]:
    """3x3 rotation matrix to a rotation vector (rad); angle in [0, pi]."""
    cos_t = max(-1.0, min(1.0, (r[0][0] + r[1][1] + r[2][2] - 1.0) / 2.0))
    theta = math.acos(cos_t)
    if theta < 1e-9:
        return (0.0, 0.0, 0.0)
    if math.pi - theta < 1e-6:  # axis from the diagonal when sin(theta) ~ 0
        x = math.sqrt(max(0.0, (r[0][0] + 1.0) / 2.0))
        y = math.copysign(math.sqrt(max(0.0, (r[1][1] + 1.0) / 2.0)), r[0][1] if x > 1e-6 else 1.0)
        z = math.copysign(math.sqrt(max(0.0, (r[2][2] + 1.0) / 2.0)),
                          r[0][2] if x > 1e-6 else (r[1][2] if y > 1e-6 else 1.0))
        return (x * theta, y * theta, z * theta)
    k = theta / (2.0 * math.sin(theta))
    return (k * (r[2][1] - r[1][2]), k * (r[0][2] - r[2][0]), k * (r[1][0] - r[0][1]))


def pose_to_matrix(p: TcpPose) -> Matrix:
    r = rotvec_to_matrix(p.rx, p.ry, p.rz)
    return [[r[0][0], r[0][1], r[0][2], p.x],
            [r[1][0], r[1][1], r[1][2], p.y],
            [r[2][0], r[2][1], r[2][2], p.z],
            [0.0, 0.0, 0.0, 1.0]]


def matrix_to_pose(t: Matrix) -> TcpPose:
    rx, ry, rz = matrix_to_rotvec([row[:3] for row in t[:3]])
    return TcpPose(t[0][3], t[1][3], t[2][3], rx, ry, rz)


def forward_kinematics(q: Sequence[float], tcp_offset: TcpPose | None = None,
                       dh: DhParameters = UR5E_DH) -> TcpPose:
    """TCP pose in the base frame for joint positions `q` (rad); `tcp_offset` is flange -> TCP."""
    if len(q) != 6:
        raise ValueError(f"expected 6 joint positions, got {len(q)}")
    t: Matrix = [[1.0 if i == j else 0.0 for j in range(4)] for i in range(4)]
    for i in range(6):
        t = _matmul(t, _dh(float(q[i]), dh.d[i], dh.a[i], dh.alpha[i]))
    if tcp_offset is not None:
        t = _matmul(t, pose_to_matrix(tcp_offset))
    return matrix_to_pose(t)


def rotvec_to_quaternion(rx: float, ry: float, rz: float) -> tuple[float, float, float, float]:
    """Rotation vector (rad) -> quaternion (x, y, z, w)."""
    angle = math.sqrt(rx * rx + ry * ry + rz * rz)
    if angle < 1e-12:
        return (0.0, 0.0, 0.0, 1.0)
    s = math.sin(angle / 2.0) / angle
    return (rx * s, ry * s, rz * s, math.cos(angle / 2.0))
