"""Perception benchmark (prints numbers; no assertions).
Run: `. scripts/env.sh && python benchmarks/bench_perception.py [--frames N] [--owlvit DIR] [--owlv2 DIR]
[--grounding-dino DIR] [--clip DIR] [--mdetr-checkpoint FILE --mdetr-text-encoder DIR] [--noise 0.002]`.

On synthetic 640x480 RGB-D tabletop frames (random block/bowl layouts, exact ground truth), for the
oracle and for every detector whose weights are given:
1. per-stage latency (decode, detect, depth, open3d; ms, median and max),
2. 3D localisation error of matched objects in the base frame (cm, median and max),
3. detection precision and recall against the visible ground-truth objects.
"""
from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Sequence

import numpy as np

from perception_node.core import geometry as g
from perception_node.core import synthetic as s
from perception_node.core.detectors import DetectorConfig, GroundTruthObject, OracleDetector, make_detector
from perception_node.core.pipeline import Frame, PerceptionPipeline, decode_color, decode_depth

COLOURS = {"red": (200, 30, 30), "green": (30, 190, 40), "blue": (30, 40, 200), "yellow": (220, 200, 40),
           "pink": (230, 120, 200), "cyan": (40, 200, 210)}


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


def visible_truth(f: s.SynthFrame, min_pixels: int = 100) -> set[str]:
    return {o.name for i, o in enumerate(f.objects) if int((f.object_index == i).sum()) >= min_pixels}


def run(name: str, pipe: PerceptionPipeline, frames: Sequence[s.SynthFrame]) -> None:
    lat: dict[str, list[float]] = {}
    errs: list[float] = []
    tp = fp = fn = 0
    for f in frames:
        t0 = time.perf_counter()
        rgb = decode_color(f.rgb.tobytes(), f.intrinsics.width, f.intrinsics.height, "rgb8")
        depth_mm = np.round(f.depth_m * 1000).astype(np.uint16).tobytes()
        depth = decode_depth(depth_mm, f.intrinsics.width, f.intrinsics.height, "16UC1")
        decode_s = time.perf_counter() - t0
        truth = [GroundTruthObject(o.name, o.category, o.center, o.size) for o in f.objects]
        res = pipe.process(Frame(rgb, depth, f.intrinsics, f.base_from_camera, 0.0), [o.name for o in f.objects],
                           truth, decode_s)
        for k, v in res.latencies_s.items():
            lat.setdefault(k, []).append(v * 1000)
        seen, vis = {o.name for o in res.objects}, visible_truth(f)
        tp, fp, fn = tp + len(seen & vis), fp + len(seen - vis), fn + len(vis - seen)
        centres = {o.name: o.center for o in f.objects}
        errs += [float(np.linalg.norm(np.subtract(o.position, centres[o.name]))) * 100
                 for o in res.objects if o.name in vis]
    print(f"\n== {name} ({len(frames)} frames)")
    for k in ("decode", "detect", "depth", "open3d"):
        v = lat.get(k, [0.0])
        print(f"  {k:7s} median {statistics.median(v):8.1f} ms   max {max(v):8.1f} ms")
    if errs:
        print(f"  3D error median {statistics.median(errs):.2f} cm  p90 {float(np.percentile(errs, 90)):.2f} cm"
              f"  max {max(errs):.2f} cm  ({len(errs)} objects)")
    print(f"  precision {tp / max(1, tp + fp):.3f}  recall {tp / max(1, tp + fn):.3f}  (tp {tp}, fp {fp}, fn {fn})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--noise", type=float, default=0.0, help="depth noise std (m); also 2%% holes")
    for kind in ("owlvit", "owlv2", "grounding-dino", "clip"):
        ap.add_argument(f"--{kind}", default="", help=f"local {kind} model dir")
    ap.add_argument("--mdetr-checkpoint", default="", help="official MDETR ResNet-101 .pth")
    ap.add_argument("--mdetr-text-encoder", default="", help="local roberta-base dir")
    a = ap.parse_args()
    k = g.Intrinsics.from_fov(640, 480, math.radians(42))
    rng = np.random.default_rng(a.seed)
    t0 = time.perf_counter()
    frames = [random_scene(rng, k, a.noise) for _ in range(a.frames)]
    print(f"rendered {len(frames)} frames in {time.perf_counter() - t0:.1f} s (noise {a.noise} m)")
    run("oracle + depth + open3d", PerceptionPipeline(OracleDetector()), frames)
    from perception_node.core.pipeline import PipelineConfig
    run("oracle + depth only (no open3d)", PerceptionPipeline(OracleDetector(), PipelineConfig(use_open3d=False)),
        frames)
    configs = [("owlvit", a.owlvit), ("owlv2", a.owlv2), ("grounding_dino", a.grounding_dino)]
    for kind, path in configs:
        if path:
            det = make_detector(DetectorConfig(kind=kind, model_path=path, clip_model_path=a.clip))
            run(det.name, PerceptionPipeline(det), frames)
    if a.mdetr_checkpoint:
        det = make_detector(DetectorConfig(kind="mdetr", mdetr_checkpoint=a.mdetr_checkpoint,
                                           mdetr_text_encoder_dir=a.mdetr_text_encoder))
        run("mdetr", PerceptionPipeline(det), frames)
    if not any(p for _, p in configs) and not a.mdetr_checkpoint:
        print("\n(no model weights given: only the oracle was measured; see --help)")


if __name__ == "__main__":
    main()
