"""The MuJoCo simulator node through ROS, as a robot program sees it: camera images with aligned depth,
TF, ground truth, and the arm commanded on `arm/command` (IM pick-and-place; a too-heavy block)."""
from __future__ import annotations

import math
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rclpy
from geometry_msgs.msg import Pose as PoseMsg
from geometry_msgs.msg import PoseStamped
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import Bool
from tf2_msgs.msg import TFMessage

from monologue_common.actions import ActionClient
from monologue_interfaces.action import ArmCommand
from monologue_interfaces.msg import SceneDescription
from monologue_interfaces.srv import DisturbSim, ResetSim

pytestmark = [pytest.mark.system]
REPO = Path(__file__).resolve().parents[1]
WIDTH, HEIGHT = 320, 240  # px
HOVER = 0.15  # m above the object, as the IM primitive
LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)


@pytest.fixture(scope="module")
def sim_process(ros_domain: int) -> Iterator[list[str]]:
    """The real node process, started with --ros-args as the launch file starts it."""
    from ament_index_python.packages import get_package_prefix

    exe = Path(get_package_prefix("tabletop_sim")) / "lib" / "tabletop_sim" / "tabletop_sim"
    params = {
        "sim.seed": "3", "sim.block_colors": "[red, purple]", "sim.bowl_colors": "[green]",
        "sim.heavy_blocks": "[purple]", "camera.width": str(WIDTH), "camera.height": str(HEIGHT),
        "camera.rate": "5.0", "real_time_factor": "10",  # an integer: parameters are dynamically typed
    }
    cmd = [str(exe), "--ros-args", "-r", "__node:=tabletop_sim", "--params-file",
           str(REPO / "config" / "robots" / "sim.yaml")]
    for k, v in params.items():
        cmd += ["-p", f"{k}:={v}"]
    env = dict(os.environ, PYTHONUNBUFFERED="1", RCUTILS_COLORIZED_OUTPUT="0")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=env, start_new_session=True)
    lines: list[str] = []

    def pump() -> None:
        assert proc.stdout is not None
        for raw in iter(proc.stdout.readline, b""):
            lines.append(raw.decode("utf-8", "replace").rstrip())

    pumper = threading.Thread(target=pump, daemon=True)
    pumper.start()
    try:
        yield lines
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(10.0)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        pumper.join(2.0)
        assert proc.returncode in (0, -signal.SIGINT), "\n".join(lines[-40:])


@dataclass
class Probe:
    node: Node
    executor: SingleThreadedExecutor
    arm: ActionClient
    reset: Any
    disturb: Any
    truth: list[SceneDescription] = field(default_factory=list)
    rgb: list[Image] = field(default_factory=list)
    depth: list[Image] = field(default_factory=list)
    info: list[CameraInfo] = field(default_factory=list)
    tf: list[TFMessage] = field(default_factory=list)
    tf_static: list[TFMessage] = field(default_factory=list)
    joints: list[JointState] = field(default_factory=list)
    tcp: list[PoseStamped] = field(default_factory=list)
    holding: list[Bool] = field(default_factory=list)
    feedback: list[Any] = field(default_factory=list)

    def spin_until(self, done: Callable[[], bool], timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not done():
            assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
            self.executor.spin_once(timeout_sec=0.05)

    def call(self, client: Any, request: Any, timeout_s: float = 20.0) -> Any:
        future = client.call_async(request)
        self.spin_until(future.done, timeout_s, f"{client.srv_name}")
        return future.result()

    def command(self, timeout_s: float = 30.0, **fields: Any) -> tuple[int, ArmCommand.Result]:
        """Send one ArmCommand goal and wait for its result: (goal status, result)."""
        goal = ArmCommand.Goal(**fields)
        send = self.arm.send_goal_async(goal, feedback_callback=lambda fb: self.feedback.append(fb.feedback))
        self.spin_until(send.done, timeout_s, "goal acceptance")
        handle = send.result()
        assert handle is not None and handle.accepted
        result = handle.get_result_async()
        self.spin_until(result.done, timeout_s, f"result of command {goal.command}")
        return result.result().status, result.result().result

    def latest_truth_after(self, t: float) -> SceneDescription:
        """The first ground truth stamped after wall time t (s)."""
        def fresh() -> bool:
            return bool(self.truth) and _stamp(self.truth[-1].header.stamp) > t
        self.spin_until(fresh, 10.0, "a fresh ground truth")
        return self.truth[-1]


@pytest.fixture(scope="module")
def probe(sim_process: list[str]) -> Iterator[Probe]:
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("tabletop_sim_probe", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    p = Probe(node, executor, ActionClient(node, ArmCommand, "arm/command"),
              node.create_client(ResetSim, "sim/reset"), node.create_client(DisturbSim, "sim/disturb"))
    node.create_subscription(SceneDescription, "sim/ground_truth", p.truth.append, LATCHED)
    node.create_subscription(Image, "camera/color/image_raw", p.rgb.append, 5)
    node.create_subscription(Image, "camera/aligned_depth_to_color/image_raw", p.depth.append, 5)
    node.create_subscription(CameraInfo, "camera/color/camera_info", p.info.append, 5)
    node.create_subscription(TFMessage, "/tf", p.tf.append, 100)
    node.create_subscription(TFMessage, "/tf_static", p.tf_static.append, LATCHED)
    node.create_subscription(JointState, "joint_states", p.joints.append, 10)
    node.create_subscription(PoseStamped, "tcp_pose", p.tcp.append, 10)
    node.create_subscription(Bool, "suction/holding", p.holding.append, LATCHED)
    try:
        started = time.monotonic()
        while not p.arm.wait_for_server(timeout_sec=0.5):
            assert time.monotonic() - started < 60, "arm/command never appeared\n" + "\n".join(sim_process[-30:])
        yield p
    finally:
        p.arm.destroy()
        node.destroy_node()
        executor.shutdown()
        rclpy.shutdown(context=context)


def _stamp(t: Any) -> float:
    return float(t.sec) + t.nanosec * 1e-9


def _obj(scene: SceneDescription, name: str) -> Any:
    return next(o for o in scene.objects if o.name == name)


def _xyz(o: Any) -> np.ndarray:
    p = o.pose.pose.position
    return np.array([p.x, p.y, p.z])


def _matrix(tf: Any) -> np.ndarray:
    """TransformStamped -> 4x4 homogeneous matrix (parent <- child)."""
    from tabletop_sim.core.geometry import quat_to_mat

    r = tf.transform.rotation
    t = tf.transform.translation
    m = np.eye(4)
    m[:3, :3] = quat_to_mat(np.array([r.x, r.y, r.z, r.w]))
    m[:3, 3] = [t.x, t.y, t.z]
    return m


def _down_pose(x: float, y: float, z: float) -> PoseMsg:
    pose = PoseMsg()
    pose.position.x, pose.position.y, pose.position.z = x, y, z
    pose.orientation.x, pose.orientation.w = 1.0, 0.0  # tool pointing down (nominal pick orientation)
    return pose


def test_images_depth_and_tf_match_the_ground_truth(probe: Probe) -> None:
    probe.spin_until(lambda: bool(probe.rgb and probe.depth and probe.info and probe.truth and probe.tf
                                  and probe.tf_static and probe.joints), 30.0, "images, TF, joints and ground truth")
    rgb, depth, info = probe.rgb[-1], probe.depth[-1], probe.info[-1]
    assert (rgb.encoding, rgb.width, rgb.height, rgb.step) == ("rgb8", WIDTH, HEIGHT, WIDTH * 3)
    assert (depth.encoding, depth.width, depth.height, depth.step) == ("16UC1", WIDTH, HEIGHT, WIDTH * 2)
    assert rgb.header.frame_id == depth.header.frame_id == info.header.frame_id == "camera_color_optical_frame"
    assert (info.width, info.height) == (WIDTH, HEIGHT) and info.k[0] > 0 and info.k[2] == pytest.approx(159.5)
    assert probe.joints[-1].name == ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint",
                                     "wrist_1_joint", "wrist_2_joint", "wrist_3_joint"]

    static = {t.child_frame_id: t for msg in probe.tf_static for t in msg.transforms}
    dynamic = {t.child_frame_id: t for msg in probe.tf for t in msg.transforms}
    assert static["base_link"].header.frame_id == "world"
    assert dynamic["tool0"].header.frame_id == "base_link"
    assert static["camera_link"].header.frame_id == "tool0"
    assert static["camera_color_optical_frame"].header.frame_id == "camera_link"
    base_to_optical = (_matrix(dynamic["tool0"]) @ _matrix(static["camera_link"])
                       @ _matrix(static["camera_color_optical_frame"]))
    to_camera = np.linalg.inv(base_to_optical)

    mm = np.frombuffer(bytes(depth.data), dtype="<u2").reshape(HEIGHT, WIDTH)
    k = np.array(info.k).reshape(3, 3)
    objects = [o for o in probe.truth[-1].objects if o.category in ("block", "bowl")]
    assert [o.name for o in objects] == ["red block", "purple block", "green bowl"]
    for o in objects:
        top = _xyz(o) + [0.0, 0.0, 0.02 if o.category == "block" else 0.005]  # block top / bowl floor
        p = to_camera @ np.append(top, 1.0)
        u, v, _ = k @ (p[:3] / p[2])
        col, row = int(round(u)), int(round(v))
        assert 0 <= col < WIDTH and 0 <= row < HEIGHT, f"{o.name} out of view"
        assert abs(mm[row, col] / 1000.0 - p[2]) < 0.01, f"{o.name}: depth {mm[row, col]} mm, expected {p[2]:.3f} m"
    pixels = np.frombuffer(bytes(rgb.data), dtype=np.uint8).reshape(HEIGHT, WIDTH, 3)
    assert pixels.std() > 5.0  # a real picture, not a blank frame


def _pick(probe: Probe, name: str) -> list[ArmCommand.Result]:
    """Hover 15 cm above, move until contact down, suction on, lift. Returns the four results."""
    x, y, z = _xyz(_obj(probe.truth[-1], name))
    above = _down_pose(x, y, z + 0.02 + HOVER)
    return _descend_and_back(probe, above, suction_on=True)


def _descend_and_back(probe: Probe, above: PoseMsg, suction_on: bool) -> list[ArmCommand.Result]:
    """Move to `above`, move until contact down, switch the suction, move back up: four results."""
    g = ArmCommand.Goal
    results = []
    for fields in (
        dict(command=g.MOVE_LINEAR, pose=above, speed=0.5, acceleration=2.0),
        dict(command=g.MOVE_UNTIL_CONTACT, direction=_down(), speed=0.1, max_travel=0.3),
        dict(command=g.SET_SUCTION, suction_on=suction_on),
        dict(command=g.MOVE_LINEAR, pose=above, speed=0.5, acceleration=2.0),
    ):
        _, result = probe.command(**fields)
        assert result.error_code == ArmCommand.Result.ERROR_NONE, result.message
        results.append(result)
    return results


def _down() -> Any:
    from geometry_msgs.msg import Vector3

    return Vector3(x=0.0, y=0.0, z=-1.0)


def test_pick_and_place_through_arm_command(probe: Probe) -> None:
    bowl = _xyz(_obj(probe.truth[-1], "green bowl"))
    picked = _pick(probe, "red block")
    assert picked[1].contact and not picked[1].holding
    assert picked[2].holding and picked[3].holding
    n = len(probe.holding)
    probe.spin_until(lambda: len(probe.holding) > n + 1, 5.0, "the vacuum sensor topic")
    assert probe.holding[-1].data  # the state a program polls agrees with the command results
    tcp = probe.tcp[-1].pose.position
    assert (tcp.x, tcp.y, tcp.z) == pytest.approx((picked[3].tcp_pose.position.x, picked[3].tcp_pose.position.y,
                                                   picked[3].tcp_pose.position.z), abs=1e-4)
    assert probe.feedback and 0.0 <= probe.feedback[-1].progress <= 1.0
    placed = _descend_and_back(probe, _down_pose(bowl[0], bowl[1], 0.06 + HOVER), suction_on=False)
    assert placed[0].holding and placed[1].contact and not placed[2].holding
    result = placed[3]
    assert result.tcp_pose.position.z == pytest.approx(0.06 + HOVER, abs=1e-3)
    time.sleep(0.3)  # let the block settle (3 s simulated at the test's real-time factor)
    red = _xyz(_obj(probe.latest_truth_after(time.time()), "red block"))
    assert math.hypot(red[0] - bowl[0], red[1] - bowl[1]) < 0.04, f"red block at {red}, bowl at {bowl}"
    assert red[2] == pytest.approx(0.025, abs=0.004)  # on the bowl's floor


def test_a_heavy_block_is_not_lifted(probe: Probe) -> None:
    before = _xyz(_obj(probe.truth[-1], "purple block"))
    picked = _pick(probe, "purple block")
    assert picked[1].contact and picked[2].holding  # the cup seals on the block...
    assert not picked[3].holding  # ...but lifting breaks the seal: the pick failed
    probe.command(command=ArmCommand.Goal.SET_SUCTION, suction_on=False)
    after = _xyz(_obj(probe.latest_truth_after(time.time()), "purple block"))
    assert np.linalg.norm(after - before) < 0.003


def test_one_motion_at_a_time_and_cancel_stops_it(probe: Probe) -> None:
    g = ArmCommand.Goal
    start = list(probe.joints[-1].position)
    target = list(start)
    target[0] += 1.0
    send = probe.arm.send_goal_async(g(command=g.MOVE_JOINTS, joint_positions=target, speed=0.1, acceleration=1.0))
    probe.spin_until(send.done, 10.0, "acceptance of the slow move")
    slow = send.result()
    assert slow.accepted
    status, second = probe.command(command=g.MOVE_JOINTS, joint_positions=start)
    assert second.error_code == ArmCommand.Result.ERROR_INVALID and "another motion" in second.message
    cancel = slow.cancel_goal_async()
    probe.spin_until(cancel.done, 10.0, "cancel response")
    result = slow.get_result_async()
    probe.spin_until(result.done, 10.0, "result of the cancelled move")
    assert result.result().result.error_code == ArmCommand.Result.ERROR_CANCELED
    stopped = result.result().result.joint_positions[0]
    assert start[0] < stopped < target[0] - 0.3
    _, bad = probe.command(command=g.MOVE_LINEAR, pose=_down_pose(1.6, 0.0, 0.2))
    assert bad.error_code == ArmCommand.Result.ERROR_UNREACHABLE


def test_reset_and_disturb_services(probe: Probe) -> None:
    reply = probe.call(probe.reset, ResetSim.Request(seed=8, num_blocks=-1, num_bowls=-1,
                                                     block_colors=["yellow", "cyan"], bowl_colors=[]))
    assert reply.success and reply.objects == ["yellow block", "cyan block"], reply.message
    scene = probe.latest_truth_after(time.time() - 0.5)
    assert [o.name for o in scene.objects if o.category != "location"] == ["yellow block", "cyan block"]
    bad = probe.call(probe.reset, ResetSim.Request(seed=8, num_blocks=-1, num_bowls=-1, block_colors=["teal"]))
    assert not bad.success and "teal" in bad.message
    knock = probe.call(probe.disturb, DisturbSim.Request(kind=DisturbSim.Request.KNOCK_TOWER))
    assert not knock.success and "no tower" in knock.message
    moved = probe.call(probe.disturb, DisturbSim.Request(kind=DisturbSim.Request.MOVE_OBJECT,
                                                         object="yellow block", location="middle"))
    assert moved.success and moved.affected == ["yellow block"], moved.message
    time.sleep(0.3)
    yellow = _xyz(_obj(probe.latest_truth_after(time.time()), "yellow block"))
    assert math.hypot(yellow[0] - 0.5, yellow[1]) < 0.01 and yellow[2] == pytest.approx(0.02, abs=0.003)
