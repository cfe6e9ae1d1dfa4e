"""The node graph, described once. Used by launch/*.launch.py and by `monologue-up` (no rclpy).

Parameters come from config/monologue.yaml, then config/robots/<robot>.yaml (after the file of the robot
it `extends`, if any), then config/llm/<llm>.yaml; later files override earlier ones. What differs
between robots (their own processes, the skills backend, the perception source, the success judge,
the scene node) comes from the robot table, config/robots.yaml (monologue_domain.robots; docs/adding_a_robot.md).
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

from monologue_bag.core.layout import CASSETTE_FILE, TRANSCRIPTS_DIR
from monologue_domain.robots import TABLE_FILE, Robot, load_robots

LLMS: tuple[str, ...] = ("embedded", "embedded_tuned", "openai", "expert")
EXPERT = "expert"  # the expert stand-in: evaluation and tests on simulated robots only (config/llm/expert.yaml)

# When a node runs: LIVE = with the robot or simulator; REPLAY = when a bag stands in for them
# (monologue-replay); RECORD = only when the run is recorded (record:=<dir>); WEB = only when the web
# monitor is asked for (web:=true; on in monologue-demo, off by default on robots); FOXGLOVE = only when
# the Foxglove bridge is asked for (foxglove:=true; off by default).
LIVE, REPLAY, RECORD, WEB, FOXGLOVE = "live", "replay", "record", "web", "foxglove"
ALWAYS = frozenset({LIVE, REPLAY})


@dataclass(frozen=True)
class NodeSpec:
    """One process of the graph."""

    name: str  # ROS node name (also the YAML section)
    package: str
    executable: str
    role: str
    runs_in: frozenset[str] = frozenset({LIVE})  # LIVE, REPLAY and/or RECORD


GRAPH: tuple[NodeSpec, ...] = (
    NodeSpec("recorder", "monologue_bag", "bag_recorder", "records the run into a rosbag2 MCAP directory",
             frozenset({RECORD})),
    NodeSpec("skills", "skills_node", "skills_node", "executes skills and reports affordances"),
    NodeSpec("perception", "perception_node", "perception_node", "publishes the scene description", ALWAYS),
    NodeSpec("success_detector", "success_detector_node", "success_detector_node", "judges skill success",
             ALWAYS),
    NodeSpec("planner", "planner_node", "planner_node", "runs the Inner Monologue loop", ALWAYS),
    NodeSpec("viz", "monologue_viz", "monologue_viz", "publishes transcript and scene markers for RViz", ALWAYS),
    NodeSpec("bag_player", "monologue_bag", "bag_player", "plays a bag and serves its recorded skills",
             frozenset({REPLAY})),
    NodeSpec("web", "monologue_web", "monologue_web", "serves the live web monitor and console (docs/web.md)",
             frozenset({WEB})),
    NodeSpec("foxglove_bridge", "monologue_web", "foxglove_bridge",
             "serves the topics to Foxglove over its WebSocket protocol (docs/web.md)", frozenset({FOXGLOVE})),
)


# ---- the robot table (config/robots.yaml) ----------------------------------------------------------


def _table_dir(config_dir: Path | None) -> Path:
    """`config_dir`, else the installed config (or the source tree's, if the install predates the table)."""
    d = Path(config_dir) if config_dir is not None else default_config_dir()
    if not (d / TABLE_FILE).is_file() and d.resolve() == default_config_dir().resolve():
        return Path(__file__).resolve().parents[3] / "config"
    return d


@lru_cache(maxsize=16)
def _load(path: str, _mtime_ns: int) -> dict[str, Robot]:
    return load_robots(Path(path))


def robot_table(config_dir: Path | None = None) -> dict[str, Robot]:
    """Every robot of `config_dir`/robots.yaml (default: the installed config), in file order."""
    d = _table_dir(config_dir)
    f = d / TABLE_FILE
    return dict(_load(str(d), f.stat().st_mtime_ns if f.is_file() else 0))


def robot_entry(robot: str, config_dir: Path | None = None) -> Robot:
    """The table's entry for `robot`; ValueError naming the choices if there is none."""
    table = robot_table(config_dir)
    if robot not in table:
        raise ValueError(f"unknown robot {robot!r}; choose one of {tuple(table)}")
    return table[robot]


def robots(config_dir: Path | None = None) -> tuple[str, ...]:
    """The `robot:=` choices (launch file, monologue-up, monologue-demo)."""
    return tuple(robot_table(config_dir))


def simulated_robots(config_dir: Path | None = None) -> tuple[str, ...]:
    """Robots with a simulated scene (the bench's choices)."""
    return tuple(n for n, r in robot_table(config_dir).items() if r.simulated)


def robot_nodes(robot: str, config_dir: Path | None = None) -> tuple[NodeSpec, ...]:
    """The processes only `robot` has (simulator, camera driver), LIVE runs only."""
    return tuple(NodeSpec(n.name, n.package, n.executable, n.role) for n in robot_entry(robot, config_dir).nodes)


def scene_node(robot: str, config_dir: Path | None = None) -> str:
    """The node whose `sim.*` parameters (seed, colours, heavy blocks, noise) set a simulated scene."""
    entry = robot_entry(robot, config_dir)
    if not entry.scene_node:
        raise ValueError(f"robot {robot!r} has no simulated scene; simulated robots: "
                         f"{sorted(simulated_robots(config_dir))}")
    return entry.scene_node


def camera_node(robot: str, config_dir: Path | None = None) -> str:
    """The node publishing `robot`'s camera images ("" if it has no camera)."""
    return robot_entry(robot, config_dir).camera


def robot_params(robot: str, config_dir: Path | None = None) -> dict[str, dict[str, str]]:
    """The parameters the table sets: the skills backend plug-in, the perception source, the success
    judge (they override the YAML files)."""
    return robot_entry(robot, config_dir).node_params()


def graph_for(robot: str, mode: str = LIVE, record: bool = False,
              config_dir: Path | None = None, web: bool = False, foxglove: bool = False,
              node_params: Mapping[str, Mapping[str, str]] | None = None) -> tuple[NodeSpec, ...]:
    """The nodes of a LIVE or REPLAY run for `robot`, in start order (the recorder too if recorded, the
    web monitor too if `web`, the Foxglove bridge too if `foxglove`). With perception's `camera_driver:
    realsense_ros` (its YAML, or `node_params`) our RealSense publisher is not started: the user runs the
    official realsense2_camera node."""
    specs = _pick(all_nodes(robot, config_dir), mode, record, web, foxglove)
    if camera_driver(robot, config_dir, node_params) == "realsense_ros":
        specs = tuple(s for s in specs if s.executable != REALSENSE_PUBLISHER)
    return specs


REALSENSE_PUBLISHER = "realsense_publisher"  # perception_node's pyrealsense2 publisher


def camera_driver(robot: str, config_dir: Path | None = None,
                  node_params: Mapping[str, Mapping[str, str]] | None = None) -> str:
    """Perception's `camera_driver` for `robot`: `node_params` (a -p override), else its parameter files."""
    given = (node_params or {}).get("perception", {}).get("camera_driver")
    if given is not None:
        return str(given)
    from monologue_common.core.settings import parameters_from_files

    d = _table_dir(config_dir)
    files = [d / "monologue.yaml", *(d / f for f in robot_entry(robot, config_dir).robot_files)]
    return str(parameters_from_files([f for f in files if f.is_file()], "perception").get("camera_driver", ""))


def all_nodes(robot: str, config_dir: Path | None = None) -> tuple[NodeSpec, ...]:
    """Every node that can run for `robot`, whatever the mode."""
    first = tuple(s for s in GRAPH if s.runs_in == {RECORD})  # the recorder starts before anything publishes
    return first + robot_nodes(robot, config_dir) + tuple(s for s in GRAPH if s not in first)


def _pick(specs: Sequence[NodeSpec], mode: str, record: bool, web: bool = False,
          foxglove: bool = False) -> tuple[NodeSpec, ...]:
    if mode not in (LIVE, REPLAY):
        raise ValueError(f"mode must be {LIVE!r} or {REPLAY!r}, got {mode!r}")
    return tuple(s for s in specs if mode in s.runs_in or (record and RECORD in s.runs_in)
                 or (web and WEB in s.runs_in) or (foxglove and FOXGLOVE in s.runs_in))


def select(mode: str = LIVE, record: bool = False, web: bool = False, foxglove: bool = False) -> tuple[NodeSpec, ...]:
    """The nodes of a LIVE or REPLAY run, plus the recorder if the run is recorded, the web monitor if `web`,
    the Foxglove bridge if `foxglove`."""
    return _pick(GRAPH, mode, record, web, foxglove)


def record_params(bag_dir: Path, mode: str = LIVE, **custom: str) -> dict[str, dict[str, str]]:
    """Parameters that make a run record into `bag_dir`: the recorder's output, and the planner's
    transcript files (and, live, its LLM cassette) next to the bag."""
    bag_dir = Path(bag_dir).expanduser().resolve()
    data = ",".join(f'"{k}={v}"' for k, v in sorted(custom.items()))
    params: dict[str, dict[str, str]] = {
        "recorder": {"output": str(bag_dir), "custom_data": f"[{data}]" if data else '[""]'},
        "planner": {"transcript_dir": str(bag_dir / TRANSCRIPTS_DIR)},
    }
    if mode == LIVE:
        params["planner"].update({"llm.cassette_mode": "record", "llm.cassette_path": str(bag_dir / CASSETTE_FILE)})
    return params


# Nodes whose parameter overrides a recorded run keeps in the bag (custom_data), so that a replay
# perceives and judges the same way (e.g. perception from the camera, the tabletop success rule).
REPLAYED_PARAMS = ("perception", "success_detector")
PARAMS_KEY = "monologue.params."


def params_custom_data(node_params: Mapping[str, Mapping[str, str]], robot: str | None = None,
                       config_dir: Path | None = None) -> dict[str, str]:
    """custom_data entries for the overrides of the REPLAYED_PARAMS nodes (url-encoded); given `robot`,
    the parameters its table entry sets come first (a ur5e bag then replays with camera perception
    and the tabletop rule whatever robot:= the replay names)."""
    merged: dict[str, dict[str, str]] = {}
    if robot is not None:
        merged = {n: dict(v) for n, v in robot_params(robot, config_dir).items() if n in REPLAYED_PARAMS}
    for n, v in node_params.items():
        merged.setdefault(n, {}).update(v)
    return {f"{PARAMS_KEY}{n}": urlencode(sorted(merged[n].items()))
            for n in REPLAYED_PARAMS if merged.get(n)}


def params_from_custom_data(custom: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """The node parameter overrides a bag was recorded with (see params_custom_data)."""
    return {k[len(PARAMS_KEY):]: dict(parse_qsl(v, keep_blank_values=True))
            for k, v in custom.items() if k.startswith(PARAMS_KEY) and k[len(PARAMS_KEY):] in REPLAYED_PARAMS}


def dds_env(config_dir: Path) -> dict[str, str]:
    """Environment for the nodes' DDS: Fast DDS reads config/fastdds.xml (a shared-memory segment
    big enough for camera images; the file says why). Empty if the file is missing."""
    profile = Path(config_dir) / "fastdds.xml"
    return {"FASTRTPS_DEFAULT_PROFILES_FILE": str(profile)} if profile.is_file() else {}


def default_config_dir() -> Path:
    """The installed config directory, or the source tree's when run from a checkout."""
    env = os.environ.get("MONOLOGUE_CONFIG_DIR")
    if env:
        return Path(env)
    try:
        from ament_index_python.packages import get_package_share_directory

        return Path(get_package_share_directory("monologue_bringup")) / "config"
    except Exception:
        return Path(__file__).resolve().parents[3] / "config"


def params_files(config_dir: Path, robot: str, llm: str) -> list[Path]:
    """Parameter files for a (robot, llm) pair, in override order; raises ValueError if missing."""
    entry = robot_entry(robot, config_dir)
    if llm not in LLMS:
        raise ValueError(f"unknown llm {llm!r}; choose one of {LLMS}")
    if llm == EXPERT and not entry.simulated:
        raise ValueError(f"llm:={EXPERT} is the expert stand-in for ceiling runs and tests, which reads a simulated "
                         f"world's truth; robot {robot!r} is not simulated (simulated: {simulated_robots(config_dir)})")
    files = [config_dir / "monologue.yaml", *(config_dir / f for f in entry.robot_files),
             config_dir / "llm" / f"{llm}.yaml"]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise ValueError(f"missing parameter files: {missing}")
    return files


def expert_params(robot: str, truth_dir: str | Path, config_dir: Path | None = None) -> dict[str, dict[str, str]]:
    """The parameters that connect the expert stand-in to its side channel `truth_dir` (llm:=expert): the
    planner's backend reads it, the node holding the simulated world writes its truth there."""
    return {"planner": {"llm.expert.truth_dir": str(truth_dir)},
            scene_node(robot, config_dir): {"expert_truth_dir": str(truth_dir)}}


def node_overrides(spec: NodeSpec, config_dir: Path, robot: str | None = None) -> dict[str, str]:
    """Parameters that depend on where the config lives and, given `robot`, those the robot table sets
    (robot_params). The launch file and ros_args pass them after the parameter files."""
    params = dict(robot_params(robot, config_dir).get(spec.name, {})) if robot is not None else {}
    if spec.name == "planner":
        params["prompt_dir"] = str(config_dir / "prompts")
    return params


def ros_args(
    spec: NodeSpec,
    config_dir: Path,
    robot: str,
    llm: str,
    extra_params: Mapping[str, str] | None = None,
    log_level: str = "info",
) -> list[str]:
    """The `--ros-args ...` tail that starts `spec` exactly as the launch file does."""
    args = ["--ros-args", "-r", f"__node:={spec.name}", "--log-level", log_level]
    for f in params_files(config_dir, robot, llm):
        args += ["--params-file", str(f)]
    params = dict(node_overrides(spec, config_dir, robot))
    params.update(extra_params or {})
    for k, v in params.items():
        args += ["-p", f"{k}:={v}"]
    return args


def find(name: str, config_dir: Path | None = None) -> NodeSpec:
    """The node called `name`, in the common graph or any robot's own nodes."""
    specs = GRAPH + tuple(n for r in robot_table(config_dir) for n in robot_nodes(r, config_dir))
    for spec in specs:
        if spec.name == name:
            return spec
    raise KeyError(f"no node {name!r} in the graph; nodes: {[s.name for s in specs]}")


def parse_launch_args(argv: Sequence[str], defaults: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """Split `key:=value` arguments (ros2 launch style) from the rest."""
    values = dict(defaults)
    rest: list[str] = []
    for a in argv:
        if ":=" in a and not a.startswith("-"):
            k, v = a.split(":=", 1)
            if k not in values:
                raise ValueError(f"unknown argument {k!r}; known: {sorted(values)}")
            values[k] = v
        else:
            rest.append(a)
    return values, rest


# The `robot:=` choices of the installed table; pass config_dir to the functions for another table.
ROBOTS: tuple[str, ...] = robots()
