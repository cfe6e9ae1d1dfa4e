"""`monologue-bench --suite cape` end to end: the real graph (robot sim_household) with the expert stand-in,
CAPE's first Spot task in the lab scene x the SayCan baselines (perfect and noisy affordances: the planner
restarts per variant, the world per episode with its oracle) x 1 episode (2 steps at most), each scored
from its transcript and the final ground truth; then a rerun that resumes (nothing left to run) and
rebuilds the same report. Spot starts sitting: the perfect oracle leaves only "stand up" for the first step.

The expert stand-in (`--llm expert`) plans: what is checked here is the suite's harness (planner restarts,
oracles, scoring from transcripts and ground truth, report, resume), which does not depend on the model, and
no model is loaded (the planner restarts per variant: the embedded model loaded twice). The embedded model runs SayCan through a
bench suite in test_kitchen_bench_system.py and CAPE through the graph on Spot in test_cape_robots_system.py.

The CAPE variants are not run here: CAPE first embeds the scene's ~420 admissible actions, minutes on a
loaded 2-core machine. The `cape` strategy runs through the graph in test_demo_cape_system.py (kitchen) and
test/test_sim_household_system.py; the variants' planner parameters and the metrics on CAPE transcripts
are unit-tested (src/monologue_eval/test/test_cape_bench.py)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from monologue_domain.kitchen.household import SCENES, run_program
from monologue_eval.core.cape_bench import (
    attempts_from_events,
    load_cape_suite,
    score_episode,
    state_from_json,
)
from monologue_eval.core.kitchen_bench import transcript_events

pytestmark = [pytest.mark.system, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
ARGS = ["--suite", "cape", "--llm", "expert", "--families", "paper", "--instructions", "1", "--variants", "saycan_perfect,saycan_noisy",
        "--episodes", "1", "--max-steps", "2", "--seed", "3"]


def _bench(out: Path, env: dict[str, str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    """Run the bench; on a timeout it is interrupted (SIGINT: it stops its graph) before the test fails."""
    exe = shutil.which("monologue-bench") or ""
    cmd = [*([exe] if exe else [sys.executable, "-m", "monologue_eval.bench"]), *ARGS, "--out", str(out)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            stdout, stderr = proc.communicate(timeout=60.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        pytest.fail(f"monologue-bench took more than {timeout_s:.0f} s\n{stdout[-3000:]}\n{stderr[-3000:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)


def test_cape_suite_runs_the_saycan_baselines_scores_them_and_resumes(ros_domain: int, tmp_path: Path) -> None:
    out = tmp_path / "bench"
    env = dict(os.environ, ROS_DOMAIN_ID=str(ros_domain))
    run = _bench(out, env, 420.0)
    logs = f"{run.stdout[-3000:]}\n{run.stderr[-3000:]}\n" + (
        (out / "graph.log").read_text()[-3000:] if (out / "graph.log").exists() else "")
    assert run.returncode == 0, logs

    task = load_cape_suite(REPO / "config").by_key()["paper_run_lab"]
    data = json.loads((out / "results.json").read_text())
    assert data["settings"] == {"suite": "cape", "llm": "expert", "seed": 3, "max_steps": 2}
    records = {r["episode"]["variant"]: r for r in data["records"]}
    assert set(records) == {"saycan_perfect", "saycan_noisy"}, logs
    for variant, rec in records.items():
        e = rec["episode"]
        assert (e["task"], e["scene"], e["source"]) == ("paper_run_lab", "lab", "paper")
        assert rec["instruction_text"] == "Prepare for a run on a warm day"
        transcript = Path(rec["transcript_path"])
        assert transcript.parent == out / "transcripts"
        header = json.loads(transcript.read_text().splitlines()[0])
        assert (header["strategy"], header["prompt_profile"], header["options"]["use_affordances"]) == (
            "saycan", "household", True)
        events = transcript_events(transcript)
        attempts = attempts_from_events(events)
        assert [dict(a.__dict__, args=list(a.args)) for a in attempts] == rec["attempts"]
        assert len({a.step for a in attempts}) <= 2 and e["plan_steps"] == len({a.step for a in attempts})
        # the final state is what the attempts that ran do from the start state; the scores are its scores
        final = state_from_json(rec["final_state"])
        ran = [(a.skill, a.args) for a in attempts if a.ok]
        assert final.object_locations == run_program(SCENES["lab"]()[0], task.start(), ran).object_locations
        assert score_episode(task, variant, 0, attempts, final).to_json() == e
        assert 0 <= e["lcs"] <= 100 and 0 < e["gs_match"] <= e["gs_total"] and e["reference"] == task.reference_texts()
        assert e["goal"] is False  # two steps cannot prepare for a run
        assert e["corrections"] == 0  # SayCan never re-tries a step
        if variant == "saycan_perfect":  # only "stand up" is afforded at first, and every step runs
            assert attempts[0].skill == "stand_up" and e["executable"] and e["errors"] == [] and e["lcs"] > 0
        else:  # a flipped affordance may let a step through that the world refuses: a precondition error
            assert all(err["difficulty"] in (1, 2, 3, 4) and not err["resolved"] for err in e["errors"])
            assert e["executable"] == (not e["errors"])
    for v in ("saycan_perfect", "saycan_noisy"):
        s = data["summary"][f"paper/{v}"]
        assert s["episodes"] == 1 and s["exec"]["n"] == 1 and 0.5 < s["gs"]["rate"] <= 1.0
    table = (out / "table.md").read_text()
    assert "## CAPE household benchmark (CAPE Tables I-II)" in table and "not reproducible" in table
    row = next(line for line in table.splitlines() if line.startswith("| SayCan (Perfect) | 1 | 28.33 |"))
    assert "| 83.33 |" in row and "| 41.13 |" in row  # the paper's Table II numbers beside ours
    assert "| SayCan (Noisy) | 1 | 16.67 |" in table
    assert (out / "chart.png").read_bytes()[:4] == b"\x89PNG"
    assert "ETA" in run.stdout and "planner up for saycan_noisy" in run.stdout and "planner up for saycan_perfect" in run.stdout

    rerun = _bench(out, env, 60.0)
    assert rerun.returncode == 0, rerun.stderr
    assert "starting the graph" not in rerun.stdout and "[2/2] episodes already done" in rerun.stdout
    assert (out / "table.md").read_text() == table
