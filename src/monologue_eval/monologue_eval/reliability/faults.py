"""R3 (issue 20): faults. The fault tests are pytest tests (they assert on the transcript and the world); this
module runs them and turns each outcome into a table row:

- test/test_faults_system.py: one graph over DDS (sim_kinematic, the planner on llm:=openai against an
  OpenAI-compatible server process, test/scripted_llm_server.py; the bag recorder): perception stalled,
  the planner killed mid-skill and resumed (with the file's last line cut by the crash, and the bag
  recorder killed at the same moment), the LLM server killed, the skills node killed mid-skill;
- core tests (milliseconds): a full disk while the transcript is written, a cut last line, a killed
  recorder's bag, and the tests that existed before issue 20 for the same faults.

    python -m monologue_eval.reliability.faults [--no-system]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from monologue_eval.reliability.common import REPO, Row


@dataclass(frozen=True)
class Fault:
    what: str
    target: str
    test: str  # pytest node id, relative to the repository
    system: bool = False


FAULTS = (
    Fault("perception stalls (SIGSTOP)", "bounded wait (timeouts.service), SKILL_SERVER_UNAVAILABLE naming "
          "describe_scene, nothing moved",
          "test/test_faults_system.py::test_perception_stall_ends_the_episode_after_a_bounded_wait", True),
    Fault("planner killed mid-skill (SIGKILL), restarted, resumed", "no transcript event lost, changed or "
          "duplicated; the interrupted step settled from the world",
          "test/test_faults_system.py::test_planner_killed_mid_skill_resumes_without_losing_or_repeating_events",
          True),
    Fault("bag recorder killed (SIGKILL)", "bag readable up to the last flush (<= 1 s before the kill)",
          "test/test_faults_system.py::test_planner_killed_mid_skill_resumes_without_losing_or_repeating_events",
          True),
    Fault("LLM server killed mid-episode (SIGKILL)", "LLM_FAILED after the retries, transcript file intact",
          "test/test_faults_system.py::"
          "test_llm_server_killed_mid_episode_fails_with_llm_failed_and_an_intact_transcript", True),
    Fault("skills node killed mid-skill (SIGKILL)", "step fails after timeouts.skill, episode ends "
          "SKILL_SERVER_UNAVAILABLE with the reason",
          "test/test_faults_system.py::test_skills_node_killed_mid_skill_fails_the_step_after_a_bounded_wait", True),
    Fault("truncated last line of a transcript (core)", "skipped with a warning, resume loses nothing",
          "src/planner_node/test/test_transcript_faults.py::"
          "test_a_line_cut_by_a_crash_is_skipped_with_a_warning_and_the_resumed_episode_loses_nothing"),
    Fault("full disk while writing the transcript (core, ENOSPC)", "the episode stops before the robot moves "
          "and says why; the file is a gapless prefix",
          "src/planner_node/test/test_transcript_faults.py::"
          "test_a_full_disk_stops_the_episode_before_the_robot_moves_and_says_why"),
    Fault("killed recorder's bag (core)", "every flushed message readable, a cut chunk dropped",
          "src/monologue_bag/test/test_killed_recorder.py"),
    Fault("LLM server down (backend, before issue 20)", "LLMUnavailableError after the retries",
          "src/monologue_llm/test/test_openai_backend.py::test_down_server_is_unavailable_after_retries"),
    Fault("cancel mid-skill (before issue 20)", "the skill is cancelled, nothing moved, the episode saved",
          "test/test_episode_control_system.py::test_cancel_mid_skill", True),
)


def _outcomes(junit: Path) -> dict[str, tuple[bool, float, str]]:
    """{test id prefix: (passed, seconds, message)} from a JUnit XML report."""
    out: dict[str, tuple[bool, float, str]] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        path = str(case.get("classname", "")).replace(".", "/")
        name = str(case.get("name", ""))
        failed = [c for c in case if c.tag in ("failure", "error")]
        skipped = [c for c in case if c.tag == "skipped"]
        message = (failed[0].get("message", "") if failed else skipped[0].get("message", "") if skipped else "")
        out[f"{path}.py::{name}"] = (not failed and not skipped, float(case.get("time", 0.0)), message[:200])
    return out


def rows(system: bool = True) -> list[Row]:
    """Run the fault tests (with `system`, the ones over DDS too: about a minute) and report each."""
    chosen = [f for f in FAULTS if system or not f.system]
    files = list(dict.fromkeys(f.test for f in chosen))
    with tempfile.TemporaryDirectory(prefix="faults_") as tmp:
        junit = Path(tmp) / "junit.xml"
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-m", "pytest", "-c", str(REPO / "pytest.ini"), "-q", "-p", "no:cacheprovider",
                        f"--junitxml={junit}", *files], cwd=REPO, env=dict(os.environ), check=False)
        wall = time.monotonic() - t0
        results = _outcomes(junit) if junit.exists() else {}
    out = []
    for f in chosen:
        hits = [v for k, v in results.items() if k == f.test or k.startswith(f.test + "::")
                or k.startswith(f.test + "[")]
        if not hits:
            out.append(Row("R3", f.what, f.target, "not run", None, 0.0, f.test))
            continue
        ok = all(h[0] for h in hits)
        secs = sum(h[1] for h in hits)
        why = "; ".join(h[2] for h in hits if not h[0])
        out.append(Row("R3", f.what, f.target, "as targeted" if ok else f"FAILED: {why}", ok, secs,
                       f"{f.test} ({wall:.0f} s for all)"))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-system", action="store_true", help="only the core tests (no graph)")
    ns = ap.parse_args(argv)
    result = rows(system=not ns.no_system)
    for r in result:
        print(f"{r.figure} {r.what}: {r.measured} [{r.verdict}] ({r.wall_s:.1f} s)")
    return 0 if all(r.ok for r in result) else 1


if __name__ == "__main__":
    sys.exit(main())
