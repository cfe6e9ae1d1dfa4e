"""The viz node publishes valid RViz markers for transcript events and scene descriptions (RViz itself
cannot run here, so the MarkerArrays are checked: frames, unique ids per namespace, actions, lifetimes)."""
from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.system]


def _valid(arr: Any) -> None:
    from visualization_msgs.msg import Marker

    assert arr.markers, "empty MarkerArray"
    assert not [k for k, n in Counter((m.ns, m.id) for m in arr.markers).items() if n > 1]
    for m in arr.markers:
        assert m.header.frame_id == "base_link"
        assert m.action in (Marker.ADD, Marker.DELETE)
        assert m.lifetime.sec >= 0
        if m.action == Marker.ADD:
            assert m.scale.z > 0 and 0 < m.color.a <= 1 and m.pose.orientation.w == 1.0
            assert m.type != Marker.TEXT_VIEW_FACING or m.text


def test_viz_publishes_transcript_and_scene_markers(ros_domain: int) -> None:
    import rclpy
    from geometry_msgs.msg import Vector3
    from rclpy.executors import SingleThreadedExecutor
    from visualization_msgs.msg import Marker, MarkerArray

    from monologue_bringup.up import Supervisor
    from monologue_common.qos import LATCHED, TRANSCRIPT
    from monologue_interfaces.msg import SceneDescription, SceneObject, TranscriptEvent

    lines: list[str] = []
    sup = Supervisor(config_dir=REPO / "config", nodes=["viz"], sink=lines.append)
    sup.start()
    rclpy.init()
    node = rclpy.create_node("viz_probe")
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    got: dict[str, list[Any]] = {"t": [], "s": []}
    node.create_subscription(MarkerArray, "monologue/markers", got["t"].append, LATCHED)
    node.create_subscription(MarkerArray, "monologue/scene_markers", got["s"].append, LATCHED)
    events = node.create_publisher(TranscriptEvent, "monologue/transcript", TRANSCRIPT)
    scene_pub = node.create_publisher(SceneDescription, "scene/description", LATCHED)

    def spin_until(cond: Any, timeout: float = 30.0) -> bool:
        end = time.monotonic() + timeout
        while not cond() and time.monotonic() < end:
            ex.spin_once(timeout_sec=0.1)
        return bool(cond())

    try:
        assert spin_until(lambda: events.get_subscription_count() > 0 and scene_pub.get_subscription_count() > 0,
                          60.0), "\n".join(lines)
        texts = [(3, "Scene: There is a red block and a blue bowl.", {}),
                 (0, "Human: Put the red block in the blue bowl.", {}),
                 (1, "Robot action: Pick the red block and place it in the blue bowl.",
                  {"skill": "pick_place", "args": ["red block", "blue bowl"]})]
        for i, (kind, text, data) in enumerate(texts):
            events.publish(TranscriptEvent(episode_id="e", index=i, kind=kind, text=text, data_json=json.dumps(data)))
        scene = SceneDescription(source="oracle")
        scene.header.frame_id = "base_link"
        scene.objects = [SceneObject(name="red block", category="block", size=Vector3(x=0.04, y=0.04, z=0.04)),
                         SceneObject(name="blue bowl", category="bowl", size=Vector3(x=0.12, y=0.12, z=0.06))]
        scene_pub.publish(scene)
        assert spin_until(lambda: any(len([m for m in a.markers if m.ns == "transcript"]) == 3 for a in got["t"])
                          and got["s"]), "\n".join(lines)
        last = got["t"][-1]
        _valid(last)
        assert [m.text for m in last.markers if m.ns == "transcript"] == [t for _k, t, _d in texts]
        assert [m.text for m in last.markers if m.ns == "current_skill"] == [
            "executing pick_place(red block, blue bowl): started"]
        _valid(got["s"][-1])
        assert {(m.ns, m.type) for m in got["s"][-1].markers} == {
            ("scene_objects", Marker.CUBE), ("scene_objects", Marker.CYLINDER), ("scene_labels", Marker.TEXT_VIEW_FACING)}
        events.publish(TranscriptEvent(episode_id="e", index=3, kind=5, text="Success: True",
                                       data_json='{"success": true}'))
        assert spin_until(lambda: any(m.ns == "current_skill" and m.action == Marker.DELETE
                                      for m in got["t"][-1].markers))
    finally:
        node.destroy_node()
        rclpy.shutdown()
        codes = sup.stop()
    assert codes["viz"] in (0, -2, 130), "\n".join(lines)
