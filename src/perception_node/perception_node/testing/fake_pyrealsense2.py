"""A fake of the pyrealsense2 SDK boundary for tests (no camera, no librealsense): the subset
realsense_publisher uses, with the real SDK's names, return types, timing and faults.

Use it in-process with `sys.modules["pyrealsense2"] = fake_pyrealsense2` (then `configure(...)`), or for
a node started as its own process: `write_shim(dir)` writes `dir/pyrealsense2/__init__.py`, which
re-exports this module; put `dir` (and the perception_node source) on PYTHONPATH and set the
environment variable `FAKE_PYREALSENSE2_SCENARIO` to a JSON file with `Scenario` fields, e.g.
`{"devices": [{"serial": "0001"}], "stalls": [[5, 0.6]], "disconnect_after_frame": 20}`.

What it models (as librealsense 2.5x does it):
- `context().query_devices()`: a device list, len 0 with `devices: []`; devices unplugged mid-stream
  (`disconnect_after_frame`) are gone from it until `reconnect_after_s` has passed.
- `config.enable_stream/enable_device/enable_device_from_file(path, repeat_playback=True)`;
  `pipeline.start(config)` returns a profile, raises RuntimeError "Couldn't resolve requests" for a mode
  the device lacks, and with no (matching) device blocks `no_device_block_s` (15 s) and raises
  "No device connected" - as the SDK waits for a device. start twice / stop before start raise.
- `wait_for_frames(timeout_ms=5000)`: frames paced at the stream's fps (real-time); when none arrives within
  the timeout (a `stalls` gap, the end of a non-repeating bag) it sleeps the timeout and raises
  RuntimeError("Frame didn't arrive within N"); after an unplug it sleeps the timeout, fails to restart
  and raises "Device disconnected. Failed to recconect: No device connected" + N (the SDK's spelling and
  concatenation) and, as the SDK's unsafe_stop() left it, the pipeline is stopped: later calls raise
  "wait_for_frames cannot be called before start()" at once. If the device is back by then, the
  restart succeeds and frames resume at frame number 1.
- Frames: colour is a known pattern, `expected_color(w, h, frame_number)`: R = 255*u/(w-1),
  G = 255*v/(h-1), B = frame_number % 256. Depth is a tilted plane Z = z0 + slope_x*X + slope_y*Y
  (camera frame, metres; `expected_depth_m`) in device units of `depth_scale`. Unaligned depth frames
  are rendered through the depth sensor's own intrinsics (`depth_intrinsics`, another fx), so only
  `align(stream.color).process()` gives depth in the colour image's geometry (the fake renders the
  plane again; the depth-to-colour extrinsics are taken as identity).
  `get_timestamp()` is the capture time in ms in `get_frame_timestamp_domain()` (scenario `timestamp_domain`:
  host time for global_time / system_time, the device's uptime for hardware_clock); frames are delivered
  `capture_latency_s` after their capture. `get_data()` a read-only HxWx3 uint8 / HxW uint16 buffer.
- `.bag` playback: the SDK reads ROS1 bags; this fake cannot. It reads a JSON stand-in with the `.bag`
  path the node is given (`write_bag(path, ...)`): {"fake_pyrealsense2_bag": 1, "width", "height", "fps",
  "depth_scale", "color_intrinsics", "frames": [{"color": [r, g, b], "depth_m": z}, ...]} (each frame a
  uniform colour and a flat depth). A real bag (or any other file) makes `start()` raise RuntimeError
  like the SDK's "Failed to create ros reader". repeat_playback=True loops (frame numbers restart);
  False plays once, then `device.as_playback().current_status()` is `playback_status.stopped` and
  `wait_for_frames` times out, as in the SDK.
"""
from __future__ import annotations

import enum
import json
import os
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

SCENARIO_ENV = "FAKE_PYREALSENSE2_SCENARIO"
BAG_MAGIC = "fake_pyrealsense2_bag"
__version__ = "2.59.1-fake"

# ---- enums (str() as pybind11 prints them: "stream.color") ----------------------------------------------


class _Enum(enum.Enum):
    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


class stream(_Enum):  # noqa: N801 - the SDK's names
    any = 0
    depth = 1
    color = 2
    infrared = 3


class format(_Enum):  # noqa: N801,A001
    any = 0
    z16 = 1
    rgb8 = 5
    bgr8 = 6
    rgba8 = 7
    bgra8 = 8
    yuyv = 9


class distortion(_Enum):  # noqa: N801
    none = 0
    modified_brown_conrady = 1
    inverse_brown_conrady = 2
    ftheta = 3
    brown_conrady = 4
    kannala_brandt4 = 5


class playback_status(_Enum):  # noqa: N801
    unknown = 0
    playing = 1
    paused = 2
    stopped = 3


class timestamp_domain(_Enum):  # noqa: N801
    hardware_clock = 0
    system_time = 1
    global_time = 2


class camera_info(_Enum):  # noqa: N801
    name = 0  # type: ignore[assignment]  # pyrealsense2's member name shadows Enum.name
    serial_number = 1
    product_line = 11


# ---- scenario ------------------------------------------------------------------------------------


@dataclass
class Scenario:
    """What the fake camera does. Intrinsics dicts: fx, fy, ppx, ppy (pixels), model (distortion name),
    coeffs (5); missing principal points default to the image centre. Plane in metres."""

    devices: list[dict[str, str]] = field(default_factory=lambda: [
        {"serial": "000000000001", "name": "Intel RealSense D435 (fake)"}])
    # (width, height, fps) both streams offer; start() with anything else: "Couldn't resolve requests"
    modes: list[list[int]] = field(default_factory=lambda: [
        [w, h, f] for w, h in ((320, 240), (424, 240), (640, 480), (848, 480), (1280, 720)) for f in (6, 15, 30)])
    color_intrinsics: dict[str, Any] = field(default_factory=lambda: {
        "fx": 610.0, "fy": 612.0, "model": "inverse_brown_conrady", "coeffs": [0.0] * 5})
    depth_intrinsics: dict[str, Any] = field(default_factory=lambda: {
        "fx": 385.0, "fy": 385.0, "model": "brown_conrady", "coeffs": [0.0] * 5})
    depth_scale: float = 0.001  # metres per z16 unit
    plane: dict[str, float] = field(default_factory=lambda: {"z0": 0.8, "slope_x": 0.3, "slope_y": -0.2})
    stalls: list[list[float]] = field(default_factory=list)  # [after_frame_number, gap_s]: no frames for gap_s
    disconnect_after_frame: int = 0  # > 0: the device is unplugged after this frame number
    reconnect_after_s: float = -1.0  # >= 0: and plugged in again this long after the unplug
    no_device_block_s: float = 15.0  # how long start() waits for a missing device before raising
    # frame.get_timestamp() (ms) is the capture time in this timestamp_domain: global_time (the D400 default:
    # the device clock mapped onto the host's) or system_time = host time; hardware_clock = ms since the
    # device powered up (DEVICE_BOOT_S before the fake was imported)
    timestamp_domain: str = "global_time"
    capture_latency_s: float = 0.0  # s from a frame's capture to its delivery by wait_for_frames

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Scenario:
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown fake_pyrealsense2 scenario keys {sorted(unknown)}; known: {sorted(known)}")
        return cls(**d)


_lock = threading.Lock()
DEVICE_BOOT_S = 1000.0  # s the fake device has been powered up when this module is imported
_boot_monotonic = time.monotonic() - DEVICE_BOOT_S
_scenario: Scenario | None = None
_unplugged_at: float | None = None  # monotonic time of the unplug, shared by contexts and pipelines


def configure(scenario: Scenario | dict[str, Any] | None = None) -> Scenario:
    """Set (or reset to the default / $FAKE_PYREALSENSE2_SCENARIO) the scenario; returns it."""
    global _scenario, _unplugged_at
    with _lock:
        if scenario is None:
            path = os.environ.get(SCENARIO_ENV, "")
            scenario = Scenario.from_dict(json.loads(Path(path).read_text())) if path else Scenario()
        elif isinstance(scenario, dict):
            scenario = Scenario.from_dict(scenario)
        _scenario, _unplugged_at = scenario, None
        return scenario


def _sc() -> Scenario:
    return _scenario if _scenario is not None else configure()


def _plugged(serial: str | None = None) -> list[dict[str, str]]:
    """The devices connected now (an unplugged device is back after reconnect_after_s)."""
    sc = _sc()
    if _unplugged_at is not None and not (
            sc.reconnect_after_s >= 0 and time.monotonic() - _unplugged_at >= sc.reconnect_after_s):
        return []
    return [d for d in sc.devices if serial in (None, "", d.get("serial"))]


def expected_color(width: int, height: int, frame_number: int) -> NDArray[np.uint8]:
    """The live colour pattern (HxWx3 RGB) of frame `frame_number`."""
    u = np.arange(width, dtype=np.int64) * 255 // max(width - 1, 1)
    v = np.arange(height, dtype=np.int64) * 255 // max(height - 1, 1)
    img = np.empty((height, width, 3), np.uint8)
    img[:, :, 0] = u[None, :]
    img[:, :, 1] = v[:, None]
    img[:, :, 2] = frame_number % 256
    return img


def _intrinsics_dict(d: dict[str, Any], width: int, height: int) -> dict[str, Any]:
    out = {"ppx": (width - 1) / 2.0, "ppy": (height - 1) / 2.0, "model": "none", "coeffs": [0.0] * 5, **d}
    return {**out, "width": width, "height": height}


def expected_depth_m(width: int, height: int, plane: dict[str, float] | None = None,
                     intrinsics: dict[str, Any] | None = None) -> NDArray[np.float64]:
    """The plane Z = z0 + slope_x*X + slope_y*Y (camera frame, metres) as a depth image (HxW metres, 0
    where the ray misses it) through `intrinsics` (default: the scenario's colour intrinsics, i.e. what
    aligned depth shows): Z = z0 / (1 - slope_x*(u-ppx)/fx - slope_y*(v-ppy)/fy)."""
    sc = _sc()
    pl = sc.plane if plane is None else plane
    k = _intrinsics_dict(sc.color_intrinsics if intrinsics is None else intrinsics, width, height)
    x = (np.arange(width, dtype=np.float64)[None, :] - float(k["ppx"])) / float(k["fx"])
    y = (np.arange(height, dtype=np.float64)[:, None] - float(k["ppy"])) / float(k["fy"])
    den = 1.0 - pl.get("slope_x", 0.0) * x - pl.get("slope_y", 0.0) * y
    z = np.where(den > 1e-6, float(pl["z0"]) / np.where(den > 1e-6, den, 1.0), 0.0)
    return np.asarray(z, dtype=np.float64)


def _to_units(z_m: NDArray[np.float64], depth_scale: float) -> NDArray[np.uint16]:
    return np.clip(np.round(np.where(z_m > 0, z_m, 0.0) / depth_scale), 0, 65535).astype(np.uint16)


def write_bag(path: str | Path, frames: Sequence[tuple[Sequence[int], float]], width: int = 64,
              height: int = 48, fps: int = 15, depth_scale: float = 0.001,
              color_intrinsics: dict[str, Any] | None = None) -> Path:
    """Write the JSON stand-in for a RealSense .bag: `frames` as ((r, g, b), depth metres) pairs."""
    p = Path(path)
    p.write_text(json.dumps({
        BAG_MAGIC: 1, "width": width, "height": height, "fps": fps, "depth_scale": depth_scale,
        "color_intrinsics": color_intrinsics or {"fx": 50.0, "fy": 50.0, "model": "brown_conrady",
                                                 "coeffs": [0.1, -0.05, 0.001, 0.002, 0.01]},
        "frames": [{"color": list(c), "depth_m": z} for c, z in frames]}))
    return p


def write_shim(directory: str | Path) -> Path:
    """Write `directory/pyrealsense2/__init__.py` re-exporting this fake; returns `directory` (put it on
    PYTHONPATH, with perception_node importable, for `import pyrealsense2` to find the fake)."""
    pkg = Path(directory) / "pyrealsense2"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text(
        '"""Test shim: the fake SDK (perception_node.testing.fake_pyrealsense2), never the real one."""\n'
        "import sys\n\nfrom perception_node.testing import fake_pyrealsense2\n\n"
        "sys.modules[__name__] = fake_pyrealsense2\n")
    return Path(directory)


def write_absent_shim(directory: str | Path) -> Path:
    """Write `directory/pyrealsense2/__init__.py` that fails to import as a missing SDK does (a platform without
    a wheel), also where the real pyrealsense2 is installed; returns `directory` (put it first on PYTHONPATH)."""
    pkg = Path(directory) / "pyrealsense2"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text(
        '"""Test shim: pyrealsense2 missing."""\n'
        "raise ModuleNotFoundError(\"No module named 'pyrealsense2' (test shim: no wheel here)\",\n"
        "                          name='pyrealsense2')\n")
    return Path(directory)


# ---- SDK objects ---------------------------------------------------------------------------------


class intrinsics:  # noqa: N801
    """rs.intrinsics: width, height (px), ppx, ppy, fx, fy (px), model (rs.distortion), coeffs (5)."""

    def __init__(self, d: dict[str, Any]) -> None:
        self.width, self.height = int(d["width"]), int(d["height"])
        self.ppx, self.ppy, self.fx, self.fy = float(d["ppx"]), float(d["ppy"]), float(d["fx"]), float(d["fy"])
        self.model = distortion[str(d.get("model", "none"))]
        self.coeffs = [float(c) for c in d.get("coeffs", [0.0] * 5)]

    def __repr__(self) -> str:
        return (f"[ {self.width}x{self.height}  p[{self.ppx} {self.ppy}]  f[{self.fx} {self.fy}]  "
                f"{self.model.name.replace('_', ' ').title()} {self.coeffs} ]")


class stream_profile:  # noqa: N801
    def __init__(self, kind: stream, fmt: format, fps: int, intr: dict[str, Any]) -> None:
        self._kind, self._fmt, self._fps, self._intr = kind, fmt, fps, intr

    def stream_type(self) -> stream:
        return self._kind

    def format(self) -> format:
        return self._fmt

    def fps(self) -> int:
        return self._fps

    def is_video_stream_profile(self) -> bool:
        return True

    def as_video_stream_profile(self) -> video_stream_profile:
        return video_stream_profile(self._kind, self._fmt, self._fps, self._intr)


class video_stream_profile(stream_profile):  # noqa: N801
    def width(self) -> int:
        return int(self._intr["width"])

    def height(self) -> int:
        return int(self._intr["height"])

    def get_intrinsics(self) -> intrinsics:
        return intrinsics(self._intr)


class frame:  # noqa: N801
    """A frame; an empty one (the SDK's missing frame) is falsy and raises on access."""

    def __init__(self, data: NDArray[Any] | None = None, profile: stream_profile | None = None,
                 number: int = 0, timestamp_ms: float = 0.0,
                 domain: timestamp_domain = timestamp_domain.global_time) -> None:
        if data is not None:
            data = data.copy()
            data.flags.writeable = False
        self._data, self._profile, self._number, self._ts = data, profile, number, timestamp_ms
        self._domain = domain

    def __bool__(self) -> bool:
        return self._data is not None

    def _check(self) -> None:
        if self._data is None:
            raise RuntimeError("null pointer passed for argument \"frame\"")

    def get_data(self) -> NDArray[Any]:
        self._check()
        assert self._data is not None
        return self._data

    def get_timestamp(self) -> float:
        self._check()
        return self._ts

    def get_frame_timestamp_domain(self) -> timestamp_domain:
        self._check()
        return self._domain

    def get_frame_number(self) -> int:
        self._check()
        return self._number

    def get_profile(self) -> stream_profile:
        self._check()
        assert self._profile is not None
        return self._profile

    @property
    def profile(self) -> stream_profile:
        return self.get_profile()

    @property
    def data(self) -> NDArray[Any]:
        return self.get_data()

    def get_width(self) -> int:
        return int(self.get_data().shape[1])

    def get_height(self) -> int:
        return int(self.get_data().shape[0])

    def get_distance(self, x: int, y: int) -> float:
        """Depth frames: metres at pixel (x, y)."""
        return float(self.get_data()[y, x]) * _sc().depth_scale


video_frame = depth_frame = frame


class composite_frame:  # noqa: N801
    """rs.composite_frame / frameset."""

    def __init__(self, frames: list[frame]) -> None:
        self._frames = frames

    def __bool__(self) -> bool:
        return bool(self._frames)

    def __len__(self) -> int:
        return len(self._frames)

    def size(self) -> int:
        return len(self._frames)

    def __iter__(self) -> Iterator[frame]:
        return iter(self._frames)

    def first_or_default(self, s: stream) -> frame:
        return next((f for f in self._frames if f.profile.stream_type() == s), frame())

    def get_color_frame(self) -> frame:
        return self.first_or_default(stream.color)

    def get_depth_frame(self) -> frame:
        return self.first_or_default(stream.depth)

    def get_frame_number(self) -> int:
        return self._frames[0].get_frame_number() if self._frames else 0

    def get_timestamp(self) -> float:
        return self._frames[0].get_timestamp() if self._frames else 0.0


frameset = composite_frame


class device:  # noqa: N801
    def __init__(self, info: dict[str, str], depth_scale: float, bag: _Bag | None = None) -> None:
        self._info, self._scale, self._bag = info, depth_scale, bag

    def get_info(self, key: camera_info) -> str:
        if key == camera_info.serial_number:
            return self._info.get("serial", "")
        if key == camera_info.name:
            return self._info.get("name", "Intel RealSense (fake)")
        if key == camera_info.product_line:
            return "D400"
        raise RuntimeError(f"info {key} not supported by the device")

    def supports(self, key: camera_info) -> bool:
        return key in (camera_info.serial_number, camera_info.name, camera_info.product_line)

    def first_depth_sensor(self) -> depth_sensor:
        return depth_sensor(self._scale)

    def is_playback(self) -> bool:
        return self._bag is not None

    def as_playback(self) -> playback:
        if self._bag is None:
            raise RuntimeError("Device is not a playback device")  # the SDK: the extension is missing
        return playback(self, self._bag)


class depth_sensor:  # noqa: N801
    def __init__(self, scale: float) -> None:
        self._scale = scale

    def get_depth_scale(self) -> float:
        """Metres per z16 unit."""
        return self._scale


class playback(device):  # noqa: N801
    def __init__(self, dev: device, bag: _Bag) -> None:
        super().__init__(dev._info, dev._scale, bag)

    def current_status(self) -> playback_status:
        assert self._bag is not None
        return self._bag.status

    def file_name(self) -> str:
        assert self._bag is not None
        return self._bag.path


class device_list:  # noqa: N801
    def __init__(self, devices: list[device]) -> None:
        self._devices = devices

    def __len__(self) -> int:
        return len(self._devices)

    def size(self) -> int:
        return len(self._devices)

    def __getitem__(self, i: int) -> device:
        return self._devices[i]

    def __iter__(self) -> Iterator[device]:
        return iter(self._devices)


class context:  # noqa: N801
    def query_devices(self) -> device_list:
        sc = _sc()
        return device_list([device(d, sc.depth_scale) for d in _plugged()])

    @property
    def devices(self) -> device_list:
        return self.query_devices()


class config:  # noqa: N801
    def __init__(self) -> None:
        self._streams: dict[stream, tuple[int, int, format, int]] = {}
        self._serial = ""
        self._file = ""
        self._repeat = True

    def enable_stream(self, stream_type: stream, width: int = 0, height: int = 0, fmt: format = format.any,
                      framerate: int = 0) -> None:
        self._streams[stream_type] = (int(width), int(height), fmt, int(framerate))

    def enable_device(self, serial: str) -> None:
        self._serial = str(serial)

    def enable_device_from_file(self, file_name: str, repeat_playback: bool = True) -> None:
        self._file, self._repeat = str(file_name), bool(repeat_playback)


class pipeline_profile:  # noqa: N801
    def __init__(self, dev: device, profiles: list[stream_profile]) -> None:
        self._dev, self._profiles = dev, profiles

    def get_device(self) -> device:
        return self._dev

    def get_streams(self) -> list[stream_profile]:
        return list(self._profiles)

    def get_stream(self, s: stream) -> stream_profile:
        for p in self._profiles:
            if p.stream_type() == s:
                return p
        raise RuntimeError(f"Profile does not contain the requested stream {s}")


class _Bag:
    """The JSON stand-in of a .bag file and its playback position."""

    def __init__(self, path: str, repeat: bool) -> None:
        p = Path(path)
        if not p.is_file():
            raise RuntimeError(f"Failed to create ros reader: Error opening file: {path}")
        head = p.read_bytes()[:64]
        if head.startswith(b"#ROSBAG"):
            raise RuntimeError(f"Failed to create ros reader: {path} is a real RealSense bag; the fake SDK "
                               "(fake_pyrealsense2) plays only its JSON stand-in, see write_bag()")
        try:
            d = json.loads(p.read_text())
            if not (isinstance(d, dict) and d.get(BAG_MAGIC) == 1 and d["frames"]):
                raise ValueError("not a fake_pyrealsense2 bag stand-in")
        except (ValueError, KeyError, UnicodeDecodeError) as e:
            raise RuntimeError(f"Failed to create ros reader: Invalid file format {path}: {e}") from e
        self.path, self.repeat, self.d = str(p), repeat, d
        self.status = playback_status.playing
        self.index = 0


class pipeline:  # noqa: N801
    def __init__(self, ctx: context | None = None) -> None:
        self._active: pipeline_profile | None = None
        self._cfg: config | None = None
        self._bag: _Bag | None = None
        self._modes: dict[stream, tuple[int, int, format, int]] = {}
        self._next_due = 0.0
        self._frame_number = 0
        self._mtx = threading.Lock()

    def start(self, cfg: config | None = None) -> pipeline_profile:
        with self._mtx:
            if self._active is not None:
                raise RuntimeError("start() cannot be called before stop()")
            self._active = self._start(cfg or config())
            return self._active

    def _start(self, cfg: config) -> pipeline_profile:
        global _unplugged_at
        sc = _sc()
        self._cfg = cfg
        if cfg._file:
            self._bag = _Bag(cfg._file, cfg._repeat)
            d = self._bag.d
            w, h, fps = int(d["width"]), int(d["height"]), int(d["fps"])
            self._modes = {stream.color: (w, h, format.rgb8, fps), stream.depth: (w, h, format.z16, fps)}
            dev = device({"serial": "", "name": f"file {cfg._file}"}, float(d["depth_scale"]), self._bag)
        else:
            found = _plugged(cfg._serial)
            if not found:
                time.sleep(sc.no_device_block_s)  # the SDK waits for a device to appear, then gives up
                raise RuntimeError("No device connected")
            if _unplugged_at is not None:  # reconnected
                _unplugged_at = None
            modes = {s: cfg._streams.get(s, (640, 480, format.any, 30)) for s in (stream.color, stream.depth)}
            for s, (w, h, fmt, fps) in modes.items():
                want_fmt = format.rgb8 if s == stream.color else format.z16
                if [w, h, fps] not in sc.modes or fmt not in (format.any, want_fmt, format.bgr8):
                    raise RuntimeError("Couldn't resolve requests")
                modes[s] = (w, h, want_fmt if fmt == format.any else fmt, fps)
            self._modes = modes
            dev = device(found[0], sc.depth_scale)
        self._frame_number = 0
        self._next_due = time.monotonic() + 1.0 / self._modes[stream.color][3]
        return pipeline_profile(dev, [self._profile(s) for s in (stream.color, stream.depth)])

    def _profile(self, s: stream, aligned: bool = False) -> stream_profile:
        w, h, fmt, fps = self._modes[s]
        sc = _sc()
        if self._bag is not None:
            intr = self._bag.d["color_intrinsics"]
        else:
            intr = sc.color_intrinsics if (s == stream.color or aligned) else sc.depth_intrinsics
        return stream_profile(s, fmt, fps, _intrinsics_dict(intr, w, h))

    def get_active_profile(self) -> pipeline_profile:
        if self._active is None:
            raise RuntimeError("get_active_profile() can only be called between a start() and a following stop()")
        return self._active

    def stop(self) -> None:
        with self._mtx:
            if self._active is None:
                raise RuntimeError("stop() cannot be called before start()")
            self._active = None
            if self._bag is not None:
                self._bag.status = playback_status.stopped

    def try_wait_for_frames(self, timeout_ms: int = 5000) -> tuple[bool, composite_frame]:
        try:
            return True, self.wait_for_frames(timeout_ms)
        except RuntimeError:
            return False, composite_frame([])

    def poll_for_frames(self) -> composite_frame:
        with self._mtx:
            if self._active is None:
                raise RuntimeError("poll_for_frames cannot be called before start()")
            if self._available() and time.monotonic() >= self._next_due:
                return self._deliver()
            return composite_frame([])

    def _available(self) -> bool:
        """Would the stream deliver more frames (device plugged, bag not finished)?"""
        if self._bag is not None:
            return self._bag.status == playback_status.playing
        return bool(_plugged())

    def wait_for_frames(self, timeout_ms: int = 5000) -> composite_frame:
        global _unplugged_at
        with self._mtx:
            if self._active is None:
                raise RuntimeError("wait_for_frames cannot be called before start()")
            timeout_s = timeout_ms / 1000.0
            now = time.monotonic()
            if self._available() and self._next_due - now <= timeout_s:
                time.sleep(max(0.0, self._next_due - now))
                return self._deliver()
            time.sleep(timeout_s)
            if self._bag is None and _unplugged_at is not None:  # the SDK tries to restart the pipeline
                assert self._cfg is not None
                self._active = None  # unsafe_stop(): a failed restart leaves the pipeline stopped
                try:
                    if not _plugged(self._cfg._serial):
                        raise RuntimeError("No device connected")
                    self._active = self._start(self._cfg)
                except RuntimeError as e:
                    raise RuntimeError(f"Device disconnected. Failed to recconect: {e}{timeout_ms}") from None
                time.sleep(max(0.0, self._next_due - time.monotonic()))
                return self._deliver()
            raise RuntimeError(f"Frame didn't arrive within {timeout_ms}")

    def _deliver(self) -> composite_frame:
        global _unplugged_at
        sc = _sc()
        period = 1.0 / self._modes[stream.color][3]
        now = time.monotonic()
        before = self._frame_number
        self._frame_number += 1 + max(0, int((now - self._next_due) / period))  # a slow reader drops frames
        n = self._frame_number
        self._next_due = max(self._next_due, now - period) + period
        domain = timestamp_domain[sc.timestamp_domain]
        latency = max(0.0, sc.capture_latency_s)
        if latency > 0.0:
            time.sleep(latency)  # captured now, delivered after the latency
        ts = ((time.time() - latency) if domain != timestamp_domain.hardware_clock
              else (now - _boot_monotonic)) * 1000.0
        (wc, hc, fc, _), (wd, hd, _, _) = self._modes[stream.color], self._modes[stream.depth]
        if self._bag is not None:
            rec = self._bag.d["frames"][self._bag.index]
            n = self._bag.index + 1
            self._bag.index += 1
            if self._bag.index >= len(self._bag.d["frames"]):
                if self._bag.repeat:
                    self._bag.index = 0
                else:
                    self._bag.status = playback_status.stopped
            color = np.empty((hc, wc, 3), np.uint8)
            color[:] = np.asarray(rec["color"], np.uint8)
            depth = _to_units(np.full((hd, wd), float(rec["depth_m"])), float(self._bag.d["depth_scale"]))
            ts = 1.7e12 + n * 1000.0 * period  # recorded time
        else:
            color = expected_color(wc, hc, n)
            depth = _to_units(expected_depth_m(wd, hd, intrinsics=sc.depth_intrinsics), sc.depth_scale)
            for after, gap in sc.stalls:
                if before < int(after) <= n:  # also when a slow reader skipped the frame itself
                    self._next_due += float(gap)
            if sc.disconnect_after_frame > 0 and n >= sc.disconnect_after_frame and _unplugged_at is None:
                _unplugged_at = time.monotonic()
                sc.disconnect_after_frame = 0  # once
        if fc == format.bgr8:
            color = np.ascontiguousarray(color[:, :, ::-1])
        return composite_frame([
            frame(color, self._profile(stream.color), n, ts, domain),
            frame(depth, self._profile(stream.depth), n, ts, domain)])


class align:  # noqa: N801
    """rs.align(stream.color): depth re-rendered in the colour stream's geometry (the fake knows the
    scene - a plane or a flat bag depth - so it renders it exactly instead of reprojecting)."""

    def __init__(self, align_to: stream) -> None:
        if align_to != stream.color:
            raise RuntimeError("the fake SDK aligns only to stream.color")
        self._to = align_to

    def process(self, frames: composite_frame) -> composite_frame:
        c, d = frames.get_color_frame(), frames.get_depth_frame()
        if not c or not d:
            return frames
        cp = c.profile.as_video_stream_profile()
        w, h = cp.width(), cp.height()
        dp = d.profile
        intr = cp.get_intrinsics()
        sc = _sc()
        raw = d.get_data()
        if raw.size and np.all(raw == raw.flat[0]):  # flat depth (bag): the same in any geometry
            units = np.full((h, w), raw.flat[0], np.uint16)
        else:
            k = {"fx": intr.fx, "fy": intr.fy, "ppx": intr.ppx, "ppy": intr.ppy}
            units = _to_units(expected_depth_m(w, h, intrinsics=k), sc.depth_scale)
        aligned = stream_profile(stream.depth, dp.format(), dp.fps(), {
            "width": w, "height": h, "fx": intr.fx, "fy": intr.fy, "ppx": intr.ppx, "ppy": intr.ppy,
            "model": intr.model.name, "coeffs": intr.coeffs})
        return composite_frame([c, frame(units, aligned, d.get_frame_number(), d.get_timestamp(),
                                        d.get_frame_timestamp_domain())])
