"""MuJoCo tabletop benchmark (prints numbers; no assertions).

Run: `. scripts/env.sh && monologue-bench-sim [--real-time-factor 5] [--width 640 --height 480]`
(defaults: the simulator node's parameters in config/robots/sim.yaml)
(or `python -m monologue_eval.benchmarks.bench_sim ...`).

1. Physics steps per second: the arm at rest with a full scene (4 blocks, 3 bowls), and while the arm
   moves (trajectory following, contact sensing, a gripped block).
2. Render time per frame of the wrist and overhead cameras: colour + depth (one pass) and the extra
   segmentation pass.
3. Wall time of one IM pick-and-place (hover 15 cm, move until contact, suction, lift, carry, place)
   with the physics thread paced at the real-time factor, as the simulator node runs it; and with no
   pacing (as fast as the CPU allows). Motion planning (IK along every path) is timed separately.

`--summary` prints only a short Markdown section instead (physics steps/s at rest, wrist-camera render
time per 640x480 frame): `monologue-bench` runs it as a process after a run and stores it as
`simulator.md`.
"""
from __future__ import annotations

import argparse
import logging
import os
import statistics
import time
from dataclasses import replace

os.environ.setdefault("MUJOCO_GL", "egl")

from monologue_bringup.graph import default_config_dir  # noqa: E402
from monologue_domain.robots import node_parameters  # noqa: E402
from monologue_domain.scene_spec import SceneSpec, layout_scene  # noqa: E402
from tabletop_sim.core.arm import ArmController  # noqa: E402
from tabletop_sim.core.camera import CameraRenderer  # noqa: E402
from tabletop_sim.core.config import SimSettings, settings_from_parameters  # noqa: E402
from tabletop_sim.core.kinematics import PARK_Q, ArmKinematics  # noqa: E402
from tabletop_sim.core.primitive import pick_and_place  # noqa: E402
from tabletop_sim.core.runner import SimRunner  # noqa: E402
from tabletop_sim.core.world import SimWorld, WorldConfig  # noqa: E402

LOG = logging.getLogger("bench_sim")
SPEC = SceneSpec(("red", "blue", "green", "yellow"), ("pink", "cyan", "gray"))


def sim_settings() -> SimSettings:
    """The simulator node's parameters as config/monologue.yaml and robots/sim.yaml set them."""
    return settings_from_parameters(node_parameters(default_config_dir(), "tabletop_sim",
                                                    ["monologue.yaml", "robots/sim.yaml"]))


def world_config(seed: int, **config: object) -> WorldConfig:
    """The simulator node's physics world (sim.yaml) with this noise seed and these fields changed."""
    return replace(sim_settings().world_config(), seed=seed, **config)  # type: ignore[arg-type]


def world(seed: int = 3, **config: object) -> SimWorld:
    w = SimWorld(layout_scene(SPEC, seed), world_config(seed, **config), LOG)
    w.step(100)
    return w


def bench_physics(steps: int) -> None:
    w = world()
    t0 = time.perf_counter()
    w.step(steps)
    idle = steps / (time.perf_counter() - t0)
    print(f"physics, arm at rest:        {idle:10,.0f} steps/s  ({idle * w.config.timestep:6.1f}x real time, "
          f"timestep {w.config.timestep * 1000:.1f} ms)")
    arm = ArmController(w, None, LOG)
    red = next(o.position for o in w.objects() if o.name == "red block")
    pink = next(o.position for o in w.objects() if o.name == "pink bowl")
    steps_before, sim_before = w.time, w.time
    t0 = time.perf_counter()
    out = pick_and_place(arm, (red[0], red[1], red[2] + 0.02), (pink[0], pink[1], 0.05))
    wall = time.perf_counter() - t0
    n = (w.time - steps_before) / w.config.timestep
    print(f"physics, arm moving:         {n / wall:10,.0f} steps/s  ({(w.time - sim_before) / wall:6.1f}x real time, "
          f"incl. planning; pick-and-place {'ok' if out.placed else 'FAILED: ' + out.failure})")


def bench_render(width: int, height: int, frames: int) -> None:
    for camera in ("wrist", "overhead"):
        park: dict[str, object] = {"home_q": PARK_Q} if camera == "overhead" else {}  # arm out of the overhead view
        w = world(3, image_width=width, image_height=height, **park)  # the default seed
        r = CameraRenderer(w, camera, width, height, pixel_noise_std=0.0, seed=0)
        try:
            r.render(segmentation=True)  # warm-up (context, textures)
            rgbd = seg = 0.0
            for _ in range(frames):  # a physics step before each frame: no cached images
                w.step(1)
                t0 = time.perf_counter()
                r.render()
                rgbd += (time.perf_counter() - t0) / frames
                w.step(1)
                t0 = time.perf_counter()
                r.render(segmentation=True)
                seg += (time.perf_counter() - t0) / frames
            seg -= rgbd
        finally:
            r.close()
        print(f"render {camera:8s} {width}x{height}: RGB + depth {rgbd * 1000:6.1f} ms/frame, "
              f"segmentation +{seg * 1000:5.1f} ms")


def bench_pick_place(real_time_factor: float, repeats: int) -> None:
    kin = ArmKinematics()
    for rtf in (real_time_factor, 0.0):
        walls, sims, plans = [], [], []
        for i in range(repeats):
            w = world(seed=10 + i)
            runner = SimRunner(w, rtf, LOG).start()
            arm = ArmController(w, runner, LOG, kin)
            red = next(o.position for o in w.objects() if o.name == "red block")
            pink = next(o.position for o in w.objects() if o.name == "pink bowl")
            planned = _timed_planning(arm)
            sim0 = w.time
            t0 = time.perf_counter()
            out = pick_and_place(arm, (red[0], red[1], red[2] + 0.02), (pink[0], pink[1], 0.05))
            walls.append(time.perf_counter() - t0)
            del arm.kin.solve  # back to the class's method
            sims.append(w.time - sim0)
            plans.append(planned.total)
            runner.close()
            if not out.placed:
                print(f"  pick-and-place failed: {out.failure}")
        label = f"real-time factor {rtf:g}" if rtf > 0 else "as fast as possible"
        print(f"pick-and-place, {label:22s}: wall {statistics.median(walls):5.2f} s "
              f"(min {min(walls):.2f}, max {max(walls):.2f}) for {statistics.median(sims):.2f} s simulated; "
              f"motion planning {statistics.median(plans):.2f} s of it")


class _PlanTimer:
    total = 0.0


def _timed_planning(arm: ArmController) -> _PlanTimer:
    """Wrap the controller's IK solver to add up the wall time spent planning."""
    timer = _PlanTimer()
    solve = arm.kin.solve

    def timed(*args: object, **kwargs: object) -> object:
        t0 = time.perf_counter()
        try:
            return solve(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            timer.total += time.perf_counter() - t0

    arm.kin.solve = timed  # type: ignore[method-assign, assignment]
    return timer


def summary(steps: int = 2000, frames: int = 5) -> str:
    """The simulator's speed on this machine (Markdown): physics steps/s with the arm at rest, and render
    time per 640x480 colour + depth frame of the wrist camera."""
    w = SimWorld(layout_scene(SceneSpec(("red", "blue"), ("pink",)), 3),
                 world_config(3, image_width=640, image_height=480), LOG)
    w.step(100)
    t0 = time.perf_counter()
    w.step(steps)
    rate = steps / (time.perf_counter() - t0)
    lines = ["### Simulator (MuJoCo, measured after the run)", "",
             f"- physics: {rate:,.0f} steps/s with the arm at rest (timestep {w.config.timestep * 1000:.1f} ms, "
             f"{rate * w.config.timestep:.0f}x real time)"]
    try:
        renderer = CameraRenderer(w, "wrist", 640, 480, pixel_noise_std=0.0, seed=0)
    except Exception as e:  # no OpenGL context: the node runs without camera topics too
        return "\n".join([*lines, f"- render: unavailable ({e})", ""])
    try:
        renderer.render()  # warm-up
        t0 = time.perf_counter()
        for _ in range(frames):
            w.step(1)
            renderer.render()
        ms = (time.perf_counter() - t0) / frames * 1000
    finally:
        renderer.close()
    return "\n".join([*lines, f"- render: {ms:.0f} ms per 640x480 colour + depth frame (wrist camera)", ""])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--summary", action="store_true",
                    help="print only the short Markdown summary monologue-bench stores (simulator.md)")
    ap.add_argument("--real-time-factor", type=float, default=None, help="default: the node's (sim.yaml)")
    ap.add_argument("--width", type=int, default=None, help="px; default: the node's camera.width (sim.yaml)")
    ap.add_argument("--height", type=int, default=None, help="px; default: the node's camera.height (sim.yaml)")
    ap.add_argument("--steps", type=int, default=5000, help="physics steps for the rest benchmark")
    ap.add_argument("--frames", type=int, default=10, help="frames per render measurement")
    ap.add_argument("--repeats", type=int, default=3, help="pick-and-places per setting")
    args = ap.parse_args()
    if args.summary:
        print(summary(), end="")
        return
    s = sim_settings()
    bench_physics(args.steps)
    bench_render(s.image_width if args.width is None else args.width,
                 s.image_height if args.height is None else args.height, args.frames)
    bench_pick_place(s.real_time_factor if args.real_time_factor is None else args.real_time_factor, args.repeats)


if __name__ == "__main__":
    main()
