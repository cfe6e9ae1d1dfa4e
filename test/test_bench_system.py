"""`monologue-bench` end to end: the real graph (the MuJoCo tabletop) with the expert stand-in (`--llm expert`),
1 episode x 2 tasks x 1 variant, then a rerun that resumes (nothing left to run) and rebuilds the same report.
The bench's mechanics (store, resume, report, chart, progress) do not depend on the model, so no model is
loaded here; the embedded model plans through the graph in test_graph_system.py, test_sim_camera_system.py
(MuJoCo) and test_kitchen_bench_system.py (a bench suite)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from monologue_domain.tasks import Body, sample_task

pytestmark = [pytest.mark.system, pytest.mark.slow]

# Seed 7 draws small scenes for both tasks (2 blocks, at most 1 bowl).
ARGS = ["--llm", "expert", "--episodes", "1", "--tasks", "pick_place,stack", "--variants", "im_object_success", "--seed", "7",
        "--max-steps", "4"]


def _bench(out: Path, env: dict[str, str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("monologue-bench") or ""
    cmd = [exe] if exe else [sys.executable, "-m", "monologue_eval.bench"]
    return subprocess.run(cmd + ARGS + ["--out", str(out)], env=env, capture_output=True, text=True,
                          timeout=timeout_s)


def test_bench_runs_two_tasks_and_writes_table_json_chart_then_resumes(ros_domain: int, tmp_path: Path) -> None:
    out = tmp_path / "bench"
    env = dict(os.environ, ROS_DOMAIN_ID=str(ros_domain))
    t0 = time.monotonic()
    run = _bench(out, env, 420.0)
    logs = f"{run.stdout[-3000:]}\n{run.stderr[-3000:]}\n" + (
        (out / "graph.log").read_text()[-3000:] if (out / "graph.log").exists() else "")
    assert run.returncode == 0, logs
    first_s = time.monotonic() - t0

    data = json.loads((out / "results.json").read_text())
    assert data["settings"] == {"llm": "expert", "seed": 7, "strategy": "scoring", "affordances": False,
                                "place_noise_m": 0.02, "max_steps": 4, "wording": "original", "params": ""}
    episodes = data["episodes"]
    assert [(e["task"], e["variant"], e["index"]) for e in episodes] == [
        ("pick_place", "im_object_success", 0), ("stack", "im_object_success", 0)], logs
    for e in episodes:
        task = sample_task(e["task"], e["seed"])  # the episode is reproducible from its seed
        assert e["instruction"] == task.instruction
        assert sorted(e["final_state"]) == sorted(task.scene.objects)
        # the recorded reward is the task's reward on the recorded final state
        state = {n: Body(tuple(p)) for n, p in e["final_state"].items()}  # type: ignore[arg-type]
        assert e["reward"] == task.reward(state)
        assert 1 <= e["steps"] <= 4 or e["planner_success"], e
        assert e["llm_calls"] >= 1 and e["prompt_tokens"] > 0 and e["llm_s"] > 0
        assert e["wall_s"] >= e["llm_s"] and e["setup_s"] > 0
        transcript = Path(e["transcript_path"])
        assert transcript.parent == out / "transcripts"
        lines = [json.loads(line) for line in transcript.read_text().splitlines()]
        assert lines[0]["prompt_profile"] == "im_sim_object_success"
        texts = [x["text"] for x in lines if x.get("record") == "event"]
        assert f"Human: {e['instruction']}" in texts
        assert e["steps"] == sum(t.startswith("Robot action: ") for t in texts)
        assert (e["steps"] > 0) == any(t.startswith("Success: ") for t in texts)
    cells = {(c["task"], c["variant"]): c for c in data["cells"]}
    assert cells[("pick_place", "im_object_success")]["paper_percent"] == 90.0
    assert cells[("stack", "im_object_success")]["episodes"] == 1

    table = (out / "table.md").read_text()
    ours = {e["task"]: f"{100 * int(e['reward'])}% [{'21–100' if e['reward'] else '0–79'}] {int(e['reward'])}/1"
            for e in episodes}
    assert f'| Seen | "Pick and place" | {ours["pick_place"]} | 90.0% |' in table, table
    assert f'|  | "Stack all the blocks" | {ours["stack"]} | 10.0% |' in table, table
    assert "| IM: Object + Success | 2 |" in table  # the wall-time table
    assert (out / "chart.png").read_bytes()[:4] == b"\x89PNG"
    assert "success so far" in run.stdout and "ETA" in run.stdout
    # the MuJoCo simulator's own speed, measured after the run
    assert "physics:" in run.stdout and "steps/s" in (out / "simulator.md").read_text()

    # rerun: everything is done, so no graph starts and the report is rebuilt from episodes.jsonl
    (out / "table.md").unlink()
    again = _bench(out, env, 60.0)
    assert again.returncode == 0, again.stderr
    assert "starting the graph" not in again.stdout and "2/2" in again.stdout
    assert (out / "table.md").read_text() == table
    print(f"benchmark of 2 episodes: {first_s:.1f} s")
