"""DescribeScene(refresh) on the oracle source answers only from ground truth *sent* after the request.

The success detector asks right after a skill's result; under load a ground-truth message sent while the
skill still ran can be taken by perception after the request. Judged by arrival, that pre-skill state
was taken for the post-skill one (a recorded kitchen run said "still in the hand" after a put-down)."""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture()
def perception() -> Iterator[Any]:
    import rclpy

    from perception_node.node import PerceptionNode

    rclpy.init(args=["--ros-args", "--params-file", str(REPO / "config" / "monologue.yaml"),
                     "-p", "source:=oracle", "-p", "refresh_timeout:=0.6"])
    try:
        node = PerceptionNode()
        try:
            yield node
        finally:
            node.destroy_node()
    finally:
        rclpy.try_shutdown()


def _truth(name: str) -> Any:
    from monologue_interfaces.msg import SceneDescription, SceneObject

    msg = SceneDescription(source="ground_truth")
    msg.objects = [SceneObject(name=name, visible=True, confidence=1.0)]
    return msg


def _describe_while(node: Any, deliveries: list[tuple[float, str, float]]) -> Any:
    """Ask for a refreshed scene; meanwhile take each (delay s, object name, sent s relative to the request)
    message as the subscription would."""
    from monologue_interfaces.srv import DescribeScene

    asked = time.time()

    def deliver() -> None:
        for delay, name, sent in deliveries:
            time.sleep(delay)
            node._on_ground_truth(_truth(name), {"source_timestamp": int((asked + sent) * 1e9)})

    t = threading.Thread(target=deliver)
    t.start()
    res = node._describe(DescribeScene.Request(refresh=True), DescribeScene.Response())
    t.join()
    return res


def test_a_message_sent_before_the_request_but_taken_after_it_is_not_fresh(perception: Any) -> None:
    res = _describe_while(perception, [(0.05, "before_the_skill_ended", -0.1), (0.1, "after_the_request", 0.12)])
    assert res.success, res.message
    assert [o.name for o in res.scene.objects] == ["after_the_request"]


def test_no_message_sent_after_the_request_is_a_clear_failure(perception: Any) -> None:
    res = _describe_while(perception, [(0.05, "before_the_skill_ended", -0.1)])
    assert not res.success
    assert "no new input within 0.6 s" in res.message
