"""The kinematic tabletop world: scene sampling, pick-and-place, stacking, affordances, place noise."""
from __future__ import annotations

import itertools
import math

import pytest

from monologue_domain.kinematic_world import PlaceNoise, TabletopWorld, world_with
from monologue_domain.scene_spec import SceneSpec
from monologue_domain.tabletop import BLOCK_SIZE, COLORS, LOCATIONS, MIN_SEPARATION
from monologue_domain.tasks import matching_bowls_done


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
    with pytest.raises(Exception, match="because the red block is on top of it"):
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


def test_matching_bowls_reward_near_miss() -> None:
    w = world_with([("red block", (0.6, -0.1 + 0.07, 0.02)), ("red bowl", (0.6, -0.1, 0.0))])
    assert not matching_bowls_done(w.snapshot())


def test_a_block_in_a_bowl_beside_a_block_is_not_on_top_of_it() -> None:
    """Regression (issue 29's ceiling runs): a block resting in a bowl within 4 cm (x-y) of a block on the
    table is 0.5 cm higher; it used to count as on top of it, so the table block could not be picked."""
    w = world_with([("red block", (0.45, 0.10, 0.02)), ("green bowl", (0.50, 0.10, 0.0)),
                    ("blue block", (0.48, 0.10, 0.025))])
    assert w.objects_on_top_of("red block") == []
    assert w.precondition("red block", "top left corner") is None
    w.pick_place("red block", "top left corner")
    assert w.is_on("red block", "top left corner")
    stacked = world_with([("red block", (0.45, 0.10, 0.02)), ("blue block", (0.46, 0.10, 0.06))])
    assert [o.name for o in stacked.objects_on_top_of("red block")] == ["blue block"]
