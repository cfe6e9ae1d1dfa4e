"""perception_node in `source: camera` mode as a real process over DDS: synthetic RGB-D frames and
CameraInfo in, scene description (visible/occluded), RViz markers and diagnostics out. The frames come as
the official realsense2_camera node publishes them (`camera_driver: realsense_ros`): on
/camera/camera/color/image_raw, /camera/camera/aligned_depth_to_color/image_raw and
/camera/camera/color/camera_info, the images with the SENSOR_DATA QoS (best effort; a reliable reader would
not match them), camera_info with the default QoS."""
from __future__ import annotations

import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytestmark = [pytest.mark.system, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def scenes() -> dict[str, object]:
    from perception_node.core import geometry as g
    from perception_node.core import synthetic as s

    k = g.Intrinsics.from_fov(640, 480, math.radians(42))
    cam = g.look_at((0.5, 0.0, 0.6), (0.5, 0.001, 0.0))
    red, green, blue = (200, 30, 30), (30, 190, 40), (30, 40, 200)
    before = [s.block("red block", 0.45, -0.08, red), s.block("green block", 0.58, 0.09, green),
              s.block("blue block", 0.55, -0.12, blue)]
    after = [before[0], s.block("green block", 0.45, -0.08, green, z0=0.04), before[2]]
    return {"k": k, "cam": cam, "before": s.render(before, k, cam), "after": s.render(after, k, cam)}


@pytest.fixture(scope="module")
def perception(ros_domain: int, scenes: dict[str, object]) -> Iterator[subprocess.Popen[str]]:
    from perception_node.core.geometry import quaternion_from_matrix

    cam = scenes["cam"]
    pose = [*cam[:3, 3].tolist(), *quaternion_from_matrix(cam)]  # type: ignore[index,arg-type]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO / "src" / "perception_node"), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen(
        [sys.executable, "-c", "from perception_node.node import main; main()", "--ros-args",
         "--params-file", str(REPO / "config" / "monologue.yaml"),
         "-p", "source:=camera", "-p", "camera_driver:=realsense_ros", "-p", "detector:=oracle",
         "-p", "process_rate:=4.0", "-p", "refresh_timeout:=5.0",
         "-p", f"static_camera_pose:=[{', '.join(f'{v:.9f}' for v in pose)}]"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stdout or []), daemon=True).start()
    yield proc
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    assert proc.returncode in (0, -2, -15), "".join(lines)[-4000:]


def test_camera_mode_grounds_objects_and_tracks_occlusion(perception: subprocess.Popen[str],
                                                          scenes: dict[str, object]) -> None:
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import CameraInfo, Image
    from visualization_msgs.msg import MarkerArray

    from monologue_common.qos import LATCHED
    from monologue_interfaces.msg import DetectionQueries, SceneDescription, SceneObject
    from monologue_interfaces.srv import DescribeScene

    rclpy.init()
    node = rclpy.create_node("perception_camera_test")
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    try:
        k = scenes["k"]
        from rclpy.qos import qos_profile_sensor_data

        pub_c = node.create_publisher(Image, "/camera/camera/color/image_raw", qos_profile_sensor_data)
        pub_d = node.create_publisher(Image, "/camera/camera/aligned_depth_to_color/image_raw", qos_profile_sensor_data)
        pub_i = node.create_publisher(CameraInfo, "/camera/camera/color/camera_info", 10)
        pub_gt = node.create_publisher(SceneDescription, "sim/ground_truth", LATCHED)
        markers: list[MarkerArray] = []
        diags: list[DiagnosticArray] = []
        node.create_subscription(MarkerArray, "perception/markers", markers.append, 10)
        node.create_subscription(DiagnosticArray, "/diagnostics", diags.append, 10)
        client = node.create_client(DescribeScene, "describe_scene")

        def publish(frame: object) -> None:
            stamp = node.get_clock().now().to_msg()
            gt = SceneDescription(source="ground_truth")
            gt.header.stamp, gt.header.frame_id = stamp, "base_link"
            for o in frame.objects:  # type: ignore[attr-defined]
                m = SceneObject(name=o.name, category=o.category, visible=True, confidence=1.0)
                m.pose.pose.position.x, m.pose.pose.position.y, m.pose.pose.position.z = o.center
                m.size.x, m.size.y, m.size.z = o.size
                gt.objects.append(m)
            loc = SceneObject(name="middle", category="location")
            gt.objects.append(loc)
            pub_gt.publish(gt)
            for pub, data, enc, step in (
                (pub_c, frame.rgb.tobytes(), "rgb8", 640 * 3),  # type: ignore[attr-defined]
                (pub_d, np.round(frame.depth_m * 1000).astype(np.uint16).tobytes(), "16UC1", 640 * 2),  # type: ignore[attr-defined]
            ):
                img = Image(height=480, width=640, encoding=enc, step=step, data=data)
                img.header.stamp, img.header.frame_id = stamp, "camera_color_optical_frame"
                pub.publish(img)
            info = CameraInfo(width=640, height=480, k=[k.fx, 0.0, k.cx, 0.0, k.fy, k.cy, 0.0, 0.0, 1.0])  # type: ignore[attr-defined]
            info.header.stamp, info.header.frame_id = stamp, "camera_color_optical_frame"
            pub_i.publish(info)

        def describe_until(pred: object, timeout_s: float) -> SceneDescription:
            deadline = time.monotonic() + timeout_s
            last = None
            while time.monotonic() < deadline:
                publish(frame_now[0])
                ex.spin_once(timeout_sec=0.3)
                if not client.service_is_ready():
                    continue
                fut = client.call_async(DescribeScene.Request(refresh=False))
                t_end = time.monotonic() + 5
                while not fut.done() and time.monotonic() < t_end:
                    ex.spin_once(timeout_sec=0.1)
                res = fut.result()
                if res is not None and res.success:
                    last = res.scene
                    if pred(last):  # type: ignore[operator]
                        return last
            raise AssertionError(f"condition not met within {timeout_s} s; last scene: {last}")

        frame_now = [scenes["before"]]
        s1 = describe_until(lambda sc: sum(o.visible for o in sc.objects if o.category == "block") == 3, 90)
        truth = {o.name: o.center for o in scenes["before"].objects}  # type: ignore[attr-defined]
        for o in s1.objects:
            if o.category == "location":
                assert o.name == "middle"
                continue
            p = o.pose.pose.position
            assert np.linalg.norm(np.subtract((p.x, p.y, p.z), truth[o.name])) < 0.01, o.name
        assert s1.source == "oracle" and s1.header.frame_id == "base_link"

        frame_now[0] = scenes["after"]
        s2 = describe_until(lambda sc: any(o.name == "red block" and not o.visible for o in sc.objects), 60)
        vis = {o.name: o.visible for o in s2.objects if o.category == "block"}
        assert vis == {"red block": False, "green block": True, "blue block": True}

        # refresh: only a description from an image newer than the request counts (no new image: a
        # clear failure after refresh_timeout; a new one: its scene)
        def refresh(publish_after_s: float | None) -> DescribeScene.Response:
            fut = client.call_async(DescribeScene.Request(refresh=True))
            t_call, sent = time.monotonic(), publish_after_s is None
            while not fut.done() and time.monotonic() < t_call + 15:
                ex.spin_once(timeout_sec=0.05)
                if not sent and time.monotonic() > t_call + publish_after_s:  # type: ignore[operator]
                    publish(frame_now[0])
                    sent = True
            return fut.result()  # type: ignore[return-value]

        settle = time.monotonic() + 1.5  # let the frames published above arrive and be processed
        while time.monotonic() < settle:
            ex.spin_once(timeout_sec=0.1)
        stale = refresh(None)
        assert not stale.success and "no camera frame newer than the request within 5.0 s" in stale.message
        fresh = refresh(0.5)
        assert fresh.success, fresh.message
        stamp = fresh.scene.header.stamp.sec + fresh.scene.header.stamp.nanosec * 1e-9
        assert stamp > s2.header.stamp.sec + s2.header.stamp.nanosec * 1e-9

        for _ in range(20):
            ex.spin_once(timeout_sec=0.1)
        assert markers, "no markers published"
        last = markers[-1].markers
        ids = [(m.ns, m.id) for m in last]
        assert len(ids) == len(set(ids)) and {m.ns for m in last} == {"objects", "labels"}
        assert all(m.header.frame_id == "base_link" and m.lifetime.sec + m.lifetime.nanosec > 0 for m in last)
        assert any("occluded" in m.text for m in last if m.ns == "labels")
        assert diags, "no diagnostics published"
        keys = {kv.key for kv in diags[-1].status[0].values}
        assert {"decode_ms", "detect_ms", "depth_ms", "open3d_ms", "publish_ms"} <= keys

        # a new episode names its objects: perception looks only for those, with a fresh memory
        # (the occluded red block is forgotten); empty names: back to the configured candidates
        queries = node.create_publisher(DetectionQueries, "perception/queries", LATCHED)
        queries.publish(DetectionQueries(episode_id="e1", names=["green block", "blue block"]))
        s3 = describe_until(lambda sc: {o.name for o in sc.objects if o.category != "location"}
                            == {"green block", "blue block"}, 30)
        assert all(o.visible for o in s3.objects if o.category != "location")
        queries.publish(DetectionQueries(episode_id="e2", names=[]))
        frame_now[0] = scenes["before"]
        describe_until(lambda sc: {o.name for o in sc.objects if o.category == "block"}
                       == {"red block", "green block", "blue block"}, 30)
    finally:
        node.destroy_node()
        rclpy.shutdown()
