"""The fake pyrealsense2 behaves like the SDK where realsense_publisher relies on it (the system test
trusts it): device list, start/stop sequencing, resolve errors, timeouts, unplug, bag playback, align."""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from perception_node.testing import fake_pyrealsense2 as rs


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    rs.configure(rs.Scenario())
    yield
    rs.configure(rs.Scenario())


def _cfg(w: int = 320, h: int = 240, fps: int = 30) -> rs.config:
    cfg = rs.config()
    cfg.enable_stream(rs.stream.color, w, h, rs.format.rgb8, fps)
    cfg.enable_stream(rs.stream.depth, w, h, rs.format.z16, fps)
    return cfg


def test_no_device_start_blocks_then_raises() -> None:
    rs.configure({"devices": [], "no_device_block_s": 0.2})
    assert len(rs.context().query_devices()) == 0
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="No device connected"):
        rs.pipeline().start(_cfg())
    assert time.monotonic() - t0 >= 0.2


def test_sequencing_and_resolve_errors() -> None:
    p = rs.pipeline()
    with pytest.raises(RuntimeError, match="cannot be called before start"):
        p.wait_for_frames(100)
    with pytest.raises(RuntimeError, match="stop\\(\\) cannot be called before start"):
        p.stop()
    with pytest.raises(RuntimeError, match="Couldn't resolve requests"):
        p.start(_cfg(123, 45))
    prof = p.start(_cfg())
    assert prof.get_device().get_info(rs.camera_info.serial_number) == "000000000001"
    assert prof.get_device().first_depth_sensor().get_depth_scale() == 0.001
    with pytest.raises(RuntimeError, match="start\\(\\) cannot be called before stop"):
        p.start(_cfg())
    p.stop()


def test_frames_pattern_plane_align_and_timeout() -> None:
    rs.configure({"stalls": [[1, 1.0]]})
    p = rs.pipeline()
    p.start(_cfg())
    fs = p.wait_for_frames(1000)
    c, d = fs.get_color_frame(), fs.get_depth_frame()
    assert c and d and c.get_frame_number() == 1 and abs(c.get_timestamp() - time.time() * 1000) < 1000
    assert np.array_equal(np.asanyarray(c.get_data()), rs.expected_color(320, 240, 1))
    aligned = rs.align(rs.stream.color).process(fs).get_depth_frame()
    want = np.round(rs.expected_depth_m(320, 240) / 0.001)
    assert np.array_equal(np.asanyarray(aligned.get_data()), want)
    assert not np.array_equal(np.asanyarray(d.get_data()), want)  # raw depth: the depth sensor's geometry
    assert aligned.profile.as_video_stream_profile().get_intrinsics().fx == 610.0
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="^Frame didn't arrive within 200$"):
        p.wait_for_frames(200)
    assert 0.19 < time.monotonic() - t0 < 5.0  # waited its 200 ms (a loaded machine may add seconds), not forever
    assert p.wait_for_frames(2000).get_color_frame().get_frame_number() == 2
    p.stop()


def test_unplug_stops_the_pipeline_until_restarted() -> None:
    rs.configure({"disconnect_after_frame": 1, "reconnect_after_s": 0.3})
    p = rs.pipeline()
    p.start(_cfg())
    p.wait_for_frames(1000)
    assert len(rs.context().query_devices()) == 0
    with pytest.raises(RuntimeError, match="^Device disconnected. Failed to recconect: No device connected100$"):
        p.wait_for_frames(100)
    with pytest.raises(RuntimeError, match="wait_for_frames cannot be called before start"):
        p.wait_for_frames(100)
    with pytest.raises(RuntimeError):
        p.get_active_profile()
    time.sleep(0.3)
    assert len(rs.context().query_devices()) == 1
    p.start(_cfg())
    assert p.wait_for_frames(1000).get_color_frame().get_frame_number() == 1


def test_bag_playback(tmp_path: Path) -> None:
    bag = rs.write_bag(tmp_path / "a.bag", [((10, 20, 30), 0.5), ((40, 50, 60), 1.25)], fps=30)
    cfg = rs.config()
    cfg.enable_device_from_file(str(bag), repeat_playback=False)
    p = rs.pipeline()
    dev = p.start(cfg).get_device()
    assert dev.is_playback() and dev.as_playback().current_status() == rs.playback_status.playing
    got = [p.wait_for_frames(500) for _ in range(2)]
    assert [tuple(f.get_color_frame().get_data()[0, 0]) for f in got] == [(10, 20, 30), (40, 50, 60)]
    assert [int(f.get_depth_frame().get_data()[0, 0]) for f in got] == [500, 1250]
    assert dev.as_playback().current_status() == rs.playback_status.stopped
    with pytest.raises(RuntimeError, match="Frame didn't arrive within 100"):
        p.wait_for_frames(100)
    p.stop()
    cfg.enable_device_from_file(str(bag))  # repeat_playback defaults to True
    p.start(cfg)
    assert [p.wait_for_frames(500).get_frame_number() for _ in range(5)] == [1, 2, 1, 2, 1]


def test_bag_errors(tmp_path: Path) -> None:
    real = tmp_path / "real.bag"
    real.write_bytes(b"#ROSBAG V2.0\n...")
    for path, msg in ((tmp_path / "missing.bag", "Error opening file"), (real, "real RealSense bag")):
        cfg = rs.config()
        cfg.enable_device_from_file(str(path))
        with pytest.raises(RuntimeError, match=msg):
            rs.pipeline().start(cfg)
