"""monologue-check's adapters against the dry run's fakes, one test per injected fault: the real bosdyn-client
against FakeSpot (gRPC over TLS on 127.0.0.1), the RealSense adapter on the fake pyrealsense2 SDK, the UR
dashboard client against a dashboard server speaking the controller's text protocol. No ROS graph: fast."""
from __future__ import annotations

import socket
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from monologue_bringup.check import BosdynSpot, DashboardArm, RealSenseCamera
from monologue_bringup.preflight import Finding, check_camera, check_spot, check_ur5e, node_parameters, passed

REPO = Path(__file__).resolve().parents[1]
USER, PASSWORD = "operator", "fake-Spot-pw-never-logged"


def failed(findings: Sequence[Finding]) -> list[str]:
    return [f.check for f in findings if f.fails]


# ---- Spot ------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fake_spot() -> Iterator[Any]:
    from skills_node.robots.spot.testing.fake_spot import FakeSpot

    fake = FakeSpot(username=USER, password=PASSWORD).start()
    try:
        yield fake
    finally:
        fake.stop()


def spot_check(fake: Any, **params: object) -> list[Finding]:
    skills = {"spot.hostname": "127.0.0.1", "spot.port": fake.port, "spot.ca_cert_path": str(fake.ca_cert_path),
              "spot.rpc_timeout": 2.0, "spot.connect_timeout": 10.0, "spot.client_name": "monologue",
              "spot.take_lease": False, "spot.waypoints": [""], **params}
    env = {"BOSDYN_CLIENT_USERNAME": USER, "BOSDYN_CLIENT_PASSWORD": PASSWORD}
    return check_spot(BosdynSpot(skills, env), skills)


def test_spot_faults_each_fail_their_check(fake_spot: Any) -> None:
    from bosdyn.api import estop_pb2

    healthy = spot_check(fake_spot)
    assert passed(healthy), [f.line() for f in healthy]
    assert {f.check for f in healthy} >= {"spot connection", "lease", "estop", "battery"}
    # the operator's tablet holds the body lease
    fake_spot.take_lease_as("tablet")
    lease = spot_check(fake_spot)
    assert failed(lease) == ["lease"] and "release control on the tablet" in lease[1].line()
    assert passed(spot_check(fake_spot, **{"spot.take_lease": True}))  # the backend will take it
    # the tablet's e-stop endpoint asserts a stop
    fake_spot.tablet_estop_level(estop_pb2.ESTOP_LEVEL_CUT)
    try:
        assert "estop" in failed(spot_check(fake_spot, **{"spot.take_lease": True}))
    finally:
        fake_spot.tablet_estop_level(estop_pb2.ESTOP_LEVEL_NONE)
    # a configured GraphNav map the robot cannot give (FakeSpot does not serve DownloadGraph: the check fails,
    # as it does on a robot without the map; the waypoint comparison itself: test_preflight.py)
    lost = spot_check(fake_spot, **{"spot.take_lease": True, "spot.waypoints": ["table=wp-nowhere"]})
    assert failed(lost) == ["graphnav"], [f.line() for f in lost]


def test_spot_wrong_password_fails_the_connection(fake_spot: Any) -> None:
    skills = {"spot.hostname": "127.0.0.1", "spot.port": fake_spot.port,
              "spot.ca_cert_path": str(fake_spot.ca_cert_path), "spot.rpc_timeout": 2.0}
    findings = check_spot(BosdynSpot(skills, {"BOSDYN_CLIENT_USERNAME": USER, "BOSDYN_CLIENT_PASSWORD": "wrong"}),
                          skills)
    assert failed(findings) == ["spot connection"] and "BOSDYN_CLIENT_USERNAME" in findings[0].fix


# ---- camera ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("scenario", "check"), [
    ({}, None),
    ({"devices": [], "no_device_block_s": 0.1}, "camera"),
    ({"depth_scale": 1.0}, "depth scale"),
    ({"color_intrinsics": {"fx": -5.0, "fy": 612.0, "model": "inverse_brown_conrady", "coeffs": [0.0] * 5}},
     "camera intrinsics"),
    ({"stalls": [[1, 30.0]]}, "camera streaming"),
])
def test_camera_faults_of_the_fake_realsense(scenario: dict[str, Any], check: str | None) -> None:
    from perception_node.testing import fake_pyrealsense2

    fake_pyrealsense2.configure(scenario)
    try:
        findings = check_camera(RealSenseCamera(sdk=fake_pyrealsense2), {"width": 320, "height": 240, "fps": 30},
                                timeout_s=1.0)
    finally:
        fake_pyrealsense2.configure({})
    assert failed(findings) == ([check] if check else []), [f.line() for f in findings]


# ---- UR5e dashboard server ---------------------------------------------------------------------------------------


class Dashboard:
    """A UR dashboard server on 127.0.0.1 (its text protocol: a greeting, then one answer line per command)."""

    def __init__(self) -> None:
        self.remote, self.mode, self.safety = "true", "RUNNING", "NORMAL"
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self.sock.settimeout(0.2)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def answer(self, command: str) -> str:
        return {"is in remote control": self.remote, "robotmode": f"Robotmode: {self.mode}",
                "safetystatus": f"Safetystatus: {self.safety}"}.get(command, f"could not understand: '{command}'")

    def serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            with conn, conn.makefile("rw", encoding="utf-8", newline="\n") as f:
                f.write("Connected: Universal Robots Dashboard Server\n")
                f.flush()
                for line in f:
                    f.write(self.answer(line.strip()) + "\n")
                    f.flush()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=2.0)
        self.sock.close()


class Arm(DashboardArm):
    """The dashboard over TCP; RTDE's readings as a healthy arm's (RTDE is the protocol fake controller's part)."""

    def tcp_offset(self) -> Sequence[float] | None:
        return [0.0, 0.0, 0.16, 0.0, 0.0, 0.0]

    def payload(self) -> tuple[float, Sequence[float]] | None:
        return 0.8, [0.0, 0.0, 0.06]

    def joints(self) -> Sequence[float]:
        return [3.14159, -1.5708, 1.5708, -1.5708, -1.5708, 0.0]


@pytest.fixture(scope="module")
def dashboard() -> Iterator[Dashboard]:
    d = Dashboard()
    try:
        yield d
    finally:
        d.close()


@pytest.mark.parametrize(("fault", "check"), [
    ({}, None),
    ({"remote": "false"}, "remote control"),
    ({"safety": "PROTECTIVE_STOP"}, "safety"),
    ({"safety": "ROBOT_EMERGENCY_STOP"}, "safety"),
    ({"mode": "POWER_OFF"}, "robot mode"),
])
def test_ur5e_dashboard_faults(dashboard: Dashboard, fault: dict[str, str], check: str | None) -> None:
    from monologue_bringup.graph import params_files

    skills = node_parameters(params_files(REPO / "config", "ur5e", "embedded"), "skills")
    dashboard.remote, dashboard.mode, dashboard.safety = "true", "RUNNING", "NORMAL"
    for k, v in fault.items():
        setattr(dashboard, k, v)
    arm = Arm("127.0.0.1", dashboard.port, timeout_s=2.0)
    try:
        findings = check_ur5e(arm, skills)
    finally:
        arm.close()
    assert failed(findings) == ([check] if check else []), [f.line() for f in findings]


def test_ur5e_unreachable_controller() -> None:
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = int(s.getsockname()[1])
    findings = check_ur5e(DashboardArm("127.0.0.1", port, timeout_s=1.0), {
        "ur5e.host": "127.0.0.1", "safety.workspace_min": [0.25, -0.35, 0.0], "safety.workspace_max": [0.75, 0.35, 0.5],
        "safety.joint_min": [-6.0, -6.0, -3.0, -6.0, -6.0, -6.0], "safety.joint_max": [6.0, 6.0, 3.0, 6.0, 6.0, 6.0],
        "ur5e.home_joints": [0.0] * 6})
    assert failed(findings) == ["ur5e connection"] and "ping" in findings[0].fix
