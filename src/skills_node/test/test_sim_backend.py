"""The kinematic skill backend: motion phases, heavy blocks, refusals, cancel, one skill at a time."""
from __future__ import annotations

import logging
import threading

from monologue_domain.kinematic_world import TabletopWorld, world_with
from monologue_domain.scene_spec import SceneSpec
from skills_node.core.types import SkillError, SkillOutcome, SkillState
from skills_node.robots.kinematic.core.backend import SimBackend

LOG = logging.getLogger("test")


def _run(backend: SimBackend, args: tuple[str, str],
         cancel: threading.Event | None = None) -> tuple[SkillOutcome, list[SkillState]]:
    states: list[SkillState] = []
    out = backend.execute("pick_place", args, lambda s, _t: states.append(s), cancel or threading.Event())
    return out, states


def test_sim_backend_reports_phases_and_moves() -> None:
    w = world_with([("red block", (0.4, 0.1, 0.02)), ("red bowl", (0.6, -0.1, 0.0))])
    out, states = _run(SimBackend(w, LOG, phase_duration_s=0.0), ("red block", "red bowl"))
    assert out.ok
    assert states[0] == SkillState.MOVING_TO_PICK and states[-1] == SkillState.DONE
    assert w.is_on("red block", "red bowl")


def test_heavy_block_cannot_be_lifted() -> None:
    w = TabletopWorld.from_spec(SceneSpec(("purple", "red"), ("blue",), heavy_blocks=("purple",)), seed=1)
    before = (w.get("purple block").x, w.get("purple block").y)
    out, _ = _run(SimBackend(w, LOG, phase_duration_s=0.0), ("purple block", "blue bowl"))
    assert out.error == SkillError.EXECUTION_FAILED
    assert "could not lift" in out.message
    assert (w.get("purple block").x, w.get("purple block").y) == before


def test_bad_arguments_are_refused_before_motion() -> None:
    w = world_with([("red block", (0.4, 0.1, 0.02)), ("red bowl", (0.6, -0.1, 0.0))])
    b = SimBackend(w, LOG, phase_duration_s=0.0)
    out, states = _run(b, ("green block", "red bowl"))
    assert out.error == SkillError.INVALID_ARGUMENTS and states == []
    out, states = _run(b, ("red bowl", "red block"))
    assert out.error == SkillError.PRECONDITION_FAILED
    assert out.failed_precondition == "not_pickable: I cannot pick up the red bowl because I can only put things on the red bowl"
    assert b.execute("fly", ("a",), lambda *_: None, threading.Event()).error == SkillError.UNKNOWN_SKILL


def test_cancel_stops_before_place() -> None:
    w = world_with([("red block", (0.4, 0.1, 0.02)), ("red bowl", (0.6, -0.1, 0.0))])
    cancel = threading.Event()
    cancel.set()
    out, _ = _run(SimBackend(w, LOG, phase_duration_s=0.01), ("red block", "red bowl"), cancel)
    assert out.error == SkillError.CANCELED
    assert not w.is_on("red block", "red bowl")


def test_busy_backend_refuses_a_second_skill() -> None:
    w = world_with([("red block", (0.4, 0.1, 0.02)), ("blue block", (0.6, -0.1, 0.02))])
    b = SimBackend(w, LOG, phase_duration_s=0.2)
    started = threading.Event()
    results: list[SkillOutcome] = []
    t = threading.Thread(target=lambda: results.append(
        b.execute("pick_place", ("red block", "middle"), lambda _s, _t: started.set(), threading.Event())))
    t.start()
    assert started.wait(5.0)  # the first skill is in its first motion phase
    second, _ = _run(b, ("blue block", "top side"))
    t.join()
    assert second.error == SkillError.BUSY
    assert results[0].ok
