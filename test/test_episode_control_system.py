"""Cancelling ExecuteInstruction through the real graph cancels the running skill and saves the episode."""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import rclpy
from action_msgs.msg import GoalStatus
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from monologue_common.actions import ActionClient
from monologue_interfaces.action import ExecuteInstruction
from monologue_interfaces.msg import SceneDescription, TranscriptEvent

pytestmark = [pytest.mark.system, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def slow_graph(ros_domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, object]]:
    """Skills that take 1 s per motion phase, so a cancel lands mid-skill. The expert stand-in plans (these
    tests need a planner that acts, not the model's choices; the embedded model takes interjections in
    test_human_scenarios_system.py's "please stop"), so no model is loaded and each step is planned at once."""
    from monologue_bringup.up import Supervisor

    from .conftest import GraphLog

    log = GraphLog()
    sup = Supervisor("sim_kinematic", "expert", config_dir=REPO / "config", sink=log, node_params={
        "skills": {"sim.seed": "5", "sim.num_blocks": "2", "sim.phase_duration": "1.0"},
        "planner": {"transcript_dir": str(tmp_path_factory.mktemp("transcripts"))},
    })
    sup.start()
    try:
        yield sup, log
    finally:
        sup.stop()


def _positions(msg: SceneDescription) -> dict[str, tuple[float, float, float]]:
    return {o.name: (o.pose.pose.position.x, o.pose.pose.position.y, o.pose.pose.position.z)
            for o in msg.objects if o.category == "block"}


def test_cancel_mid_skill(slow_graph) -> None:  # type: ignore[no-untyped-def]
    sup, log = slow_graph
    rclpy.init()
    node = rclpy.create_node("cancel_probe")
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    truth: list[SceneDescription] = []
    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                         reliability=ReliabilityPolicy.RELIABLE)
    node.create_subscription(SceneDescription, "sim/ground_truth", truth.append, latched)
    client = ActionClient(node, ExecuteInstruction, "execute_instruction")
    events: list[TranscriptEvent] = []
    try:
        assert client.wait_for_server(timeout_sec=120.0), log.text()[-3000:]
        deadline = time.monotonic() + 30
        while not truth and time.monotonic() < deadline:
            ex.spin_once(timeout_sec=0.1)
        before = _positions(truth[-1])
        send = client.send_goal_async(ExecuteInstruction.Goal(instruction="Put the blocks in their matching bowls."),
                                      feedback_callback=lambda fb: events.append(fb.feedback.event))
        ex.spin_until_future_complete(send, timeout_sec=30.0)
        handle = send.result()
        assert handle is not None and handle.accepted
        deadline = time.monotonic() + 300
        while not any(e.kind == TranscriptEvent.KIND_ROBOT_ACTION for e in events):
            assert time.monotonic() < deadline, "no action within 300 s"
            ex.spin_once(timeout_sec=0.1)
        time.sleep(0.5)  # the skill is now moving to the pick pose
        cancel = handle.cancel_goal_async()
        ex.spin_until_future_complete(cancel, timeout_sec=10.0)
        result_future = handle.get_result_async()
        ex.spin_until_future_complete(result_future, timeout_sec=30.0)
        wrapped = result_future.result()
        assert wrapped is not None, "no result after cancel"
        assert wrapped.status == GoalStatus.STATUS_CANCELED
        result = wrapped.result
        assert result.error_code == ExecuteInstruction.Result.CANCELED
        assert result.steps_taken == 1
        assert result.transcript[-1].kind == TranscriptEvent.KIND_EPISODE_END
        assert not any(e.kind == TranscriptEvent.KIND_SUCCESS for e in result.transcript)
        # the skill was cancelled before it placed anything: the world is unchanged
        truth.clear()
        deadline = time.monotonic() + 5
        while not truth and time.monotonic() < deadline:
            ex.spin_once(timeout_sec=0.1)
        assert _positions(truth[-1]) == before
        records = [json.loads(line) for line in open(result.transcript_path, encoding="utf-8")]
        assert records[-1]["record"] == "end" and records[-1]["error"] == "CANCELED"
        assert "cancelled; nothing was moved" in log.text() or "CANCELED" in log.text()
    finally:
        node.destroy_node()
        rclpy.shutdown()
    assert not sup.dead()


def test_interjection_mid_episode_reaches_transcript(slow_graph) -> None:  # type: ignore[no-untyped-def]
    """A HumanInput published during a skill appears as `Human: ...` before the next action (UTF-8)."""
    from monologue_interfaces.msg import HumanInput

    sup, log = slow_graph
    text = "请把蓝色的积木放进碗里"
    rclpy.init()
    node = rclpy.create_node("interjection_probe")
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    pub = node.create_publisher(HumanInput, "human/input", 10)
    client = ActionClient(node, ExecuteInstruction, "execute_instruction")
    events: list[TranscriptEvent] = []
    sent = False
    try:
        assert client.wait_for_server(timeout_sec=120.0)
        send = client.send_goal_async(ExecuteInstruction.Goal(instruction="Put the blocks in their matching bowls.",
                                                              max_steps=3),
                                      feedback_callback=lambda fb: events.append(fb.feedback.event))
        ex.spin_until_future_complete(send, timeout_sec=30.0)
        handle = send.result()
        assert handle is not None and handle.accepted
        result_future = handle.get_result_async()
        deadline = time.monotonic() + 600
        while not result_future.done():
            assert time.monotonic() < deadline, "episode did not finish"
            if not sent and any(e.kind == TranscriptEvent.KIND_ROBOT_ACTION for e in events):
                pub.publish(HumanInput(kind=HumanInput.KIND_INTERJECTION, text=text))
                sent = True
            ex.spin_once(timeout_sec=0.1)
        result = result_future.result().result
        kinds = [e.kind for e in result.transcript]
        texts = [e.text for e in result.transcript]
        assert sent and f"Human: {text}" in texts, "\n".join(texts)
        i = texts.index(f"Human: {text}")
        first_action = kinds.index(TranscriptEvent.KIND_ROBOT_ACTION)
        assert first_action < i and kinds[i] == TranscriptEvent.KIND_HUMAN_INTERJECTION
        # the interjection was taken at a step boundary: after the first skill's Success line
        assert kinds[i - 1] == TranscriptEvent.KIND_SUCCESS
        records = [json.loads(line) for line in open(result.transcript_path, encoding="utf-8")]
        assert any(r.get("text") == f"Human: {text}" for r in records)
    finally:
        node.destroy_node()
        rclpy.shutdown()
    assert not sup.dead()
