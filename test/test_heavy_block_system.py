"""IM Fig. 5b mechanics through the real graph: a block that is too heavy fails its pick, the failure
reaches the monologue as `Success: False`, the block never moves, and a person's hint is appended."""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from monologue_common.actions import ActionClient
from monologue_interfaces.action import ExecuteInstruction
from monologue_interfaces.msg import HumanInput, SceneDescription, TranscriptEvent

pytestmark = [pytest.mark.system, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[1]
HINT = "The purple block is too heavy to be picked up. What's your new plan?"


@pytest.fixture(scope="module")
def heavy_graph(ros_domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from monologue_bringup.up import Supervisor

    lines: list[str] = []
    sup = Supervisor("sim_kinematic", "embedded", config_dir=REPO / "config", sink=lines.append, node_params={
        "skills": {"sim.block_colors": "[purple, red]", "sim.bowl_colors": "[purple, red]",
                   "sim.heavy_blocks": "[purple]", "sim.seed": "2", "sim.phase_duration": "0.3"},
        "planner": {"transcript_dir": str(tmp_path_factory.mktemp("transcripts"))},
    })
    sup.start()
    try:
        yield sup
    finally:
        sup.stop()


def test_heavy_block_fails_and_hint_reaches_the_monologue(heavy_graph) -> None:  # type: ignore[no-untyped-def]
    rclpy.init()
    node = rclpy.create_node("heavy_probe")
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    truth: list[SceneDescription] = []
    node.create_subscription(SceneDescription, "sim/ground_truth", truth.append,
                             QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                                        reliability=ReliabilityPolicy.RELIABLE))
    pub = node.create_publisher(HumanInput, "human/input", 10)
    client = ActionClient(node, ExecuteInstruction, "execute_instruction")
    events: list[TranscriptEvent] = []
    try:
        assert client.wait_for_server(timeout_sec=120.0)
        deadline = time.monotonic() + 30
        while not truth and time.monotonic() < deadline:
            ex.spin_once(timeout_sec=0.1)
        purple = [o for o in truth[-1].objects if o.name == "purple block"][0].pose.pose.position
        start = (purple.x, purple.y, purple.z)
        send = client.send_goal_async(
            ExecuteInstruction.Goal(instruction="Put the blocks in their matching bowls.", max_steps=4),
            feedback_callback=lambda fb: events.append(fb.feedback.event))
        ex.spin_until_future_complete(send, timeout_sec=30.0)
        handle = send.result()
        assert handle is not None and handle.accepted
        result_future = handle.get_result_async()
        hinted = False
        deadline = time.monotonic() + 600
        while not result_future.done():
            assert time.monotonic() < deadline
            failed = [e for e in events if e.text == "Success: False"]
            if failed and not hinted:
                pub.publish(HumanInput(kind=HumanInput.KIND_INTERJECTION, text=HINT))
                hinted = True
            ex.spin_once(timeout_sec=0.1)
        result = result_future.result().result
        texts = [e.text for e in result.transcript]
        purple_actions = [i for i, t in enumerate(texts) if t.startswith("Robot action: Pick the purple block")]
        if not purple_actions:
            pytest.skip("the model never tried the heavy block on this scene; nothing to check")
        i = purple_actions[0]
        # the failed pick is reported to the monologue, and the skill error is logged outside the prompt
        assert "Success: False" in texts[i + 1:i + 3], texts
        assert any(e.kind == TranscriptEvent.KIND_ERROR and "EXECUTION_FAILED" in e.text
                   for e in result.transcript[i:i + 3])
        if result.steps_taken > len(purple_actions[:1]) and hinted:
            assert f"Human: {HINT}" in texts
        truth.clear()
        deadline = time.monotonic() + 5
        while not truth and time.monotonic() < deadline:
            ex.spin_once(timeout_sec=0.1)
        after = [o for o in truth[-1].objects if o.name == "purple block"][0].pose.pose.position
        assert (after.x, after.y, after.z) == start  # the heavy block never moved
    finally:
        node.destroy_node()
        rclpy.shutdown()
