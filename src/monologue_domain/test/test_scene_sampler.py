"""The one scene sampler of both worlds (monologue_domain.scene_spec): limits, explicit colours, heavy
blocks, and the palette the simulator's renderer uses."""
from __future__ import annotations

import pytest

from monologue_domain.scene_spec import SceneSpec, layout_scene, make_spec, random_spec
from monologue_domain.tabletop import COLOR_RGB, COLORS


def test_same_seed_same_scene_and_different_seed_differs() -> None:
    a = layout_scene(random_spec(5, 3, 3), 5)
    assert a == layout_scene(random_spec(5, 3, 3), 5)
    assert a != layout_scene(random_spec(6, 3, 3), 6)
    assert sorted(o.segmentation_id for o in a.objects) == list(range(1, 7))


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


def test_every_colour_has_a_distinct_rgb() -> None:
    assert set(COLOR_RGB) == set(COLORS)
    assert all(0.0 <= c <= 1.0 for rgb in COLOR_RGB.values() for c in rgb)
    assert len(set(COLOR_RGB.values())) == len(COLORS)
