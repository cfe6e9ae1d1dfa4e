"""Tabletop world and sim backend: scene sampling, pick-and-place, affordances, cancel."""
from __future__ import annotations

import itertools
import logging
import math
import threading

import pytest

from skills_node.core.backend import SimBackend
from skills_node.core.tabletop import (
    BLOCK_SIZE,
    COLORS,
    LOCATIONS,
    MIN_SEPARATION,
    PlaceNoise,
    SceneSpec,
    TabletopWorld,
    world_with,
)
from monologue_domain.tasks import matching_bowls_done
from skills_node.core.types import SkillError, SkillState

LOG = logging.getLogger("test")


@pytest.mark.parametrize("seed", range(20))
def test_random_scene_respects_paper_limits(seed: int) -> None:
    w = TabletopWorld.random(seed, num_blocks=4, num_bowls=3)
    assert len(w.blocks) == 4 and len(w.bowls) == 3
    assert all(o.color in COLORS for o in w.objects)
    for a, b in itertools.combinations(w.objects, 2):
        assert math.hypot(a.x - b.x, a.y - b.y) >= MIN_SEPARATION - 1e-9


def test_same_seed_same_scene() -> None:
    a, b = TabletopWorld.random(7), TabletopWorld.random(7)
    assert [(o.name, o.x, o.y) for o in a.objects] == [(o.name, o.x, o.y) for o in b.objects]


def test_matching_bowls_scene_has_a_bowl_per_block() -> None:
    for seed in range(10):
        w = TabletopWorld.random(seed, num_blocks=3, num_bowls=3, matching_bowls=True)
        assert {b.color for b in w.blocks} <= {b.color for b in w.bowls}


def test_scene_limits_are_enforced() -> None:
    with pytest.raises(ValueError):
        TabletopWorld.random(0, num_blocks=5)
    with pytest.raises(ValueError):
        TabletopWorld.random(0, num_blocks=3, num_bowls=2, matching_bowls=True)


def test_place_in_bowl_then_success_rule() -> None:
    w = world_with([("red block", (0.4, 0.1, 0.02)), ("red bowl", (0.6, -0.1, 0.0))])
    ok, _ = w.pick_place("red block", "red bowl")
    assert ok
    assert w.is_on("red block", "red bowl")
    assert matching_bowls_done(w.snapshot())


def test_stacking_raises_the_block() -> None:
    w = world_with([("red block", (0.4, 0.1, 0.02)), ("blue block", (0.6, -0.1, 0.02))])
    w.pick_place("red block", "blue block")
    red = w.get("red block")
    assert red.z == pytest.approx(0.02 + BLOCK_SIZE)
    assert w.is_on("red block", "blue block")
    # the blue block is now covered: it cannot be picked and its affordances drop to 0
    affs = {a.args: a.affordance for a in w.affordances(include_unaffordable=True)}
    assert affs[("blue block", "middle")] == 0.0
    with pytest.raises(Exception, match="not clear"):
        w.check_pick_place("blue block", "middle")


def test_location_target_ignores_height() -> None:
    w = world_with([("red block", (0.4, 0.1, 0.02))])
    w.pick_place("red block", "top left corner")
    assert w.is_on("red block", "top left corner")
    assert (w.get("red block").x, w.get("red block").y) == LOCATIONS["top left corner"]


def test_completed_skill_gets_capped_affordance() -> None:
    w = world_with([("red block", (0.4, 0.1, 0.02)), ("red bowl", (0.6, -0.1, 0.0))], completed_affordance=0.0)
    w.pick_place("red block", "red bowl")
    affs = {a.args: a.affordance for a in w.affordances()}
    assert ("red block", "red bowl") not in affs  # affordance 0 is not admissible
    assert affs[("red block", "middle")] == 1.0


def test_place_noise_is_seeded_and_bounded() -> None:
    spec = SceneSpec(("red",), ("blue",))
    offsets = []
    for _ in range(2):
        w = TabletopWorld.from_spec(spec, seed=3, place_noise=PlaceNoise(0.02))
        w.pick_place("red block", "middle")
        offsets.append((w.get("red block").x, w.get("red block").y))
    assert offsets[0] == offsets[1]
    assert offsets[0] != LOCATIONS["middle"]
    assert math.hypot(offsets[0][0] - 0.5, offsets[0][1]) < 0.2


def _run(backend: SimBackend, args: tuple[str, str], cancel: threading.Event | None = None):
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
    assert out.error == SkillError.PRECONDITION_FAILED and "only blocks" in out.failed_precondition
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
    results = []
    t = threading.Thread(target=lambda: results.append(_run(b, ("red block", "middle"))[0]))
    t.start()
    import time
    time.sleep(0.05)
    second, _ = _run(b, ("blue block", "top side"))
    t.join()
    assert second.error == SkillError.BUSY
    assert results[0].ok


def test_matching_bowls_reward_near_miss() -> None:
    w = world_with([("red block", (0.6, -0.1 + 0.07, 0.02)), ("red bowl", (0.6, -0.1, 0.0))])
    assert not matching_bowls_done(w.snapshot())
