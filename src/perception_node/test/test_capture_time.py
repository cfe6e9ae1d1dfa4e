"""Capture time: realsense_publisher stamps a frame with core.realsense.CaptureClock (the SDK timestamp in its
time domain), and perception looks the camera pose up on /tf at the image's stamp; so while the arm moves, the
pose used is the one at capture, not at publish. ROS-free: the fake SDK in-process, perception's TransformTree."""
from __future__ import annotations

import time

import numpy as np
import pytest

from perception_node.core.realsense import CaptureClock
from perception_node.core.tf_tree import TransformTree
from perception_node.testing import fake_pyrealsense2 as rs


def test_host_time_domains_are_used_as_they_are() -> None:
    clock = CaptureClock(max_skew_s=1.0, host_skew_s=60.0)
    for domain in ("timestamp_domain.global_time", "timestamp_domain.system_time", "global_time"):
        assert clock.stamp(1_000_500.0, domain, now_s=1000.9) == pytest.approx(1000.5)


def test_the_hardware_clock_keeps_the_frames_spacing_and_the_fastest_delivery() -> None:
    clock = CaptureClock(max_skew_s=1.0)
    # device ms since power-up; delivered 30 ms, then 10 ms, then 50 ms after capture (node clock, s)
    frames = [(5000.0, 100.030), (5100.0, 100.110), (5200.0, 100.250)]
    stamps = [clock.stamp(ts, "timestamp_domain.hardware_clock", now) for ts, now in frames]
    assert stamps[0] == pytest.approx(100.030)  # the first frame anchors: taken as delivered at once
    assert stamps[1] == pytest.approx(100.110) and stamps[2] == pytest.approx(100.210)  # 10 ms lag from then on
    # a device reset (its clock starts over) re-anchors instead of stamping frames far in the past
    assert clock.stamp(40.0, "hardware_clock", 100.5) == pytest.approx(100.5)


def test_a_host_clock_far_from_the_nodes_and_recordings_are_mapped_like_a_device_clock() -> None:
    sim = CaptureClock(max_skew_s=1.0, host_skew_s=60.0)  # the node on simulated time: the host's wall clock is no use
    assert sim.stamp(1.7e12, "global_time", now_s=12.0) == pytest.approx(12.0)
    assert sim.stamp(1.7e12 + 100.0, "global_time", now_s=12.2) == pytest.approx(12.1)
    bag = CaptureClock(max_skew_s=1.0)
    looped = [bag.stamp(1.7e12 + i * 100.0, "global_time", 50.0 + 0.1 * k, recorded=True)
              for k, i in enumerate([0, 1, 2, 0, 1])]  # a looped recording starts over
    assert looped == pytest.approx([50.0, 50.1, 50.2, 50.3, 50.4])  # forward in time, never repeated


def test_perception_uses_the_arm_pose_at_capture_while_the_arm_moves() -> None:
    """The fake camera delivers each frame 0.2 s after its capture while the arm (and the wrist camera) moves
    at 0.5 m/s along x: the camera pose at the image's stamp is the one at capture (within 1 mm); the pose at
    publish time would be at least 0.1 m off."""
    speed, latency = 0.5, 0.2  # m/s, s
    rs.configure({"capture_latency_s": latency, "timestamp_domain": "global_time"})
    pipe, cfg = rs.pipeline(), rs.config()
    cfg.enable_stream(rs.stream.color, 320, 240, rs.format.rgb8, 30)
    cfg.enable_stream(rs.stream.depth, 320, 240, rs.format.z16, 30)
    t0 = time.time()
    pipe.start(cfg)
    clock, got = CaptureClock(), []
    try:
        for _ in range(3):
            color = pipe.wait_for_frames(2000).get_color_frame()
            published = time.time()
            stamp = clock.stamp(color.get_timestamp(), str(color.get_frame_timestamp_domain()), published)
            got.append((stamp, color.get_timestamp() / 1000.0, published))  # the fake's capture time (s)
    finally:
        pipe.stop()
        rs.configure({})

    def arm_x(t: float) -> float:  # m, the camera's x in base at time t (s)
        return speed * (t - t0)

    tree = TransformTree(cache_s=10.0, tolerance_s=0.01)  # /tf as the skills node publishes it, 100 Hz
    for t in np.arange(t0 - 0.5, time.time() + 0.5, 0.01):
        pose = np.eye(4)
        pose[0, 3] = arm_x(float(t))
        tree.set("base", "camera_color_optical_frame", pose, float(t), static=False)
    for stamp, captured, published in got:
        used = tree.lookup("base", "camera_color_optical_frame", stamp)[0, 3]
        assert used == pytest.approx(arm_x(captured), abs=0.001)
        # published at least `latency` after the capture: that pose is >= 0.1 m further along
        assert tree.lookup("base", "camera_color_optical_frame", published)[0, 3] - used >= speed * latency - 0.001
