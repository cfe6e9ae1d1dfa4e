"""`monologue-bench --suite table1 --llm expert` end to end on the kinematic tabletop: the real graph with the
expert stand-in (the simulator writes its truth, the bench writes each episode's goal), a 2-episode smoke
of IM's Success-feedback variant in which both episodes must reach their reward."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from monologue_domain.tasks import Body, sample_task

pytestmark = [pytest.mark.system]

ARGS = ["--suite", "table1", "--llm", "expert", "--robot", "sim_kinematic", "--episodes", "1",
        "--tasks", "pick_place,stack", "--variants", "im_object_success", "--seed", "7"]


def test_expert_solves_a_two_episode_table1_smoke_on_the_kinematic_world(ros_domain: int, tmp_path: Path) -> None:
    out = tmp_path / "bench"
    exe = shutil.which("monologue-bench") or ""
    cmd = [exe] if exe else [sys.executable, "-m", "monologue_eval.bench"]
    run = subprocess.run(cmd + ARGS + ["--out", str(out)], env=dict(os.environ, ROS_DOMAIN_ID=str(ros_domain)),
                         capture_output=True, text=True, timeout=300.0)
    logs = f"{run.stdout[-3000:]}\n{run.stderr[-3000:]}\n" + (
        (out / "graph.log").read_text()[-3000:] if (out / "graph.log").exists() else "")
    assert run.returncode == 0, logs
    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert sorted(e["task"] for e in episodes) == ["pick_place", "stack"], logs
    for e in episodes:
        task = sample_task(e["task"], e["seed"])
        state = {n: Body(tuple(p)) for n, p in e["final_state"].items()}
        assert task.reward(state), (e["instruction"], e["final_state"], logs)
        assert e["reward"] and e["planner_error"] == "NONE", e
    # the goal went to the stand-in's side channel, never to the planner
    tasks = json.loads((out / "expert_truth" / "tasks.json").read_text())
    assert {t["goal"]["family"] for t in tasks.values()} == {"pick_place", "stack"}
