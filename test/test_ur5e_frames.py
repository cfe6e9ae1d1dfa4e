"""The UR5e's TF tree (skills_node.arm_ros.static_transforms + base -> tool0 from the measured TCP pose) against
two kinematic chains of the arm, at several joint configurations, without ROS:
- ur_description's URDF (its joints' origins for the UR5e, written out below): base_link -> tool0 and -> flange;
- the MuJoCo model the simulator uses (tabletop_sim: MuJoCo Menagerie's UR5e), whose world frame is the
  controller's `base` (its `base` body carries the pi rotation of ur_description's base_link_inertia, so
  the world is ur_description's `base`, not base_link): base -> tool0.
The TCP pose comes from the skills' forward kinematics with a TCP offset, as ur_rtde reports it."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from skills_node.core import frames
from skills_node.core.arm import TcpPose
from skills_node.core.arm_settings import ArmTf, flange_in_base
from skills_node.core.kinematics import forward_kinematics

CONFIGS = [(0.0, 0.0, 0.0, 0.0, 0.0, 0.0), (3.14159, -1.5708, 1.5708, -1.5708, -1.5708, 0.0),
           (0.3, -1.0, 1.2, -0.7, -1.2, 0.5), (-2.1, -2.2, -1.9, 2.4, 0.9, -3.0), (1.0, -0.4, 2.6, -2.9, 2.2, 1.7)]
TCP_OFFSET = TcpPose(0.01, -0.02, 0.16, 0.1, 0.0, 0.2)  # m, rad: tool0 -> TCP (what setTcp is given)
# ur_description (config/ur5e/default_kinematics.yaml, urdf/ur_macro.xacro): each joint's origin xyz (m), rpy (rad)
UR5E_JOINTS = [((0.0, 0.0, 0.1625), (0.0, 0.0, 0.0)), ((0.0, 0.0, 0.0), (math.pi / 2, 0.0, 0.0)),
               ((-0.425, 0.0, 0.0), (0.0, 0.0, 0.0)), ((-0.3922, 0.0, 0.1333), (0.0, 0.0, 0.0)),
               ((0.0, -0.0997, -2.04e-11), (math.pi / 2, 0.0, 0.0)),
               ((0.0, 0.0996, -2.04e-11), (math.pi / 2, math.pi, math.pi))]


def rpy(xyz: tuple[float, ...], r: tuple[float, float, float]) -> np.ndarray:
    """URDF origin as a 4x4 matrix: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    cr, sr, cp, sp, cy, sy = (math.cos(r[0]), math.sin(r[0]), math.cos(r[1]), math.sin(r[1]), math.cos(r[2]),
                              math.sin(r[2]))
    m = np.eye(4)
    m[:3, :3] = (np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]]) @ np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
                 @ np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]]))
    m[:3, 3] = xyz
    return m


def urdf_chain(q: tuple[float, ...]) -> dict[str, np.ndarray]:
    """ur_description's base_link -> flange and base_link -> tool0 at joint angles q (rad)."""
    m = rpy((0, 0, 0), (0.0, 0.0, math.pi))  # base_link -> base_link_inertia
    for (xyz, r), qi in zip(UR5E_JOINTS, q, strict=True):
        m = m @ rpy(xyz, r) @ rpy((0, 0, 0), (0.0, 0.0, qi))
    flange = m @ rpy((0, 0, 0), (0.0, -math.pi / 2, -math.pi / 2))  # wrist_3-flange
    return {"flange": flange, "tool0": flange @ rpy((0, 0, 0), (math.pi / 2, 0.0, math.pi / 2))}  # flange-tool0


def matrix(t: frames.Transform) -> np.ndarray:
    (x, y, z), (qx, qy, qz, qw) = t
    m = np.eye(4)
    m[:3, :3] = [[1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)],
                 [2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)],
                 [2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)]]
    m[:3, 3] = (x, y, z)
    return m


def tf_tree(q: tuple[float, ...], tf: ArmTf) -> dict[str, tuple[str, frames.Transform]]:
    """What the ur5e backend publishes at joint angles q: its static transforms and base -> tool0 from the
    TCP pose the controller reports (with TCP_OFFSET set)."""
    from skills_node.arm_ros import static_transforms

    tcp = forward_kinematics(q, TCP_OFFSET)
    edges = frames.static_edges(static_transforms(tf))
    edges[frames.UR_TOOL0] = (frames.UR_BASE, flange_in_base(tcp, TCP_OFFSET))
    return edges


HAND_EYE = ArmTf(30.0, frames.CAMERA_OPTICAL, frames.CAMERA_LINK, ((0.01, -0.075, 0.035), (0.0, 0.0, 0.0, 1.0)))


@pytest.mark.parametrize("q", CONFIGS)
def test_the_tf_tree_matches_ur_descriptions_chain(q: tuple[float, ...]) -> None:
    edges = tf_tree(q, HAND_EYE)
    urdf = urdf_chain(q)
    for frame in ("tool0", "flange"):
        got = frames.chain(edges, "base_link", frame)
        assert got is not None, frame
        assert np.allclose(matrix(got), urdf[frame], atol=1e-6), (frame, matrix(got), urdf[frame])
    # `base` is base_link turned half a turn about z: x and y flip
    base = frames.chain(edges, "base_link", "base")
    assert base is not None and np.allclose(matrix(base), rpy((0, 0, 0), (0.0, 0.0, math.pi)), atol=1e-12)


@pytest.fixture(scope="module")
def mujoco_arm() -> Any:
    from tabletop_sim.core.kinematics import ArmKinematics

    return ArmKinematics()


@pytest.mark.parametrize("q", CONFIGS)
def test_the_tf_tree_matches_the_simulators_mujoco_arm(q: tuple[float, ...], mujoco_arm: Any) -> None:
    arm = mujoco_arm
    arm.tcp(q)  # sets the joints and runs MuJoCo's forward kinematics
    site = arm.model.site("tool0_site").id
    mj = np.eye(4)
    mj[:3, :3], mj[:3, 3] = arm.data.site_xmat[site].reshape(3, 3), arm.data.site_xpos[site]
    got = frames.chain(tf_tree(q, HAND_EYE), "base", "tool0")
    assert got is not None
    m = matrix(got)
    assert np.allclose(m[:3, :3], mj[:3, :3], atol=1e-6)  # Menagerie's link lengths are rounded to 1 mm
    assert np.linalg.norm(m[:3, 3] - mj[:3, 3]) < 0.002, (m[:3, 3], mj[:3, 3])


def test_the_camera_chain_resolves_to_the_hand_eye_calibration() -> None:
    """tool0 -> camera_link -> camera_color_optical_frame (the driver's) is the calibration, whatever the
    driver's camera_link -> optical transform (nominal, or realsense2_camera's with the colour sensor's offset)."""
    from skills_node.arm_ros import static_transforms

    calibration = ((0.02, -0.07, 0.04), (math.sin(math.radians(5)), 0.0, 0.0, math.cos(math.radians(5))))  # 10 deg about x
    tf = ArmTf(30.0, frames.CAMERA_OPTICAL, frames.CAMERA_LINK, calibration)
    driver_colour = ((0.0, 0.015, 0.0), (0.0, 0.0, 0.0, 1.0))  # camera_link -> camera_color_frame (m)
    for optical_in_link in (frames.OPTICAL_IN_LINK, frames.compose(driver_colour, frames.OPTICAL_IN_LINK)):
        edges = frames.static_edges(static_transforms(tf, optical_in_link))
        edges[frames.CAMERA_OPTICAL] = (frames.CAMERA_LINK, optical_in_link)  # the driver's
        got = frames.chain(edges, "tool0", frames.CAMERA_OPTICAL)
        assert got is not None and frames.close(got, calibration, 1e-9, 1e-6), got
    # the optical frame looks along camera_link's x; its x is camera_link's -y, its y is camera_link's -z
    r = matrix(frames.OPTICAL_IN_LINK)[:3, :3]
    assert np.allclose(r[:, 2], (1, 0, 0)) and np.allclose(r[:, 0], (0, -1, 0)) and np.allclose(r[:, 1], (0, 0, -1))
    # without a camera_link the calibration is published as it is
    plain = static_transforms(ArmTf(30.0, "wrist_cam", "", calibration))
    assert ("tool0", "wrist_cam", calibration) in plain
