"""A BackendHost without ROS, and a robot's skills node parameters as the graph passes them (no rclpy)."""
from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

B = TypeVar("B")


class FakeHost:
    """What the skills node offers a backend, for tests: loggers, a count of ground-truth publications and
    an optional stand-in node (a simulated world needs none)."""

    def __init__(self, node: Any = None, frame_id: str = "base_link") -> None:
        self._node = node
        self._frame_id = frame_id
        self.changed = 0  # publish_ground_truth() calls

    @property
    def node(self) -> Any:
        if self._node is None:
            raise AssertionError("this backend was given no node")
        return self._node

    @property
    def frame_id(self) -> str:
        return self._frame_id

    def logger(self, name: str) -> logging.Logger:
        return logging.getLogger(name)

    def publish_ground_truth(self) -> None:
        self.changed += 1


def skills_params(config: Path, robot: str) -> dict[str, object]:
    """The skills node's parameters for `robot`: config/monologue.yaml, then robots/<robot>.yaml, and the
    robot table's backend."""
    from monologue_common.core.settings import parameters_from_files
    from monologue_domain.robots import load_robots

    params = parameters_from_files([config / "monologue.yaml", config / "robots" / f"{robot}.yaml"], "skills")
    params["backend"] = load_robots(config)[robot].skills_backend
    return params


def create_backend(params: Mapping[str, object], kind: type[B], host: FakeHost | None = None) -> tuple[B, FakeHost]:
    """The backend (of type `kind`) the skills node builds from `params`, every parameter read, with a FakeHost."""
    from skills_node.plugin import settings_from_parameters

    settings, unused = settings_from_parameters(params)
    assert unused == [], unused
    host = host or FakeHost(frame_id="map")
    backend = settings.plugin.create(host, settings.backend_settings).backend
    assert isinstance(backend, kind), backend
    return backend, host
