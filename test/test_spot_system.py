"""The skills node with backend spot (`robot:=spot`) as a real ROS 2 process against FakeSpot, a gRPC robot
over TLS on 127.0.0.1 that the real bosdyn-client talks to: start-up (login from the child's environment,
power on, stand), robot/status, affordances, `go to` through execute_skill, a lease taken by the tablet
mid-skill -> ROBOT_FAULT and robot/status not ok, the `estop` topic -> Spot's software e-stop cut,
estop_reset -> released; shutdown returns the lease; an unreachable robot is a clear error at start."""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import rclpy
from bosdyn.api import estop_pb2  # type: ignore[import-untyped, unused-ignore]
from rclpy.action import ActionClient
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from std_msgs.msg import Bool

from monologue_common.qos import LATCHED
from monologue_interfaces.action import ExecuteSkill
from monologue_interfaces.msg import RobotStatus
from monologue_interfaces.srv import GetAffordances, ResetEstop
from skills_node.testing.fake_spot import FakeSpot

pytestmark = [pytest.mark.system]
REPO = Path(__file__).resolve().parents[1]
USER, PASSWORD = "operator", "fake-Spot-pw-never-logged"
CLIENT = "monologue"  # spot.client_name in config/robots/spot.yaml


@pytest.fixture(scope="module")
def spot_skills(ros_domain: int) -> Iterator[tuple[FakeSpot, list[str]]]:
    from monologue_bringup.up import Supervisor

    fake = FakeSpot(username=USER, password=PASSWORD, motion_duration_s=0.3).start()
    env = dict(os.environ)
    env["BOSDYN_CLIENT_USERNAME"], env["BOSDYN_CLIENT_PASSWORD"] = USER, PASSWORD
    lines: list[str] = []
    sup = Supervisor("spot", "embedded", config_dir=REPO / "config", sink=lines.append, env=env, nodes=["skills"],
                     node_params={"skills": {
                         "spot.hostname": "127.0.0.1", "spot.port": str(fake.port),
                         "spot.ca_cert_path": str(fake.ca_cert_path), "spot.rpc_timeout": "1.0",
                         "spot.feedback_period": "0.05", "spot.lease_check_period": "0.2",
                         "spot.command_timeout": "5.0", "spot.go_to_time_margin": "3.0", "status_rate": "10.0"}})
    sup.start()
    try:
        yield fake, lines
    finally:
        codes = sup.stop()
        fake.stop()
        assert codes["skills"] in (0, -2, -15, 130), "\n".join(lines[-50:])
        assert not any(PASSWORD in line for line in lines)


class Probe:
    """A test node: subscribes to robot/status, publishes the e-stop, calls the skills node."""

    def __init__(self) -> None:
        rclpy.init()
        self.node = Node("spot_probe")
        self.executor = MultiThreadedExecutor(num_threads=2)
        self.executor.add_node(self.node)
        self._spin = threading.Thread(target=self.executor.spin, daemon=True)
        self._spin.start()
        self.status: list[RobotStatus] = []
        self.node.create_subscription(RobotStatus, "robot/status", self.status.append, LATCHED)
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

    def call(self, client: Any, request: Any) -> Any:
        assert client.wait_for_service(timeout_sec=20.0)
        future = client.call_async(request)
        self.wait_for("service response", future.done)
        return future.result()

    def execute(self, skill: str, *args: str) -> Any:
        assert self.skill.wait_for_server(timeout_sec=20.0)
        handle_future = self.skill.send_goal_async(ExecuteSkill.Goal(skill=skill, args=list(args)))
        self.wait_for("goal acceptance", handle_future.done)
        handle = handle_future.result()
        assert handle.accepted
        result_future = handle.get_result_async()
        self.wait_for("skill result", result_future.done, timeout_s=30.0)
        return result_future.result().result

    def affordance_map(self) -> dict[str, float]:
        req = GetAffordances.Request()
        req.include_unaffordable = True
        res = self.call(self.affordances, req)
        assert res.success, res.message
        return {f"{a.skill}({', '.join(a.args)})": a.affordance for a in res.skills}


@pytest.fixture(scope="module")
def probe(spot_skills: tuple[FakeSpot, list[str]]) -> Iterator[Probe]:
    p = Probe()
    try:
        yield p
    finally:
        p.close()


def test_starts_standing_and_goes_to_a_location(spot_skills: tuple[FakeSpot, list[str]], probe: Probe) -> None:
    fake, _lines = spot_skills
    probe.wait_for("robot/status ok", lambda: bool(probe.status) and probe.status[-1].ok)
    s = probe.status[-1]
    assert s.backend == "spot" and s.connected and s.robot_mode_name == "STANDING" and s.fault == ""
    assert fake.lease_owner.startswith(CLIENT) and fake.motors_on and fake.standing

    aff = probe.affordance_map()
    assert aff["go_to(table)"] == 1.0 and aff["go_to(initial position)"] == pytest.approx(0.1)
    assert aff["stand()"] == pytest.approx(0.1) and aff["sit()"] == 1.0

    refused = probe.execute("go_to", "moon")
    assert refused.error_code == ExecuteSkill.Result.INVALID_ARGUMENTS
    before = len(fake.commands())
    result = probe.execute("go_to", "table")
    assert result.error_code == ExecuteSkill.Result.NONE, result.error_msg
    assert [kind for kind, _ in fake.commands()[before:]] == ["trajectory"]
    assert probe.affordance_map()["go_to(table)"] == pytest.approx(0.1)


def test_lease_taken_by_the_tablet_mid_skill(spot_skills: tuple[FakeSpot, list[str]], probe: Probe) -> None:
    fake, _lines = spot_skills
    fake.motion_duration_s = 10.0  # a long walk, interrupted by the tablet
    fake.when("RobotCommandFeedback", lambda: fake.take_lease_as("tablet"), after=3)
    result = probe.execute("go_to", "far counter")
    assert result.error_code == ExecuteSkill.Result.ROBOT_FAULT and "lease" in result.error_msg
    probe.wait_for("robot/status not ok (lease lost)",
                   lambda: not probe.status[-1].ok and "lease not held" in probe.status[-1].fault)
    assert fake.lease_owner == "tablet"
    assert all(v == 0.0 for v in probe.affordance_map().values())


def test_estop_topic_cuts_the_spot_estop_and_reset_releases_it(spot_skills: tuple[FakeSpot, list[str]],
                                                               probe: Probe) -> None:
    fake, _lines = spot_skills
    assert fake.endpoint_levels() == {CLIENT: estop_pb2.ESTOP_LEVEL_NONE}
    probe.wait_for("the estop subscription", lambda: probe.estop_pub.get_subscription_count() > 0)
    probe.estop_pub.publish(Bool(data=True))
    probe.wait_for("Spot's e-stop cut", lambda: fake.endpoint_levels().get(CLIENT) == estop_pb2.ESTOP_LEVEL_CUT)
    probe.wait_for("robot/status e-stop latched", lambda: probe.status[-1].estop_latched)
    assert not probe.status[-1].ok and "software e-stop latched (estop topic)" in probe.status[-1].fault
    assert probe.execute("stand").error_code == ExecuteSkill.Result.ESTOP_ACTIVE
    res = probe.call(probe.reset, ResetEstop.Request())
    assert res.success and res.message == "e-stop reset"
    assert fake.endpoint_levels() == {CLIENT: estop_pb2.ESTOP_LEVEL_NONE}
    probe.wait_for("robot/status e-stop clear", lambda: not probe.status[-1].estop_latched)


def test_shutdown_returns_the_lease(ros_domain: int) -> None:
    """Stopping the node (SIGINT, as monologue-up and the launch file do) stops Spot and returns the lease."""
    from monologue_bringup.up import Supervisor

    with FakeSpot(username=USER, password=PASSWORD, motion_duration_s=0.1) as fake:
        env = dict(os.environ)
        env["BOSDYN_CLIENT_USERNAME"], env["BOSDYN_CLIENT_PASSWORD"] = USER, PASSWORD
        lines: list[str] = []
        sup = Supervisor("spot", "embedded", config_dir=REPO / "config", sink=lines.append, env=env,
                         nodes=["skills"], node_params={"skills": {
                             "spot.hostname": "127.0.0.1", "spot.port": str(fake.port),
                             "spot.ca_cert_path": str(fake.ca_cert_path), "spot.rpc_timeout": "1.0",
                             "spot.feedback_period": "0.05", "spot.stand_at_start": "false", "status_rate": "20.0"}})
        sup.start()
        try:
            deadline = time.monotonic() + 20.0
            while not fake.motors_on:
                assert time.monotonic() < deadline, "\n".join(lines[-30:])
                time.sleep(0.05)
            reads = fake.calls.count("GetRobotState")
            while fake.calls.count("GetRobotState") < reads + 3:  # robot/status timer: the node spins
                assert time.monotonic() < deadline, "\n".join(lines[-30:])
                time.sleep(0.05)
            assert fake.lease_owner.startswith(CLIENT) and not fake.standing, (fake.lease_owner, lines[-30:])
        finally:
            codes = sup.stop()
        assert codes["skills"] in (0, -2, -15, 130), "\n".join(lines[-50:])
        assert fake.lease_owner == "" and "ReturnLease" in fake.calls, (fake.lease_owner, lines[-30:])
        assert not any(PASSWORD in line for line in lines)


def test_no_robot_is_a_clear_error_at_start(ros_domain: int, tmp_path: Path) -> None:
    """Spot unreachable (nothing listens on the port): the skills node exits at once saying so, no hang."""
    from monologue_bringup.up import Supervisor

    fake = FakeSpot(username=USER, password=PASSWORD).start()
    port, ca = fake.port, tmp_path / "ca.crt"
    ca.write_bytes(fake.ca_cert_path.read_bytes())
    fake.stop()  # the port is closed now
    env = dict(os.environ)
    env["BOSDYN_CLIENT_USERNAME"], env["BOSDYN_CLIENT_PASSWORD"] = USER, PASSWORD
    lines: list[str] = []
    sup = Supervisor("spot", "embedded", config_dir=REPO / "config", sink=lines.append, env=env, nodes=["skills"],
                     node_params={"skills": {"spot.hostname": "127.0.0.1", "spot.port": str(port),
                                             "spot.ca_cert_path": str(ca), "spot.rpc_timeout": "1.0"}})
    sup.start()
    try:
        deadline = time.monotonic() + 20.0
        while "skills" not in sup.dead():
            assert time.monotonic() < deadline, "\n".join(lines[-30:])
            time.sleep(0.05)
    finally:
        codes = sup.stop()
    assert codes["skills"] not in (0, -2, -15, 130)
    text = "\n".join(lines)
    assert "connection lost" in text and f"127.0.0.1:{port}" in text, text[-3000:]
    assert "No files matched" not in text  # the CA was found: it is the robot that is missing
    assert PASSWORD not in text
