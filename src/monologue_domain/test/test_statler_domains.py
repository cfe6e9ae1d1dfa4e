"""Statler's domains as kinematic tabletop scenes (monologue_domain.statler_domains): cups hide blocks
from what an oracle perceives and moving the cup reveals them; dirt is settled after every skill and
never perceived; hidden weights; the cup game's state; plain scenes are laid out as before."""
from __future__ import annotations

import pytest

from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.scene_spec import SceneSpec, layout_scene
from monologue_domain.skills import SkillError, SkillRejected
from monologue_domain.statler_domains import (
    DomainSettings,
    DomainTruth,
    cup_game_state,
    domain_spec,
    read_domain,
    world_from_objects,
)
from monologue_domain.tabletop import DISINFECTOR

SPEC = SceneSpec(("red", "blue", "green"), ("pink",))


def domain_world(settings: DomainSettings, seed: int = 3) -> tuple[TabletopWorld, DomainTruth]:
    spec = domain_spec(settings, SPEC)
    world = TabletopWorld.from_spec(spec, seed)
    truth = DomainTruth.create(settings, spec, seed)
    assert truth is not None
    world.observer = truth
    world.settle()
    return world, truth


def names(world: TabletopWorld) -> list[str]:
    return [o.name for o in world.snapshot() if o.category != "location"]


def test_plain_scenes_keep_their_layout_and_have_no_truth() -> None:
    plain = layout_scene(SPEC, 3)
    assert layout_scene(domain_spec(DomainSettings(), SPEC), 3) == plain
    assert DomainTruth.create(DomainSettings(), SPEC, 3) is None
    # the domain's objects come after the plain ones, which keep their places
    covers = layout_scene(domain_spec(DomainSettings("covers"), SPEC), 3)
    assert covers.objects[: len(plain.objects)] == plain.objects
    assert [o.segmentation_id for o in covers.objects] == list(range(1, len(covers.objects) + 1))


def test_a_covered_block_is_hidden_until_its_cup_moves() -> None:
    world, truth = domain_world(DomainSettings("covers"))
    cup = world.covered()["red block"]
    assert cup == "orange cup"  # the first colour no block or bowl has
    assert "red block" not in names(world) and "orange cup" in names(world)
    assert "red block" in [o.name for o in world.snapshot(include_covered=True)]
    assert not [a for a in world.affordances(include_unaffordable=True) if "red block" in a.args]
    with pytest.raises(SkillRejected) as e:
        world.check_pick_place("red block", "pink bowl")
    assert e.value.error == SkillError.PRECONDITION_FAILED and "red block" in e.value.failed_precondition
    assert truth.to_json(world)["covered"] == {"red block": "orange cup"}
    before = world.position_of("red block")
    assert world.pick_place(cup, "middle")[0]  # moves the cup only
    assert world.position_of("red block") == before and world.position_of(cup)[:2] == (0.5, 0.0)
    assert "red block" in names(world) and truth.to_json(world)["covered"] == {}
    assert world.pick_place(cup, "blue block")[0]  # covering another block hides it
    assert world.covered() == {"blue block": "orange cup"} and "blue block" not in names(world)
    assert world.position_of(cup)[2] == 0.0  # the cup stands on the table around the block


def test_a_block_put_on_a_cup_rests_on_its_top_and_pins_it() -> None:
    world, _ = domain_world(DomainSettings("covers"))
    assert world.pick_place("blue block", "yellow cup")[0]
    assert world.position_of("blue block")[2] == pytest.approx(0.07 + 0.02)
    with pytest.raises(SkillRejected, match="the blue block is on top of it"):
        world.check_pick_place("yellow cup", "middle")


def test_cup_game_state_is_the_papers_boolean_list_left_to_right() -> None:
    spec = domain_spec(DomainSettings("covers", cup_colors=("orange", "yellow", "purple"),
                                      covered_blocks=("blue",)), SPEC)
    world = TabletopWorld.from_spec(spec, 5)
    for cup, y in (("orange cup", 0.2), ("yellow cup", 0.0), ("purple cup", -0.2)):
        world.move_object(cup, 0.45, y)
    world.move_object("blue block", 0.45, 0.0)  # under the middle cup... dropped onto its top
    assert world.covered() == {}
    world.move_object("yellow cup", 0.6, 0.0)
    world.move_object("blue block", 0.45, 0.0)
    world.move_object("yellow cup", 0.45, 0.0)  # the cup goes over the block
    assert cup_game_state(world) == {"cups": ["orange cup", "yellow cup", "purple cup"], "state": [False, True, False]}
    world.move_object("yellow cup", 0.45, -0.25)  # "swapping" reveals it
    assert cup_game_state(world)["state"] == [False, False, False]


def test_dirt_settles_after_every_skill_and_the_disinfector_cleans() -> None:
    world, truth = domain_world(DomainSettings("disinfection", dirty_blocks=("red",)))
    assert DISINFECTOR in names(world) and world.get(DISINFECTOR).category == "bowl"
    assert "dirty" not in str(world.snapshot())  # never perceived
    assert world.pick_place("blue block", "red block")[0]
    assert truth.disinfection.dirty == {"red block", "blue block"}
    assert world.pick_place("blue block", DISINFECTOR)[0]
    assert truth.disinfection.dirty == {"red block"}
    assert world.pick_place("red block", DISINFECTOR)[0]  # lands on the blue block, inside the disinfector
    data = truth.to_json(world)
    assert data["dirty"] == [] and set(data["contains"][DISINFECTOR]) == {"red block", "blue block"}
    assert data["clean"] == ["blue block", "green block", "red block"]


def test_unknown_dirty_blocks_and_scenes_are_refused() -> None:
    with pytest.raises(ValueError, match="not blocks of the scene"):
        DomainTruth.create(DomainSettings("disinfection", dirty_blocks=("cyan",)), SPEC, 1)
    with pytest.raises(ValueError, match="unknown scene"):
        domain_spec(DomainSettings("kitchen"), SPEC)
    with pytest.raises(ValueError, match="covered blocks"):
        domain_spec(DomainSettings("covers", covered_blocks=("cyan",)), SPEC).validate()


def test_hidden_weights_from_the_seed_or_given() -> None:
    _, drawn = domain_world(DomainSettings("weights"), seed=4)
    _, again = domain_world(DomainSettings("weights"), seed=4)
    assert drawn.weights is not None and again.weights is not None
    assert drawn.weights.weights == again.weights.weights and set(drawn.weights.weights.values()) <= {1, 2, 3, 4}
    world, given = domain_world(DomainSettings("weights", block_weights=(2.0, 1.0, 1.0)))
    assert world.pick_place("blue block", "pink bowl")[0]
    data = given.to_json(world)
    assert data["weights"] == {"red block": 2.0, "blue block": 1.0, "green block": 1.0}
    assert data["total_weight"] == {"pink bowl": 1.0}
    assert "weight" not in str(world.snapshot())
    with pytest.raises(ValueError, match="3 blocks"):
        DomainTruth.create(DomainSettings("weights", block_weights=(1.0, 2.0)), SPEC, 1)


def test_settings_from_parameters_and_a_world_from_objects() -> None:
    s = read_domain({"sim.scene": "covers", "sim.cup_colors": ["", "cyan"], "sim.block_weights": [0.0]})
    assert s == DomainSettings("covers", cup_colors=("cyan",), block_weights=(0.0,))
    world, _ = domain_world(DomainSettings("covers"))
    copy = world_from_objects(world.snapshot(include_covered=True))
    assert copy.covered() == world.covered() and [o.name for o in copy.objects] == [o.name for o in world.objects]
