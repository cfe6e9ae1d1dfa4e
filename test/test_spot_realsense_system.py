"""`robot:=spot_realsense` as real ROS 2 processes: the robot table's RealSense node (`camera`, perception_node
realsense_publisher on the fake pyrealsense2 SDK), the skills node's `spot` backend against FakeSpot (a gRPC robot
over TLS on 127.0.0.1, its clock skewed from ours), and perception's camera source with the oracle detector,
base_frame odom. Fakes only at the hardware boundaries.

The RealSense sits on Spot's hand (spot.camera_mount, here a mount that points it straight down), so its pose
comes only from the skills node's /tf (odom -> body -> hand from the robot state, stamped at acquisition and
converted to local time) and the static mount. The fake RealSense sees a flat floor; this test publishes
sim/ground_truth with a flat box on the floor right under the camera. The oracle detects a box only where the
depth image, deprojected with the camera pose perception looked up at the image's stamp, lands inside it: the
box is seen where it is exactly when that pose is right. Spot then moves (odometry), the box with it, and it is
seen at the new place: the TF follows the robot."""
from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from monologue_bringup.testing import running, wait_for

pytestmark = [pytest.mark.system]
REPO = Path(__file__).resolve().parents[1]
USER, PASSWORD = "operator", "fake-Spot-pw-never-logged"
OK_CODES = (0, -2, -15, 130)
NODES = ["camera", "skills", "perception"]
BOX = (0.3, 0.3, 0.06)  # m, the sponge's size (flat, on the floor)
MOUNT_T = (0.05, 0.0, 0.03)  # m, the camera in the hand frame


def rot_y(a: float) -> np.ndarray:
    return np.array([[math.cos(a), 0.0, math.sin(a)], [0.0, 1.0, 0.0], [-math.sin(a), 0.0, math.cos(a)]])


def rot_z(a: float) -> np.ndarray:
    return np.array([[math.cos(a), -math.sin(a), 0.0], [math.sin(a), math.cos(a), 0.0], [0.0, 0.0, 1.0]])


DOWN = np.array([[0.0, -1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])  # optical axes looking down (body axes)


def mount_pose() -> list[float]:
    """hand_T_camera: MOUNT_T, rotated so that the optical axis points straight down from the fake's look
    pose (the hand pitched down by LOOK_HAND's pitch)."""
    from perception_node.core.geometry import quaternion_from_matrix
    from skills_node.robots.spot.testing.fake_spot import LOOK_HAND

    m = np.eye(4)
    m[:3, :3] = rot_y(LOOK_HAND[3]).T @ DOWN
    return [*MOUNT_T, *quaternion_from_matrix(m)]


def camera_in_odom(body: tuple[float, float, float]) -> np.ndarray:
    """odom_T_camera for a body pose (x, y, yaw) with the hand at the fake's look pose (m)."""
    from skills_node.robots.spot.testing.fake_spot import LOOK_HAND
    from skills_node.robots.spot.testing.fake_spot_world import BODY_HEIGHT

    hx, hy, hz, pitch = LOOK_HAND
    odom_body, body_hand = np.eye(4), np.eye(4)
    odom_body[:3, :3], odom_body[:3, 3] = rot_z(body[2]), (body[0], body[1], BODY_HEIGHT)
    body_hand[:3, :3], body_hand[:3, 3] = rot_y(pitch), (hx, hy, hz)
    hand_cam = np.eye(4)
    hand_cam[:3, :3], hand_cam[:3, 3] = rot_y(pitch).T @ DOWN, MOUNT_T
    return odom_body @ body_hand @ hand_cam


class Probe:
    """Publishes sim/ground_truth (the sponge on the floor, where `place` puts it), subscribes to the scene."""

    def __init__(self) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.node import Node

        from monologue_common.qos import LATCHED
        from monologue_interfaces.msg import SceneDescription

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = Node("spot_realsense_probe", context=self.context)
        self.scenes: list[Any] = []
        self.sponge = (0.0, 0.0)
        self._lock = threading.Lock()
        self.node.create_subscription(SceneDescription, "scene/description", self.scenes.append, LATCHED)
        self.gt_pub = self.node.create_publisher(SceneDescription, "sim/ground_truth", LATCHED)
        self.node.create_timer(0.2, self.publish_ground_truth)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._spin = threading.Thread(target=self.executor.spin, daemon=True)
        self._spin.start()

    def place(self, x: float, y: float) -> None:
        with self._lock:
            self.sponge = (x, y)
        self.publish_ground_truth()

    def publish_ground_truth(self) -> None:
        from monologue_domain.msgs import scene_object_to_msg
        from monologue_domain.scene import SceneObject
        from monologue_interfaces.msg import SceneDescription

        with self._lock:
            x, y = self.sponge
        msg = SceneDescription()
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.header.frame_id, msg.source = "odom", "ground_truth"
        msg.objects = [scene_object_to_msg(SceneObject(name="sponge", category="object", position=(x, y, BOX[2] / 2),
                                                       size=BOX), msg.header)]
        self.gt_pub.publish(msg)

    def sponge_seen_near(self, x: float, y: float, tol_m: float) -> bool:
        if not self.scenes:
            return False
        s = self.scenes[-1]
        return any(o.name == "sponge" and o.visible and math.hypot(o.pose.pose.position.x - x,
                                                                   o.pose.pose.position.y - y) < tol_m
                   for o in s.objects)

    def close(self) -> None:
        import rclpy

        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


@pytest.fixture(scope="module")
def realsense_graph(ros_domain: int, tmp_path_factory: pytest.TempPathFactory
                    ) -> Iterator[tuple[Any, Any, list[str], float]]:
    from monologue_bringup.graph import graph_for
    from monologue_domain.kitchen.world import make_state
    from perception_node.testing.fake_pyrealsense2 import SCENARIO_ENV, write_shim
    from skills_node.robots.spot.testing.fake_spot import FakeSpot
    from skills_node.robots.spot.testing.fake_spot_world import FakeKitchen

    assert [s.name for s in graph_for("spot_realsense")][:2] == ["camera", "skills"]  # the table starts it
    world = FakeKitchen(make_state({"coke": "far counter"}, "far counter"))
    fake = FakeSpot(username=USER, password=PASSWORD, world=world, time_scale=0.1, clock_skew_s=-4.0).start()
    height = float(camera_in_odom(fake.body_pose)[2, 3])  # m, the camera above the floor
    tmp = tmp_path_factory.mktemp("spot_realsense")
    # the fake RealSense sees a plane at `height` along its optical axis: the floor, as it looks straight down
    (tmp / "camera.json").write_text(json.dumps({"plane": {"z0": height, "slope_x": 0.0, "slope_y": 0.0}}))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(write_shim(tmp / "sdk")), env.get("PYTHONPATH", "")])
    env[SCENARIO_ENV] = str(tmp / "camera.json")
    env["BOSDYN_CLIENT_USERNAME"], env["BOSDYN_CLIENT_PASSWORD"] = USER, PASSWORD
    from monologue_bringup.up import Supervisor

    lines: list[str] = []
    pose = "[" + ", ".join(f"{v:.9f}" for v in mount_pose()) + "]"
    sup = Supervisor("spot_realsense", "embedded", config_dir=REPO / "config", sink=lines.append, env=env,
                     nodes=NODES, node_params={
                         "camera": {"width": "320", "height": "240", "fps": "6"},
                         "skills": {"spot.hostname": "127.0.0.1", "spot.port": str(fake.port),
                                    "spot.ca_cert_path": str(fake.ca_cert_path), "spot.rpc_timeout": "1.0",
                                    "spot.feedback_period": "0.05", "spot.lease_check_period": "0.2",
                                    "spot.command_timeout": "5.0", "spot.start_location": "far counter",
                                    "spot.objects": "[coke, sponge]", "spot.camera_mount.pose": pose},
                         "perception": {"detector": "oracle", "use_open3d": "false", "process_rate": "4.0"},
                     })
    with running(sup, lines, then=fake.stop, secret=PASSWORD, ok_codes=OK_CODES):
        yield sup, fake, lines, height


@pytest.fixture(scope="module")
def probe(realsense_graph: tuple[Any, Any, list[str], float]) -> Iterator[Probe]:
    p = Probe()
    try:
        yield p
    finally:
        p.close()


def test_perception_sees_the_floor_box_under_the_arm_realsense_and_follows_spot(
        realsense_graph: tuple[Any, Any, list[str], float], probe: Probe) -> None:
    sup, fake, lines, height = realsense_graph
    assert 1.0 < height < 1.6  # the body's height plus the raised hand's
    cam = camera_in_odom(fake.body_pose)[:3, 3]
    probe.place(float(cam[0]), float(cam[1]))
    wait_for("the sponge under the RealSense in perception's scene",
          lambda: probe.sponge_seen_near(float(cam[0]), float(cam[1]), 0.08), 120.0, sup, lines)
    scene = probe.scenes[-1]
    assert scene.header.frame_id == "odom" and scene.source == "oracle"
    sponge = next(o for o in scene.objects if o.name == "sponge")
    assert -0.02 < sponge.pose.pose.position.z < BOX[2] + 0.02  # on the floor, its depth from the RealSense
    first = len(lines)

    # Spot walks (odometry): the camera goes with the hand; the sponge is put under it again
    x, y, yaw = fake.body_pose
    fake.set_body_pose((x - 0.8, y + 0.5, yaw + 0.7))
    cam2 = camera_in_odom(fake.body_pose)[:3, 3]
    assert math.hypot(*(cam2 - cam)[:2]) > 0.5
    probe.place(float(cam2[0]), float(cam2[1]))
    wait_for("the sponge at its new place under the moved RealSense",
          lambda: probe.sponge_seen_near(float(cam2[0]), float(cam2[1]), 0.08), 60.0, sup, lines)

    log = "\n".join(lines)
    assert "[camera]" in log and "publishing device on camera/" in log
    # perception found the RealSense's pose on /tf for every frame after the first scene
    assert not [line for line in lines[first:] if "[perception]" in line and "dropped" in line], lines[first:]
    assert not [line for line in lines if "[skills]" in line and "camera mount TF" in line]
    assert not sup.dead(), sup.dead()
