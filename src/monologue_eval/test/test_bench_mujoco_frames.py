"""The perception benchmark's MuJoCo frames (monologue_eval/benchmarks/bench_perception.py): a real simulator frame,
sent through the node's path (16UC1 depth, the pipeline, the scene and marker messages) with the oracle,
puts every visible block within 1 cm of the simulator's ground truth."""
from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

os.environ.setdefault("MUJOCO_GL", "egl")  # before anything imports mujoco


BENCH = (Path(__file__).resolve().parents[2] / "monologue_eval" / "monologue_eval" / "benchmarks"
         / "bench_perception.py")


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("bench_perception", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file executes
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_oracle_locates_the_visible_blocks_of_a_mujoco_frame(bench: ModuleType) -> None:
    frames = bench.mujoco_frames(1, seed=0, camera=(320, 240, 45.0))  # the home view of one scene
    assert len(frames) == 1
    f = frames[0]
    assert f.depth.encoding == "16UC1" and (f.color.width, f.color.height) == (320, 240)
    blocks = {o.name for o in f.truth if o.category == "block"}
    assert len(blocks) >= 2 and blocks <= f.visible  # the home view sees the whole workspace

    camera = bench.camera_settings()  # the YAML's perception parameters, as the node reads them
    rep = bench.measure(bench.PerceptionPipeline(bench.OracleDetector(), camera.pipeline_config()), frames,
                        camera)  # the bench's own imports

    assert rep.fn == 0 and rep.fp == 0 and rep.tp == len(f.visible)
    block_errors = [e3 for key, errs in rep.errors_cm.items() if key.startswith("block") for _, e3 in errs]
    assert len(block_errors) == len(blocks)
    assert max(block_errors) < 1.0, rep.errors_cm  # cm, 3D, base frame
    assert set(rep.latencies_ms) >= {"decode", "detect", "depth", "open3d", "publish"}
