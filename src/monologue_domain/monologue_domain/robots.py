"""The robot table: every robot or world the graph can drive, read from `config/robots.yaml` (no rclpy).

One entry names everything that differs between robots: the processes only it has (a simulator, a
camera driver), the skills node's backend plug-in, the node that publishes its camera images, the
perception source, the success judge and, for simulated worlds, the node whose `sim.*`
parameters set the scene. The bring-up (graph, launch file, `monologue-up`), the demo and the bench
derive their choices from it; the nodes' own parameters stay in `config/robots/<robot>.yaml`.
See docs/adding_a_robot.md.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from monologue_common.core.settings import parameters_from_files

TABLE_FILE = "robots.yaml"
PERCEPTION_SOURCES = ("oracle", "camera")  # perception_node `source`
WORLDS = ("tabletop", "kitchen", "household")  # kinds of world a robot acts in (what the benchmark suites need)
SKILLS_NODE = "skills"  # the skills node's name in the graph (a scene node may be the skills node itself)


@dataclass(frozen=True)
class RobotNode:
    """A process only this robot has, started before the common graph (LIVE runs only)."""

    name: str  # ROS node name and its section in config/robots/<robot>.yaml
    package: str
    executable: str
    role: str


@dataclass(frozen=True)
class Robot:
    """One row of the robot table."""

    name: str
    description: str
    skills_backend: str  # skills node plug-in: a folder skills_node.robots.<name>, or a dotted module path
    perception: str  # perception source: oracle (simulator ground truth) | camera (RGB-D pipeline)
    success: str  # success_detector judge, e.g. sim_geometric | tabletop
    nodes: tuple[RobotNode, ...] = ()
    camera: str = ""  # the node publishing camera/* ("" = no camera)
    scene_node: str = ""  # the node whose sim.* parameters set a simulated scene ("" = a real robot)
    world: str = ""  # kind of world: tabletop (IM Table 1) | kitchen (SayCan, IM §4.3) | household (CAPE)
    extends: str = ""  # another robot whose robots/<extends>.yaml is loaded before robots/<name>.yaml

    @property
    def robot_files(self) -> tuple[str, ...]:
        """Its parameter files relative to the config dir, in override order."""
        own = f"robots/{self.name}.yaml"
        return (f"robots/{self.extends}.yaml", own) if self.extends else (own,)

    @property
    def simulated(self) -> bool:
        return bool(self.scene_node)

    def node_params(self) -> dict[str, dict[str, str]]:
        """The node parameters this entry decides ({node: {name: value}}); they override the YAML files:
        the skills backend plug-in, the perception source, the success judge."""
        return {SKILLS_NODE: {"backend": self.skills_backend}, "perception": {"source": self.perception},
                "success_detector": {"judge": self.success}}


def _text(entry: Mapping[str, object], key: str, where: str, errors: list[str], required: bool = True) -> str:
    value = entry.get(key, "")
    if value is None:
        value = ""
    if not isinstance(value, str):
        errors.append(f"{where}.{key}: must be a string, got {value!r}")
        return ""
    if required and not value.strip():
        errors.append(f"{where}.{key}: missing")
    return value.strip()


def parse_robots(data: object, source: str = TABLE_FILE) -> dict[str, Robot]:
    """The table from its YAML data; ValueError listing every problem."""
    errors: list[str] = []
    robots: dict[str, Robot] = {}
    table = data.get("robots") if isinstance(data, Mapping) else None
    if not isinstance(table, Mapping) or not table:
        raise ValueError(f"{source}: needs a non-empty `robots:` mapping")
    for name, entry in table.items():
        where = f"robots.{name}"
        if not isinstance(name, str) or not name.isidentifier():
            errors.append(f"{where}: a robot name must be an identifier")
            continue
        if not isinstance(entry, Mapping):
            errors.append(f"{where}: must be a mapping")
            continue
        unknown = set(entry) - {"description", "skills_backend", "perception", "success", "nodes", "camera",
                                "scene_node", "world", "extends"}
        if unknown:
            errors.append(f"{where}: unknown keys {sorted(unknown)}")
        nodes: list[RobotNode] = []
        raw_nodes = entry.get("nodes") or []
        if not isinstance(raw_nodes, list):
            errors.append(f"{where}.nodes: must be a list")
            raw_nodes = []
        for i, n in enumerate(raw_nodes):
            if not isinstance(n, Mapping):
                errors.append(f"{where}.nodes[{i}]: must be a mapping")
                continue
            extra = set(n) - {"name", "package", "executable", "role"}
            if extra:
                errors.append(f"{where}.nodes[{i}]: unknown keys {sorted(extra)}")
            nodes.append(RobotNode(*(_text(n, k, f"{where}.nodes[{i}]", errors)
                                     for k in ("name", "package", "executable", "role"))))
        robot = Robot(
            name=name, description=_text(entry, "description", where, errors),
            skills_backend=_text(entry, "skills_backend", where, errors),
            perception=_text(entry, "perception", where, errors), success=_text(entry, "success", where, errors),
            nodes=tuple(nodes), camera=_text(entry, "camera", where, errors, required=False),
            scene_node=_text(entry, "scene_node", where, errors, required=False),
            world=_text(entry, "world", where, errors, required=False),
            extends=_text(entry, "extends", where, errors, required=False))
        own = {n.name for n in nodes}
        if len(own) != len(nodes):
            errors.append(f"{where}.nodes: duplicate node names")
        if robot.perception and robot.perception not in PERCEPTION_SOURCES:
            errors.append(f"{where}.perception: must be one of {list(PERCEPTION_SOURCES)}, got {robot.perception!r}")
        if robot.camera and robot.camera not in own | {SKILLS_NODE}:
            errors.append(f"{where}.camera: {robot.camera!r} is not one of its nodes {sorted(own)} or {SKILLS_NODE!r}")
        if robot.world and robot.world not in WORLDS:
            errors.append(f"{where}.world: must be one of {list(WORLDS)}, got {robot.world!r}")
        if robot.perception == "camera" and not robot.camera:
            errors.append(f"{where}: perception from the camera needs a camera node")
        if robot.scene_node and robot.scene_node not in own | {SKILLS_NODE}:
            errors.append(f"{where}.scene_node: {robot.scene_node!r} is neither one of its nodes nor "
                          f"{SKILLS_NODE!r}")
        robots[name] = robot
    for name, robot in robots.items():
        base = robots.get(robot.extends)
        if robot.extends and (base is None or base.extends or robot.extends == name):
            errors.append(f"robots.{name}.extends: must name another robot that extends none, got {robot.extends!r}")
    if errors:
        raise ValueError(f"invalid robot table {source}:\n  " + "\n  ".join(errors))
    return robots


def load_robots(config_dir: Path) -> dict[str, Robot]:
    """The table in `config_dir`/robots.yaml, in file order."""
    path = Path(config_dir) / TABLE_FILE
    if not path.is_file():
        raise ValueError(f"no robot table at {path}")
    return parse_robots(yaml.safe_load(path.read_text()), str(path))


def node_parameters(config_dir: Path, node: str, files: Sequence[str]) -> dict[str, object]:
    """The parameters `node` gets from `files` (paths relative to config_dir, in override order, e.g.
    monologue.yaml, robots/<robot>.yaml, llm/<llm>.yaml; a robot file stands for the robot's `robot_files`)
    with what the robot table decides for robots/<robot>.yaml applied after it, as the graph starts it:
    {dotted name: value}. For tests and tools that check or use the configuration without starting a node."""
    out: dict[str, object] = {}
    for f in files:
        if Path(f).parent.name == "robots":
            robot = load_robots(config_dir)[Path(f).stem]
            out.update(parameters_from_files([config_dir / g for g in robot.robot_files], node))
            out.update(robot.node_params().get(node, {}))
        else:
            out.update(parameters_from_files([config_dir / f], node))
    return out
