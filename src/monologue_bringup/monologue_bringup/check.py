"""`monologue-check`'s checks of a robot and the adapters that read its hardware (the checks: preflight.py; the
command line: check_cli.py).

    monologue-check robot:=ur5e|spot|spot_realsense [fake:=true] [llm:=embedded] [--param node:name=value ...]
                    [--skip llm,camera,...] [--config-dir DIR]

Prints one line per check, and for each failure one line saying how to fix it; exit code 1 when a check fails
(warnings, e.g. an old calibration, do not fail), 2 on bad arguments. fake:=true starts the dry run's fakes
(monologue_bringup.dryrun) and checks them. The bring-up (monologue-up, monologue-demo) runs the same checks before
the nodes start on a real robot or a dry run; preflight:=false skips them.

The adapters below read the hardware: the UR dashboard server's text protocol (port 29999) and ur_rtde's RTDE
interfaces, pyrealsense2, bosdyn-client, the planner's LLM backend.
"""
from __future__ import annotations

import importlib
import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .graph import default_config_dir, params_files, robot_entry
from .preflight import (
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

CHECKS = ("arm", "camera", "tf", "calibration", "llm", "spot")

# ---- adapters ------------------------------------------------------------------------------------------------


class DashboardArm:
    """preflight.UrArm over the UR dashboard server (text protocol, port 29999) and ur_rtde's RTDE receive and
    control interfaces (TCP offset, payload, joints)."""

    def __init__(self, host: str, dashboard_port: int = 29999, timeout_s: float = 3.0) -> None:
        self.host, self.port, self.timeout_s = host, dashboard_port, timeout_s
        self._sock: socket.socket | None = None
        self._buf = b""

    def connect(self) -> None:
        self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
        self._line()  # "Connected: Universal Robots Dashboard Server"

    def _line(self) -> str:
        assert self._sock is not None
        while b"\n" not in self._buf:
            chunk = self._sock.recv(4096)
            if not chunk:
                raise ConnectionError("the dashboard server closed the connection")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line.decode("utf-8", "replace").strip()

    def ask(self, command: str) -> str:
        assert self._sock is not None, "connect() first"
        self._sock.sendall(command.encode() + b"\n")
        return self._line()

    def remote_control(self) -> bool:
        return self.ask("is in remote control").lower().startswith("true")

    def robot_mode(self) -> str:
        return self.ask("robotmode").split(":", 1)[-1].strip()

    def safety_status(self) -> str:
        return self.ask("safetystatus").split(":", 1)[-1].strip()

    def _receive(self) -> Any:
        return importlib.import_module("rtde_receive").RTDEReceiveInterface(self.host)  # ur_rtde

    def tcp_offset(self) -> Sequence[float] | None:
        try:
            # ur_rtde: uploads its control script, as the skills node will
            ctrl = importlib.import_module("rtde_control").RTDEControlInterface(self.host)
            try:
                return list(ctrl.getTCPOffset())
            finally:
                ctrl.disconnect()
        except Exception:  # noqa: BLE001 - reported as "cannot be read" (a warning)
            return None

    def payload(self) -> tuple[float, Sequence[float]] | None:
        try:
            rec = self._receive()
            try:
                return float(rec.getPayload()), list(rec.getPayloadCog())
            finally:
                rec.disconnect()
        except Exception:  # noqa: BLE001
            return None

    def joints(self) -> Sequence[float]:
        rec = self._receive()
        try:
            return list(rec.getActualQ())
        finally:
            rec.disconnect()

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


class RealSenseCamera:
    """preflight.Camera over pyrealsense2 (the real SDK, or the dry run's fake on sys.path)."""

    def __init__(self, serial: str = "", sdk: Any = None) -> None:
        self.rs: Any = sdk if sdk is not None else importlib.import_module("pyrealsense2")  # or the dry run's fake
        self.serial = serial
        self.pipeline: Any = None
        self.profile: Any = None

    def start(self, width: int, height: int, fps: int) -> None:
        rs = self.rs
        config = rs.config()
        if self.serial:
            config.enable_device(self.serial)
        config.enable_stream(rs.stream.color, width, height, rs.format.rgb8, fps)
        config.enable_stream(rs.stream.depth, width, height, rs.format.z16, fps)
        self.pipeline = rs.pipeline()
        self.profile = self.pipeline.start(config)

    def frames(self, n: int, timeout_s: float) -> int:
        got, deadline = 0, time.monotonic() + timeout_s
        while got < n and time.monotonic() < deadline:
            try:
                self.pipeline.wait_for_frames(int(max(0.1, deadline - time.monotonic()) * 1000))
                got += 1
            except RuntimeError:
                break
        return got

    def intrinsics(self) -> tuple[float, float, float, float]:
        i = self.profile.get_stream(self.rs.stream.color).as_video_stream_profile().get_intrinsics()
        return float(i.fx), float(i.fy), float(i.ppx), float(i.ppy)

    def depth_scale(self) -> float:
        return float(self.profile.get_device().first_depth_sensor().get_depth_scale())

    def stop(self) -> None:
        if self.pipeline is not None:
            try:
                self.pipeline.stop()
            except RuntimeError:
                pass


class BosdynSpot:
    """preflight.SpotRobot over bosdyn-client (credentials from BOSDYN_CLIENT_USERNAME / _PASSWORD)."""

    def __init__(self, skills: Mapping[str, Any], env: Mapping[str, str]) -> None:
        self.skills, self.env = skills, env
        self.robot: Any = None

    def connect(self) -> None:
        import bosdyn.client

        user, password = self.env.get("BOSDYN_CLIENT_USERNAME", ""), self.env.get("BOSDYN_CLIENT_PASSWORD", "")
        if not user or not password:
            raise RuntimeError("BOSDYN_CLIENT_USERNAME / BOSDYN_CLIENT_PASSWORD are not set")
        sdk = bosdyn.client.create_standard_sdk("monologue-check")
        ca = str(self.skills.get("spot.ca_cert_path", "") or "")
        if ca:
            sdk.load_robot_cert(ca)
        robot = sdk.create_robot(str(self.skills["spot.hostname"]))
        port = int(self.skills.get("spot.port", 443))
        if port != 443:
            robot.update_secure_channel_port(port)
        robot.authenticate(user, password, timeout=float(self.skills.get("spot.rpc_timeout", 2.0)))
        robot.time_sync.wait_for_sync(timeout_sec=float(self.skills.get("spot.connect_timeout", 10.0)))
        self.robot = robot

    def body_lease_owner(self) -> str:
        from bosdyn.client.lease import LeaseClient

        for r in self.robot.ensure_client(LeaseClient.default_service_name).list_leases():
            if r.resource == "body":
                return str(r.lease_owner.client_name)
        return ""

    def estop_endpoints(self) -> list[tuple[str, bool]]:
        from bosdyn.api import estop_pb2
        from bosdyn.client.estop import EstopClient

        status = self.robot.ensure_client(EstopClient.default_service_name).get_status()
        return [(e.endpoint.name or e.endpoint.role, e.stop_level != estop_pb2.ESTOP_LEVEL_NONE)
                for e in status.endpoints]

    def battery_percent(self) -> float | None:
        from bosdyn.client.robot_state import RobotStateClient

        state = self.robot.ensure_client(RobotStateClient.default_service_name).get_robot_state()
        levels = [float(b.charge_percentage.value) for b in state.battery_states if b.HasField("charge_percentage")]
        return min(levels) if levels else None

    def waypoints(self) -> set[str]:
        from bosdyn.client.graph_nav import GraphNavClient

        graph = self.robot.ensure_client(GraphNavClient.default_service_name).download_graph()
        return {w.id for w in graph.waypoints} if graph is not None else set()


class PlannerLlm:
    """preflight.LlmBackend over the planner's LLM backend (its llm.* parameters)."""

    def __init__(self, planner: Mapping[str, Any]) -> None:
        self.params = {k[len("llm."):]: v for k, v in planner.items() if k.startswith("llm.")}
        self.name = str(self.params.get("backend", "?"))
        self._backend: Any = None

    def supports_scoring(self) -> bool:
        return self.params.get("backend") != "expert"  # the expert picks, it does not score (simulated only)

    def score(self, prompt: str, options: Sequence[str]) -> Sequence[float]:
        from monologue_llm.factory import make_backend_from_params

        if self._backend is None:
            self._backend = make_backend_from_params(self.params)
        return [s.logprob for s in self._backend.score(prompt, options).scores]

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()


# ---- the checks of a robot -------------------------------------------------------------------------------------


def tf_edges(robot: str, skills: Mapping[str, Any], camera: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The (parent, child) frames the graph will publish between perception's base frame and the camera, from
    the config: the skills node's arm and mount, the camera driver's camera_link -> optical frame."""
    frame = str(camera.get("frame_id", "camera_color_optical_frame"))
    link = str(camera.get("link_frame", "") or "")
    edges = [(link, frame)] if link else []
    if robot == "ur5e":  # ur_description: base_link -> base -> tool0 -> flange; the hand-eye mount on tool0
        tool = str(skills.get("ur5e.flange_frame", "tool0"))
        mount = str(skills.get("ur5e.hand_eye.camera_link", "") or "") or str(
            skills.get("ur5e.hand_eye.child_frame", frame))
        return edges + [("base_link", "base"), ("base", tool), (tool, "flange"), (tool, mount)]
    # spot_realsense: odom -> body -> hand (robot state), the mount parent -> frame
    parent = str(skills.get("spot.camera_mount.parent", "hand"))
    return edges + [("odom", "body"), ("body", "hand"), (parent, str(skills.get("spot.camera_mount.frame", "")))]


def run_checks(robot: str, llm: str, config_dir: Path | None = None,
               node_params: Mapping[str, Mapping[str, str]] | None = None, env: Mapping[str, str] | None = None,
               skip: Sequence[str] = (), arm_factory: Callable[[str, int], Any] | None = None,
               camera_factory: Callable[[str], Any] | None = None, arm_available: bool = True) -> list[Finding]:
    """Every check that applies to `robot` (not the skipped ones). `arm_available` false: the UR controller is
    not reachable from here (the dry run's API-level fake lives inside the skills process)."""
    import os

    cfg = config_dir or default_config_dir()
    entry = robot_entry(robot, cfg)
    if entry.simulated:
        raise ValueError(f"monologue-check checks real robots; {robot!r} is simulated")
    files = params_files(cfg, robot, llm)
    over = node_params or {}
    skills = node_parameters(files, "skills", over.get("skills"))
    out: list[Finding] = []
    if robot == "ur5e" and "arm" not in skip:
        if arm_available:
            make_arm = arm_factory or (lambda host, port: DashboardArm(host, port))
            arm = make_arm(str(skills["ur5e.host"]), int(skills.get("ur5e.dashboard_port", 29999)))
            try:
                out += check_ur5e(arm, skills)
            finally:
                getattr(arm, "close", lambda: None)()
        else:
            out += [Finding("ur5e connection", False, "the arm's fake is inside the skills process (the "
                            "protocol-level fake controller is not installed): not checked here", warning=True)]
            out += check_ur5e_config(skills)
    if robot in ("spot", "spot_realsense") and "spot" not in skip:
        out += check_spot(BosdynSpot(skills, dict(os.environ if env is None else env)), skills)
    has_camera = any(n.name == "camera" for n in entry.nodes)
    if has_camera and "camera" not in skip:
        cam_params = node_parameters(files, "camera", over.get("camera"))
        try:
            camera = (camera_factory or RealSenseCamera)(str(cam_params.get("serial", "") or ""))
        except ImportError:
            out.append(Finding("camera", False, "pyrealsense2 is not installed",
                               "pip install pyrealsense2 (make setup installs it where a wheel exists)"))
        else:
            out += check_camera(camera, cam_params)
    if has_camera and "tf" not in skip:
        cam_params = node_parameters(files, "camera", over.get("camera"))
        perception = node_parameters(files, "perception", over.get("perception"))
        base = str(perception.get("base_frame", "base_link"))
        out += check_tf(tf_edges(robot, skills, cam_params), base,
                        str(cam_params.get("frame_id", "camera_color_optical_frame")))
    if has_camera and "calibration" not in skip:
        from monologue_vision.calibration.store import default_calibration_path

        key = "ur5e.hand_eye.calibration_file" if robot == "ur5e" else "spot.camera_mount.calibration_file"
        out += check_calibration(Path(str(skills.get(key) or default_calibration_path(robot))).expanduser())
    if "llm" not in skip:
        planner = PlannerLlm(node_parameters(files, "planner", over.get("planner")))
        try:
            out += check_llm(planner)
        finally:
            planner.close()
    return out


def fake_checks(sup: Any, skip: Sequence[str]) -> list[Finding]:
    """run_checks on a started dry run (`sup`: a Supervisor with fake=True): its parameters and environment, and
    the fake camera SDK in this process."""
    dry = sup.dry_run
    camera_env = dry.node_env.get("camera", {})
    restore = prepare_fake_camera(camera_env)
    try:
        env = {**sup.env, **dry.node_env.get("skills", {})}
        return run_checks(sup.robot, sup.llm, sup.config_dir, sup.node_params, env=env, skip=skip,
                          arm_available=any(p.name == "fake_ur" for p in dry.processes))
    finally:
        restore()


def prepare_fake_camera(camera_env: Mapping[str, str]) -> Callable[[], None]:
    """Make `import pyrealsense2` find the dry run's fake SDK in this process; returns the undo."""
    import os

    if not camera_env:
        return lambda: None
    shim = camera_env["PYTHONPATH"].split(os.pathsep)[0]
    old = os.environ.get("FAKE_PYREALSENSE2_SCENARIO")
    sys.path.insert(0, shim)
    os.environ["FAKE_PYREALSENSE2_SCENARIO"] = camera_env["FAKE_PYREALSENSE2_SCENARIO"]
    sys.modules.pop("pyrealsense2", None)

    def undo() -> None:
        if shim in sys.path:
            sys.path.remove(shim)
        sys.modules.pop("pyrealsense2", None)
        if old is None:
            os.environ.pop("FAKE_PYREALSENSE2_SCENARIO", None)
        else:
            os.environ["FAKE_PYREALSENSE2_SCENARIO"] = old

    return undo


def report(findings: Sequence[Finding], out: Callable[[str], None] = print) -> int:
    """Print one line per finding and the verdict; 0 when nothing fails, else 1."""
    for f in findings:
        out(f.line())
    ok = passed(findings)
    failed = sum(f.fails for f in findings)
    out("preflight passed" if ok else f"preflight FAILED: {failed} check(s); fix the lines marked FAIL")
    return 0 if ok else 1
