"""Skills backend plug-ins, found by name in one Registry (no rclpy here).

A robot is a folder skills_node/robots/<name>/ whose package defines `PLUGIN = BackendPlugin(name, read, create)`:
- `read(reader)` builds the backend's frozen settings dataclass from the node's parameters (its own
  block, e.g. `ur5e.*`), ROS-free, reporting every problem to the ParamReader;
- `create(host, settings)` builds the running backend with the node the host offers.
The robot table (config/robots.yaml) names the plug-in of each robot; the bring-up passes it as the
skills node's `backend` parameter. `ROBOTS` (monologue_common.core.registry) finds it: a folder name of
skills_node.robots, one registered at run time (`ROBOTS.add`), an entry point in group
`monologue.skills_backends`, or a dotted module path (a plug-in in another package, no existing file
edited). See docs/adding_a_robot.md.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from monologue_common.core.registry import Registry
from monologue_common.core.settings import ParamReader

from .core.backend import SkillBackend

if TYPE_CHECKING:  # for annotations only: nothing here imports rclpy at run time
    from rclpy.node import Node

S = TypeVar("S")


def _nothing() -> None:
    return None


@dataclass(frozen=True)
class BackendHandle:
    """A running backend and what stops it (close connections, threads) when the node ends."""

    backend: SkillBackend
    close: Callable[[], None] = _nothing


class BackendHost(Protocol):
    """What the skills node offers a backend while it is built."""

    @property
    def node(self) -> Node:
        """The rclpy Node: arm backends subscribe, publish and call actions through it."""
        ...

    @property
    def frame_id(self) -> str:
        """Frame of published poses (m)."""
        ...

    def logger(self, name: str) -> logging.Logger: ...

    def publish_ground_truth(self) -> None:
        """Publish sim/ground_truth now (a simulated world changed)."""
        ...


@dataclass(frozen=True)
class BackendPlugin(Generic[S]):
    """One skills backend: its name, its settings reader and its factory."""

    name: str
    read: Callable[[ParamReader], S | None]  # None when it found errors (they are in the reader)
    create: Callable[[BackendHost, S], BackendHandle]
    description: str = ""


def _describe(plugin: BackendPlugin[Any]) -> str:
    return plugin.description


ROBOTS: Registry[BackendPlugin[Any]] = Registry("skills_backends", package="skills_node.robots", attribute="PLUGIN",
                                                describe=_describe)
# Set for every node but not the skills node's: rclpy's own, and the graph's shared LLM block (config/llm).
IGNORED = ("use_sim_time", "start_type_description_service", "llm")


def load_plugin(name: str) -> BackendPlugin[Any]:
    """The plug-in called `name` (UnknownPluginError, a ValueError naming the known ones, if there is none)."""
    plugin = ROBOTS.get(name)
    if not isinstance(plugin, BackendPlugin):
        raise ValueError(f"skills backend {name!r} is a {type(plugin).__name__}, not a BackendPlugin(...)")
    return plugin


@dataclass(frozen=True)
class SkillsSettings:
    """The skills node's settings: its own and its backend's (validated once, here)."""

    backend: str  # plug-in name (the robot table's skills_backend)
    frame_id: str
    ground_truth_rate: float  # Hz, sim/ground_truth of simulated worlds (also sent on every change)
    plugin: BackendPlugin[Any]
    backend_settings: object  # the plug-in's settings dataclass
    expert_truth_dir: str = ""  # llm:=expert only: where a simulated world's truth is written for the stand-in
    realtime_priority: int = 0  # SCHED_FIFO priority of the node's threads (1-99), 0 = normal scheduling


def settings_from_parameters(params: Mapping[str, object]) -> tuple[SkillsSettings, list[str]]:
    """Settings from the node's parameters and the names of those nobody read (typos, another robot's
    block). Raises ValueError listing every problem."""
    r = ParamReader(params, "skills")
    name = r.string("backend", nonempty=True)
    frame_id = r.string("frame_id", nonempty=True)
    rate = r.number("ground_truth_rate", low=0.0, high=1000.0, low_open=True)
    expert_truth_dir = r.string("expert_truth_dir")
    realtime_priority = r.integer("realtime_priority", low=0, high=99) if r.has("realtime_priority") else 0
    plugin: BackendPlugin[Any] | None = None
    backend_settings: object = None
    if name:
        try:
            plugin = load_plugin(name)
        except ValueError as e:
            r.check(False, f"backend: {e}")
    if plugin is not None:
        backend_settings = plugin.read(r)
    r.finish()
    assert plugin is not None
    return (SkillsSettings(name, frame_id, rate, plugin, backend_settings, expert_truth_dir, realtime_priority),
            r.unused(IGNORED))
