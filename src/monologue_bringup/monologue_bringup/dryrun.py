"""The dry run, `fake:=true` (no rclpy): a real robot's graph with its hardware replaced by fakes at the SDK or
protocol boundary, started as processes of the graph. Everything else (the real backend code, the safety layer,
perception on camera images, the success rules) runs unchanged.

- robot:=ur5e: the UR5e fake. The protocol-level fake controller (skills_node.robots.ur5e.testing.fake_controller,
  console script `fake_ur_controller`) when it is installed: the real ur_rtde connects to it over TCP on
  127.0.0.1; otherwise the API-level stand-in for ur_rtde's classes inside the skills process
  (ur5e.rtde_factory). The camera node runs the fake pyrealsense2 SDK, a tabletop plane under the wrist camera.
- robot:=spot, spot_realsense: the fake Spot gRPC server hosting a kitchen (console script `fake_spot`) on a
  loopback port; the skills node is pointed at it. spot_realsense's camera node runs the fake pyrealsense2 SDK.
Perception keeps its camera source; its detector is the oracle (no detector weights can be assumed on a laptop),
which projects the fake world's truth (published by the fake) into the camera images and grounds it in depth.
"""
from __future__ import annotations

import importlib.util
import json
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .graph import default_config_dir, params_files, robot_entry, simulated_robots
from .preflight import node_parameters

FAKE_ROBOTS: tuple[str, ...] = ("ur5e", "spot", "spot_realsense")
SPOT_PORT = 44300  # the launch file's fake Spot port when free (launch needs it before the fake starts)
UR_HOST = "127.0.0.1"  # the fake UR controller's address (ur_rtde's ports are fixed: 29999, 30001-30004)
UR_START_TCP = (0.40, 0.0, 0.30)  # m: where the fake arm starts (fake_rtde), tool pointing down
FAKE_USER, FAKE_PASSWORD = "dryrun", "dryrun-not-a-secret"  # the fake Spot's account (nothing real)
# The dry run's tabletop (controller base frame, m) and kitchen (where each object starts).
UR_OBJECTS: tuple[dict[str, object], ...] = (
    {"name": "red block", "x": 0.45, "y": 0.10, "size": 0.04, "liftable": True},
    {"name": "blue bowl", "x": 0.55, "y": -0.15, "size": 0.12, "liftable": False},
)
SPOT_START = {"coke": "far counter", "apple": "table", "sponge": "close counter"}


@dataclass(frozen=True)
class FakeProcess:
    """A non-ROS process of the dry run (plain command line, no --ros-args), started before the nodes."""

    name: str
    package: str
    executable: str
    args: tuple[str, ...] = ()
    ready_file: str = ""  # the process creates it when it serves (the nodes start after it exists)
    port_param: tuple[str, str] | None = None  # (node, parameter) that takes the port written in ready_file


@dataclass
class DryRun:
    """What `fake:=true` adds to a robot's graph."""

    robot: str
    processes: list[FakeProcess] = field(default_factory=list)
    node_params: dict[str, dict[str, str]] = field(default_factory=dict)
    node_env: dict[str, dict[str, str]] = field(default_factory=dict)  # per node, on top of the graph's
    files: dict[str, str] = field(default_factory=dict)  # path -> text, written by write_files()

    def write_files(self) -> None:
        for path, text in self.files.items():
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text)


def fake_error(robot: str, config_dir: Path | None = None) -> str | None:
    """Why `robot` cannot run with fake:=true, or None."""
    entry = robot_entry(robot, config_dir)
    if entry.simulated:
        return (f"fake:=true replaces a real robot's hardware with fakes; {robot!r} is already simulated "
                f"(simulated: {sorted(simulated_robots(config_dir))}); drop fake:=true")
    if robot not in FAKE_ROBOTS:
        return f"fake:=true has no fakes for robot {robot!r}; robots with fakes: {list(FAKE_ROBOTS)}"
    return None


def protocol_fake_available() -> bool:
    """Whether the protocol-level UR controller fake is installed (the real ur_rtde then talks to it) and takes
    the dry run's --ready-file."""
    try:
        spec = importlib.util.find_spec("skills_node.robots.ur5e.testing.fake_controller")
    except ModuleNotFoundError:
        return False
    if spec is None or spec.origin is None:
        return False
    try:
        return "--ready-file" in Path(spec.origin).read_text(encoding="utf-8")
    except OSError:
        return False


def free_port(preferred: int, host: str = "127.0.0.1") -> int:
    """`preferred` if nothing listens there, else a free port the system picks."""
    for port in (preferred, 0):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise OSError(f"no free port on {host}")


def shim_text() -> str:
    """`pyrealsense2/__init__.py` of the fake SDK (perception_node.testing.fake_pyrealsense2.write_shim)."""
    return ('"""Dry-run shim: the fake RealSense SDK (perception_node.testing.fake_pyrealsense2)."""\n'
            "import sys\n\nfrom perception_node.testing import fake_pyrealsense2\n\n"
            "sys.modules[__name__] = fake_pyrealsense2\n")


def _camera(run: DryRun, work: Path, height_m: float, base_env: Mapping[str, str]) -> None:
    """The camera node on the fake pyrealsense2 SDK, looking at a flat table `height_m` below it."""
    shim = work / "sdk"
    run.files[str(shim / "pyrealsense2" / "__init__.py")] = shim_text()
    scenario = work / "camera.json"
    run.files[str(scenario)] = json.dumps({"plane": {"z0": height_m, "slope_x": 0.0, "slope_y": 0.0}})
    path = ":".join(p for p in (str(shim), base_env.get("PYTHONPATH", "")) if p)
    run.node_env["camera"] = {"PYTHONPATH": path, "FAKE_PYREALSENSE2_SCENARIO": str(scenario)}


def ur_installation(config_dir: Path | None = None) -> dict[str, object]:
    """The UR5e's configured TCP (m, rad), payload mass (kg) and centre of gravity (m), as the fake controller's
    installation (what the preflight compares the pendant's with)."""
    skills = node_parameters(params_files(config_dir or default_config_dir(), "ur5e", "embedded"), "skills")
    return {"tcp_offset": [float(v) for v in skills.get("ur5e.tcp_offset", [0.0] * 6)],
            "payload_mass": float(skills.get("ur5e.payload_mass", 0.0)),
            "payload_cog": [float(v) for v in skills.get("ur5e.payload_cog", [0.0] * 3)]}


def plan(robot: str, work_dir: Path, config_dir: Path | None = None,
         base_env: Mapping[str, str] | None = None, protocol_fake: bool | None = None,
         spot_port: int = 0) -> DryRun:
    """The fakes, parameters and environment of `robot`'s dry run; its files go under `work_dir`.

    ValueError when `robot` has no fakes (fake_error). `protocol_fake` (default: whether it is installed)
    chooses the UR controller fake. `spot_port` 0: the fake Spot binds a port the system picks and writes it into
    its ready file, which sets the skills node's spot.port (FakeProcess.port_param; a fixed port could be shared
    with another dry run: gRPC binds with SO_REUSEPORT)."""
    error = fake_error(robot, config_dir)
    if error:
        raise ValueError(error)
    work = Path(work_dir)
    env = dict(base_env or {})
    run = DryRun(robot)
    perception = {"detector": "oracle", "use_open3d": "false"}
    if robot == "ur5e":
        use_protocol = protocol_fake_available() if protocol_fake is None else protocol_fake
        scene: dict[str, object] = {"time_scale": 1.0, "objects": [dict(o) for o in UR_OBJECTS]}
        if use_protocol:  # the pendant's installation as a set-up robot has it: the configured TCP and payload
            scene["installation"] = ur_installation(config_dir)
        scene_file = work / "ur_scene.json"
        run.files[str(scene_file)] = json.dumps(scene)
        state_file = work / "ur_state.json"  # the protocol fake's arm and objects, for the truth publisher
        if use_protocol:
            ready = work / "fake_ur.ready"
            run.processes.append(FakeProcess("fake_ur", "skills_node", "fake_ur_controller",
                                             ("--host", UR_HOST, "--scene", str(scene_file), "--state-file",
                                              str(state_file), "--ready-file", str(ready)), str(ready)))
            run.node_params["skills"] = {"ur5e.host": UR_HOST, "ur5e.probe": "true"}  # the real ur_rtde (its default)
        else:  # interim: the API-level stand-in inside the skills process (its objects' truth stays put)
            run.node_params["skills"] = {
                "ur5e.host": UR_HOST,
                "ur5e.rtde_factory": "skills_node.robots.ur5e.testing.fake_rtde:factories_from_env",
                "ur5e.probe": "false"}
            run.node_env["skills"] = {"MONOLOGUE_FAKE_RTDE": json.dumps(scene)}
        # the tabletop's truth for the oracle detector, which projects it into the fake camera's images
        run.processes.append(FakeProcess("fake_ur_truth", "skills_node", "fake_ur_truth",
                                         ("--scene", str(scene_file))
                                         + (("--state-file", str(state_file)) if use_protocol else ())))
        # the wrist camera above a flat table: TCP height + the suction cup (0.16 m) - the hand-eye offset (0.035 m)
        _camera(run, work, UR_START_TCP[2] + 0.16 - 0.035, env)
        run.node_params["camera"] = {"width": "320", "height": "240", "fps": "6"}
    else:
        ready = work / "fake_spot.ready"
        ca = work / "fake_spot_ca.crt"
        port = spot_port
        run.processes.append(FakeProcess(
            "fake_spot", "skills_node", "fake_spot",
            ("--port", str(port), "--ca-cert", str(ca), "--ready-file", str(ready),
             "--start", json.dumps(SPOT_START), "--location", "far counter"), str(ready),
            None if port else ("skills", "spot.port")))
        objects = "[" + ", ".join(SPOT_START) + "]"  # the fake kitchen's objects: fewer skills for the LLM to score
        run.node_params["skills"] = {"spot.hostname": "127.0.0.1", "spot.port": str(port),
                                     "spot.ca_cert_path": str(ca), "spot.start_location": "far counter",
                                     "spot.objects": objects}
        perception["candidates"] = objects
        spot_env = {"BOSDYN_CLIENT_USERNAME": FAKE_USER, "BOSDYN_CLIENT_PASSWORD": FAKE_PASSWORD}
        run.node_env["skills"] = dict(spot_env)
        run.node_env["fake_spot"] = dict(spot_env)
        perception["base_frame"] = "odom"
        if robot == "spot_realsense":
            _camera(run, work, 0.6, env)
            run.node_params["camera"] = {"width": "320", "height": "240", "fps": "6"}
    run.node_params["perception"] = perception
    return run


def fake_command(process: FakeProcess, prefix: Path) -> list[str]:
    """The command line of `process`, its executable under the install `prefix` of its package."""
    return [str(prefix / "lib" / process.package / process.executable), *process.args]
