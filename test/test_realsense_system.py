"""realsense_publisher as a real process over DDS, with the fake pyrealsense2 SDK on its PYTHONPATH
(perception_node.testing.fake_pyrealsense2; no camera): live frames, a frame stall, an unplug and
reconnect, no device / wrong serial / no SDK / missing bag, and bag playback with and without loop."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = [pytest.mark.system]
REPO = Path(__file__).resolve().parents[1]
PERCEPTION_SRC = REPO / "src" / "perception_node"


class Proc:
    """The node process and its output lines."""

    def __init__(self, tmp: Path, name: str, params: dict[str, str], scenario: dict[str, Any] | None,
                 shim: bool = True) -> None:
        from perception_node.testing.fake_pyrealsense2 import SCENARIO_ENV, write_absent_shim, write_shim

        paths = [str(PERCEPTION_SRC), os.environ.get("PYTHONPATH", "")]
        env = dict(os.environ)
        # the fake SDK, or none at all (also where the real pyrealsense2 is installed)
        paths.insert(0, str(write_shim(tmp / "sdk") if shim else write_absent_shim(tmp / "no_sdk")))
        env.pop(SCENARIO_ENV, None)
        if scenario is not None:
            (tmp / f"{name}.json").write_text(json.dumps(scenario))
            env[SCENARIO_ENV] = str(tmp / f"{name}.json")
        env["PYTHONPATH"] = os.pathsep.join(paths)
        args = [a for k, v in params.items() for a in ("-p", f"{k}:={v}")]
        self.t0 = time.monotonic()
        self.p = subprocess.Popen(
            [sys.executable, "-c", "from perception_node.realsense_publisher import main; main()",
             "--ros-args", "-r", "__node:=camera", "--params-file", str(REPO / "config" / "robots" / "ur5e.yaml"),
             *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        threading.Thread(target=lambda: self.lines.extend(self.p.stdout or []), daemon=True).start()

    def text(self) -> str:
        return "".join(self.lines)

    def wait(self, timeout: float) -> tuple[int, float]:
        """Exit code and seconds since the start."""
        try:
            code = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.send_signal(signal.SIGUSR1)  # run_node's faulthandler prints every thread's stack
            time.sleep(1.0)
            self.p.kill()
            raise AssertionError(f"still running after {timeout} s:\n{self.text()[-3000:]}") from None
        time.sleep(0.1)  # the reader thread drains the pipe
        return code, time.monotonic() - self.t0

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.terminate()
        code, _ = self.wait(10)
        assert code in (0, -2, -15), self.text()[-3000:]


@pytest.fixture(scope="module")
def ros(ros_domain: int) -> Iterator[Any]:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    rclpy.init()
    node = rclpy.create_node("realsense_system_test")
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    yield node, ex
    node.destroy_node()
    rclpy.shutdown()


def _subscribe(ros: Any, prefix: str) -> dict[str, list[Any]]:
    from sensor_msgs.msg import CameraInfo, Image

    node, _ = ros
    got: dict[str, list[Any]] = {"color": [], "depth": [], "info": []}
    node.create_subscription(Image, f"{prefix}/color/image_raw", got["color"].append, 50)
    node.create_subscription(Image, f"{prefix}/aligned_depth_to_color/image_raw", got["depth"].append, 50)
    node.create_subscription(CameraInfo, f"{prefix}/color/camera_info", got["info"].append, 50)
    return got


def _spin_until(ros: Any, pred: Any, timeout: float, what: str, proc: Proc) -> None:
    _, ex = ros
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ex.spin_once(timeout_sec=0.05)
        if pred():
            return
    raise AssertionError(f"{what} not within {timeout} s\n{proc.text()[-3000:]}")


def _stamp(m: Any) -> int:
    return int(m.header.stamp.sec) * 10**9 + int(m.header.stamp.nanosec)


def test_live_frames_stall_and_unplug(ros: Any, tmp_path: Path) -> None:
    """serial:=1 arrives as an int and names the device 000000000001 (real serials are digits)."""
    from perception_node.testing.fake_pyrealsense2 import expected_color, expected_depth_m

    intr = {"fx": 300.0, "fy": 305.0, "ppx": 161.25, "ppy": 118.5, "model": "brown_conrady",
            "coeffs": [0.05, -0.1, 0.001, -0.002, 0.02]}
    scenario = {"color_intrinsics": intr, "depth_scale": 0.0001, "plane": {"z0": 0.9, "slope_x": 0.4, "slope_y": -0.3},
                "stalls": [[6, 1.0]], "disconnect_after_frame": 15, "reconnect_after_s": 1.0}
    got = _subscribe(ros, "rs_live")
    proc = Proc(tmp_path, "live", {"serial": "1", "width": "320", "height": "240", "fps": "30", "wait_timeout": "0.3",
                                   "frame_id": "rs_optical", "namespace_prefix": "rs_live"}, scenario)
    try:
        # frame numbers (the pattern's blue channel) climb to the unplug, then start again at 1
        def numbers() -> list[int]:
            return [int(np.frombuffer(bytes(m.data), np.uint8)[2]) for m in got["color"]]

        def restarted() -> bool:
            n = numbers()
            # and enough images to check their pairing below (a loaded machine drops frames: the SDK's
            # slow-reader behaviour, and the subscriber's shallow queue)
            return any(b < a for a, b in zip(n, n[1:], strict=False)) and len(n) >= 12 and n[-1] >= 3
        _spin_until(ros, restarted, 15, "frames after the reconnect", proc)
        assert proc.p.poll() is None, proc.text()
    finally:
        proc.stop()
    log = proc.text()
    assert "no frames within 300 ms: Frame didn't arrive within 300" in log  # the stall: logged, retried
    assert "Device disconnected. Failed to recconect" in log and "RealSense reconnected" in log

    color, depth, info = got["color"], got["depth"], got["info"]
    by_stamp, info_by_stamp = {_stamp(m): m for m in depth}, {_stamp(m): m for m in info}
    paired = [m for m in color if _stamp(m) in by_stamp and _stamp(m) in info_by_stamp]
    assert len(paired) >= len(color) - 2 >= 10  # each colour image has its depth and info, same stamp (the last
    c = paired[-1]                              # ones may have been in flight when the test stopped listening)
    assert (c.encoding, c.width, c.height, c.step, c.header.frame_id) == ("rgb8", 320, 240, 960, "rs_optical")
    n = int(np.frombuffer(bytes(c.data), np.uint8)[2])
    assert np.array_equal(np.frombuffer(bytes(c.data), np.uint8).reshape(240, 320, 3), expected_color(320, 240, n))

    d = by_stamp[_stamp(c)]
    assert (d.encoding, d.width, d.height, d.step, d.header.frame_id) == ("16UC1", 320, 240, 640, "rs_optical")
    mm = np.frombuffer(bytes(d.data), np.uint16).reshape(240, 320).astype(np.float64)
    want_mm = expected_depth_m(320, 240, scenario["plane"], intr) * 1000  # type: ignore[arg-type]
    assert np.max(np.abs(mm - want_mm)) <= 0.55  # 0.1 mm units rounded to mm: aligned to the colour geometry
    assert abs(mm[118, 161] - 900) <= 2 and 600 < mm.min() < mm.max() < 1500  # z0 at the principal point

    i = info_by_stamp[_stamp(c)]
    assert (i.width, i.height, i.distortion_model, i.header.frame_id) == (320, 240, "plumb_bob", "rs_optical")
    assert list(i.k) == [300.0, 0.0, 161.25, 0.0, 305.0, 118.5, 0.0, 0.0, 1.0]
    assert list(i.p) == [300.0, 0.0, 161.25, 0.0, 0.0, 305.0, 118.5, 0.0, 0.0, 0.0, 1.0, 0.0]
    assert list(i.d) == intr["coeffs"]
    stamps = [_stamp(m) for m in color]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    assert abs(stamps[-1] / 1e9 - time.time()) < 10


def test_startup_failures_exit_fast(ros: Any, tmp_path: Path) -> None:
    """No device must not reach pipeline.start() (the fake blocks there 15 s, as the SDK does)."""
    procs = {
        "no device": (Proc(tmp_path, "none", {}, {"devices": []}), "no RealSense device connected"),
        "wrong serial": (Proc(tmp_path, "serial", {"serial": "999"}, {}), "RealSense serial 999 is not connected (connected: 000000000001)"),
        "no bag": (Proc(tmp_path, "nobag", {"bag_file": str(tmp_path / "missing.bag")}, {}), "does not exist"),
    }
    for what, (proc, msg) in procs.items():  # the messages say the node never reached pipeline.start()
        code, dt = proc.wait(60)  # (bounds only: 3 nodes starting at once take > 10 s on a loaded machine)
        assert code != 0 and msg in proc.text(), (what, code, dt, proc.text()[-2000:])


def test_without_pyrealsense2_the_node_says_so_in_one_line_and_stays_up(ros: Any, tmp_path: Path) -> None:
    """No SDK (pyrealsense2 has no wheel for every platform): one error line, no crash, so the graph the node
    belongs to keeps running (test_ur5e_graph_system checks that robot/status then says "no camera")."""
    node, _ = ros
    proc = Proc(tmp_path, "nosdk", {"namespace_prefix": "rs_nosdk"}, None, shim=False)
    try:
        _spin_until(ros, lambda: "no camera: pyrealsense2 is not installed" in proc.text(), 10, "the error line", proc)
        assert proc.p.poll() is None, proc.text()  # still up
        assert node.count_publishers("/rs_nosdk/color/image_raw") == 0
    finally:
        proc.stop()
    errors = [line for line in proc.lines if "ERROR" in line or "Traceback" in line]
    assert len(errors) == 1 and "pip install pyrealsense2==2.59.1.11053" in errors[0], proc.text()


def test_frames_carry_their_capture_time_and_the_camera_link(ros: Any, tmp_path: Path) -> None:
    """Frames delivered 0.25 s after their capture (global time domain, the D400 default) are stamped with the
    capture time, not the publish time; camera_link -> the optical frame is on /tf_static as realsense-ros has it."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import Image
    from tf2_msgs.msg import TFMessage

    node, _ = ros
    latency = 0.25  # s
    got: list[tuple[Any, float]] = []  # (image, wall time of receipt in s)
    node.create_subscription(Image, "rs_stamp/color/image_raw", lambda m: got.append((m, time.time())), 50)
    static: list[Any] = []
    node.create_subscription(TFMessage, "/tf_static", static.append,
                             QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                                        reliability=ReliabilityPolicy.RELIABLE))
    proc = Proc(tmp_path, "stamp", {"width": "320", "height": "240", "fps": "15", "namespace_prefix": "rs_stamp",
                                    "link_frame": "camera_link"}, {"capture_latency_s": latency})
    try:
        _spin_until(ros, lambda: len(got) >= 6 and bool(static), 20, "6 frames and /tf_static", proc)
    finally:
        proc.stop()
    for m, received in got:  # a publish-time stamp would be a few ms before the receipt
        assert received - _stamp(m) / 1e9 >= latency, (received, _stamp(m))
    t = next(t for msg in static for t in msg.transforms if t.child_frame_id == "camera_color_optical_frame")
    q = t.transform.rotation
    assert t.header.frame_id == "camera_link" and (q.x, q.y, q.z, q.w) == (-0.5, 0.5, -0.5, 0.5)


def test_bag_playback_loop_and_once(ros: Any, tmp_path: Path) -> None:
    from perception_node.testing.fake_pyrealsense2 import write_bag

    intr = {"fx": 50.0, "fy": 51.0, "ppx": 31.5, "ppy": 23.5, "model": "brown_conrady", "coeffs": [0.1, 0.0, 0.0, 0.0, 0.0]}
    looped = write_bag(tmp_path / "loop.bag", [((i * 40, 7, 9), 0.5 + 0.1 * i) for i in range(4)], fps=30,
                       color_intrinsics=intr)
    once = write_bag(tmp_path / "once.bag", [((i * 4, 1, 2), 1.0 + 0.01 * i) for i in range(60)], fps=20)
    got_l, got_o = _subscribe(ros, "rs_loop"), _subscribe(ros, "rs_once")
    p_loop = Proc(tmp_path, "bagloop", {"bag_file": str(looped), "loop": "true", "namespace_prefix": "rs_loop"}, {})
    p_once = Proc(tmp_path, "bagonce", {"bag_file": str(once), "loop": "false", "wait_timeout": "0.5",
                                        "namespace_prefix": "rs_once"}, {})
    try:
        def idx(msgs: list[Any], step: int) -> list[int]:
            return [int(np.frombuffer(bytes(m.data), np.uint8)[0]) // step for m in msgs]

        def wraps() -> int:
            s = idx(got_l["color"], 40)
            return sum(b < a for a, b in zip(s, s[1:], strict=False))
        _spin_until(ros, lambda: wraps() >= 2 and p_once.p.poll() is not None, 60, "2 loops and the end of the once bag",
                    p_once if p_loop.p.poll() is None else p_loop)
    finally:
        p_loop.stop()
    code, _ = p_once.wait(5)
    assert code == 0 and "played once (loop: false); shutting down" in p_once.text(), p_once.text()[-2000:]

    seq = idx(got_l["color"], 40)
    assert all(b == (a + 1) % 4 for a, b in zip(seq, seq[1:], strict=False)), seq  # 0 1 2 3 0 1 ...
    assert got_l["depth"] and got_l["info"], p_loop.text()[-2000:]
    d = got_l["depth"][-1]
    k = int(np.frombuffer(bytes(d.data), np.uint16)[0])
    assert k in (500, 600, 700, 800) and set(np.frombuffer(bytes(d.data), np.uint16).tolist()) == {k}
    i = got_l["info"][-1]
    assert (i.width, i.height, list(i.k)) == (64, 48, [50.0, 0.0, 31.5, 0.0, 51.0, 23.5, 0.0, 0.0, 1.0])

    seq_o = idx(got_o["color"], 4)
    assert seq_o and seq_o == sorted(set(seq_o)) and seq_o[-1] == 59, (seq_o, p_once.text()[-2000:])  # in order, no repeats, to the last frame
