"""The one scene sampler: seeded outputs pinned to what both simulators produced before they shared it,
IM §4.1 limits, explicit colours, and the strict / lenient spec checks."""
from __future__ import annotations

import itertools
import math

import pytest

from monologue_domain.kinematic_world import PlaceNoise, TabletopWorld
from monologue_domain.scene_spec import (
    KINEMATIC_LAYOUT_ATTEMPTS,
    SceneSpec,
    layout_scene,
    make_spec,
    random_spec,
)
from monologue_domain.tabletop import BLOCK_SIZE, COLORS, MIN_SEPARATION, WORKSPACE_X, WORKSPACE_Y

# (seed, num_blocks, num_bowls, matching_bowls) -> [(name, x m, y m, segmentation id, heavy)], computed
# with the two samplers as they were before they were merged: skills_node's core/tabletop.py
# (TabletopWorld.random) and tabletop_sim's core/scene.py (layout_scene(random_spec(...))), which agreed.
PINNED: dict[tuple[int, int, int, bool], list[tuple[str, float, float, int, bool]]] = {
    (0, 4, 3, False): [
        ("pink block", 0.6377687406100192, 0.15477264176418148, 1, False),
        ("gray block", 0.46822863233233797, -0.144649949824222, 2, False),
        ("blue block", 0.4906387816609423, 0.05002922367301871, 3, False),
        ("green block", 0.663245154078134, 0.0028121134904341427, 4, False),
        ("brown bowl", 0.49080391062108675, 0.21918595666298407, 5, False),
        ("cyan bowl", 0.5194797215342357, -0.2915749799015886, 6, False),
        ("pink bowl", 0.3004571277257713, -0.0038532801208052136, 7, False),
    ],
    (1, 3, 3, False): [
        ("green block", 0.35374569764496044, 0.20846024216233955, 1, False),
        ("red block", 0.6055098475906455, -0.14695858455634697, 2, False),
        ("yellow block", 0.49817403483677636, -0.030305361126757135, 3, False),
        ("red bowl", 0.5606371890891051, 0.1732340106813079, 4, False),
        ("cyan bowl", 0.33754383470969396, -0.2829915140867962, 5, False),
        ("brown bowl", 0.6049120329831768, -0.29873636798933356, 6, False),
    ],
    (7, 2, 2, True): [
        ("purple block", 0.42953310593326494, -0.20949049564529884, 1, False),
        ("green block", 0.5143528017226756, -0.08058664985244868, 2, False),
        ("purple bowl", 0.3231995699098827, 0.004461439913652165, 3, False),
        ("green bowl", 0.46980767565700554, 0.19611127480322282, 4, False),
    ],
    (42, 3, 3, True): [
        ("red block", 0.5557707193831535, -0.2849935468663998, 1, False),
        ("blue block", 0.4100117273476477, -0.16607355711070634, 2, False),
        ("yellow block", 0.594588485665605, 0.10601969245374676, 3, False),
        ("blue bowl", 0.38745518992144135, 0.003213172862017444, 4, False),
        ("yellow bowl", 0.6828852288827124, -0.09804327293242393, 5, False),
        ("red bowl", 0.5144912365818802, 0.2838694583876224, 6, False),
    ],
    (123, 1, 0, False): [
        ("blue block", 0.32094543954037774, -0.2476879934864206, 1, False),
    ],
    (2026, 4, 3, False): [
        ("red block", 0.34764795398558523, 0.0015094531387503385, 1, False),
        ("purple block", 0.5047290851092283, 0.21600035258956524, 2, False),
        ("gray block", 0.3410547402027839, -0.1660292659932056, 3, False),
        ("cyan block", 0.5404122609540346, 0.03393541315472848, 4, False),
        ("gray bowl", 0.34429461743605194, 0.1900568117114228, 5, False),
        ("brown bowl", 0.69196493923339, 0.25759037892506736, 6, False),
        ("pink bowl", 0.5054350186518355, -0.2542080593566061, 7, False),
    ],
}


@pytest.mark.parametrize("key", list(PINNED))
def test_physics_simulator_layouts_are_unchanged(key: tuple[int, int, int, bool]) -> None:
    seed, blocks, bowls, matching = key
    layout = layout_scene(random_spec(seed, blocks, bowls, matching), seed)
    assert [(o.name, o.x, o.y, o.segmentation_id, o.heavy) for o in layout.objects] == PINNED[key]


@pytest.mark.parametrize("key", list(PINNED))
def test_kinematic_world_scenes_are_unchanged(key: tuple[int, int, int, bool]) -> None:
    seed, blocks, bowls, matching = key
    world = TabletopWorld.random(seed, blocks, bowls, matching)
    assert [(o.name, o.x, o.y, o.seg_id, o.heavy) for o in world.objects] == PINNED[key]
    assert all(o.z == (BLOCK_SIZE / 2 if o.category == "block" else 0.0) for o in world.objects)


def test_explicit_specs_are_unchanged_in_both_worlds() -> None:
    world = TabletopWorld.from_spec(SceneSpec(("purple", "red"), ("blue",), heavy_blocks=("purple",)), seed=1)
    assert [(o.name, o.x, o.y, o.seg_id, o.heavy) for o in world.objects] == [
        ("purple block", 0.35374569764496044, 0.20846024216233955, 1, True),
        ("red block", 0.6055098475906455, -0.14695858455634697, 2, False),
        ("blue bowl", 0.49817403483677636, -0.030305361126757135, 3, False),
    ]
    spec = make_spec(1, 4, 3, block_colors=("red", "blue"), bowl_colors=("green",), heavy_blocks=("blue block",))
    assert [(o.name, o.x, o.y, o.segmentation_id, o.heavy) for o in layout_scene(spec, 9).objects] == [
        ("red block", 0.48520294312600853, -0.07601284116297477, 1, False),
        ("blue block", 0.3554157650057821, 0.21993710999180477, 2, True),
        ("green bowl", 0.30257402163244934, 0.0016692480313250102, 3, False),
    ]
    assert make_spec(5, 3, 2) == SceneSpec(("gray", "yellow", "purple"), ("brown", "blue"))


def test_kinematic_place_noise_is_unchanged() -> None:
    world = TabletopWorld.from_spec(SceneSpec(("red",), ("blue",)), seed=3, place_noise=PlaceNoise(0.02))
    world.pick_place("red block", "middle")
    red = world.get("red block")
    assert (red.x, red.y, red.z) == (0.5008171188958621, 0.009297308402789443, 0.02)


def test_one_layout_for_both_worlds_whatever_the_attempt_budget() -> None:
    for seed in range(30):
        spec = random_spec(seed, 4, 3)
        layout = layout_scene(spec, seed)
        assert layout == layout_scene(spec, seed, strict=False, attempts=KINEMATIC_LAYOUT_ATTEMPTS)
        world = TabletopWorld.from_layout(layout)
        assert [(o.name, o.x, o.y) for o in world.objects] == [(o.name, o.x, o.y) for o in layout.objects]


@pytest.mark.parametrize("seed", range(25))
def test_random_layouts_respect_the_paper_limits(seed: int) -> None:
    layout = layout_scene(random_spec(seed, 4, 3), seed)
    assert [o.category for o in layout.objects] == ["block"] * 4 + ["bowl"] * 3
    for o in layout.objects:
        assert WORKSPACE_X[0] <= o.x <= WORKSPACE_X[1] and WORKSPACE_Y[0] <= o.y <= WORKSPACE_Y[1]
        assert o.color in COLORS and o.name == f"{o.color} {o.category}"
    for a, b in itertools.combinations(layout.objects, 2):
        assert math.hypot(a.x - b.x, a.y - b.y) >= MIN_SEPARATION


def test_strict_check_is_the_simulators_and_lenient_the_kinematic_worlds() -> None:
    five = SceneSpec(("red", "blue", "green", "pink", "cyan"), ())
    with pytest.raises(ValueError, match="at most 4 blocks"):
        layout_scene(five, 1)
    assert len(TabletopWorld.from_spec(five, 1).blocks) == 5
    with pytest.raises(ValueError, match="unknown block colour"):
        SceneSpec(("magenta",), ()).validate()
    SceneSpec(("magenta",), ()).validate(strict=False)
    for strict in (True, False):
        with pytest.raises(ValueError, match="duplicate"):
            SceneSpec(("red", "red"), ()).validate(strict)
        with pytest.raises(ValueError, match="heavy block 'green'"):
            SceneSpec(("red",), ("green",), ("green",)).validate(strict)
    assert SceneSpec(("red", "blue"), (), ("blue block",)).is_heavy("blue")
    with pytest.raises(ValueError, match="unknown block colour"):
        make_spec(0, 2, 2, block_colors=("magenta",))
    assert make_spec(0, 2, 2, block_colors=("magenta",), strict=False) == SceneSpec(("magenta",), ())
    with pytest.raises(ValueError, match="heavy block 'teal'"):
        make_spec(0, 2, 2, heavy_blocks=("teal",), strict=False)


def test_an_impossible_layout_fails_after_its_attempts() -> None:
    crowded = SceneSpec(tuple(f"c{i}" for i in range(12)), ())
    with pytest.raises(RuntimeError, match="could not place 12 objects"):
        layout_scene(crowded, 0, strict=False, attempts=3)
