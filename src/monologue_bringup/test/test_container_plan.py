"""The in-process graph's plan (ROS-free): which component each node is, and the parameters each node
gets, which must be the arguments its own process gets (graph.ros_args)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from monologue_bringup.container_plan import COMPONENT_ATTR, PlannedNode, component_ref, plan_container
from monologue_bringup.graph import REPLAY, all_nodes, find, graph_for, robots, ros_args

REPO = Path(__file__).resolve().parents[3]
CONFIG = REPO / "config"
SRC = REPO / "src"


def setup_py_scripts(package: str) -> dict[str, str]:
    """The console scripts of src/<package>/setup.py (what an install declares), without installing."""
    text = (SRC / package / "setup.py").read_text()
    return dict(re.findall(r"'([\w-]+)\s*=\s*([\w.]+:\w+)'", text))


def test_each_node_is_the_component_of_the_module_its_executable_runs() -> None:
    plan = plan_container(graph_for("sim", REPLAY, record=True), CONFIG, "sim", "embedded", scripts=setup_py_scripts)
    assert [(p.name, p.component, p.last) for p in plan.nodes] == [
        ("recorder", "monologue_bag.recorder:COMPONENT", True),
        ("perception", "perception_node.node:COMPONENT", False),
        ("success_detector", "success_detector_node.node:COMPONENT", False),
        ("planner", "planner_node.node:COMPONENT", False),
        ("viz", "monologue_viz.node:COMPONENT", False),
        ("bag_player", "monologue_bag.player:COMPONENT", False),
    ]
    assert (plan.nodes[3].module, plan.nodes[3].attribute) == ("planner_node.node", COMPONENT_ATTR)


def test_every_node_a_graph_can_start_has_a_component() -> None:
    """Every module a console script of the graph runs declares COMPONENT (read as text: the bring-up
    never imports node packages)."""
    specs = {(s.package, s.executable): s for r in robots(CONFIG) for s in all_nodes(r, CONFIG)}
    for (package, _executable), spec in sorted(specs.items()):
        module = component_ref(spec, setup_py_scripts).split(":")[0]
        source = SRC / package / (module.replace(".", "/") + ".py")
        assert re.search(rf"^{COMPONENT_ATTR} = Component\(", source.read_text(), re.M), f"{spec.name}: {source}"


def test_every_node_gets_the_arguments_of_its_process() -> None:
    extra = {"planner": {"llm.cassette_mode": "replay", "transcript_dir": "/t"},
             "bag_player": {"bag": "/b", "rate": "25.0"}, "perception": {"source": "camera"}}
    specs = graph_for("sim", REPLAY)
    plan = plan_container(specs, CONFIG, "sim", "embedded", extra, "warn", scripts=setup_py_scripts)
    for spec, planned in zip(specs, plan.nodes, strict=True):
        assert list(planned.ros_args) == ros_args(spec, CONFIG, "sim", "embedded", extra.get(spec.name), "warn")
    assert "-p" in plan.nodes[2].ros_args and "llm.cassette_mode:=replay" in plan.nodes[2].ros_args
    assert plan.init_args() == ["--ros-args", "--log-level", "warn"]  # per process: only the log level


def test_unknown_executables_and_duplicate_names_are_refused() -> None:
    spec = find("planner", CONFIG)
    with pytest.raises(ValueError, match="node 'planner': package 'planner_node' has no executable"):
        component_ref(spec, lambda _p: {"other": "x.y:main"})
    with pytest.raises(ValueError, match="unique"):
        plan_container([spec, spec], CONFIG, "sim", "embedded", scripts=setup_py_scripts)
    assert PlannedNode("a", "m.n:C").module == "m.n"
