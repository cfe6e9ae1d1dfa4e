"""`monologue-bench --suite saycan --llm expert` end to end on robot sim_kitchen: the real graph with the
expert stand-in (the kitchen skills backend writes its truth, the bench writes each instruction's goal), a
2-instruction smoke of the SayCan variant in which both instructions must be planned and executed."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.system]

ARGS = ["--suite", "saycan", "--llm", "expert", "--families", "nl_nouns", "--instructions", "2",
        "--variants", "saycan", "--episodes", "1", "--seed", "0"]


def test_expert_plans_and_executes_two_saycan_instructions(ros_domain: int, tmp_path: Path) -> None:
    out = tmp_path / "bench"
    exe = shutil.which("monologue-bench") or ""
    cmd = [exe] if exe else [sys.executable, "-m", "monologue_eval.bench"]
    run = subprocess.run(cmd + ARGS + ["--out", str(out)], env=dict(os.environ, ROS_DOMAIN_ID=str(ros_domain)),
                         capture_output=True, text=True, timeout=240.0, stdin=subprocess.DEVNULL)
    logs = f"{run.stdout[-3000:]}\n{run.stderr[-3000:]}\n" + (
        (out / "graph.log").read_text()[-3000:] if (out / "graph.log").exists() else "")
    assert run.returncode == 0, logs
    records = json.loads((out / "results.json").read_text())["records"]
    assert [r["episode"]["instruction"] for r in records] == ["nl_nouns_01", "nl_nouns_02"], logs
    for r in records:
        e = r["episode"]
        assert e["plan_success"] and e["execution_success"], (e, logs)
        assert e["skills"][-1] == "done" and r["planner_error"] == "NONE", e
    # the goals went to the stand-in's side channel (never to the planner), with the suite's predicates
    tasks = json.loads((out / "expert_truth" / "tasks.json").read_text())
    assert {t["world"] for t in tasks.values()} == {"kitchen"} and len(tasks) == 2
    assert all(t["goal"]["predicate"] and t["goal"]["plans"] for t in tasks.values())
    truth = json.loads((out / "expert_truth" / "world.json").read_text())
    assert truth["source"] == "kitchen" and "kitchen_state" in truth["extra"]
