"""success_detector_node: serves DetectSuccess from the perception scene (rclpy adapter only).

Strategies (parameter `strategy`): sim_geometric, tabletop (IM real-tabletop 3 cm / 10 cm rule; the
intended place point comes from the latched scene/description at the skill's start). The clip and
llm_judge strategies exist in core/detectors.py; they need images / an LLM backend not wired here.
"""
from __future__ import annotations

import threading
from collections import deque

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from monologue_common.qos import LATCHED
from monologue_common.runtime import WaitTimeout, from_time, run_node, wait_future
from monologue_interfaces.msg import SceneDescription
from monologue_interfaces.srv import DescribeScene, DetectSuccess

from .core.detectors import Context, SceneEntry, make_detector


def _entries(scene: SceneDescription) -> dict[str, SceneEntry]:
    return {
        o.name: SceneEntry(o.name, o.category,
                           (o.pose.pose.position.x, o.pose.pose.position.y, o.pose.pose.position.z), o.visible,
                           (o.place_point.x, o.place_point.y, o.place_point.z) if o.has_place_point else None)
        for o in scene.objects
    }


class SuccessDetectorNode(Node):
    def __init__(self) -> None:
        super().__init__("success_detector")
        self.declare_parameter("strategy", "sim_geometric")
        self.declare_parameter("xy_tolerance", 0.04)  # m
        self.declare_parameter("scene_timeout", 5.0)  # s
        self.declare_parameter("stack_tolerance", 0.03)  # m, tabletop: stacking onto a block
        self.declare_parameter("sort_tolerance", 0.10)  # m, tabletop: into a plate/bowl/location
        self._detector = make_detector(
            str(self.get_parameter("strategy").value),
            {"xy_tolerance_m": float(self.get_parameter("xy_tolerance").value),
             "stack_tolerance_m": float(self.get_parameter("stack_tolerance").value),
             "sort_tolerance_m": float(self.get_parameter("sort_tolerance").value)},
        )
        # Recent scene descriptions (arrival time s, message), for the scene at a skill's start.
        self._history: deque[tuple[float, SceneDescription]] = deque(maxlen=200)
        self._history_lock = threading.Lock()
        self._timeout = float(self.get_parameter("scene_timeout").value)
        if self._timeout <= 0:
            raise ValueError("scene_timeout must be > 0 s")
        group = ReentrantCallbackGroup()
        self._scene = self.create_client(DescribeScene, "describe_scene", callback_group=group)
        self._srv = self.create_service(DetectSuccess, "detect_success", self._detect, callback_group=group)
        self._scene_sub = self.create_subscription(SceneDescription, "scene/description", self._on_scene, LATCHED,
                                                   callback_group=group)
        self.get_logger().info(f"success detector: {self._detector.name}")

    def _on_scene(self, msg: SceneDescription) -> None:
        # Keyed by arrival on this node's clock, the clock the planner stamps skill_start with: a
        # replayed bag's descriptions keep their recorded stamps, which say nothing about when the
        # replayed skill started.
        with self._history_lock:
            self._history.append((from_time(self.get_clock().now().to_msg()), msg))

    def _scene_at(self, t: float) -> SceneDescription | None:
        """The newest scene description received at or before time t (s, this node's clock)."""
        with self._history_lock:
            older = [m for s, m in self._history if s <= t]
        return older[-1] if older else None

    def _detect(self, req: DetectSuccess.Request, res: DetectSuccess.Response) -> DetectSuccess.Response:
        res.detector = self._detector.name
        if not self._scene.wait_for_service(timeout_sec=self._timeout):
            res.success, res.confidence = False, 0.0
            res.explanation = f"describe_scene unavailable after {self._timeout:.1f} s"
            self.get_logger().error(res.explanation)
            return res
        try:
            answer = wait_future(self._scene.call_async(DescribeScene.Request(refresh=True)), self._timeout,
                                 "describe_scene")
        except (WaitTimeout, RuntimeError) as e:
            answer, why = None, str(e)
        else:
            why = answer.message
        if answer is None or not answer.success:
            res.success, res.confidence = False, 0.0
            res.explanation = f"no scene description: {why}"
            self.get_logger().error(res.explanation)
            return res
        scene = answer.scene
        before = self._scene_at(from_time(req.skill_start))
        context = Context(before=_entries(before) if before is not None else None,
                          held=tuple(scene.held_objects))
        verdict = self._detector.detect(req.skill, list(req.args), _entries(scene), context)
        res.success, res.confidence, res.explanation = verdict.success, float(verdict.confidence), verdict.explanation
        self.get_logger().info(f"{req.skill}({', '.join(req.args)}): {verdict.success} ({verdict.explanation})")
        return res


def main(args: list[str] | None = None) -> None:
    run_node(SuccessDetectorNode, threads=3, args=args)
