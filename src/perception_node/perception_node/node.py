"""perception_node: publishes the scene description and serves DescribeScene (rclpy adapter only).

Source "oracle" turns the simulator's ground truth into the scene description (IM sim).
Source "camera" runs the RGB-D pipeline (core/pipeline.py) on colour + aligned depth + CameraInfo,
with the camera pose from /tf (when tf2_msgs is importable) or a static extrinsics parameter, keeps
the visible/occluded object memory, and publishes RViz markers and per-stage diagnostics.
"""
from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from monologue_common.params import NODE_OPTIONS, parameter_values, warn_unused
from monologue_common.qos import LATCHED
from monologue_common.runtime import from_time, run_node
from monologue_domain.msgs import scene_from_msg
from monologue_interfaces.msg import SceneDescription
from monologue_interfaces.srv import DescribeScene

from .core.scene import OracleSceneSource, Scene
from .core.settings import PerceptionSettings, settings_from_parameters

if TYPE_CHECKING:  # generated messages (mypy sees them as Any: rosidl ships no type information)
    from monologue_interfaces.msg import SceneObject


class PerceptionNode(Node):
    def __init__(self) -> None:
        super().__init__("perception", **NODE_OPTIONS)
        self.settings: PerceptionSettings = settings_from_parameters(parameter_values(self))
        warn_unused(self, list(self.settings.unused))
        source = self.settings.source
        self._refresh_timeout = self.settings.refresh_timeout
        self._oracle = OracleSceneSource()
        self._cond = threading.Condition()
        self._latest: SceneDescription | None = None
        self._latest_rx = 0.0  # monotonic time the latest input arrived
        # Camera: a refreshed description must come from an image newer (by stamp) than every image
        # received before the request, so the success detector never judges a frame from before the
        # skill ended. Stamps, not the node's clock: a replayed bag keeps its recorded stamps.
        self._fresh_by_stamp = source == "camera"
        group = ReentrantCallbackGroup()
        self._pub = self.create_publisher(SceneDescription, "scene/description", LATCHED)
        if source == "oracle":
            self._sub = self.create_subscription(
                SceneDescription, self.settings.ground_truth_topic, self._on_ground_truth,
                LATCHED, callback_group=group)
        else:
            from .camera_source import CameraSource

            self._camera = CameraSource(self, self.settings, self._publish_scene, group)
        self._srv = self.create_service(DescribeScene, "describe_scene", self._describe, callback_group=group)

    def _publish_scene(self, out: SceneDescription) -> None:
        """Publish a scene description (camera source) and wake DescribeScene waiters."""
        self._pub.publish(out)
        with self._cond:
            self._latest, self._latest_rx = out, time.monotonic()
            self._cond.notify_all()

    def _on_ground_truth(self, msg: SceneDescription) -> None:
        scene = self._oracle.describe(scene_from_msg(msg))
        out = scene_to_msg(scene, msg)
        self._pub.publish(out)
        with self._cond:
            self._latest, self._latest_rx = out, time.monotonic()
            self._cond.notify_all()

    def _fresh(self, asked: float, asked_stamp: float) -> bool:
        if self._latest is None:
            return False
        if self._fresh_by_stamp:
            return from_time(self._latest.header.stamp) > asked_stamp
        return self._latest_rx >= asked

    def _describe(self, req: DescribeScene.Request, res: DescribeScene.Response) -> DescribeScene.Response:
        asked = time.monotonic()
        asked_stamp = self._camera.newest_image_stamp() if self._fresh_by_stamp else 0.0
        deadline = asked + self._refresh_timeout
        with self._cond:
            while self._latest is None or (req.refresh and not self._fresh(asked, asked_stamp)):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            latest, fresh = self._latest, self._fresh(asked, asked_stamp)
        if latest is None:
            res.success, res.message = False, "no input received yet"
        elif req.refresh and not fresh:
            res.success = False
            res.message = (f"no {'camera frame newer than the request' if self._fresh_by_stamp else 'new input'} "
                           f"within {self._refresh_timeout:.1f} s")
        else:
            res.success, res.scene = True, latest
        return res


def scene_to_msg(scene: Scene, template: SceneDescription) -> SceneDescription:
    """Copy `template` (keeping poses and headers) with the scene's source, visibility and confidence."""
    out = SceneDescription()
    out.header = template.header
    out.source = scene.source
    by_name: dict[str, SceneObject] = {o.name: o for o in template.objects}
    for o in scene.objects:
        m = by_name[o.name]
        m.visible, m.confidence = o.visible, float(o.confidence)
        out.objects.append(m)
    out.held_objects = list(scene.held_objects)
    return out


def main(args: list[str] | None = None) -> None:
    run_node(PerceptionNode, threads=3, args=args)
