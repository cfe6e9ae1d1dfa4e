"""The plan of an in-process graph (`monologue-up container:=true`), ROS-free.

Like a ROS 2 component container, an in-process graph constructs every node of the graph description
(graph.py) in one Python process. This module decides what to load and with which arguments:
- each node's component is found by name, as `ros2 run` finds its executable: the console script
  `<package>/<executable>` names the node's module, which exposes COMPONENT_ATTR (a
  monologue_common.runtime.Component); nothing here imports a node package;
- every node gets, as its own `--ros-args` (rclpy's Node cli_args), exactly the arguments its process
  would get (graph.ros_args: name remap, parameter files, `-p` overrides); only the log level, which
  ROS sets per process, goes to rclpy.init.
"""
from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .graph import RECORD, NodeSpec, ros_args

COMPONENT_ATTR = "COMPONENT"  # the module-level monologue_common.runtime.Component of a node's module

# package -> {console script name: "module:function"}
ScriptTable = Callable[[str], Mapping[str, str]]


def console_scripts(package: str) -> dict[str, str]:
    """The console scripts an installed package declares (its setup.py entry_points)."""
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError as e:
        raise ValueError(f"package {package!r} is not installed; run `make build` and `. scripts/env.sh`") from e
    return {ep.name: ep.value for ep in dist.entry_points if ep.group == "console_scripts"}


@dataclass(frozen=True)
class PlannedNode:
    """One node of an in-process graph."""

    name: str  # ROS node name
    component: str  # "module:attribute" of its monologue_common.runtime.Component
    ros_args: tuple[str, ...] = ()  # its `--ros-args ...`, those of its process
    last: bool = False  # stopped after the others (recorders record what the others publish while stopping)

    @property
    def module(self) -> str:
        return self.component.split(":", 1)[0]

    @property
    def attribute(self) -> str:
        return self.component.split(":", 1)[1]


@dataclass(frozen=True)
class ContainerPlan:
    """The nodes in start order, and the process's log level."""

    nodes: tuple[PlannedNode, ...]
    log_level: str = "info"

    def init_args(self) -> list[str]:
        """rclpy.init's arguments: what is per process (the log level); the rest is per node."""
        return ["--ros-args", "--log-level", self.log_level]


def component_ref(spec: NodeSpec, scripts: ScriptTable = console_scripts) -> str:
    """"module:COMPONENT" for `spec`, from the console script that starts it as a process."""
    table = scripts(spec.package)
    if spec.executable not in table:
        raise ValueError(f"node {spec.name!r}: package {spec.package!r} has no executable {spec.executable!r} "
                         f"(it has {sorted(table)})")
    return f"{table[spec.executable].split(':', 1)[0]}:{COMPONENT_ATTR}"


def plan_container(
    specs: Sequence[NodeSpec],
    config_dir: Path,
    robot: str,
    llm: str,
    node_params: Mapping[str, Mapping[str, str]] | None = None,
    log_level: str = "info",
    scripts: ScriptTable = console_scripts,
) -> ContainerPlan:
    """The in-process plan of `specs` (in start order), each node with the arguments graph.ros_args gives
    its process; ValueError if a node cannot be located or two share a name."""
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"node names must be unique in one process, got {names}")
    return ContainerPlan(tuple(
        PlannedNode(s.name, component_ref(s, scripts),
                    tuple(ros_args(s, config_dir, robot, llm, (node_params or {}).get(s.name), log_level)),
                    RECORD in s.runs_in)
        for s in specs), log_level)
