"""perception_node: publishes the scene description and serves DescribeScene (rclpy adapter only).

Source "oracle" turns the simulator's ground truth into the scene description (IM sim).
Source "camera" runs the RGB-D pipeline (core/pipeline.py) on colour + aligned depth + CameraInfo,
with the camera pose from /tf (when tf2_msgs is importable) or a static extrinsics parameter, keeps
the visible/occluded object memory, and publishes RViz markers and per-stage diagnostics.
"""
from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from monologue_common.params import NODE_OPTIONS, read_settings
from monologue_common.qos import LATCHED
from monologue_common.runtime import Component, from_time, run_node
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
        self.settings: PerceptionSettings = read_settings(self, settings_from_parameters)
        source = self.settings.source
        self._refresh_timeout = self.settings.refresh_timeout
        self._oracle = OracleSceneSource()
        self._cond = threading.Condition()
        self._latest: SceneDescription | None = None
        self._latest_sent = 0.0  # s, system clock: when the latest ground truth was published (oracle)
        # Camera: a refreshed description must come from an image newer (by stamp) than every image
        # received before the request, so the success detector never judges a frame from before the
        # skill ended. Stamps, not the node's clock: a replayed bag keeps its recorded stamps.
        self._fresh_by_stamp = source == "camera"
        group = ReentrantCallbackGroup()
        self._pub = self.create_publisher(SceneDescription, "scene/description", LATCHED)
        if source == "oracle":
            self._sub = self.create_subscription(
                SceneDescription, self.settings.ground_truth_topic,
                self._on_ground_truth,  # type: ignore[arg-type]  # rclpy's hint omits the (msg, MessageInfo) form
                LATCHED, callback_group=group)
        else:
            from .camera_source import CameraSource

            self._camera = CameraSource(self, self.settings, self._publish_scene, group)
        self._srv = self.create_service(DescribeScene, "describe_scene", self._describe, callback_group=group)

    def _publish_scene(self, out: SceneDescription) -> None:
        """Publish a scene description (camera source) and wake DescribeScene waiters."""
        self._pub.publish(out)
        with self._cond:
            self._latest = out
            self._cond.notify_all()

    def _on_ground_truth(self, msg: SceneDescription, info: Any) -> None:
        """`info` is rclpy's MessageInfo (two parameters make rclpy pass it): its source_timestamp (ns, the
        publisher's system clock) says when the message was sent; a replayed bag's header stamps are the
        recorded ones, its send time is now."""
        scene = self._oracle.describe(scene_from_msg(msg))
        out = scene_to_msg(scene, msg)
        self._pub.publish(out)
        sent_ns = int(info.get("source_timestamp") or 0) if isinstance(info, dict) else 0
        with self._cond:
            self._latest = out
            self._latest_sent = sent_ns * 1e-9 if sent_ns > 0 else time.time()
            self._cond.notify_all()

    def _fresh(self, asked_stamp: float, asked_wall: float) -> bool:
        """Camera: an image newer by stamp than every image received before the request. Oracle: a
        ground truth *sent* after the request (the publisher's clock), not merely taken after it: under
        load a message sent while the skill still ran can be taken after the request, and would be judged
        as the post-skill state (the clocks of a distributed graph must be synchronised, as for /tf)."""
        if self._latest is None:
            return False
        if self._fresh_by_stamp:
            return from_time(self._latest.header.stamp) > asked_stamp
        return self._latest_sent >= asked_wall

    def _describe(self, req: DescribeScene.Request, res: DescribeScene.Response) -> DescribeScene.Response:
        asked, asked_wall = time.monotonic(), time.time()
        asked_stamp = self._camera.newest_image_stamp() if self._fresh_by_stamp else 0.0
        deadline = asked + self._refresh_timeout
        with self._cond:
            while self._latest is None or (req.refresh and not self._fresh(asked_stamp, asked_wall)):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            latest, fresh = self._latest, self._fresh(asked_stamp, asked_wall)
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


# The node in an in-process graph (monologue-up container:=true), with the threads main() spins it on.
COMPONENT = Component(PerceptionNode, threads=3)


def main(args: list[str] | None = None) -> None:
    run_node(PerceptionNode, threads=3, args=args)
