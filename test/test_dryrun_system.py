"""The dry run from the command line's graph description: `robot:=spot fake:=true` as monologue-up starts it
(monologue_bringup.up.Supervisor with fake=True). The fake Spot runs as a process of the graph (console script
fake_spot: the gRPC robot on 127.0.0.1 hosting the kitchen), the preflight runs against it before the nodes start,
then the real Spot backend, perception on the hand camera and the planner solve one kitchen step.
One graph for the module; the embedded LLM with one step (as test_spot_system.py)."""
from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from monologue_bringup.testing import running, wait_for

pytestmark = [pytest.mark.system]
OK_CODES = (0, -2, -15, 130)


@pytest.fixture(scope="module")
def dry_spot(ros_domain: int) -> Iterator[tuple[Any, list[str], list[Any]]]:
    from monologue_bringup.check import fake_checks
    from monologue_bringup.up import Supervisor

    lines: list[str] = []
    findings: list[Any] = []
    sup = Supervisor("spot", "embedded", sink=lines.append, fake=True,
                     nodes=["skills", "perception", "success_detector", "planner"],
                     node_params={"skills": {"spot.camera.rate": "4.0", "status_rate": "10.0"},
                                  "perception": {"process_rate": "4.0", "refresh_timeout": "5.0"}})

    def preflight() -> list[str]:  # as monologue-up's, without loading a second LLM (the planner loads it)
        findings.extend(fake_checks(sup, ("llm",)))
        return [f.line() for f in findings if f.fails]

    sup.preflight = preflight
    with running(sup, lines, ok_codes=OK_CODES):
        yield sup, lines, findings


def test_the_fake_spot_is_a_process_of_the_graph_and_passes_the_preflight(
        dry_spot: tuple[Any, list[str], list[Any]]) -> None:
    sup, lines, findings = dry_spot
    assert "fake_spot" in sup.procs and not sup.dead()
    log = "\n".join(lines)
    assert log.index("[up] started fake_spot") < log.index("[up] started skills")  # fakes serve first
    checks = {f.check: f for f in findings}
    assert checks["spot connection"].ok and checks["lease"].ok and checks["estop"].ok, [f.line() for f in findings]
    # the real backend connects to the fake over TLS, takes the lease and registers its e-stop endpoint
    wait_for("the skills node connected to the fake Spot", lambda: any(
        "connected to Spot 127.0.0.1" in line for line in lines), 180.0, sup, lines, poll_s=0.2)


@pytest.mark.slow
def test_a_kitchen_step_through_the_planner(dry_spot: tuple[Any, list[str], list[Any]]) -> None:
    from monologue_eval.client import run_episode

    sup, lines, _ = dry_spot

    def show(event: Any) -> None:
        print(f"{time.strftime('%H:%M:%S')} {event.text!r}", flush=True)

    result, objects = run_episode("pick up the coke", timeout_s=400.0, print_event=show, fallback_scene=True,
                                  goal_options={"strategy": "inner_monologue", "prompt_profile": "im_kitchen",
                                                "success_feedback": 1, "object_feedback": 2,
                                                "use_affordances": 2, "max_steps": 1})
    text = "\n".join(e.text for e in result.transcript)
    assert result.success or "step cap of 1" in result.reason, f"{result.reason}\n{text}\n" + "\n".join(lines[-60:])
    assert [e.text for e in result.transcript][:2] == ["Human: pick up the coke", "pick up the coke"], text
    assert any(o.name == "coke" for o in objects)  # the fake kitchen's truth, published by the fake_spot process
    assert not sup.dead(), sup.dead()
