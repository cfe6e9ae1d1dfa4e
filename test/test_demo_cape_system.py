"""`monologue-demo robot:=sim_kitchen strategy:=cape llm:=expert` (issues 15 and 29): the demo brings up the
symbolic kitchen with the robot already holding the coke and asks it to bring the coke; the expert stand-in
(seeded error rate, one sample a step) first proposes picking up the coke, a real precondition error; the
monologue printed live shows the error, CAPE's corrective prompt, the corrected step, and the goal reached."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.system, pytest.mark.slow]


def test_demo_on_the_kitchen_with_cape_shows_a_precondition_error_and_its_correction(ros_domain: int) -> None:
    exe = shutil.which("monologue-demo")
    cmd = [exe] if exe else [sys.executable, "-m", "monologue_eval.demo"]
    run = subprocess.run([*cmd, "robot:=sim_kitchen", "strategy:=cape", "llm:=expert", "timeout:=300",
                          "--param", "planner:max_steps=2", "--param", "planner:cape.max_corrections=1"],
                         capture_output=True, text=True, timeout=420, stdin=subprocess.DEVNULL,
                         env=dict(os.environ, ROS_DOMAIN_ID=str(ros_domain)))
    out = f"{run.stdout[-6000:]}\n{run.stderr[-2000:]}"
    assert "robot=sim_kitchen" in run.stdout and "strategy=cape" in run.stdout and "llm=expert" in run.stdout, out
    assert "== instruction: Bring me the coke" in run.stdout
    lines = [line.strip() for line in run.stdout.splitlines() if line.startswith("  ")]  # the monologue
    assert lines[0] == "Task: Bring me the coke", out
    assert re.match(r"Step 1: \w", lines[1]), out
    # the robot holds the coke: any first step that finds or picks it up is refused (CAPE D1)
    error = next((i for i, line in enumerate(lines) if line.startswith("Precondition error at step 1: I cannot")), None)
    assert error is not None, out
    assert lines[error].endswith("because I am already holding the coke"), out
    # CAPE's corrective prompt (C Tables VIII-X), then the corrected step with the same index
    assert lines[error + 1].startswith("Error: I cannot ") and lines[error + 1].endswith(
        ". A correct step would be to"), out
    assert lines[error + 2] == "Step 1: Bring it to you", out  # the correction, not a repeated refusal
    assert not any(line.startswith("Precondition error at step") for line in lines[error + 1:]), out
    assert lines[error + 3] == "Step 2: Done", out
    assert "== world state satisfies the instruction: True" in run.stdout, out
    assert run.returncode == 0, out
    assert "== planner:" in run.stdout and "== transcript:" in run.stdout
    assert "nodes exited with errors" not in run.stderr, out
