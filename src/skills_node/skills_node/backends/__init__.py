"""Skills backend plug-ins, found by name (no rclpy here).

A backend is one module that defines `PLUGIN = BackendPlugin(name, read, create)`:
- `read(reader)` builds the backend's frozen settings dataclass from the node's parameters (its own
  block, e.g. `ur5e.*`), ROS-free, reporting every problem to the ParamReader;
- `create(host, settings)` builds the running backend with the node the host offers.
The robot table (config/robots.yaml) names the plug-in of each robot; the bring-up passes it as the
skills node's `backend` parameter. A name without a dot is `skills_node.backends.<name>`; a dotted
name is any importable module (a plug-in living in another package). `register()` adds one at run
time. See docs/adding_a_robot.md.
"""
from __future__ import annotations

import importlib
import logging
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from monologue_common.core.settings import ParamReader

from ..core.backend import SkillBackend

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


PACKAGE = __name__
# Set for every node but not the skills node's: rclpy's own, and the graph's shared LLM block (config/llm).
IGNORED = ("use_sim_time", "start_type_description_service", "llm")
_REGISTERED: dict[str, BackendPlugin[Any]] = {}


def register(plugin: BackendPlugin[Any]) -> None:
    """Make `plugin` available under its name in this process (modules in this package and dotted
    module paths need no registration)."""
    _REGISTERED[plugin.name] = plugin


def available() -> list[str]:
    """Names of the registered plug-ins and of the modules of this package."""
    import skills_node.backends as pkg

    found = {m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_")}
    return sorted(found | set(_REGISTERED))


def load_plugin(name: str) -> BackendPlugin[Any]:
    """The plug-in called `name`; ValueError naming the available ones if there is none."""
    if name in _REGISTERED:
        return _REGISTERED[name]
    module = name if "." in name else f"{PACKAGE}.{name}"
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name is not None and module.startswith(e.name):
            raise ValueError(f"no skills backend {name!r} (module {module} not found); available: "
                             f"{available()}") from e
        raise
    plugin = getattr(mod, "PLUGIN", None)
    if not isinstance(plugin, BackendPlugin):
        raise ValueError(f"module {module} defines no PLUGIN = BackendPlugin(...)")
    return plugin


@dataclass(frozen=True)
class SkillsSettings:
    """The skills node's settings: its own and its backend's (validated once, here)."""

    backend: str  # plug-in name (the robot table's skills_backend)
    frame_id: str
    ground_truth_rate: float  # Hz, sim/ground_truth of simulated worlds (also sent on every change)
    plugin: BackendPlugin[Any]
    backend_settings: object  # the plug-in's settings dataclass


def settings_from_parameters(params: Mapping[str, object]) -> tuple[SkillsSettings, list[str]]:
    """Settings from the node's parameters and the names of those nobody read (typos, another robot's
    block). Raises ValueError listing every problem."""
    r = ParamReader(params, "skills")
    name = r.string("backend", nonempty=True)
    frame_id = r.string("frame_id", nonempty=True)
    rate = r.number("ground_truth_rate", low=0.0, high=1000.0, low_open=True)
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
    return SkillsSettings(name, frame_id, rate, plugin, backend_settings), r.unused(IGNORED)
