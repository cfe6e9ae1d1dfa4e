"""Scene sampling: IM §4.1 limits, seeds, explicit colours, and agreement with the kinematic sim."""
from __future__ import annotations

import itertools
import math

import pytest

from tabletop_sim.core import scene
from tabletop_sim.core.scene import (
    COLOR_RGB,
    COLORS,
    LOCATIONS,
    MIN_SEPARATION,
    WORKSPACE_X,
    WORKSPACE_Y,
    SceneSpec,
    layout_scene,
    make_spec,
    random_spec,
)


@pytest.mark.parametrize("seed", range(25))
def test_random_scenes_respect_the_paper_limits(seed: int) -> None:
    spec = random_spec(seed, 4, 3)
    layout = layout_scene(spec, seed)
    blocks = [o for o in layout.objects if o.category == "block"]
    bowls = [o for o in layout.objects if o.category == "bowl"]
    assert len(blocks) == 4 and len(bowls) == 3
    for o in layout.objects:
        assert WORKSPACE_X[0] <= o.x <= WORKSPACE_X[1] and WORKSPACE_Y[0] <= o.y <= WORKSPACE_Y[1]
        assert o.color in COLORS and o.name == f"{o.color} {o.category}"
    for a, b in itertools.combinations(layout.objects, 2):
        assert math.hypot(a.x - b.x, a.y - b.y) >= MIN_SEPARATION
    assert sorted(o.segmentation_id for o in layout.objects) == list(range(1, 8))


def test_same_seed_same_scene_and_different_seed_differs() -> None:
    a = layout_scene(random_spec(5, 3, 3), 5)
    assert a == layout_scene(random_spec(5, 3, 3), 5)
    assert a != layout_scene(random_spec(6, 3, 3), 6)


def test_limits_are_enforced() -> None:
    with pytest.raises(ValueError, match="0-4 blocks"):
        random_spec(0, 5, 3)
    with pytest.raises(ValueError, match="0-3 bowls"):
        random_spec(0, 2, 4)
    with pytest.raises(ValueError, match="at most 4 blocks"):
        SceneSpec(("red", "blue", "green", "pink", "cyan"), ()).validate()
    with pytest.raises(ValueError, match="unknown block colour"):
        SceneSpec(("magenta",), ()).validate()
    with pytest.raises(ValueError, match="duplicate"):
        SceneSpec(("red", "red"), ()).validate()
    with pytest.raises(ValueError, match="heavy block 'green'"):
        SceneSpec(("red",), ("green",), ("green",)).validate()


def test_matching_bowls_give_every_block_its_bowl() -> None:
    for seed in range(10):
        spec = random_spec(seed, 3, 3, matching_bowls=True)
        assert set(spec.block_colors) <= set(spec.bowl_colors)


def test_explicit_colours_override_random_ones_and_heavy_applies_to_both() -> None:
    spec = make_spec(1, 4, 3, block_colors=("red", "blue"), bowl_colors=("green",), heavy_blocks=("blue block",))
    assert spec.block_colors == ("red", "blue") and spec.bowl_colors == ("green",)
    layout = layout_scene(spec, 1)
    assert [o.name for o in layout.objects if o.heavy] == ["blue block"]
    random_with_heavy = make_spec(2, 2, 2, heavy_blocks=(random_spec(2, 2, 2).block_colors[0],))
    assert random_with_heavy.heavy_blocks and random_with_heavy.block_colors == random_spec(2, 2, 2).block_colors


def test_both_simulators_agree_on_colours_and_locations() -> None:
    from skills_node.core import tabletop as kinematic

    assert COLORS == kinematic.COLORS
    assert LOCATIONS == kinematic.LOCATIONS
    assert (WORKSPACE_X, WORKSPACE_Y) == (kinematic.WORKSPACE_X, kinematic.WORKSPACE_Y)
    assert (scene.BLOCK_SIZE, scene.BOWL_DIAMETER, scene.BOWL_HEIGHT, scene.MIN_SEPARATION) == (
        kinematic.BLOCK_SIZE, kinematic.BOWL_DIAMETER, kinematic.BOWL_HEIGHT, kinematic.MIN_SEPARATION)
    assert set(COLOR_RGB) == set(COLORS)
    assert all(0.0 <= c <= 1.0 for rgb in COLOR_RGB.values() for c in rgb)
    assert len(set(COLOR_RGB.values())) == len(COLORS)
