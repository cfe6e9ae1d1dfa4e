"""The in-process graph with stand-in components (small nodes written here): parameters reach each node,
a node failing at start-up fails the container naming it, a callback error shows as a dead node,
stopping is ordered (recorders last) and bounded."""
from __future__ import annotations

import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from monologue_bringup.container import Container, ContainerError
from monologue_bringup.container_plan import ContainerPlan, PlannedNode

CONFIG = Path(__file__).resolve().parents[3] / "config"

FAKES = '''
from rclpy.node import Node

from monologue_common.params import NODE_OPTIONS
from monologue_common.runtime import Component

EVENTS: list[str] = []


class Named(Node):
    def __init__(self, name: str) -> None:
        super().__init__(name, **NODE_OPTIONS)

    def destroy_node(self) -> None:
        EVENTS.append(f"destroy {self.get_name()}")
        super().destroy_node()


def first() -> Node:
    return Named("first")


def broken() -> Node:
    raise RuntimeError("no camera")


def crashing() -> Node:
    node = Named("first")

    def fail() -> None:
        raise ValueError("bad message")

    node.create_timer(0.01, fail)
    return node


def acting() -> Node:
    from rclpy.action import ActionClient, ActionServer

    from monologue_interfaces.action import ExecuteSkill

    node = Named("acting")
    node.server = ActionServer(node, ExecuteSkill, "fake_skill",  # type: ignore[attr-defined]
                               execute_callback=lambda _goal: ExecuteSkill.Result())
    node.client = ActionClient(node, ExecuteSkill, "fake_skill")  # type: ignore[attr-defined]
    return node


OK = Component(first, threads=2)
ACTING = Component(acting, threads=2)
LAST = Component(lambda: Named("last"), threads=2, before_stop=lambda n: EVENTS.append(f"drain {n.get_name()}"))
BROKEN = Component(broken)
CRASHING = Component(crashing)
MISNAMED = Component(lambda: Named("other"))
NOT_A_COMPONENT = 3
'''


@pytest.fixture()
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = f"container_fakes_{id(tmp_path)}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(FAKES))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def container(monkeypatch: pytest.MonkeyPatch, *nodes: PlannedNode) -> Container:
    c = Container(config_dir=CONFIG, nodes=["viz"], sink=lambda _line: None)
    plan = ContainerPlan(tuple(nodes), "warn")
    monkeypatch.setattr(c, "plan", lambda: plan)
    return c


def test_nodes_get_their_arguments_and_stop_in_order(fakes: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from rclpy.utilities import ok

    args = ("--ros-args", "-r", "__node:=renamed", "-p", "llm.cassette_mode:=replay", "-p", "rate:=25.0",
            "-p", 'custom:=["a=b"]')
    c = container(monkeypatch, PlannedNode("last", f"{fakes}:LAST", last=True),
                  PlannedNode("renamed", f"{fakes}:OK", args))
    with c:
        node = c.hosted[1].node
        assert node.get_parameter("llm.cassette_mode").value == "replay"
        assert node.get_parameter("rate").value == 25.0
        assert list(node.get_parameter("custom").value) == ["a=b"]
        assert not c.hosted[0].node.has_parameter("rate")  # another node's overrides stay its own
        assert c.dead() == {}
    assert c.stop() == {"last": 0, "renamed": 0}  # stopping twice returns the same codes
    assert not ok()
    events = sys.modules[fakes].EVENTS
    assert events == ["destroy renamed", "drain last", "destroy last"]


def test_a_node_failing_at_start_up_fails_the_container_naming_it(fakes: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from rclpy.utilities import ok

    c = container(monkeypatch, PlannedNode("first", f"{fakes}:OK"), PlannedNode("viz", f"{fakes}:BROKEN"))
    with pytest.raises(ContainerError, match="node 'viz' failed to start: RuntimeError: no camera"):
        c.start()
    assert not ok() and c.stop() == {"first": 0}  # the nodes already started were stopped
    for attr, match in (("NOT_A_COMPONENT", "has no NOT_A_COMPONENT"), ("MISNAMED", "created a node named 'other'")):
        with pytest.raises(ContainerError, match=match):
            container(monkeypatch, PlannedNode("first", f"{fakes}:{attr}")).start()
        assert not ok()
    with pytest.raises(ContainerError, match="node 'first': cannot import no_such_module"):
        container(monkeypatch, PlannedNode("first", "no_such_module:COMPONENT")).start()


def test_a_callback_error_ends_that_node_as_its_process_would(fakes: str, monkeypatch: pytest.MonkeyPatch) -> None:
    c = container(monkeypatch, PlannedNode("first", f"{fakes}:CRASHING"))
    with c:
        deadline = time.monotonic() + 10.0
        while not c.dead() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert c.dead() == {"first": 1}
    assert c.stop() == {"first": 1}


def test_a_stopped_graph_leaves_no_node_discoverable_in_a_process_that_goes_on(
        fakes: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A node with an action server and client (as the planner and the bag player have) is gone from the
    graph once the container stopped, though this process goes on: so `replay()` can run in-process."""
    import rclpy
    from rclpy.context import Context

    probe_context = Context()  # not the default context, which the container wants for itself
    probe_context.init(args=[])
    probe = rclpy.create_node("container_probe", context=probe_context)

    def seen_within(timeout_s: float, present: bool) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if ("acting" in probe.get_node_names()) == present:
                return True
            time.sleep(0.05)
        return False

    try:
        with container(monkeypatch, PlannedNode("acting", f"{fakes}:ACTING")):
            assert seen_within(30.0, present=True)  # discovery works: the probe sees the running node
        assert seen_within(30.0, present=False)
    finally:
        probe.destroy_node()
        probe_context.try_shutdown()


def test_an_initialised_rclpy_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import rclpy

    rclpy.init(args=[])
    try:
        with pytest.raises(ContainerError, match="already initialised"):
            container(monkeypatch).start()
    finally:
        rclpy.shutdown()
