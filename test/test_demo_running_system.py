"""`monologue-demo graph:=running` beside a running graph (the README's "run monologue-demo beside
monologue-up"): it sends the instruction to that graph's planner, starts no node of its own, and judges
the world from the graph's ground truth."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.system, pytest.mark.slow]


def test_demo_runs_the_instruction_on_the_running_graph(sim_graph, ros_domain: int) -> None:  # type: ignore[no-untyped-def]
    sup, log, transcripts = sim_graph
    started = dict(sup.procs)
    exe = shutil.which("monologue-demo")
    cmd = [exe] if exe else [sys.executable, "-m", "monologue_eval.demo"]
    run = subprocess.run([*cmd, "graph:=running", "timeout:=500"], capture_output=True, text=True, timeout=560,
                         env=dict(os.environ, ROS_DOMAIN_ID=str(ros_domain)), stdin=subprocess.DEVNULL)
    out = f"{run.stdout[-4000:]}\n{run.stderr[-2000:]}\n{log.text()[-3000:]}"
    assert run.returncode == 0, out
    assert f"on the running graph (ROS_DOMAIN_ID={ros_domain})" in run.stdout
    assert "  Human: Put the blocks in their matching bowls." in run.stdout  # the monologue, live
    assert "== world state satisfies the instruction: True" in run.stdout, out
    assert "[up] started" not in run.stdout  # no graph of its own
    # the episode ran in the fixture's planner: its transcript is in the fixture's directory
    assert any(transcripts.glob("*.jsonl")), out
    assert sup.procs == started and not sup.dead()
