"""A camera of our own on Spot's arm (robot:=spot_realsense): SpotRobot.kinematics() on the real bosdyn-client
against FakeSpot (odom_T_body, body_T_hand, the acquisition time on the local clock although the robot's clock
is skewed), the TF the skills node publishes for it (robots/spot/ros.mount_transforms + the static mount), the
`spot.camera_mount` settings and config/robots/spot_realsense.yaml; and `spot.ca_cert_path` naming a missing
file, refused at start-up with the parameter and the path."""
from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from monologue_common.core.settings import ParamReader, flatten
from monologue_domain.robots import load_robots
from skills_node.robots.spot.core.robot import SpotCredentials, SpotKinematics, SpotRobot, SpotSettings, ca_cert_problem
from skills_node.robots.spot.settings import SpotBackendSettings, read
from skills_node.robots.spot.testing.fake_spot import HAND_FRAME, LOOK_HAND, FakeSpot
from skills_node.robots.spot.testing.fake_spot_world import BODY_HEIGHT

CONFIG = Path(__file__).resolve().parents[3] / "config"
LOG = logging.getLogger("test.spot.realsense")
USER, PASSWORD = "operator", "s3cret-Spot-passw0rd"
SKEW_S = 7.5  # s, the fake robot's clock ahead of ours


def skills_tree(robot: str) -> dict[str, Any]:
    tree: dict[str, Any] = yaml.safe_load((CONFIG / "robots" / f"{robot}.yaml").read_text())
    return tree


def params_of(robot: str, **overrides: object) -> dict[str, object]:
    """The skills node's parameters from the robot's files (spot_realsense: spot.yaml, then its own)."""
    params: dict[str, object] = {}
    for f in load_robots(CONFIG)[robot].robot_files:
        params.update(flatten(skills_tree(Path(f).stem)["skills"]["ros__parameters"]))
    params.update(overrides)
    return {k: v for k, v in params.items() if v is not None}


def read_params(params: dict[str, object]) -> tuple[SpotBackendSettings | None, list[str]]:
    r = ParamReader(params, "skills")
    return read(r), r.errors


def matrix(pose: tuple[tuple[float, float, float], tuple[float, float, float, float]]) -> np.ndarray:
    (x, y, z), (qx, qy, qz, qw) = pose
    m = np.eye(4)
    m[:3, :3] = [[1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)],
                 [2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)],
                 [2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)]]
    m[:3, 3] = (x, y, z)
    return m


def pose2_matrix(x: float, y: float, z: float, yaw: float = 0.0, pitch: float = 0.0) -> np.ndarray:
    """Rotation yaw about z then pitch about y (+ pitch = x axis down), at (x, y, z) m."""
    cy, sy, cp, sp = math.cos(yaw), math.sin(yaw), math.cos(pitch), math.sin(pitch)
    m = np.eye(4)
    m[:3, :3] = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]]) @ np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    m[:3, 3] = (x, y, z)
    return m


# ---- SpotRobot.kinematics() against the fake -------------------------------------------------------------


@pytest.fixture
def skewed() -> Iterator[tuple[SpotRobot, FakeSpot]]:
    fake = FakeSpot(username=USER, password=PASSWORD, clock_skew_s=SKEW_S).start()
    settings = SpotSettings(hostname="127.0.0.1", port=fake.port, client_name="monologue-test",
                            ca_cert_path=str(fake.ca_cert_path), rpc_timeout_s=1.0, connect_timeout_s=5.0,
                            command_timeout_s=5.0, feedback_period_s=0.05, take_lease=False,
                            lease_check_period_s=0.2, estop_timeout_s=3.0, max_linear_velocity=0.5,
                            max_angular_velocity=0.8, max_arm_reach=1.0)
    robot = SpotRobot(settings, SpotCredentials(USER, PASSWORD), LOG)
    try:
        robot.connect()
        yield robot, fake
    finally:
        robot.close()
        fake.stop()


def test_kinematics_are_the_robot_states_body_and_hand_at_local_time(skewed: tuple[SpotRobot, FakeSpot]) -> None:
    robot, fake = skewed
    fake.set_body_pose((1.2, -0.4, 0.6))
    before = time.time()
    kin = robot.kinematics()
    after = time.time()
    # acquisition time: the robot's clock (SKEW_S ahead) converted back to ours by time sync
    assert before - 0.05 <= kin.stamp_s <= after + 0.05, (before, kin.stamp_s, after)
    assert np.allclose(matrix(kin.odom_from_body), pose2_matrix(1.2, -0.4, BODY_HEIGHT, yaw=0.6), atol=1e-6)
    hx, hy, hz, pitch = LOOK_HAND
    assert kin.body_from_hand is not None
    assert np.allclose(matrix(kin.body_from_hand), pose2_matrix(hx, hy, hz, pitch=pitch), atol=1e-6)
    assert fake.calls.count("GetRobotState") >= 1


def test_mount_transforms_chain_to_the_cameras_pose(skewed: tuple[SpotRobot, FakeSpot]) -> None:
    """odom -> body -> hand (dynamic, at the state's stamp) and the static mount compose to the camera's pose."""
    from skills_node.robots.spot.ros import mount_transforms, stamp_msg

    robot, fake = skewed
    fake.set_body_pose((0.5, 0.3, -1.0))
    kin = robot.kinematics()
    tf = mount_transforms(kin, "hand")
    assert [(t.header.frame_id, t.child_frame_id) for t in tf] == [("odom", "body"), ("body", HAND_FRAME)]
    assert all(t.header.stamp == stamp_msg(kin.stamp_s) for t in tf)

    def as_matrix(t: Any) -> np.ndarray:
        tr, q = t.transform.translation, t.transform.rotation
        return matrix(((tr.x, tr.y, tr.z), (q.x, q.y, q.z, q.w)))

    mount = ((-0.05, 0.0, 0.08), (-0.5, 0.5, -0.5, 0.5))  # config/robots/spot.yaml's nominal mount
    hx, hy, hz, pitch = LOOK_HAND
    expected = pose2_matrix(0.5, 0.3, BODY_HEIGHT, yaw=-1.0) @ pose2_matrix(hx, hy, hz, pitch=pitch) @ matrix(mount)
    assert np.allclose(as_matrix(tf[0]) @ as_matrix(tf[1]) @ matrix(mount), expected, atol=1e-6)
    # the optical axis (z) points along the gripper (hand x), pitched down with the hand
    hand_x = (pose2_matrix(0.5, 0.3, BODY_HEIGHT, yaw=-1.0) @ pose2_matrix(hx, hy, hz, pitch=pitch))[:3, 0]
    assert np.allclose(expected[:3, 2], hand_x, atol=1e-6) and expected[2, 2] < 0
    # on the body: only odom -> body; on the hand of a Spot without an arm: a clear error
    assert [t.child_frame_id for t in mount_transforms(kin, "body")] == ["body"]
    armless = SpotKinematics(kin.odom_from_body, None, kin.stamp_s)
    with pytest.raises(ValueError, match="no hand frame"):
        mount_transforms(armless, "hand")


# ---- settings and config -------------------------------------------------------------------------------


def test_spot_realsense_yaml_reads_with_the_mount_on_and_the_hand_camera_off() -> None:
    s, errors = read_params(params_of("spot_realsense"))
    assert errors == [] and s is not None
    m = s.camera_mount
    assert s.camera.rate == 0.0 and m.rate == 20.0 and m.parent == "hand"
    assert m.frame == "camera_color_optical_frame"
    assert m.pose[0] == pytest.approx((-0.05, 0.0, 0.08)) and m.pose[1] == pytest.approx((-0.5, 0.5, -0.5, 0.5))
    spot, errors = read_params(params_of("spot"))
    assert errors == [] and spot is not None and spot.camera_mount.rate == 0.0 and spot.camera.rate == 3.0


def test_spot_realsense_yaml_is_spot_yaml_but_the_camera() -> None:
    """spot_realsense extends spot: its own file holds only the camera switch and the RealSense node."""
    assert load_robots(CONFIG)["spot_realsense"].robot_files == ("robots/spot.yaml", "robots/spot_realsense.yaml")
    spot, rs = skills_tree("spot"), skills_tree("spot_realsense")
    assert set(rs) == {"skills", "camera"}
    assert set(flatten(rs["skills"])) == {"ros__parameters.spot.camera.rate", "ros__parameters.spot.camera_mount.rate"}
    assert set(flatten(rs["skills"])) <= set(flatten(spot["skills"]))  # overrides, nothing new
    # the RealSense node's frame is the one the mount names; its topics are perception's
    camera = rs["camera"]["ros__parameters"]
    assert camera["frame_id"] == spot["skills"]["ros__parameters"]["spot"]["camera_mount"]["frame"]
    perception = flatten(yaml.safe_load((CONFIG / "monologue.yaml").read_text())["perception"]["ros__parameters"])
    assert perception["color_topic"] == f"{camera['namespace_prefix']}/color/image_raw"
    assert spot["perception"]["ros__parameters"]["base_frame"] == "odom"


@pytest.mark.parametrize(("overrides", "needle"), [
    ({"spot.camera_mount.parent": "leg"}, "spot.camera_mount.parent"),
    ({"spot.camera_mount.frame": ""}, "spot.camera_mount.frame"),
    ({"spot.camera_mount.frame": "hand"}, "is a Spot frame"),
    ({"spot.camera_mount.pose": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0]}, "unit quaternion"),
    ({"spot.camera_mount.pose": [0.0, 0.0, 0.0]}, "spot.camera_mount.pose"),
    ({"spot.camera_mount.rate": -1.0}, "spot.camera_mount.rate"),
    ({"spot.camera.rate": 3.0}, "both publish odom -> body"),
    ({"spot.camera_mount.rate": None}, "spot.camera_mount.rate: missing"),
])
def test_bad_mount_settings_are_refused(overrides: dict[str, object], needle: str) -> None:
    s, errors = read_params(params_of("spot_realsense", **overrides))
    assert s is None and any(needle in e for e in errors), errors


# ---- the CA certificate ----------------------------------------------------------------------------------


def test_a_missing_ca_certificate_is_refused_at_start_naming_parameter_and_path(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "robot-ca.pem"
    s, errors = read_params(params_of("spot", **{"spot.ca_cert_path": str(missing)}))
    assert s is None
    assert [e for e in errors if e.startswith("spot.ca_cert_path:") and str(missing) in e], errors
    # the core refuses it too (not a "connection lost" at connect)
    values = dict(hostname="h", port=443, client_name="c", ca_cert_path=str(missing), rpc_timeout_s=1.0,
                  connect_timeout_s=1.0, command_timeout_s=1.0, feedback_period_s=0.1, take_lease=False,
                  lease_check_period_s=1.0, estop_timeout_s=9.0, max_linear_velocity=0.5,
                  max_angular_velocity=0.8, max_arm_reach=1.0)
    with pytest.raises(ValueError, match="ca_cert_path: no file matches"):
        SpotSettings(**values)  # type: ignore[arg-type]
    # an existing file (or a glob matching one), and "" (the SDK's bundled CA), are accepted
    cert = tmp_path / "robot-ca.pem"
    cert.write_text("-----BEGIN CERTIFICATE-----\n")
    assert ca_cert_problem(str(cert)) is None and ca_cert_problem(str(tmp_path / "*.pem")) is None
    assert ca_cert_problem("") is None and ca_cert_problem(str(tmp_path)) is not None  # a directory is no file
    s, errors = read_params(params_of("spot", **{"spot.ca_cert_path": str(cert)}))
    assert errors == [] and s is not None
