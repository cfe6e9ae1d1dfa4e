"""The node graph, described once. Used by launch/*.launch.py and by `monologue-up` (no rclpy).

Parameters come from config/monologue.yaml, then config/robots/<robot>.yaml, then
config/llm/<llm>.yaml; later files override earlier ones.
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# sim: the MuJoCo tabletop (tabletop_sim) driven like the real UR5e; sim_kinematic: the in-process
# kinematic tabletop of the skills node (fast; planner mechanics); ur5e: the real arm.
ROBOTS: tuple[str, ...] = ("sim", "sim_kinematic", "ur5e")
LLMS: tuple[str, ...] = ("embedded", "openai")


@dataclass(frozen=True)
class NodeSpec:
    """One process of the graph."""

    name: str  # ROS node name (also the YAML section)
    package: str
    executable: str
    role: str


GRAPH: tuple[NodeSpec, ...] = (
    NodeSpec("skills", "skills_node", "skills_node", "executes skills and reports affordances"),
    NodeSpec("perception", "perception_node", "perception_node", "publishes the scene description"),
    NodeSpec("success_detector", "success_detector_node", "success_detector_node", "judges skill success"),
    NodeSpec("planner", "planner_node", "planner_node", "runs the Inner Monologue loop"),
)


# Nodes that only some robots have, started before GRAPH's.
ROBOT_NODES: dict[str, tuple[NodeSpec, ...]] = {
    "sim": (NodeSpec("tabletop_sim", "tabletop_sim", "tabletop_sim", "simulates the arm, camera and objects"),),
}


def scene_node(robot: str) -> str:
    """The node whose `sim.*` parameters (seed, colours, heavy blocks, noise) set a simulated scene."""
    nodes = {"sim": "tabletop_sim", "sim_kinematic": "skills"}
    if robot not in nodes:
        raise ValueError(f"robot {robot!r} has no simulated scene; simulated robots: {sorted(nodes)}")
    return nodes[robot]


def graph_for(robot: str) -> tuple[NodeSpec, ...]:
    """Every node of the graph for `robot`, in start order."""
    if robot not in ROBOTS:
        raise ValueError(f"unknown robot {robot!r}; choose one of {ROBOTS}")
    return ROBOT_NODES.get(robot, ()) + GRAPH


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
    if robot not in ROBOTS:
        raise ValueError(f"unknown robot {robot!r}; choose one of {ROBOTS}")
    if llm not in LLMS:
        raise ValueError(f"unknown llm {llm!r}; choose one of {LLMS}")
    files = [config_dir / "monologue.yaml", config_dir / "robots" / f"{robot}.yaml",
             config_dir / "llm" / f"{llm}.yaml"]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise ValueError(f"missing parameter files: {missing}")
    return files


def node_overrides(spec: NodeSpec, config_dir: Path) -> dict[str, str]:
    """Parameters that depend on where the config lives."""
    if spec.name == "planner":
        return {"prompt_dir": str(config_dir / "prompts")}
    return {}


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
    params = dict(node_overrides(spec, config_dir))
    params.update(extra_params or {})
    for k, v in params.items():
        args += ["-p", f"{k}:={v}"]
    return args


def find(name: str) -> NodeSpec:
    specs = GRAPH + tuple(n for extra in ROBOT_NODES.values() for n in extra)
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
