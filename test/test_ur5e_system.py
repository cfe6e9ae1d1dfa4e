"""The skills node with backend ur5e as a real ROS 2 process, against the fake UR5e behind ur_rtde's API:
affordances from the scene description, a refused out-of-limit skill with nothing sent, the pick-and-place
command sequence, cancel -> stopL, the e-stop topic latch and its reset service, robot/status."""
from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import rclpy
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from std_msgs.msg import Bool

from monologue_common.actions import ActionClient
from monologue_common.qos import LATCHED
from monologue_domain.msgs import scene_to_msg
from monologue_domain.scene import Scene, SceneObject
from monologue_interfaces.action import ExecuteSkill
from monologue_interfaces.msg import RobotStatus, SceneDescription
from monologue_interfaces.srv import GetAffordances, ResetEstop

pytestmark = [pytest.mark.system]
REPO = Path(__file__).resolve().parents[1]
OBJECTS = [  # (name, category, x, y, size) in m; perception reports the top centre
    ("red block", "block", 0.45, 0.10, 0.04),
    ("green block", "block", 0.55, -0.10, 0.04),
    ("far block", "block", 0.95, 0.00, 0.04),
    ("blue plate", "plate", 0.60, 0.15, 0.01),
]


@pytest.fixture(scope="module")
def ur5e_skills(ros_domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Path, list[str]]]:
    from monologue_bringup.up import Supervisor

    log_path = tmp_path_factory.mktemp("fake_rtde") / "commands.jsonl"
    env = dict(os.environ)
    env["MONOLOGUE_FAKE_RTDE"] = json.dumps({"time_scale": 5.0, "objects": [
        {"name": n, "x": x, "y": y, "size": s} for n, _c, x, y, s in OBJECTS]})
    env["MONOLOGUE_FAKE_RTDE_LOG"] = str(log_path)
    from perception_node.testing.fake_pyrealsense2 import write_absent_shim

    no_sdk = write_absent_shim(log_path.parent / "no_sdk")  # as on a platform without a pyrealsense2 wheel
    env["PYTHONPATH"] = os.pathsep.join([str(no_sdk), env.get("PYTHONPATH", "")])
    lines: list[str] = []
    # the camera node without pyrealsense2 (an optional wheel; hidden by the shim) stays up, saying so once
    sup = Supervisor("ur5e", "embedded", config_dir=REPO / "config", sink=lines.append, env=env,
                     nodes=["camera", "skills"],
                     node_params={"skills": {
                         "ur5e.rtde_factory": "skills_node.robots.ur5e.testing.fake_rtde:factories_from_env",
                         "ur5e.probe": "false", "ur5e.contact.speed": "0.05", "ur5e.grip_delay": "0.05",
                         "ur5e.release_delay": "0.05", "status_rate": "10.0"}})
    sup.start()
    try:
        yield sup, log_path, lines
    finally:
        codes = sup.stop()
        assert codes["skills"] in (0, -2, -15, 130) and codes["camera"] in (0, -2, -15, 130), "\n".join(lines[-50:])


class Probe:
    """A test node: publishes the scene and the e-stop, calls the skills node."""

    def __init__(self) -> None:
        rclpy.init()
        self.node = Node("ur5e_probe")
        self.executor = MultiThreadedExecutor(num_threads=2)
        self.executor.add_node(self.node)
        self._spin = threading.Thread(target=self.executor.spin, daemon=True)
        self._spin.start()
        self.status: list[RobotStatus] = []
        self.node.create_subscription(RobotStatus, "robot/status", self.status.append, LATCHED)
        from rclpy.qos import DurabilityPolicy, QoSProfile
        from tf2_msgs.msg import TFMessage

        self.tf: list[Any] = []
        self.tf_static: list[Any] = []
        self.node.create_subscription(TFMessage, "/tf", self.tf.append, 10)
        self.node.create_subscription(TFMessage, "/tf_static", self.tf_static.append,
                                      QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self.scene_pub = self.node.create_publisher(SceneDescription, "scene/description", LATCHED)
        # a camera's camera_info, as the skills node watches for it (robot/status says "no camera" without)
        from sensor_msgs.msg import CameraInfo

        self.camera_on = True
        info_pub = self.node.create_publisher(CameraInfo, "camera/color/camera_info", 5)
        self.node.create_timer(0.2, lambda: info_pub.publish(CameraInfo(width=640, height=480))
                               if self.camera_on else None)
        self.estop_pub = self.node.create_publisher(Bool, "estop", 10)
        self.skill = ActionClient(self.node, ExecuteSkill, "execute_skill")
        self.affordances = self.node.create_client(GetAffordances, "get_affordances")
        self.reset = self.node.create_client(ResetEstop, "estop_reset")

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown()

    def wait_for(self, what: str, cond: Callable[[], bool], timeout_s: float = 20.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not cond():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.02)

    def publish_scene(self) -> None:
        cubes = tuple(SceneObject(n, c, (x, y, s), (s, s, s)) for n, c, x, y, s in OBJECTS)
        self.scene_pub.publish(scene_to_msg(Scene("base", 0.0, "test", cubes)))  # ur_rtde's frame

    def call(self, client: Any, request: Any) -> Any:
        assert client.wait_for_service(timeout_sec=20.0)
        future = client.call_async(request)
        self.wait_for("service response", future.done)
        return future.result()

    def execute(self, skill: str, *args: str, cancel_on: int | None = None) -> tuple[Any, list[int]]:
        assert self.skill.wait_for_server(timeout_sec=20.0)
        states: list[int] = []
        handle_future = self.skill.send_goal_async(ExecuteSkill.Goal(skill=skill, args=list(args)),
                                                   feedback_callback=lambda fb: states.append(fb.feedback.state))
        self.wait_for("goal acceptance", handle_future.done)
        handle = handle_future.result()
        assert handle.accepted
        if cancel_on is not None:
            self.wait_for("feedback to cancel on", lambda: cancel_on in states)
            handle.cancel_goal_async()
        result_future = handle.get_result_async()
        self.wait_for("skill result", result_future.done, timeout_s=60.0)
        return result_future.result().result, states


@pytest.fixture(scope="module")
def probe(ur5e_skills: tuple[Any, Path, list[str]]) -> Iterator[Probe]:
    p = Probe()
    p.publish_scene()
    try:
        yield p
    finally:
        p.close()


def commands(log_path: Path) -> list[dict[str, Any]]:
    if not log_path.exists():
        return []
    return [json.loads(line) for line in log_path.read_text().splitlines() if line.strip()]


def moves(log_path: Path) -> list[str]:
    keep = {"moveL", "moveJ", "stopL", "stopJ", "setToolDigitalOut", "zeroFtSensor"}
    return [c["cmd"] for c in commands(log_path) if c["cmd"] in keep]


def test_status_and_affordances(ur5e_skills: tuple[Any, Path, list[str]], probe: Probe) -> None:
    probe.wait_for("robot/status ok", lambda: bool(probe.status) and probe.status[-1].ok)
    s = probe.status[-1]
    assert s.backend == "ur5e" and s.connected and s.robot_mode_name == "RUNNING" and s.safety_mode_name == "NORMAL"
    assert len(s.tcp_pose) == 6 and len(s.joint_positions) == 6
    _sup, log, _lines = ur5e_skills
    assert [c["cmd"] for c in commands(log)][:2] == ["setTcp", "setPayload"]
    req = GetAffordances.Request()
    req.include_unaffordable = True
    deadline = time.monotonic() + 20.0
    res = probe.call(probe.affordances, req)
    while not res.objects and time.monotonic() < deadline:  # the latched scene is still on its way
        time.sleep(0.1)
        res = probe.call(probe.affordances, req)
    assert res.success
    affs = {tuple(a.args): a.affordance for a in res.skills}
    assert affs[("red block", "blue plate")] == 1.0 and affs[("far block", "blue plate")] == 0.0
    assert sorted(res.objects) == ["far block", "green block", "red block"] and res.locations == ["blue plate"]


def test_out_of_limit_skill_is_refused_with_nothing_sent(ur5e_skills: tuple[Any, Path, list[str]],
                                                         probe: Probe) -> None:
    _sup, log, _lines = ur5e_skills
    before = moves(log)
    result, _ = probe.execute("pick_place", "far block", "blue plate")
    assert result.error_code == ExecuteSkill.Result.OUT_OF_LIMITS
    assert "x = 0.950 m is outside the workspace" in result.error_msg
    assert moves(log) == before


def test_pick_place_sends_the_primitive(ur5e_skills: tuple[Any, Path, list[str]], probe: Probe) -> None:
    _sup, log, _lines = ur5e_skills
    before = len(moves(log))
    result, states = probe.execute("pick_place", "red block", "blue plate")
    assert result.error_code == ExecuteSkill.Result.NONE, result.error_msg
    assert moves(log)[before:] == ["moveL", "zeroFtSensor", "moveL", "stopL", "setToolDigitalOut", "moveL",
                                   "moveL", "zeroFtSensor", "moveL", "stopL", "setToolDigitalOut", "moveL"]
    # Feedback and result travel on different topics: the last feedback may arrive after the result.
    probe.wait_for("the DONE feedback", lambda: bool(states) and states[-1] == ExecuteSkill.Feedback.STATE_DONE,
                   timeout_s=5.0)


def test_cancel_stops_the_arm(ur5e_skills: tuple[Any, Path, list[str]], probe: Probe) -> None:
    _sup, log, _lines = ur5e_skills
    result, _ = probe.execute("pick_place", "green block", "red block",
                              cancel_on=ExecuteSkill.Feedback.STATE_PICKING)
    assert result.error_code == ExecuteSkill.Result.CANCELED, result.error_msg
    assert moves(log)[-1] == "stopL"


def test_estop_topic_latches_until_reset(ur5e_skills: tuple[Any, Path, list[str]], probe: Probe) -> None:
    _sup, log, _lines = ur5e_skills
    probe.estop_pub.publish(Bool(data=True))
    probe.wait_for("e-stop latched on robot/status", lambda: probe.status[-1].estop_latched)
    assert not probe.status[-1].ok and "software e-stop latched (estop topic)" in probe.status[-1].fault
    assert moves(log)[-1] == "stopL"
    before = moves(log)
    result, _ = probe.execute("home")
    assert result.error_code == ExecuteSkill.Result.ESTOP_ACTIVE and moves(log) == before
    res = probe.call(probe.reset, ResetEstop.Request())
    assert res.success and res.message == "e-stop reset"
    probe.wait_for("robot/status ok again", lambda: probe.status[-1].ok)
    result, _ = probe.execute("home")
    assert result.error_code == ExecuteSkill.Result.NONE, result.error_msg
    assert moves(log)[-1] == "moveJ"


def test_the_arm_and_its_wrist_camera_are_on_tf(probe: Probe) -> None:
    """ur_description's frames: base -> tool0 from the measured TCP pose (tool down, 0.16 m TCP offset: tool0 0.16 m
    above the TCP), static base_link -> base, tool0 -> flange and tool0 -> camera_link, which with the camera
    driver's camera_link -> camera_color_optical_frame is the hand-eye calibration (test/test_ur5e_frames.py
    checks the chain against the UR URDF and the simulator's arm)."""
    from skills_node.core import frames

    probe.wait_for("/tf and /tf_static", lambda: bool(probe.tf) and bool(probe.tf_static) and bool(probe.status))
    t = probe.tf[-1].transforms[0]
    assert (t.header.frame_id, t.child_frame_id) == ("base", "tool0")
    assert probe.status[-1].header.frame_id == "base"  # tcp_pose in ur_rtde's frame

    def flange_over_tcp() -> bool:
        """The newest /tf and the newest robot/status agree (they are sampled apart: wait for a resting arm)."""
        p, tcp = probe.tf[-1].transforms[0].transform.translation, probe.status[-1].tcp_pose  # m
        return all(abs(a - b) < 1e-3 for a, b in zip((p.x, p.y, p.z), (tcp[0], tcp[1], tcp[2] + 0.16)))

    probe.wait_for("/tf's tool0 0.16 m above robot/status's TCP", flange_over_tcp, timeout_s=10.0)
    tcp = probe.status[-1].tcp_pose  # m, rad
    # the arm rests with the tool pointing down: a half turn about a horizontal axis
    assert math.hypot(tcp[3], tcp[4], tcp[5]) == pytest.approx(math.pi, abs=1e-3) and abs(tcp[5]) < 1e-3
    static = {(s.header.frame_id, s.child_frame_id): s.transform for s in probe.tf_static[-1].transforms}
    assert set(static) == {("base_link", "base"), ("tool0", "flange"), ("tool0", "camera_link")}
    assert static[("base_link", "base")].rotation.z == pytest.approx(1.0)  # pi about z
    c = static[("tool0", "camera_link")]
    link = ((c.translation.x, c.translation.y, c.translation.z),
            (c.rotation.x, c.rotation.y, c.rotation.z, c.rotation.w))
    optical = frames.compose(link, frames.OPTICAL_IN_LINK)  # + our RealSense publisher's camera_link -> optical
    assert frames.close(optical, ((0.0, -0.075, 0.035), (0.0, 0.0, 0.0, 1.0)), 1e-6, 1e-6)  # ur5e.hand_eye


def test_a_scene_in_another_frame_is_not_picked_from(probe: Probe, ur5e_skills: tuple[Any, Path, list[str]]) -> None:
    """Perception's scene in base_link (x and y turned around from ur_rtde's base) must not become targets."""
    _, _, lines = ur5e_skills
    probe.wait_for("the scene's objects", lambda: bool(probe.call(probe.affordances, GetAffordances.Request()).objects))
    cubes = (SceneObject("turned block", "block", (-0.45, -0.10, 0.04), (0.04, 0.04, 0.04)),)
    probe.scene_pub.publish(scene_to_msg(Scene("base_link", 0.0, "test", cubes)))
    probe.wait_for("the skills node refusing the scene",
                   lambda: any("scene description in frame 'base_link' ignored" in line for line in lines))
    objects = probe.call(probe.affordances, GetAffordances.Request()).objects
    assert "turned block" not in objects and "red block" in objects
    probe.publish_scene()  # the latched scene again, for any later test


def test_without_a_camera_the_graph_stays_up_and_robot_status_says_no_camera(
        probe: Probe, ur5e_skills: tuple[Any, Path, list[str]]) -> None:
    """pyrealsense2 is not installed here: the camera node logs one line and keeps running; once no camera_info
    has come for ur5e.camera.timeout (5 s), robot/status is not ok with "no camera" (the web page shows the fault);
    camera_info again: ok."""
    sup, _, lines = ur5e_skills
    probe.camera_on = False
    probe.wait_for("robot/status saying no camera", lambda: "no camera" in probe.status[-1].fault, timeout_s=30.0)
    st = probe.status[-1]
    assert not st.ok and st.connected and "camera/color/camera_info" in st.fault, st.fault
    assert not sup.dead(), sup.dead()  # the camera node too
    camera_errors = [line for line in lines if line.startswith("[camera]") and "ERROR" in line]
    assert len(camera_errors) == 1 and "no camera: pyrealsense2 is not installed" in camera_errors[0], camera_errors
    probe.camera_on = True
    probe.wait_for("robot/status ok with the camera back", lambda: probe.status[-1].ok, timeout_s=30.0)
