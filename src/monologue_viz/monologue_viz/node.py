"""monologue_viz: MarkerArrays for RViz (rclpy adapter only).

* `monologue/markers`: the running episode's last transcript lines and the skill being executed;
* `monologue/scene_markers`: the scene description's objects (cubes, cylinders, labels).
"""
from __future__ import annotations

import json
from collections.abc import Sequence

from builtin_interfaces.msg import Duration, Time
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from visualization_msgs.msg import Marker, MarkerArray

from monologue_common.params import NODE_OPTIONS, read_settings
from monologue_common.qos import LATCHED, TRANSCRIPT
from monologue_common.runtime import Component, run_node
from monologue_domain.msgs import scene_objects_from_msg
from monologue_interfaces.action import ExecuteSkill
from monologue_interfaces.msg import SceneDescription, TranscriptEvent

from .core.markers import ADD, CUBE, CYLINDER, MarkerSpec, SceneView, TranscriptView
from .core.settings import VizSettings, settings_from_parameters

_TYPES = {"text": Marker.TEXT_VIEW_FACING, CUBE: Marker.CUBE, CYLINDER: Marker.CYLINDER}
_KINDS = {getattr(TranscriptEvent, n): n[len("KIND_"):] for n in dir(TranscriptEvent) if n.startswith("KIND_")}


class VizNode(Node):
    def __init__(self) -> None:
        super().__init__("viz", **NODE_OPTIONS)
        self.settings: VizSettings = read_settings(self, settings_from_parameters)
        cfg = self.settings.view
        self.view = TranscriptView(cfg)
        self.scene = SceneView(cfg.lifetime_s)
        group = MutuallyExclusiveCallbackGroup()
        self._pub = self.create_publisher(MarkerArray, "monologue/markers", LATCHED)
        self._scene_pub = self.create_publisher(MarkerArray, "monologue/scene_markers", LATCHED)
        self.create_subscription(TranscriptEvent, "monologue/transcript", self._on_event, TRANSCRIPT,
                                 callback_group=group)
        self.create_subscription(SceneDescription, "scene/description", self._on_scene, LATCHED,
                                 callback_group=group)
        self.create_subscription(ExecuteSkill.Impl.FeedbackMessage, "execute_skill/_action/feedback",
                                 self._on_feedback, 10, callback_group=group)

    def _on_event(self, msg: TranscriptEvent) -> None:
        try:
            data = json.loads(msg.data_json or "{}")
        except json.JSONDecodeError:
            data = {}
        self.view.on_event(msg.episode_id, int(msg.index), _KINDS.get(msg.kind, str(msg.kind)), msg.text,
                           data if isinstance(data, dict) else {})
        self._pub.publish(self._array(self.view.markers()))

    def _on_feedback(self, msg: ExecuteSkill.Impl.FeedbackMessage) -> None:
        self.view.on_skill_state(str(msg.feedback.state_text))
        self._pub.publish(self._array(self.view.markers()))

    def _on_scene(self, msg: SceneDescription) -> None:
        items = scene_objects_from_msg(msg.objects)
        frame = msg.header.frame_id or self.view.cfg.frame_id
        self._scene_pub.publish(self._array(self.scene.markers(frame, items)))

    def _array(self, specs: Sequence[MarkerSpec]) -> MarkerArray:
        stamp = self.get_clock().now().to_msg()
        return MarkerArray(markers=[to_marker(s, stamp) for s in specs])


def to_marker(s: MarkerSpec, stamp: Time) -> Marker:
    m = Marker()
    m.header.frame_id = s.frame_id
    m.header.stamp = stamp
    m.ns, m.id = s.ns, s.id
    m.action = Marker.ADD if s.action == ADD else Marker.DELETE
    m.type = _TYPES[s.type]
    m.pose.position.x, m.pose.position.y, m.pose.position.z = (float(v) for v in s.position)
    m.pose.orientation.w = 1.0
    m.scale.x, m.scale.y, m.scale.z = (float(v) for v in s.scale)
    m.color.r, m.color.g, m.color.b, m.color.a = (float(v) for v in s.color)
    m.text = s.text
    sec = int(s.lifetime_s)
    m.lifetime = Duration(sec=sec, nanosec=int((s.lifetime_s - sec) * 1e9))
    m.frame_locked = False
    return m


# The node in an in-process graph (monologue-up container:=true), with the threads main() spins it on.
COMPONENT = Component(VizNode, threads=2)


def main(args: list[str] | None = None) -> None:
    run_node(VizNode, threads=2, args=args)
