"""Perception benchmark (prints numbers; no assertions).
Run: `. scripts/env.sh && monologue-bench-perception [--source mujoco|synthetic] [--frames N]
[--views N] [--owlvit DIR] [--owlv2 DIR] [--grounding-dino DIR] [--clip DIR]
[--mdetr-checkpoint FILE --mdetr-text-encoder DIR] [--noise 0.002]`
(or `python -m monologue_eval.benchmarks.bench_perception ...`).

Frames (`--source`):
- `mujoco` (default): the MuJoCo simulator's wrist camera, built from tabletop_sim.core as the simulator
  node builds it (its parameters from config/monologue.yaml and robots/sim.yaml). `--frames` random scenes
  (seeds `--seed`, `--seed`+1, ...; 2-4 blocks, 3 bowls), each seen from the home pose the arm returns to
  after every skill and from `--views` random reachable arm poses. Colour and depth go through the
  node's encodings (rgb8, 16UC1 mm); the camera pose is the rendered base<-optical pose (what /tf gives
  at the image stamp). Visible truth: objects with at least `--min-pixels` px in the segmentation image.
- `synthetic`: exact ray-cast frames of perception_node.core.synthetic (`--noise`: depth noise and holes).

For the oracle and for every detector whose weights are given, the node's code path (decode, the
PerceptionPipeline, the object memory, the scene and marker messages of perception.camera_source):
1. per-stage latency (decode, detect, depth, open3d, memory, publish; ms, median and max) and frames/s,
2. 3D localisation error of detected visible objects in the base frame per category (cm, median and
   max, x-y and 3D; truth = the centre of the object's box),
3. detection precision and recall against the visible ground-truth objects.
Rendering is not timed; "publish" builds the SceneDescription and MarkerArray (no DDS).
"""
from __future__ import annotations

import os

os.environ.setdefault("MUJOCO_GL", "egl")  # headless rendering; must be set before mujoco is imported

import argparse  # noqa: E402
import itertools  # noqa: E402
import logging  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from dataclasses import dataclass, replace  # noqa: E402

import numpy as np  # noqa: E402
from builtin_interfaces.msg import Time  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from monologue_bringup.graph import default_config_dir  # noqa: E402
from monologue_domain.robots import node_parameters  # noqa: E402
from monologue_domain.scene import SceneObject  # noqa: E402
from monologue_domain.scene_spec import layout_scene, make_spec  # noqa: E402
from monologue_domain.tabletop import LOCATIONS, MAX_BOWLS  # noqa: E402
from monologue_interfaces.msg import SceneDescription  # noqa: E402
from monologue_interfaces.msg import SceneObject as SceneObjectMsg  # noqa: E402
from monologue_vision.images import decode_color, decode_depth  # noqa: E402
from perception_node.camera_source import CameraSource  # noqa: E402
from perception_node.core import geometry as g  # noqa: E402
from perception_node.core import synthetic as s  # noqa: E402
from perception_node.core.memory import ObjectMemory  # noqa: E402
from perception_node.core.object_detectors import (  # noqa: E402
    GroundTruthObject,
    OracleDetector,
    make_detector,
)
from perception_node.core.pipeline import Frame, PerceptionPipeline  # noqa: E402
from perception_node.core.settings import CameraSettings, settings_from_parameters  # noqa: E402
from tabletop_sim.core.arm import ArmController  # noqa: E402
from tabletop_sim.core.camera import CameraRenderer  # noqa: E402
from tabletop_sim.core.config import SimSettings  # noqa: E402
from tabletop_sim.core.config import settings_from_parameters as sim_settings_from_parameters  # noqa: E402
from tabletop_sim.core.kinematics import HOME_Q, ArmKinematics  # noqa: E402
from tabletop_sim.core.world import ObjectTruth, SimWorld  # noqa: E402

LOG = logging.getLogger("bench_perception")
OPTICAL_FRAME = "camera_color_optical_frame"
STAGES = ("decode", "detect", "depth", "open3d", "memory", "publish")
SETTLE_STEPS = 100  # physics steps (0.2 s) after a scene reset before the first image
VIEW_SPREAD = (0.35, 0.15, 0.15, 0.25, 0.25, 0.6)  # rad, random view = HOME_Q + U(-1, 1) * spread per joint
MIN_VIEW_HEIGHT = 0.35  # m, lowest TCP of a random view (the camera stays well above the objects)
COLOURS = {"red": (200, 30, 30), "green": (30, 190, 40), "blue": (30, 40, 200), "yellow": (220, 200, 40),
           "pink": (230, 120, 200), "cyan": (40, 200, 210)}


@dataclass(frozen=True)
class BenchFrame:
    """One RGB-D frame as the perception node receives it, and its ground truth (base frame, m)."""

    scene: int                                 # frames of one scene share an object memory
    color: Image                               # rgb8
    depth: Image                               # 16UC1, mm (0 = no data)
    k: tuple[float, ...]                       # CameraInfo.k: row-major 3x3 camera matrix (px)
    base_from_camera: np.ndarray               # 4x4 base<-camera optical frame at the image stamp
    truth: tuple[GroundTruthObject, ...]       # every object, centred on its box
    visible: frozenset[str]                    # names of the objects with enough pixels in view


def _stamp(t_s: float) -> Time:
    sec = math.floor(t_s)
    return Time(sec=int(sec), nanosec=min(999_999_999, int(round((t_s - sec) * 1e9))))


def image_msgs(rgb: np.ndarray, depth_m: np.ndarray, stamp_s: float) -> tuple[Image, Image]:
    """Colour (rgb8) and depth (16UC1 mm; NaN -> 0) messages as the simulator node publishes them."""
    h, w = rgb.shape[:2]
    header = Header(stamp=_stamp(stamp_s), frame_id=OPTICAL_FRAME)
    color = Image(header=header, height=h, width=w, encoding="rgb8", is_bigendian=0, step=w * 3,
                  data=np.ascontiguousarray(rgb, dtype=np.uint8).tobytes())
    mm = np.nan_to_num(np.asarray(depth_m, dtype=np.float64) * 1000.0, nan=0.0)
    depth = Image(header=header, height=h, width=w, encoding="16UC1", is_bigendian=0, step=w * 2,
                  data=np.clip(np.rint(mm), 0, 65535).astype("<u2").tobytes())
    return color, depth


# ----------------------------------------------------------------------------------- synthetic --

def random_scene(rng: np.random.Generator, k: g.Intrinsics, noise: float) -> s.SynthFrame:
    names = list(COLOURS)
    rng.shuffle(names)
    objs: list[s.SynthObject] = []
    spots: list[tuple[float, float]] = []
    for i, colour in enumerate(names[:5]):
        for _ in range(50):
            x, y = float(rng.uniform(0.35, 0.65)), float(rng.uniform(-0.2, 0.2))
            if all(math.hypot(x - a, y - b) > 0.13 for a, b in spots):
                break
        spots.append((x, y))
        objs.append(s.bowl(f"{colour} bowl", x, y, COLOURS[colour]) if i >= 3 else
                    s.block(f"{colour} block", x, y, COLOURS[colour]))
    eye = (float(rng.uniform(0.2, 0.35)), float(rng.uniform(-0.1, 0.1)), float(rng.uniform(0.5, 0.65)))
    return s.render(objs, k, g.look_at(eye, (0.5, 0.0, 0.0)), noise_std_m=noise, hole_fraction=0.02 if noise else 0.0,
                    seed=int(rng.integers(1 << 30)))


def synthetic_frames(count: int, seed: int = 0, noise: float = 0.0, min_pixels: int = 100) -> list[BenchFrame]:
    """`count` random synthetic 640x480 frames (3 blocks, 2 bowls; fov 42 deg), one scene each."""
    k = g.Intrinsics.from_fov(640, 480, math.radians(42))
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        f = random_scene(rng, k, noise)
        color, depth = image_msgs(f.rgb, f.depth_m, 0.0)
        vis = frozenset(o.name for j, o in enumerate(f.objects) if int((f.object_index == j).sum()) >= min_pixels)
        truth = tuple(GroundTruthObject(o.name, o.category, o.center, o.size) for o in f.objects)
        k9 = (k.fx, 0.0, k.cx, 0.0, k.fy, k.cy, 0.0, 0.0, 1.0)
        out.append(BenchFrame(i, color, depth, k9, f.base_from_camera, truth, vis))
    return out


# -------------------------------------------------------------------------------------- mujoco --

def sim_settings() -> SimSettings:
    """The simulator node's parameters as config/monologue.yaml and robots/sim.yaml set them."""
    return sim_settings_from_parameters(node_parameters(default_config_dir(), "tabletop_sim",
                                                        ["monologue.yaml", "robots/sim.yaml"]))


def sim_camera() -> tuple[int, int, float]:
    """Wrist camera width, height (px) and vertical field of view (deg) of the simulator's config."""
    s = sim_settings()
    return s.image_width, s.image_height, s.fovy_deg


def box_truth(o: ObjectTruth) -> GroundTruthObject:
    """The simulator's object as the centre of its box: a block's pose is its centre, a bowl's its base."""
    x, y, z = o.position
    if o.category == "bowl":
        z += o.size[2] / 2
    return GroundTruthObject(o.name, o.category, (x, y, z), o.size)


def render_frame(world: SimWorld, renderer: CameraRenderer, scene: int, min_pixels: int) -> BenchFrame:
    """Render the wrist camera now; truth from the world at the same instant."""
    objects = world.objects()
    f = renderer.render(segmentation=True)
    assert f.segmentation is not None
    counts = np.bincount(f.segmentation.ravel().clip(0), minlength=max(o.segmentation_id for o in objects) + 1)
    visible = frozenset(o.name for o in objects if counts[o.segmentation_id] >= min_pixels)
    color, depth = image_msgs(f.rgb, f.depth, f.sim_time)
    pose = g.transform_from_quaternion(f.pose.position, f.pose.orientation)
    return BenchFrame(scene, color, depth, tuple(f.intrinsics.matrix().ravel()), pose,
                      tuple(box_truth(o) for o in objects), visible)


def random_view(rng: np.random.Generator, kin: ArmKinematics, attempts: int = 100) -> tuple[float, ...] | None:
    """Joint angles (rad) near HOME_Q within the joint limits with the TCP at least MIN_VIEW_HEIGHT up."""
    for _ in range(attempts):
        q = np.asarray(HOME_Q) + rng.uniform(-1.0, 1.0, 6) * np.asarray(VIEW_SPREAD)
        if kin.within_limits(q, margin=0.05) and float(kin.tcp(q)[0][2]) >= MIN_VIEW_HEIGHT:
            return tuple(float(v) for v in q)
    return None


def mujoco_frames(scenes: int, seed: int = 0, views: int = 0, min_pixels: int = 100,
                  camera: tuple[int, int, float] | None = None) -> list[BenchFrame]:
    """Wrist camera frames of `scenes` random scenes (seeds seed, seed+1, ...; 2-4 blocks, 3 bowls), each
    from the home pose and from `views` random reachable arm poses (the arm moves there in the physics)."""
    width, height, fovy = camera or sim_camera()
    kin = ArmKinematics()
    world: SimWorld | None = None
    renderer: CameraRenderer | None = None
    out: list[BenchFrame] = []
    try:
        for i in range(scenes):
            scene_seed = seed + i
            rng = np.random.default_rng(scene_seed)  # a scene and its views depend on its seed only
            blocks = int(rng.integers(2, 5))
            spec = make_spec(scene_seed, blocks, MAX_BOWLS, matching_bowls=blocks <= MAX_BOWLS)
            layout = layout_scene(spec, scene_seed)
            if world is None:
                config = replace(sim_settings().world_config(), image_width=width, image_height=height,
                                 fovy_deg=fovy, seed=scene_seed)
                world = SimWorld(layout, config, LOG)
                renderer = CameraRenderer(world, "wrist", width, height, pixel_noise_std=0.0, seed=scene_seed)
            else:
                world.reset(layout)  # as sim/reset: new scene, the arm back home
            assert renderer is not None
            world.step(SETTLE_STEPS)
            out.append(render_frame(world, renderer, i, min_pixels))
            arm = ArmController(world, None, LOG, kin)
            for _ in range(views):
                q = random_view(rng, kin)
                result = arm.move_joints(q) if q is not None else None
                if result is None or not result.ok:
                    LOG.warning("scene %d: no view (%s)", scene_seed, result.message if result else "no pose found")
                    continue
                out.append(render_frame(world, renderer, i, min_pixels))
    finally:
        if renderer is not None:
            renderer.close()
    return out


# ----------------------------------------------------------------------------------- measuring --

def camera_settings() -> CameraSettings:
    """The perception node's camera parameters as config/monologue.yaml and robots/sim.yaml set them
    (detector, score threshold, open3d, cloud stride, object memory, base frame, marker lifetime)."""
    params = node_parameters(default_config_dir(), "perception", ["monologue.yaml", "robots/sim.yaml"])
    return settings_from_parameters(params).camera


def message_builder(pipe: PerceptionPipeline, camera: CameraSettings) -> CameraSource:
    """The node's CameraSource without a node, for its message builders (_scene_msg, _marker_msg) only:
    the benchmark times the node's own code. It sets the attributes those two read; if camera_source
    renames them, this fails loudly (AttributeError/KeyError) rather than timing something else."""
    src = CameraSource.__new__(CameraSource)
    src.p = camera
    src.pipeline = pipe
    src._marker_ids = {}
    return src


def locations_msg() -> SceneDescription:
    """The simulator's named locations (the part of sim/ground_truth the node passes through)."""
    msg = SceneDescription(source="ground_truth")
    for name, (x, y) in LOCATIONS.items():
        o = SceneObjectMsg(name=name, category="location", visible=True, confidence=1.0, segmentation_id=-1)
        o.pose.pose.position.x, o.pose.pose.position.y, o.pose.pose.orientation.w = x, y, 1.0
        msg.objects.append(o)
    return msg


def cut_by_border(o: GroundTruthObject, k: g.Intrinsics, base_from_camera: np.ndarray) -> bool:
    """True if the object's box does not project entirely inside the image (only part of it is seen)."""
    corners = np.array(list(itertools.product(*((c - e / 2, c + e / 2) for c, e in zip(o.center, o.size)))))
    uv = k.project(g.apply(g.invert(base_from_camera), corners))
    return bool(uv.min() < 0 or uv[:, 0].max() > k.width - 1 or uv[:, 1].max() > k.height - 1)


def in_view_of(k: g.Intrinsics, base_from_camera: np.ndarray, margin_px: float) -> Callable[[SceneObject], bool]:
    """The node's memory test: could this camera have seen a known object where it was last seen."""
    return lambda o: g.in_view(o.position, k, base_from_camera, margin_px)


@dataclass
class Report:
    """What one detector did on a set of frames."""

    latencies_ms: dict[str, list[float]]
    errors_cm: dict[str, list[tuple[float, float]]]  # category -> (x-y, 3D) per detected visible object
    tp: int = 0
    fp: int = 0
    fn: int = 0


def measure(pipe: PerceptionPipeline, frames: Sequence[BenchFrame], camera: CameraSettings,
            match_cm: float = 5.0) -> Report:
    """Run the node's per-frame path on every frame and collect latencies, errors and matches; the
    object memory and the messages as the node with the `camera` parameters builds them.

    A detection is a true positive when its object is visible and its x-y error is at most `match_cm`."""
    src, gt = message_builder(pipe, camera), locations_msg()
    rep = Report({k: [] for k in STAGES}, {})
    memory, scene = ObjectMemory(camera.miss_updates_to_occlude), -1
    for f in frames:
        if f.scene != scene:
            memory, scene = ObjectMemory(camera.miss_updates_to_occlude), f.scene
        c, d = f.color, f.depth
        t0 = time.perf_counter()
        rgb = decode_color(bytes(c.data), c.width, c.height, c.encoding, c.step)
        depth = decode_depth(bytes(d.data), d.width, d.height, d.encoding, d.step, bool(d.is_bigendian))
        k = g.Intrinsics.from_k(list(f.k), c.width, c.height)
        decode_s = time.perf_counter() - t0
        stamp = c.header.stamp.sec + c.header.stamp.nanosec * 1e-9
        pose = f.base_from_camera
        res = pipe.process(Frame(rgb, depth, k, pose, stamp), [o.name for o in f.truth], f.truth, decode_s)
        t0 = time.perf_counter()
        objects = memory.update(list(res.objects), stamp,
                                in_view=in_view_of(k, pose, camera.view_margin))
        t1 = time.perf_counter()
        src._marker_msg(src._scene_msg(c, objects, gt))
        t2 = time.perf_counter()
        for stage, v in {**res.latencies_s, "memory": t1 - t0, "publish": t2 - t1}.items():
            rep.latencies_ms.setdefault(stage, []).append(v * 1000)
        truth, found = {o.name: o for o in f.truth}, set()
        for o in res.objects:
            if o.name not in f.visible:
                rep.fp += 1
                continue
            t = truth[o.name]
            dp = np.subtract(o.position, t.center) * 100
            key = f"{t.category}{' (cut by the image border)' if cut_by_border(t, k, pose) else ''}"
            rep.errors_cm.setdefault(key, []).append((float(np.hypot(dp[0], dp[1])), float(np.linalg.norm(dp))))
            if math.hypot(dp[0], dp[1]) <= match_cm:
                found.add(o.name)
            else:  # the right name on the wrong object (or far off it)
                rep.fp += 1
        rep.tp, rep.fn = rep.tp + len(found), rep.fn + len(f.visible - found)
    return rep


def print_report(name: str, rep: Report, frames: Sequence[BenchFrame], match_cm: float = 5.0) -> None:
    visible = sum(len(f.visible) for f in frames)
    print(f"\n== {name} ({len(frames)} frames, {visible} visible objects)")
    totals = [sum(v) for v in zip(*(rep.latencies_ms[k] for k in STAGES if rep.latencies_ms.get(k)))]
    for k, v in [*((k, rep.latencies_ms.get(k) or [0.0]) for k in STAGES), ("total", totals or [0.0])]:
        print(f"  {k:7s} median {statistics.median(v):8.1f} ms   max {max(v):8.1f} ms")
    if totals:
        fps = 1000 * len(totals) / sum(totals)
        print(f"  {fps:.2f} frames/s (decode to publish, frame after frame; rendering excluded)")
    for category, errs in sorted(rep.errors_cm.items()):
        xy, e3 = [e[0] for e in errs], [e[1] for e in errs]
        print(f"  {category} error: x-y median {statistics.median(xy):5.2f} cm max {max(xy):5.2f} cm | "
              f"3D median {statistics.median(e3):5.2f} cm max {max(e3):5.2f} cm  ({len(errs)} objects)")
    tp, fp, fn = rep.tp, rep.fp, rep.fn
    print(f"  precision {tp / max(1, tp + fp):.3f}  recall {tp / max(1, tp + fn):.3f}  (tp {tp}, fp {fp}, fn {fn}; "
          f"a match is the visible object within {match_cm:g} cm x-y)")


def run(name: str, pipe: PerceptionPipeline, frames: Sequence[BenchFrame], camera: CameraSettings,
        match_cm: float = 5.0) -> None:
    """Warm up on the first frame (lazy imports such as open3d, model caches), then measure all."""
    if frames:
        measure(pipe, frames[:1], camera)
    print_report(name, measure(pipe, frames, camera, match_cm), frames, match_cm)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", choices=("mujoco", "synthetic"), default="mujoco")
    ap.add_argument("--frames", type=int, default=5, help="scenes (mujoco: each gives 1 + --views frames)")
    ap.add_argument("--views", type=int, default=0, help="mujoco: random arm poses per scene besides home")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--min-pixels", type=int, default=100, help="px in view for an object to count as visible")
    ap.add_argument("--noise", type=float, default=0.0, help="synthetic: depth noise std (m); also 2%% holes")
    ap.add_argument("--match-cm", type=float, default=5.0, help="x-y error (cm) up to which a detection matches")
    ap.add_argument("--score-threshold", type=float, default=None,
                    help="the node's score_threshold (default: config/monologue.yaml's)")
    for kind in ("owlvit", "owlv2", "grounding-dino", "clip"):
        ap.add_argument(f"--{kind}", default="", help=f"local {kind} model dir")
    ap.add_argument("--mdetr-checkpoint", default="", help="official MDETR ResNet-101 .pth")
    ap.add_argument("--mdetr-text-encoder", default="", help="local roberta-base dir")
    a = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    t0 = time.perf_counter()
    if a.source == "mujoco":
        frames = mujoco_frames(a.frames, a.seed, a.views, a.min_pixels)
        what = f"MuJoCo wrist camera, {a.frames} scenes x (home + {a.views} views)"
    else:
        frames = synthetic_frames(a.frames, a.seed, a.noise, a.min_pixels)
        what = f"synthetic, depth noise {a.noise} m"
    w, h = (frames[0].color.width, frames[0].color.height) if frames else (0, 0)
    print(f"rendered {len(frames)} {w}x{h} frames in {time.perf_counter() - t0:.1f} s ({what})")
    camera = camera_settings()
    score = camera.detector.score_threshold if a.score_threshold is None else a.score_threshold
    cfg = replace(camera.pipeline_config(), min_score=score)
    pipes = [("oracle + depth + open3d", PerceptionPipeline(OracleDetector(), replace(cfg, use_open3d=True))),
             ("oracle + depth only (no open3d)", PerceptionPipeline(OracleDetector(), replace(cfg, use_open3d=False)))]
    for name, pipe in pipes:
        run(name, pipe, frames, camera, a.match_cm)
    detector = replace(camera.detector, clip_model_path=a.clip, score_threshold=score)
    configs = [("owlvit", a.owlvit), ("owlv2", a.owlv2), ("grounding_dino", a.grounding_dino)]
    for kind, path in configs:
        if path:
            det = make_detector(replace(detector, kind=kind, model_path=path))
            run(det.name, PerceptionPipeline(det, cfg), frames, camera, a.match_cm)
    if a.mdetr_checkpoint:
        det = make_detector(replace(detector, kind="mdetr", mdetr_checkpoint=a.mdetr_checkpoint,
                                    mdetr_text_encoder_dir=a.mdetr_text_encoder))
        run(det.name, PerceptionPipeline(det, cfg), frames, camera, a.match_cm)
    if not any(p for _, p in configs) and not a.mdetr_checkpoint:
        print("\n(no model weights given: only the oracle was measured; see --help)")


if __name__ == "__main__":
    main()
