"""`monologue-bench --suite saycan` end to end: the real graph (robot sim_kitchen) with the embedded LLM,
2 instructions x the SayCan variant x 1 episode, each scored from its transcript and the final ground
truth; then a rerun that resumes (nothing left to run) and rebuilds the same report."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from monologue_domain.kitchen.suites import load_suite, suite_path
from monologue_domain.kitchen.world import make_state
from monologue_eval.core.kitchen_bench import chosen_skills, transcript_events
from monologue_eval.core.kitchen_report import score_episode

pytestmark = [pytest.mark.system, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
ARGS = ["--suite", "saycan", "--families", "nl_single", "--instructions", "2", "--variants", "saycan",
        "--episodes", "1", "--max-steps", "4", "--seed", "3"]


def _bench(out: Path, env: dict[str, str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("monologue-bench") or ""
    cmd = [exe] if exe else [sys.executable, "-m", "monologue_eval.bench"]
    return subprocess.run(cmd + ARGS + ["--out", str(out)], env=env, capture_output=True, text=True,
                          timeout=timeout_s, stdin=subprocess.DEVNULL)


def test_saycan_suite_runs_two_instructions_scores_them_and_resumes(ros_domain: int, tmp_path: Path) -> None:
    out = tmp_path / "bench"
    env = dict(os.environ, ROS_DOMAIN_ID=str(ros_domain))
    run = _bench(out, env, 240.0)
    logs = f"{run.stdout[-3000:]}\n{run.stderr[-3000:]}\n" + (
        (out / "graph.log").read_text()[-3000:] if (out / "graph.log").exists() else "")
    assert run.returncode == 0, logs

    suite = load_suite(suite_path(REPO / "config", "saycan"))
    instructions = suite.by_key()
    data = json.loads((out / "results.json").read_text())
    assert data["settings"] == {"suite": "saycan", "llm": "embedded", "seed": 3, "max_steps": 4}
    records = data["records"]
    assert [(r["episode"]["instruction"], r["episode"]["variant"], r["episode"]["condition"])
            for r in records] == [("nl_single_01", "saycan", "none"), ("nl_single_02", "saycan", "none")], logs
    for r in records:
        e, instr = r["episode"], instructions[r["episode"]["instruction"]]
        assert r["instruction_text"] == instr.text
        transcript = Path(r["transcript_path"])
        assert transcript.parent == out / "transcripts"
        header = json.loads(transcript.read_text().splitlines()[0])
        assert (header["strategy"], header["prompt_profile"], header["options"]["use_affordances"]) == (
            "saycan", "saycan", True)
        skills = chosen_skills(transcript_events(transcript))
        assert e["skills"] == skills and 1 <= r["steps"] <= 4
        assert r["steps"] == len([s for s in skills if s != "done"])
        # the world's final state is a kitchen state; the stored scores are the scores of that state
        fs = r["final_state"]
        final = make_state(fs["objects"], fs["robot"], fs["open"])
        assert final.holding == fs["holding"]
        again = score_episode("saycan", instr, "saycan", "none", 0, skills, final)
        assert (again.plan_success, again.execution_success, again.failure_cause) == (
            e["plan_success"], e["execution_success"], e["failure_cause"]), r
    rows = {(c["row"], c["column"]): c for c in data["cells"]}
    assert rows[("nl_single", "saycan/plan")]["episodes"] == 2
    assert rows[("nl_single", "saycan/plan")]["paper_percent"] == 100
    table = (out / "table.md").read_text()
    assert "## SayCan benchmark (SC Table 2)" in table and "| NL Single | 15 |" in table
    assert (out / "chart.png").read_bytes()[:4] == b"\x89PNG"
    assert "success so far" in run.stdout and "ETA" in run.stdout

    # rerun: everything is done, so no graph starts and the report is rebuilt from episodes.jsonl
    rerun = _bench(out, env, 60.0)
    assert rerun.returncode == 0, rerun.stderr
    assert "starting the graph" not in rerun.stdout and "[2/2] episodes already done" in rerun.stdout
    assert (out / "table.md").read_text() == table
