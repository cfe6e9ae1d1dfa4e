"""Frame names and fixed transforms as the ROS ecosystem names them (ROS-free).

UR5e (ur_description): `base_link` (REP-103: x forward, z up), `base` (the controller's Base frame, in
which ur_rtde reports and takes TCP poses: base_link rotated pi about z), `tool0` (the flange with an
all-zero TCP: z out of the flange) and `flange` (ROS-Industrial: x out of the flange).
Camera (realsense-ros): `camera_link` (x forward, z up) and `camera_color_optical_frame` (REP-103
optical: z forward, x right, y down), which the camera driver publishes below camera_link.

The tree the ur5e backend publishes (docs/ur5e.md, "Frames"):
    base_link -> base (static) -> tool0 (measured TCP, tcp_offset removed) -> flange (static)
    tool0 -> camera_link (static, from the hand-eye calibration tool0 -> camera_color_optical_frame)
    camera_link -> camera_color_optical_frame (static, the camera driver's)
Transforms are (translation m, quaternion x y z w): the pose of the child frame in the parent frame.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

Transform = tuple[tuple[float, float, float], tuple[float, float, float, float]]  # m; quaternion x y z w

UR_BASE_LINK, UR_BASE, UR_TOOL0, UR_FLANGE = "base_link", "base", "tool0", "flange"
CAMERA_LINK, CAMERA_OPTICAL = "camera_link", "camera_color_optical_frame"

IDENTITY: Transform = ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))
_H = math.sqrt(0.5)
# ur_description: joint base_link-base_fixed_joint, rpy (0, 0, pi)
BASE_IN_BASE_LINK: Transform = ((0.0, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0))
# ur_description: joint flange-tool0, rpy (pi/2, 0, pi/2): tool0 in flange (its inverse is flange in tool0)
TOOL0_IN_FLANGE: Transform = ((0.0, 0.0, 0.0), (0.5, 0.5, 0.5, 0.5))
# REP-103 / realsense-ros: the optical frame in its body frame (z forward = body x, x right = -body y)
OPTICAL_IN_LINK: Transform = ((0.0, 0.0, 0.0), (-0.5, 0.5, -0.5, 0.5))


def quat_multiply(a: tuple[float, float, float, float],
                  b: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz)


def rotate(q: tuple[float, float, float, float], v: tuple[float, float, float]) -> tuple[float, float, float]:
    """v rotated by the unit quaternion q."""
    x, y, z, w = q
    r = quat_multiply(quat_multiply(q, (v[0], v[1], v[2], 0.0)), (-x, -y, -z, w))
    return (r[0], r[1], r[2])


def compose(a: Transform, b: Transform) -> Transform:
    """a * b: `b` (child in a's child) expressed in a's parent."""
    (t, q), (tb, qb) = a, b
    r = rotate(q, tb)
    qc = quat_multiply(q, qb)
    n = math.sqrt(sum(c * c for c in qc))
    return ((t[0] + r[0], t[1] + r[1], t[2] + r[2]), (qc[0] / n, qc[1] / n, qc[2] / n, qc[3] / n))


def invert(a: Transform) -> Transform:
    t, (x, y, z, w) = a
    qi = (-x, -y, -z, w)
    r = rotate(qi, t)
    return ((-r[0], -r[1], -r[2]), qi)


def close(a: Transform, b: Transform, tol_m: float = 1e-6, tol_rad: float = 1e-6) -> bool:
    """Same pose within tol_m (m) and tol_rad (rad); q and -q are the same rotation."""
    x, y, z, w = a[1]
    d = quat_multiply((-x, -y, -z, w), b[1])  # a's rotation undone from b's
    angle = 2.0 * math.atan2(math.sqrt(d[0] ** 2 + d[1] ** 2 + d[2] ** 2), abs(d[3]))  # accurate near 0
    return math.dist(a[0], b[0]) <= tol_m and angle <= tol_rad


def chain(edges: Mapping[str, tuple[str, Transform]], parent: str, child: str) -> Transform | None:
    """`child` in `parent` through `edges` ({child: (parent, child in parent)}), walking up from child;
    None if parent is not above child."""
    out, frame, seen = IDENTITY, child, set()
    while frame != parent:
        if frame in seen or frame not in edges:
            return None
        seen.add(frame)
        up, t = edges[frame]
        out = compose(t, out)
        frame = up
    return out


def camera_link_in_tool0(optical_in_tool0: Transform, optical_in_link: Transform = OPTICAL_IN_LINK) -> Transform:
    """tool0 -> camera_link from the hand-eye calibration (the optical frame in tool0) and the camera
    driver's camera_link -> optical transform, so that tool0 -> camera_link -> optical is the calibration."""
    return compose(optical_in_tool0, invert(optical_in_link))


def static_edges(transforms: Iterable[tuple[str, str, Transform]]) -> dict[str, tuple[str, Transform]]:
    """{child: (parent, transform)} from (parent, child, transform) triples."""
    return {child: (parent, t) for parent, child, t in transforms}
