"""The real graph: four processes over DDS with the embedded LLM (Gemma 3 270M via llama.cpp)."""
from __future__ import annotations

import json
import time
from typing import Any

import pytest
import rclpy
from rclpy.action import get_action_client_names_and_types_by_node, get_action_server_names_and_types_by_node

from monologue_bringup.graph import LIVE, select
from monologue_domain.tasks import matching_bowls_done
from monologue_eval.demo import run_episode, world_states

pytestmark = [pytest.mark.system, pytest.mark.slow]

EXPECTED = {
    "skills": {"actions": {"/execute_skill"}, "services": {"/get_affordances"}},
    "perception": {"actions": set(), "services": {"/describe_scene"}},
    "success_detector": {"actions": set(), "services": {"/detect_success"}},
    "planner": {"actions": {"/execute_instruction"}, "services": set()},
}


def _wait_graph(node: rclpy.node.Node, timeout_s: float) -> dict[str, dict[str, set[str]]]:
    deadline = time.monotonic() + timeout_s
    seen: dict[str, dict[str, set[str]]] = {}
    while time.monotonic() < deadline:
        names = {n for n, _ns in node.get_node_names_and_namespaces()}
        seen = {}
        for name in EXPECTED:
            if name not in names:
                continue
            seen[name] = {
                "actions": {a for a, _t in get_action_server_names_and_types_by_node(node, name, "/")},
                "services": {s for s, _t in node.get_service_names_and_types_by_node(name, "/")},
                "action_clients": {a for a, _t in get_action_client_names_and_types_by_node(node, name, "/")},
                "topics": {t for t, _t in node.get_publisher_names_and_types_by_node(name, "/")},
            }
        # discovery of a node's entities arrives piecemeal: wait for everything asserted below
        if all(n in seen and EXPECTED[n]["actions"] <= seen[n]["actions"]
               and EXPECTED[n]["services"] <= seen[n]["services"] for n in EXPECTED) \
                and "/execute_skill" in seen["planner"]["action_clients"] \
                and {"/monologue/transcript", "/monologue/step_scores"} <= seen["planner"]["topics"] \
                and "/scene/description" in seen["perception"]["topics"] \
                and "/sim/ground_truth" in seen["skills"]["topics"]:
            return seen
        time.sleep(0.5)
    return seen


def test_graph_has_expected_nodes_actions_services(sim_graph) -> None:  # type: ignore[no-untyped-def]
    sup, log, _ = sim_graph
    rclpy.init()
    node = rclpy.create_node("graph_probe")
    try:
        seen = _wait_graph(node, 120.0)
    finally:
        node.destroy_node()
        rclpy.shutdown()
    for name, want in EXPECTED.items():
        assert name in seen, f"node {name} not in the graph\n{log.text()[-3000:]}"
        assert want["actions"] <= seen[name]["actions"], (name, seen[name])
        assert want["services"] <= seen[name]["services"], (name, seen[name])
    assert "/execute_skill" in seen["planner"]["action_clients"]
    assert {"/monologue/transcript", "/monologue/step_scores"} <= seen["planner"]["topics"]
    assert "/scene/description" in seen["perception"]["topics"]
    assert "/sim/ground_truth" in seen["skills"]["topics"]
    # one OS process per node of the live graph
    assert len({p.pid for p in sup.procs.values()}) == len(select(LIVE)) and not sup.dead()


def test_matching_bowls_episode_with_embedded_llm(sim_graph) -> None:  # type: ignore[no-untyped-def]
    sup, log, transcripts = sim_graph
    events = []
    result, objects = run_episode("Put the blocks in their matching bowls.", timeout_s=600.0,
                                  print_event=events.append,
                                  goal_options={"objects": ["brown block", " cyan block", "brown block", ""]})
    text = "\n".join(e.text for e in result.transcript)
    assert result.success, f"{result.reason}\n{text}\n{log.text()[-4000:]}"
    assert matching_bowls_done(world_states(objects)), text
    lines = [e.text for e in result.transcript]
    assert lines[0].startswith("Scene: There is a ")
    assert lines[1] == "Human: Put the blocks in their matching bowls."
    assert "Success: True" in lines
    assert "Robot thought: None." in lines
    actions = [e for e in result.transcript if e.text.startswith("Robot action: ")]
    assert len(actions) == result.steps_taken >= 2
    # every event reached the client as live feedback, in order
    assert [e.index for e in events] == list(range(len(result.transcript)))
    # the transcript was persisted as JSONL with an end record
    records = [json.loads(line) for line in open(result.transcript_path, encoding="utf-8")]
    assert records[0]["record"] == "header" and records[-1]["record"] == "end"
    # the goal's object names went to perception (latched), once each, and into the header
    assert records[0]["objects"] == ["brown block", "cyan block"]
    queries = _latched_queries()
    assert list(queries.names) == ["brown block", "cyan block"]
    assert queries.episode_id == records[0]["episode_id"]
    assert [r["text"] for r in records if r["record"] == "event"] == lines
    assert not sup.dead()


def _latched_queries() -> Any:
    from rclpy.executors import SingleThreadedExecutor

    from monologue_common.qos import LATCHED
    from monologue_interfaces.msg import DetectionQueries

    rclpy.init()
    node = rclpy.create_node("queries_probe")
    got: list[Any] = []
    node.create_subscription(DetectionQueries, "perception/queries", got.append, LATCHED)
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    try:
        deadline = time.monotonic() + 20
        while not got and time.monotonic() < deadline:
            ex.spin_once(timeout_sec=0.1)
    finally:
        node.destroy_node()
        rclpy.shutdown()
    assert got, "nothing on perception/queries"
    return got[-1]


def test_post_task_question_answered_without_moving(sim_graph) -> None:  # type: ignore[no-untyped-def]
    """IM Fig. 5d: after the episode, a question on human/input is answered on the transcript topic."""
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    from monologue_interfaces.msg import HumanInput, SceneDescription, TranscriptEvent

    sup, log, _ = sim_graph
    rclpy.init()
    node = rclpy.create_node("question_probe")
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    latched = QoSProfile(depth=1000, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                         reliability=ReliabilityPolicy.RELIABLE)
    events: list[TranscriptEvent] = []
    truth: list[SceneDescription] = []
    node.create_subscription(TranscriptEvent, "monologue/transcript", events.append, latched)
    node.create_subscription(SceneDescription, "sim/ground_truth", truth.append,
                             QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                                        reliability=ReliabilityPolicy.RELIABLE))
    pub = node.create_publisher(HumanInput, "human/input", 10)
    try:
        deadline = time.monotonic() + 30
        while (not truth or pub.get_subscription_count() == 0) and time.monotonic() < deadline:
            ex.spin_once(timeout_sec=0.1)
        before = [(o.name, o.pose.pose.position.x, o.pose.pose.position.y) for o in truth[-1].objects]
        question = "Which blocks are in bowls?"
        pub.publish(HumanInput(kind=HumanInput.KIND_QUESTION, text=question))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            ex.spin_once(timeout_sec=0.1)
            post = [e for e in events if json.loads(e.data_json).get("post_task")]
            if len(post) >= 2:
                break
        post = [e for e in events if json.loads(e.data_json).get("post_task")]
        assert [e.kind for e in post[:2]] == [TranscriptEvent.KIND_HUMAN_INTERJECTION,
                                              TranscriptEvent.KIND_ROBOT_THOUGHT], log.text()[-3000:]
        assert post[0].text == f"Human: {question}" and post[1].text.startswith("Robot thought: ")
        truth.clear()
        deadline = time.monotonic() + 5
        while not truth and time.monotonic() < deadline:
            ex.spin_once(timeout_sec=0.1)
        after = [(o.name, o.pose.pose.position.x, o.pose.pose.position.y) for o in truth[-1].objects]
        assert after == before  # answering moved nothing
    finally:
        node.destroy_node()
        rclpy.shutdown()
