"""monologue-check's checks (monologue_bringup.preflight) against stand-ins of its Protocols, one test per fault;
the dry run's plan (monologue_bringup.dryrun) and its arguments. ROS-free and fast."""
from __future__ import annotations

import datetime as dt
import functools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from monologue_bringup.check import report, tf_edges
from monologue_bringup.dryrun import FAKE_ROBOTS, fake_error, plan
from monologue_bringup.graph import params_files
from monologue_bringup.preflight import (
    Finding,
    check_calibration,
    check_camera,
    check_llm,
    check_spot,
    check_tf,
    check_ur5e,
    check_ur5e_config,
    node_parameters,
    passed,
)
from monologue_bringup.up import UP_ARGUMENTS, launch_values

CONFIG = Path(__file__).resolve().parents[3] / "config"


@functools.lru_cache(maxsize=1)
def _ur5e_skills() -> tuple[tuple[str, object], ...]:
    return tuple(node_parameters(params_files(CONFIG, "ur5e", "embedded"), "skills").items())


def ur5e_params(**over: object) -> dict[str, object]:
    """The skills node's parameters of config/robots/ur5e.yaml (parsed once), then `over`."""
    return {**dict(_ur5e_skills()), **over}


@dataclass
class Arm:
    """A UR5e controller as the dashboard server and RTDE report it: healthy unless a test injects a fault."""

    reachable: bool = True
    remote: bool = True
    mode: str = "RUNNING"
    safety: str = "NORMAL"
    tcp: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.16, 0.0, 0.0, 0.0])
    load: tuple[float, list[float]] | None = (0.8, [0.0, 0.0, 0.06])
    q: list[float] = field(default_factory=lambda: [3.14159, -1.5708, 1.5708, -1.5708, -1.5708, 0.0])

    def connect(self) -> None:
        if not self.reachable:
            raise TimeoutError("timed out")

    def remote_control(self) -> bool:
        return self.remote

    def robot_mode(self) -> str:
        return self.mode

    def safety_status(self) -> str:
        return self.safety

    def tcp_offset(self) -> Sequence[float] | None:
        return self.tcp

    def payload(self) -> tuple[float, Sequence[float]] | None:
        return self.load

    def joints(self) -> Sequence[float]:
        return self.q


def failed(findings: Sequence[Finding]) -> dict[str, Finding]:
    return {f.check: f for f in findings if f.fails}


def test_a_healthy_ur5e_passes_with_the_shipped_config() -> None:
    findings = check_ur5e(Arm(), ur5e_params())
    assert passed(findings), [f.line() for f in findings]
    assert {f.check for f in findings} >= {"ur5e connection", "remote control", "safety", "robot mode", "tcp",
                                           "payload", "joints", "workspace", "joint limits"}


@pytest.mark.parametrize(("fault", "check", "fix"), [
    ({"reachable": False}, "ur5e connection", "ping"),
    ({"remote": False}, "remote control", "Remote Control"),
    ({"safety": "PROTECTIVE_STOP"}, "safety", "Unlock protective stop"),
    ({"safety": "ROBOT_EMERGENCY_STOP"}, "safety", "emergency stop button"),
    ({"mode": "POWER_OFF"}, "robot mode", "release the brakes"),
    ({"tcp": [0.0, 0.0, 0.10, 0.0, 0.0, 0.0]}, "tcp", "Installation > TCP"),
    ({"load": (2.0, [0.0, 0.0, 0.06])}, "payload", "Installation > Payload"),
    ({"q": [3.14159, -1.5708, 3.5, -1.5708, -1.5708, 0.0]}, "joints", "freedrive"),
])
def test_each_ur5e_fault_fails_its_check_with_a_fix(fault: dict[str, object], check: str, fix: str) -> None:
    findings = check_ur5e(Arm(**fault), ur5e_params())  # type: ignore[arg-type]
    bad = failed(findings)
    assert list(bad) == [check], [f.line() for f in findings]
    line = bad[check].line()
    assert line.startswith("[FAIL]") and fix in line and "\n" not in line
    assert report(findings, out=lambda _: None) == 1


def test_an_unreadable_payload_is_a_warning_not_a_failure() -> None:
    findings = check_ur5e(Arm(load=None), ur5e_params())
    assert passed(findings) and any(f.check == "payload" and f.warning and not f.ok for f in findings)


def test_a_workspace_beyond_the_reach_fails() -> None:
    # the defect this check found: the shipped box's far corners (0.80, +-0.40) were 0.894 m from the base axis
    bad = check_ur5e_config(ur5e_params(**{"safety.workspace_max": [0.80, 0.40, 0.50],
                                           "safety.workspace_min": [0.25, -0.40, 0.0]}))
    assert failed(bad)["workspace"].detail.startswith("the workspace box reaches 0.894 m")
    assert not failed(check_ur5e_config(ur5e_params()))  # the shipped config, inside 0.85 m


def test_joint_limits_beyond_the_ur5e_fail() -> None:
    bad = check_ur5e_config(ur5e_params(**{"safety.joint_max": [6.2832, 6.2832, 4.0, 6.2832, 6.2832, 6.2832]}))
    assert "joint limits" in failed(bad)


@dataclass
class Cam:
    fail_start: bool = False
    delivered: int = 3
    intr: tuple[float, float, float, float] = (610.0, 612.0, 320.0, 240.0)
    scale: float = 0.001
    stopped: bool = False

    def start(self, width: int, height: int, fps: int) -> None:
        if self.fail_start:
            raise RuntimeError("No device connected")

    def frames(self, n: int, timeout_s: float) -> int:
        return min(n, self.delivered)

    def intrinsics(self) -> tuple[float, float, float, float]:
        return self.intr

    def depth_scale(self) -> float:
        return self.scale

    def stop(self) -> None:
        self.stopped = True


CAM = {"width": 640, "height": 480, "fps": 15}


@pytest.mark.parametrize(("fault", "check"), [
    ({"fail_start": True}, "camera"),
    ({"delivered": 1}, "camera streaming"),
    ({"intr": (0.0, 612.0, 320.0, 240.0)}, "camera intrinsics"),
    ({"scale": 1.0}, "depth scale"),
])
def test_each_camera_fault_fails_its_check(fault: dict[str, object], check: str) -> None:
    cam = Cam(**fault)  # type: ignore[arg-type]
    findings = check_camera(cam, CAM)
    assert list(failed(findings)) == [check], [f.line() for f in findings]
    assert "->" in failed(findings)[check].line()
    assert cam.stopped or fault == {"fail_start": True}


def test_a_healthy_camera_passes() -> None:
    assert passed(check_camera(Cam(), CAM))


def test_the_tf_tree_of_the_shipped_ur5e_config_is_complete_and_a_renamed_camera_frame_breaks_it() -> None:
    skills = ur5e_params()
    camera = node_parameters(params_files(CONFIG, "ur5e", "embedded"), "camera")
    base = node_parameters(params_files(CONFIG, "ur5e", "embedded"), "perception").get("base_frame", "base_link")
    for frame in (base, "base_link"):
        assert passed(check_tf(tf_edges("ur5e", skills, camera), frame, "camera_color_optical_frame"))
    renamed = {**camera, "frame_id": "camera_depth_optical_frame"}  # the images' frame, not the mount's
    broken = check_tf(tf_edges("ur5e", skills, {**renamed, "link_frame": ""}), base, "camera_depth_optical_frame")
    assert "tf tree" in failed(broken) and "frame_id" in failed(broken)["tf tree"].fix


def test_calibration_missing_or_old_is_a_warning(tmp_path: Path) -> None:
    missing = check_calibration(tmp_path / "ur5e.yaml")
    assert passed(missing) and not missing[0].ok and "monologue-calibrate" in missing[0].line()
    old = (dt.datetime.now(dt.UTC) - dt.timedelta(days=90)).isoformat()
    (tmp_path / "old.yaml").write_text(json.dumps({
        "robot": "ur5e", "translation": [0.0, -0.075, 0.035], "rotation": [0.0, 0.0, 0.0, 1.0], "date": old,
        "method": "tsai", "samples": 16, "residuals": {"translation_rms_mm": 1.0, "rotation_rms_deg": 0.1}}))
    stale = check_calibration(tmp_path / "old.yaml", max_age_days=30.0)
    assert not stale[0].ok and "days old" in stale[0].detail


@dataclass
class Llm:
    name: str = "llama_cpp"
    scoring: bool = True
    down: bool = False

    def supports_scoring(self) -> bool:
        return self.scoring

    def score(self, prompt: str, options: Sequence[str]) -> Sequence[float]:
        if self.down:
            raise ConnectionError("connection refused")
        return [-1.0 for _ in options]


@pytest.mark.parametrize(("fault", "words"), [({"down": True}, "unreachable"), ({"scoring": False}, "cannot score")])
def test_each_llm_fault_fails(fault: dict[str, object], words: str) -> None:
    findings = check_llm(Llm(**fault))  # type: ignore[arg-type]
    assert not passed(findings) and words in findings[0].detail
    assert passed(check_llm(Llm()))


@dataclass
class Spot:
    reachable: bool = True
    owner: str = ""
    endpoints: list[tuple[str, bool]] = field(default_factory=lambda: [("tablet", False)])
    battery: float | None = 80.0
    ids: set[str] = field(default_factory=lambda: {"wp-table"})

    def connect(self) -> None:
        if not self.reachable:
            raise ConnectionError("no route to host")

    def body_lease_owner(self) -> str:
        return self.owner

    def estop_endpoints(self) -> list[tuple[str, bool]]:
        return self.endpoints

    def battery_percent(self) -> float | None:
        return self.battery

    def waypoints(self) -> set[str]:
        return self.ids


SPOT = {"spot.hostname": "192.168.80.3", "spot.client_name": "monologue", "spot.take_lease": False,
        "spot.waypoints": ["table=wp-table"]}


@pytest.mark.parametrize(("fault", "check"), [
    ({"reachable": False}, "spot connection"),
    ({"owner": "tablet"}, "lease"),
    ({"endpoints": [("tablet", True)]}, "estop"),
    ({"battery": 12.0}, "battery"),
    ({"ids": set()}, "graphnav"),
])
def test_each_spot_fault_fails_its_check(fault: dict[str, object], check: str) -> None:
    findings = check_spot(Spot(**fault), SPOT)  # type: ignore[arg-type]
    assert list(failed(findings)) == [check], [f.line() for f in findings]
    assert passed(check_spot(Spot(), SPOT))
    assert passed(check_spot(Spot(owner="tablet"), {**SPOT, "spot.take_lease": True}))  # it will take it


# ---- the dry run's plan ----------------------------------------------------------------------------------------


def test_fake_is_refused_for_simulated_robots_with_a_clear_error(tmp_path: Path) -> None:
    for robot in ("sim", "sim_kinematic", "sim_kitchen"):
        error = fake_error(robot, CONFIG)
        assert error is not None and "already simulated" in error and "drop fake:=true" in error
        with pytest.raises(ValueError, match="already simulated"):
            plan(robot, tmp_path, CONFIG)
    assert all(fake_error(r, CONFIG) is None for r in FAKE_ROBOTS)


def test_the_spot_dry_run_points_the_backend_at_the_fake_spot(tmp_path: Path) -> None:
    run = plan("spot", tmp_path, CONFIG)
    [fake] = run.processes
    assert (fake.package, fake.executable) == ("skills_node", "fake_spot")
    ca = fake.args[fake.args.index("--ca-cert") + 1]
    assert run.node_params["skills"]["spot.ca_cert_path"] == ca
    # the fake binds a port of the system's choice and writes it into its ready file, which sets spot.port
    assert fake.args[fake.args.index("--port") + 1] == "0" and fake.port_param == ("skills", "spot.port")
    fixed = plan("spot", tmp_path, CONFIG, spot_port=45123).processes[0]  # the launch file's way
    assert "45123" in fixed.args and fixed.port_param is None
    assert plan("spot", tmp_path, CONFIG, spot_port=45123).node_params["skills"]["spot.port"] == "45123"
    assert run.node_params["skills"]["spot.hostname"] == "127.0.0.1"
    assert run.node_env["skills"]["BOSDYN_CLIENT_USERNAME"] == run.node_env["fake_spot"]["BOSDYN_CLIENT_USERNAME"]
    assert run.node_params["perception"]["detector"] == "oracle" and "camera" not in run.node_env


@pytest.mark.parametrize("protocol", [True, False])
def test_the_ur5e_dry_run_uses_the_protocol_fake_when_there_is_one(tmp_path: Path, protocol: bool) -> None:
    run = plan("ur5e", tmp_path, CONFIG, {"PYTHONPATH": "elsewhere"}, protocol_fake=protocol)
    skills = run.node_params["skills"]
    names = [p.executable for p in run.processes]
    truth = run.processes[-1]
    assert truth.executable == "fake_ur_truth" and not truth.ready_file
    if protocol:
        assert names == ["fake_ur_controller", "fake_ur_truth"]
        fake = run.processes[0]
        assert fake.args[:2] == ("--host", "127.0.0.1") and fake.ready_file
        state = fake.args[fake.args.index("--state-file") + 1]
        assert truth.args[truth.args.index("--state-file") + 1] == state  # the truth follows the moved objects
        assert "ur5e.rtde_factory" not in skills and skills["ur5e.host"] == "127.0.0.1"  # the real ur_rtde
        # the pendant's installation as a set-up robot's: the configured TCP and payload (the preflight checks them)
        scene = json.loads(run.files[fake.args[fake.args.index("--scene") + 1]])
        assert scene["installation"] == {"tcp_offset": [0.0, 0.0, 0.16, 0.0, 0.0, 0.0], "payload_mass": 0.8,
                                         "payload_cog": [0.0, 0.0, 0.06]}
    else:
        assert names == ["fake_ur_truth"] and "--state-file" not in truth.args
        assert skills["ur5e.rtde_factory"].endswith("fake_rtde:factories_from_env")
        assert json.loads(run.node_env["skills"]["MONOLOGUE_FAKE_RTDE"])["objects"]
    camera = run.node_env["camera"]
    assert camera["PYTHONPATH"].endswith(":elsewhere")
    run.write_files()
    shim = Path(camera["PYTHONPATH"].split(":")[0]) / "pyrealsense2" / "__init__.py"
    assert "fake_pyrealsense2" in shim.read_text()
    assert math.isclose(json.loads(Path(camera["FAKE_PYREALSENSE2_SCENARIO"]).read_text())["plane"]["z0"], 0.425)


def test_fake_and_preflight_are_launch_arguments() -> None:
    values, _ = launch_values(["robot:=spot", "fake:=true", "preflight:=false"], UP_ARGUMENTS)
    assert values["fake"] == "true" and values["preflight"] == "false"
    with pytest.raises(ValueError, match="fake:=yes"):
        launch_values(["fake:=yes"], UP_ARGUMENTS)


def test_monologue_up_refuses_fake_on_a_simulated_robot(capsys: pytest.CaptureFixture[str]) -> None:
    from monologue_bringup.up import main

    assert main(["robot:=sim_kinematic", "fake:=true"]) == 2
    assert "already simulated" in capsys.readouterr().err


def test_monologue_check_refuses_a_simulated_robot(capsys: pytest.CaptureFixture[str]) -> None:
    from monologue_bringup.check_cli import main

    assert main(["robot:=sim"]) == 2
    assert "checks real robots" in capsys.readouterr().err
