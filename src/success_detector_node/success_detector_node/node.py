"""success_detector_node: serves DetectSuccess from the perception scene (rclpy adapter only)."""
from __future__ import annotations

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from monologue_common.runtime import WaitTimeout, run_node, wait_future
from monologue_interfaces.srv import DescribeScene, DetectSuccess

from .core.detectors import SceneEntry, make_detector


class SuccessDetectorNode(Node):
    def __init__(self) -> None:
        super().__init__("success_detector")
        self.declare_parameter("strategy", "sim_geometric")
        self.declare_parameter("xy_tolerance", 0.04)  # m
        self.declare_parameter("scene_timeout", 5.0)  # s
        self._detector = make_detector(
            str(self.get_parameter("strategy").value),
            {"xy_tolerance_m": float(self.get_parameter("xy_tolerance").value)},
        )
        self._timeout = float(self.get_parameter("scene_timeout").value)
        if self._timeout <= 0:
            raise ValueError("scene_timeout must be > 0 s")
        group = ReentrantCallbackGroup()
        self._scene = self.create_client(DescribeScene, "describe_scene", callback_group=group)
        self._srv = self.create_service(DetectSuccess, "detect_success", self._detect, callback_group=group)
        self.get_logger().info(f"success detector: {self._detector.name}")

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
        entries = {
            o.name: SceneEntry(o.name, o.category,
                               (o.pose.pose.position.x, o.pose.pose.position.y, o.pose.pose.position.z),
                               o.visible)
            for o in scene.objects
        }
        verdict = self._detector.detect(req.skill, list(req.args), entries)
        res.success, res.confidence, res.explanation = verdict.success, float(verdict.confidence), verdict.explanation
        self.get_logger().info(f"{req.skill}({', '.join(req.args)}): {verdict.success} ({verdict.explanation})")
        return res


def main(args: list[str] | None = None) -> None:
    run_node(SuccessDetectorNode, threads=3, args=args)
