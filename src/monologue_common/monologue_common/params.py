"""rclpy side of the parameter style (see monologue_common.core.settings): nodes are created with
their parameters declared from the YAML overrides, and read them as one flat mapping."""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from rclpy.node import Node
from rclpy.parameter import Parameter

# Pass to Node.__init__: every parameter in the parameter files (and -p overrides) is declared with
# its value and type; nothing is declared with a default in code.
NODE_OPTIONS: dict[str, Any] = {
    "allow_undeclared_parameters": True,
    "automatically_declare_parameters_from_overrides": True,
}
_ARGUMENTS_LOCK = threading.Lock()


class _Settings(Protocol):
    @property
    def unused(self) -> Sequence[str]: ...


S = TypeVar("S", bound=_Settings)


@contextmanager
def node_arguments(cli_args: Sequence[str]) -> Iterator[None]:
    """Nodes created with **NODE_OPTIONS inside this block also get `cli_args` (`--ros-args ...`: name
    remap, parameter files, -p overrides), as a ROS 2 component container passes each component the
    arguments of its NodeOptions: an in-process graph (monologue_bringup.container) gives every node
    the arguments its own process would get. One block at a time."""
    with _ARGUMENTS_LOCK:
        NODE_OPTIONS["cli_args"] = list(cli_args)
        try:
            yield
        finally:
            del NODE_OPTIONS["cli_args"]


def parameter_values(node: Node) -> dict[str, object]:
    """{dotted name: value} of every parameter the node has (use_sim_time included)."""
    # rclpy annotates the values as plain values, but they are Parameter objects
    params: dict[str, Parameter] = node.get_parameters_by_prefix("")  # type: ignore[assignment]
    return {name: p.value for name, p in params.items()}


def warn_unused(node: Node, unused: list[str]) -> None:
    if unused:
        node.get_logger().warning(f"parameters set but not used (typo, or another robot's block?): {unused}")


def read_settings(node: Node, parse: Callable[[Mapping[str, object]], S]) -> S:
    """The node's parameters checked by `parse` (its settings_from_parameters, ValueError listing every
    problem); parameters it did not read are logged as a warning."""
    settings = parse(parameter_values(node))
    warn_unused(node, list(settings.unused))
    return settings
