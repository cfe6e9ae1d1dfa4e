"""realsense_publisher: the only process that opens the RealSense (two pyrealsense2 processes cannot
share a camera). Publishes colour (rgb8), depth aligned to colour (16UC1, mm) and the colour
CameraInfo, live from a device or from a recorded RealSense .bag file.

pyrealsense2 is optional (`pip install pyrealsense2==2.59.1.11053`; it needs the libusb-1.0-0
Debian package): it is imported when the node starts, with a clear error if it is missing.
With no device, `pipeline.start()` would block for 15 s, so `query_devices()` is checked first.
"""
from __future__ import annotations

import importlib
import threading
from pathlib import Path
from typing import Any

from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image

from monologue_common.runtime import run_node


def import_pyrealsense2() -> Any:
    try:
        return importlib.import_module("pyrealsense2")
    except ImportError as e:
        raise RuntimeError(
            f"pyrealsense2 is not installed ({e}): pip install pyrealsense2==2.59.1.11053 "
            "(and apt-get install libusb-1.0-0); see docs/perception.md") from e


class RealsensePublisher(Node):
    def __init__(self) -> None:
        super().__init__("realsense_publisher")
        p = {name: self.declare_parameter(name, default).value for name, default in {
            "serial": "", "bag_file": "", "loop": True, "width": 640, "height": 480, "fps": 15,
            "frame_id": "camera_color_optical_frame", "namespace_prefix": "camera", "wait_timeout": 5.0,
        }.items()}
        if int(p["width"]) <= 0 or int(p["height"]) <= 0 or int(p["fps"]) <= 0 or float(p["wait_timeout"]) <= 0:
            raise ValueError("width, height, fps and wait_timeout must be > 0")
        rs = import_pyrealsense2()
        self._rs, self._p = rs, p
        cfg = rs.config()
        bag = str(p["bag_file"])
        if bag:
            if not Path(bag).expanduser().is_file():
                raise ValueError(f"bag_file {bag} does not exist")
            cfg.enable_device_from_file(str(Path(bag).expanduser()), repeat_playback=bool(p["loop"]))
        else:
            devices = rs.context().query_devices()
            if len(devices) == 0:
                raise RuntimeError("no RealSense device connected (query_devices() is empty); "
                                   "set bag_file to play a recording")
            if p["serial"]:
                cfg.enable_device(str(p["serial"]))
            w, h, fps = int(p["width"]), int(p["height"]), int(p["fps"])
            cfg.enable_stream(rs.stream.color, w, h, rs.format.rgb8, fps)
            cfg.enable_stream(rs.stream.depth, w, h, rs.format.z16, fps)
        self._pipeline = rs.pipeline()
        profile = self._pipeline.start(cfg)
        depth_sensor = profile.get_device().first_depth_sensor()
        self._depth_scale_mm = depth_sensor.get_depth_scale() * 1000.0  # device units -> mm
        self._align = rs.align(rs.stream.color)
        prefix = str(p["namespace_prefix"]).rstrip("/")
        self._pub_color = self.create_publisher(Image, f"{prefix}/color/image_raw", 5)
        self._pub_depth = self.create_publisher(Image, f"{prefix}/aligned_depth_to_color/image_raw", 5)
        self._pub_info = self.create_publisher(CameraInfo, f"{prefix}/color/camera_info", 5)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        self.get_logger().info(f"publishing {'bag ' + bag if bag else 'device'} on {prefix}/...")

    def _loop(self) -> None:
        import numpy as np

        timeout_ms = int(float(self._p["wait_timeout"]) * 1000)
        while not self._stop.is_set():
            try:
                frames = self._pipeline.wait_for_frames(timeout_ms)
            except RuntimeError as e:
                self.get_logger().error(f"no frames within {timeout_ms} ms: {e}", throttle_duration_sec=5.0)
                continue
            aligned = self._align.process(frames)
            color, depth = aligned.get_color_frame(), aligned.get_depth_frame()
            if not color or not depth:
                continue
            stamp = self.get_clock().now().to_msg()
            fid = str(self._p["frame_id"])
            c = np.asanyarray(color.get_data())
            d = np.asanyarray(depth.get_data()).astype(np.float64) * self._depth_scale_mm
            d16 = np.clip(np.round(d), 0, 65535).astype(np.uint16)
            img = Image(height=c.shape[0], width=c.shape[1], encoding="rgb8", step=c.shape[1] * 3,
                        data=c.tobytes())
            dep = Image(height=d16.shape[0], width=d16.shape[1], encoding="16UC1", step=d16.shape[1] * 2,
                        data=d16.tobytes())
            intr = color.profile.as_video_stream_profile().get_intrinsics()
            info = CameraInfo(width=intr.width, height=intr.height, distortion_model="plumb_bob",
                              k=[intr.fx, 0.0, intr.ppx, 0.0, intr.fy, intr.ppy, 0.0, 0.0, 1.0],
                              p=[intr.fx, 0.0, intr.ppx, 0.0, 0.0, intr.fy, intr.ppy, 0.0, 0.0, 0.0, 1.0, 0.0],
                              r=[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0], d=[float(v) for v in intr.coeffs])
            for msg in (img, dep, info):
                msg.header.stamp, msg.header.frame_id = stamp, fid
            self._pub_color.publish(img)
            self._pub_depth.publish(dep)
            self._pub_info.publish(info)

    def destroy_node(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        try:
            self._pipeline.stop()
        except RuntimeError:
            pass
        super().destroy_node()


def main(args: list[str] | None = None) -> None:
    run_node(RealsensePublisher, threads=2, args=args)
