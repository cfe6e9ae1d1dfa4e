"""success_detector_node: serves DetectSuccess from the perception scene (rclpy adapter only).

The success rule is a judge (parameter `judge`, a plug-in of core/judging.py's registry; built-ins in
core/judges/): sim_geometric, tabletop (IM real-tabletop 3 cm / 10 cm rule; the intended place point
comes from the latched scene/description at the skill's start), clip (CLIP score before/after on camera
images from `clip.image_topic`, model `clip.model_path`), llm_judge (an LLM backend built from the
`llm.*` block of config/llm/<llm>.yaml, shared with the planner), kitchen, hand_camera (Spot: a camera on
the gripper, the skill's own report as a labelled fallback) and skill_result.
Parameters: core/settings.py.
"""
from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image

from monologue_common.params import NODE_OPTIONS, read_settings
from monologue_common.qos import LATCHED
from monologue_common.runtime import Component, TypedNode, WaitTimeout, call_service, from_time, run_node
from monologue_domain.msgs import scene_objects_from_msg
from monologue_interfaces.msg import SceneDescription
from monologue_interfaces.srv import DescribeScene, DetectSuccess
from monologue_llm.base import LLMBackend
from monologue_llm.factory import make_backend_from_params
from monologue_vision.images import decode_color

from .core.history import StampedHistory
from .core.judging import JUDGES, Context, ImageTextScorer, SceneEntry, make_judge
from .core.settings import SuccessSettings, settings_from_parameters


def _entries(scene: SceneDescription) -> dict[str, SceneEntry]:
    return {o.name: o for o in scene_objects_from_msg(scene.objects)}


class SuccessDetectorNode(TypedNode):
    def __init__(self) -> None:
        super().__init__("success_detector", **NODE_OPTIONS)
        self.settings: SuccessSettings = read_settings(self, settings_from_parameters)
        s = self.settings
        self._timeout = s.scene_timeout
        self._scorer: ImageTextScorer | None = None
        self._llm: LLMBackend | None = None
        if s.needs_images:
            self._scorer = self._make_scorer()
        if s.needs_llm:
            self.get_logger().info(f"LLM backend {s.llm.get('backend')} loading ...")
            self._llm = make_backend_from_params(s.llm, logging.getLogger("success_detector.llm"))
        self._judge = make_judge(s.judge, s.judge_params(), scorer=self._scorer, llm=self._llm)
        self._plugin = JUDGES.get(s.judge)
        # Recent scene descriptions, for the scene at a skill's start.
        self._scenes: StampedHistory[SceneDescription] = StampedHistory(200)
        group = ReentrantCallbackGroup()
        self._scene = self.create_client(DescribeScene, "describe_scene", callback_group=group)
        self._srv = self.create_service(DetectSuccess, "detect_success", self._detect, callback_group=group)
        self._scene_sub = self.create_subscription(SceneDescription, "scene/description", self._on_scene, LATCHED,
                                                   callback_group=group)
        self._images: StampedHistory[Image] | None = None
        if self._scorer is not None:
            self._images = StampedHistory(s.clip.buffer_size, s.clip.buffer_period)
            self._image_topic = s.clip.image_topic
            # As perception's camera source: reliable, shallow (the camera publishes reliable).
            self._image_sub = self.create_subscription(Image, self._image_topic, self._on_image,
                                                       QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE),
                                                       callback_group=group)
        self.get_logger().info(f"success judge: {self._judge.name}")

    def _make_scorer(self) -> ImageTextScorer:
        from monologue_vision.clip import ClipScorer

        path = self.settings.clip.model_path
        self.get_logger().info(f"CLIP loading from {path!r} ...")
        # No downloads: clip.model_path must be a local transformers CLIP directory.
        return ClipScorer(path, allow_download=False, logger=logging.getLogger("success_detector.clip"))

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    # Scenes and images are keyed by arrival on this node's clock, the clock the planner stamps
    # skill_start with and the request arrives on: a replayed bag's messages keep their recorded
    # stamps, which say nothing about when the replayed skill started, and a camera clock need not be
    # synchronised with ours.
    def _on_scene(self, msg: SceneDescription) -> None:
        self._scenes.add(self._now(), msg)

    def _on_image(self, msg: Image) -> None:
        assert self._images is not None
        self._images.add(self._now(), msg)

    def _fail(self, res: DetectSuccess.Response, why: str) -> DetectSuccess.Response:
        res.success, res.confidence, res.explanation = False, 0.0, why
        self.get_logger().error(why)
        return res

    def _camera_images(self, skill_start: float, arrived: float) -> tuple[list[NDArray[np.uint8]] | None, str]:
        """RGB images [received at or before `skill_start`, fresh: received after `arrived`] (waiting up to
        scene_timeout from `arrived` for the fresh one), or None and why not."""
        assert self._images is not None
        before = self._images.at_or_before(skill_start)
        if before is None:
            span = self._images.span()
            held = "none received" if span is None else f"the oldest kept is {span[0] - skill_start:.1f} s after it"
            return None, (f"no camera image on {self._image_topic} from before the skill's start at "
                          f"t={skill_start:.2f} s ({held})")
        left = self._timeout - (self._now() - arrived)
        after = self._images.wait_after(arrived, max(0.0, left))
        if after is None:
            span = self._images.span()
            newest = "none received" if span is None else f"the newest is {arrived - span[1]:.1f} s older"
            return None, (f"no fresh camera image on {self._image_topic} within scene_timeout "
                          f"{self._timeout:.1f} s of the request ({newest})")
        try:
            images = [decode_color(bytes(m.data), m.width, m.height, m.encoding, m.step)
                      for m in (before[1], after[1])]
        except ValueError as e:
            return None, f"cannot decode the camera image: {e}"
        self.get_logger().info(f"CLIP images received {before[0] - skill_start:+.2f} s from the skill's start "
                               f"and {after[0] - arrived:+.2f} s from the request")
        return images, ""

    def _detect(self, req: DetectSuccess.Request, res: DetectSuccess.Response) -> DetectSuccess.Response:
        arrived = self._now()
        res.detector = self._judge.name
        if not self._scene.wait_for_service(timeout_sec=self._timeout):
            return self._fail(res, f"describe_scene unavailable after {self._timeout:.1f} s")
        # A judge of a moving camera (hand_camera) needs a frame captured after the skill ended: a refresh may
        # answer with a frame taken during the skill's last motion (the hand elsewhere).
        end_s = from_time(req.skill_end) if self._plugin.fresh_scene else 0.0
        while True:
            try:
                answer = call_service(self._scene, DescribeScene.Request(refresh=True), self._timeout,
                                      "describe_scene", resend_after_s=self._timeout / 2)  # once: planner ros_ports
            except (WaitTimeout, RuntimeError) as e:
                answer, why = None, str(e)
            else:
                why = answer.message
            if answer is None or not answer.success:
                return self._fail(res, f"no scene description: {why}")
            captured = from_time(answer.scene.header.stamp)
            if end_s <= 0.0 or captured >= end_s:
                break
            if self._now() - arrived > self._timeout:
                self.get_logger().warning(f"no scene captured after the skill's end within scene_timeout "
                                          f"{self._timeout:.1f} s (newest {end_s - captured:.2f} s before it): "
                                          "judged on it")
                break
        scene = answer.scene
        skill_start = from_time(req.skill_start)
        before = self._scenes.at_or_before(skill_start)
        context = Context(before=_entries(before[1]) if before is not None else None,
                          held=tuple(scene.held_objects))
        if self._images is not None:
            images, why = self._camera_images(skill_start, arrived)
            if images is None:
                return self._fail(res, why)
            context = replace(context, image_before=images[0], image_after=images[1])
        verdict = self._judge.detect(req.skill, list(req.args), _entries(scene), context)
        res.success, res.confidence, res.explanation = verdict.success, float(verdict.confidence), verdict.explanation
        res.detector = verdict.detector  # a judge may label a fallback (hand_camera/skill_report)
        self.get_logger().info(f"{req.skill}({', '.join(req.args)}): {verdict.success} ({verdict.explanation})")
        return res

    def destroy_node(self) -> None:
        try:
            if self._llm is not None:
                self._llm.close()
        finally:
            super().destroy_node()  # type: ignore[no-untyped-call]  # unannotated in rclpy


# The node in an in-process graph (monologue-up container:=true), with the threads main() spins it on.
COMPONENT = Component(SuccessDetectorNode, threads=4)


def main(args: list[str] | None = None) -> None:
    run_node(SuccessDetectorNode, threads=4, args=args)
