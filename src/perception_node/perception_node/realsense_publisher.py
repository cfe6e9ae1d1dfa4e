"""realsense_publisher: the only process that opens the RealSense (two pyrealsense2 processes cannot
share a camera). Publishes colour (rgb8), depth aligned to colour (16UC1, mm) and the colour
CameraInfo, live from a device or from a recorded RealSense .bag file, each stamped with the frame's
capture time (core.realsense.CaptureClock: the SDK's timestamp in its time domain), and, as realsense-ros
does, the static `link_frame` (camera_link) -> `frame_id` (camera_color_optical_frame) on /tf_static.

pyrealsense2 is optional (`pip install pyrealsense2==2.59.1.11053`, a wheel for x86_64 Linux; it needs the
libusb-1.0-0 Debian package; scripts/setup.sh installs it where a wheel exists). Without it the node logs
one error line and stays up publishing nothing, so the rest of the graph keeps running (the skills node
reports "no camera" on robot/status).
With no device, `pipeline.start()` would block for 15 s, so `query_devices()` is checked first.
Frame timeouts are logged and retried; after an unplug the node waits for the device and restarts the
pipeline; a bag played once (`loop: false`) shuts the node down (exit 0) when it ends.
Tested against perception_node.testing.fake_pyrealsense2 (docs/perception.md), never a real camera.
"""
from __future__ import annotations

import importlib
import threading
import time
from pathlib import Path
from typing import Any

from rclpy.time import Time
from sensor_msgs.msg import CameraInfo, Image

from monologue_common.params import NODE_OPTIONS, parameter_values, warn_unused
from monologue_common.runtime import Component, TypedNode, run_node

from .core.realsense import (
    CHANNELS,
    OPTICAL_IN_LINK_QUATERNION,
    CaptureClock,
    camera_info_fields,
    color_encoding,
    depth_units_to_mm,
)
from .core.settings import RealsenseSettings, realsense_settings_from_parameters

NO_SDK = ("no camera: pyrealsense2 is not installed (pip install pyrealsense2==2.59.1.11053 where a wheel exists, "
          "and apt-get install libusb-1.0-0; or camera_driver: realsense_ros; docs/perception.md)")


def import_pyrealsense2() -> Any:
    try:
        return importlib.import_module("pyrealsense2")
    except ImportError as e:
        raise ImportError(f"{NO_SDK}: {e}") from e


def _same_serial(wanted: str, serial: str) -> bool:
    """`serial:=001622070408` is parsed as the integer 1622070408: compare digits-only serials as numbers."""
    return wanted == serial or (wanted.isdigit() and serial.isdigit() and int(wanted) == int(serial))


class RealsensePublisher(TypedNode):
    def __init__(self) -> None:
        super().__init__("realsense_publisher", **NODE_OPTIONS)
        p = realsense_settings_from_parameters(parameter_values(self))
        warn_unused(self, list(p.unused))
        self._p: RealsenseSettings = p
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pipeline: Any = None
        try:
            rs = import_pyrealsense2()
        except ImportError as e:  # one line; the node stays up so the rest of the graph does
            self.get_logger().error(str(e).splitlines()[0])
            return
        self._rs = rs
        self._capture = CaptureClock()  # not _clock: rclpy.Node has one
        cfg = rs.config()
        bag = p.bag_file
        if bag:
            if not Path(bag).expanduser().is_file():
                raise ValueError(f"bag_file {bag} does not exist")
            cfg.enable_device_from_file(str(Path(bag).expanduser()), repeat_playback=p.loop)
        else:
            found = self._require_device()
            if p.serial:
                cfg.enable_device(found)
            w, h, fps = p.width, p.height, p.fps
            cfg.enable_stream(rs.stream.color, w, h, rs.format.rgb8, fps)
            cfg.enable_stream(rs.stream.depth, w, h, rs.format.z16, fps)
        self._cfg, self._bag = cfg, bag
        prefix = p.namespace_prefix.rstrip("/")
        self._pub_color = self.create_publisher(Image, f"{prefix}/color/image_raw", 5)
        self._pub_depth = self.create_publisher(Image, f"{prefix}/aligned_depth_to_color/image_raw", 5)
        self._pub_info = self.create_publisher(CameraInfo, f"{prefix}/color/camera_info", 5)
        if bag and p.bag_wait_for_subscribers > 0:
            self._wait_for_subscribers(p.bag_wait_for_subscribers)
        self._pipeline = rs.pipeline()
        self._start()
        self._align = rs.align(rs.stream.color)
        self._publish_link()  # once the device answered (a failed __init__ leaves no entities to tear down)
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        self.get_logger().info(f"publishing {'bag ' + bag if bag else 'device'} on {prefix}/...")

    def _publish_link(self) -> None:
        """link_frame -> frame_id (the optical rotation, no offset: our camera_link sits at the colour
        sensor) on /tf_static, as realsense-ros publishes camera_link -> camera_color_optical_frame."""
        if not self._p.link_frame:
            return
        try:
            from geometry_msgs.msg import TransformStamped
            from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
            from tf2_msgs.msg import TFMessage
        except ImportError as e:  # tf2_msgs is not on PyPI
            self.get_logger().warning(f"no {self._p.link_frame} -> {self._p.frame_id} on /tf_static: {e}")
            return
        t = TransformStamped()
        t.header.stamp = self.get_clock().now().to_msg()
        t.header.frame_id, t.child_frame_id = self._p.link_frame, self._p.frame_id
        r = t.transform.rotation
        r.x, r.y, r.z, r.w = OPTICAL_IN_LINK_QUATERNION
        qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
        self._pub_tf = self.create_publisher(TFMessage, "/tf_static", qos)
        self._pub_tf.publish(TFMessage(transforms=[t]))

    def _wait_for_subscribers(self, timeout: float) -> None:
        """Playback starts with pipeline.start(): hold it until every topic has a subscriber (discovery
        takes a moment, and a bag played once to nobody is lost), or `timeout` s, then play anyway."""
        pubs = (self._pub_color, self._pub_depth, self._pub_info)
        deadline = time.monotonic() + timeout
        while any(pb.get_subscription_count() == 0 for pb in pubs):
            if time.monotonic() >= deadline:
                missing = [pb.topic_name for pb in pubs if pb.get_subscription_count() == 0]
                self.get_logger().warning(f"no subscriber on {', '.join(missing)} after {timeout} s; playing anyway")
                return
            time.sleep(0.05)

    def _require_device(self) -> str:
        """The connected device's serial (the one `serial` names, in the device's spelling); RuntimeError if
        there is none, as without one `pipeline.start()` blocks 15 s and then fails."""
        serials = [str(d.get_info(self._rs.camera_info.serial_number)) for d in self._rs.context().query_devices()]
        if not serials:
            raise RuntimeError("no RealSense device connected (query_devices() is empty); "
                               "set bag_file to play a recording")
        serial = self._p.serial
        match = [s for s in serials if not serial or _same_serial(serial, s)]
        if not match:
            raise RuntimeError(f"RealSense serial {serial} is not connected (connected: {', '.join(serials)})")
        return match[0]

    def _start(self) -> None:
        profile = self._pipeline.start(self._cfg)
        dev = profile.get_device()
        self._depth_scale_m = float(dev.first_depth_sensor().get_depth_scale())  # metres per device unit
        self._playback = dev.as_playback() if self._bag else None

    def _pipeline_active(self) -> bool:
        try:
            self._pipeline.get_active_profile()
            return True
        except RuntimeError:
            return False

    def _reconnect(self) -> None:
        """After an unplug the SDK's own restart failed and left the pipeline stopped (every further
        wait_for_frames would raise at once): wait for the device, then start again."""
        while not self._stop.is_set():
            try:
                self._require_device()
                self._start()
                self.get_logger().info("RealSense reconnected; streaming again")
                return
            except RuntimeError as e:
                self.get_logger().warning(f"waiting for the RealSense: {e}", throttle_duration_sec=5.0)
                self._stop.wait(self._p.wait_timeout)

    def _loop(self) -> None:
        timeout_ms = int(self._p.wait_timeout * 1000)
        while not self._stop.is_set() and self.context.ok():
            try:
                frames = self._pipeline.wait_for_frames(timeout_ms)
            except RuntimeError as e:
                if self._stop.is_set():
                    return
                if (self._playback is not None and not self._p.loop
                        and self._playback.current_status() == self._rs.playback_status.stopped):
                    self.get_logger().info(f"bag_file {self._bag} played once (loop: false); shutting down")
                    self.context.try_shutdown()
                    return
                if not self._pipeline_active():
                    self.get_logger().error(f"RealSense lost: {e}")
                    self._reconnect()
                else:
                    self.get_logger().error(f"no frames within {timeout_ms} ms: {e}", throttle_duration_sec=5.0)
                continue
            try:
                self._publish(frames)
            except ValueError as e:
                self.get_logger().error(str(e), throttle_duration_sec=5.0)
            except Exception:
                if not self.context.ok():  # Ctrl-C shut rclpy down before destroy_node() stopped this thread
                    return
                raise

    def _publish(self, frames: Any) -> None:
        import numpy as np

        aligned = self._align.process(frames)
        color, depth = aligned.get_color_frame(), aligned.get_depth_frame()
        if not color or not depth:
            return
        # capture time (the colour frame's; depth is aligned to it), not publish time: perception looks the
        # camera pose up on /tf at this stamp
        now = self.get_clock().now()
        t = self._capture.stamp(color.get_timestamp(), str(color.get_frame_timestamp_domain()),
                              now.nanoseconds * 1e-9, recorded=bool(self._bag))
        stamp = Time(nanoseconds=int(round(t * 1e9)), clock_type=now.clock_type).to_msg()
        fid = self._p.frame_id
        enc = color_encoding(str(color.profile.format()))
        c = np.asanyarray(color.get_data())
        d16 = depth_units_to_mm(np.asanyarray(depth.get_data()), self._depth_scale_m)
        img = Image(height=c.shape[0], width=c.shape[1], encoding=enc, step=c.shape[1] * CHANNELS[enc],
                    data=c.tobytes())
        dep = Image(height=d16.shape[0], width=d16.shape[1], encoding="16UC1", step=d16.shape[1] * 2,
                    data=d16.tobytes())
        intr = color.profile.as_video_stream_profile().get_intrinsics()
        f = camera_info_fields(intr.width, intr.height, intr.fx, intr.fy, intr.ppx, intr.ppy,
                               str(intr.model), list(intr.coeffs))
        info = CameraInfo(width=f.width, height=f.height, distortion_model=f.distortion_model,
                          k=f.k, p=f.p, r=f.r, d=f.d)
        for msg in (img, dep, info):
            msg.header.stamp, msg.header.frame_id = stamp, fid
        self._pub_color.publish(img)
        self._pub_depth.publish(dep)
        self._pub_info.publish(info)

    def destroy_node(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        try:
            if self._pipeline is not None:
                self._pipeline.stop()
        except RuntimeError:
            pass
        super().destroy_node()  # type: ignore[no-untyped-call]  # unannotated in rclpy


# The node in an in-process graph (monologue-up container:=true), with the threads main() spins it on.
COMPONENT = Component(RealsensePublisher, threads=2)


def main(args: list[str] | None = None) -> None:
    run_node(RealsensePublisher, threads=2, args=args)
