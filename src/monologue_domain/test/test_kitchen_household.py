"""CAPE's household model: properties, rooms and doors, sitting, one or two hands, and the
precondition errors of CAPE's error types with their difficulty levels."""
from __future__ import annotations

import pytest

from monologue_domain.kitchen.household import HOUSEHOLD_SKILLS, HouseholdWorld, spot_home
from monologue_domain.kitchen.skills import parse_precondition
from monologue_domain.kitchen.state import HELD, KitchenState
from monologue_domain.skills import SkillError


def home(hands: int = 1) -> HouseholdWorld:
    scene, start = spot_home()
    return HouseholdWorld(scene, start, hands)


def fails(w: HouseholdWorld, skill: str, *args: str) -> tuple[str, int]:
    before = w.state()
    out = w.execute(skill, list(args))
    assert out.error == SkillError.PRECONDITION_FAILED, out
    assert w.state() == before  # nothing happened
    prop, level, message = parse_precondition(out.failed_precondition)
    assert message == out.message and message.startswith("I cannot ")
    return prop, level


def ok(w: HouseholdWorld, skill: str, *args: str) -> None:
    out = w.execute(skill, list(args))
    assert out.ok, out


def test_fourteen_skills() -> None:
    assert len(HOUSEHOLD_SKILLS) == 14
    assert {"stand_up", "walk_to", "pick_up", "put", "touch", "look_at", "open", "close"} <= set(HOUSEHOLD_SKILLS)


def test_make_coffee_with_milk_resolving_every_level() -> None:
    w = home()
    assert fails(w, "walk_to", "kitchen") == ("sitting", 1)  # CAPE Fig. 1: stand before walking
    ok(w, "stand_up")
    assert fails(w, "stand_up") == ("already_standing", 1)
    assert fails(w, "walk_to", "fridge") == ("door_closed", 4)
    assert "the door between the hallway and the kitchen is closed" in w.execute("walk_to", ["fridge"]).message
    ok(w, "walk_to", "kitchen door")
    ok(w, "open", "kitchen door")
    ok(w, "walk_to", "fridge")
    assert w.state().robot_location == "fridge"
    assert fails(w, "pick_up", "milk") == ("inside_closed", 4)
    assert fails(w, "pick_up", "counter") == ("not_grabbable", 1)
    ok(w, "open", "fridge")
    assert fails(w, "open", "fridge") == ("already_open", 2)
    ok(w, "pick_up", "milk")
    assert fails(w, "pick_up", "mug") == ("not_near", 3)
    ok(w, "walk_to", "counter")
    assert fails(w, "pick_up", "mug") == ("hand_full", 4)  # Spot's single arm
    assert fails(w, "put", "milk", "coffee maker") == ("not_receptacle", 1)
    assert fails(w, "turn_on", "coffee maker") == ("not_near", 3)
    ok(w, "put", "milk", "counter")
    ok(w, "walk_to", "coffee maker")
    ok(w, "turn_on", "coffee maker")
    assert fails(w, "turn_on", "coffee maker") == ("already_on", 2)
    assert fails(w, "turn_on", "mug") == ("not_switchable", 1)
    s = w.state()
    assert s.location_of("milk") == "counter" and s.states["coffee maker"] == {"on"}
    assert {"kitchen door", "fridge"} == s.open_containers and s.states["robot"] == {"standing"}


def test_two_hands_and_capacity_and_put_in() -> None:
    w = home(hands=2)
    for step in (("stand_up",), ("walk_to", "kitchen door"), ("open", "kitchen door"), ("walk_to", "counter"),
                 ("pick_up", "mug"), ("pick_up", "cereal")):
        ok(w, *step)
    assert w.held == ["mug", "cereal"] and w.state().location_of("mug") == HELD
    assert fails(w, "pick_up", "groceries bag") == ("hand_full", 4)
    assert fails(w, "open", "pantry") == ("not_near", 3)
    ok(w, "walk_to", "pantry")
    assert fails(w, "open", "pantry") == ("hand_full", 4)  # opening needs a free hand
    assert fails(w, "put_in", "mug", "pantry") == ("not_open", 2)
    ok(w, "drop", "cereal")
    ok(w, "open", "pantry")
    ok(w, "put_in", "mug", "pantry")
    assert fails(w, "put_in", "mug", "counter") == ("not_holding", 3)
    assert fails(w, "close", "counter") == ("not_openable", 1)
    assert w.state().location_of("cereal") == "kitchen"  # dropped on the floor, not into the closed pantry
    for obj in ("cereal", "milk"):  # the pantry holds 3
        ok(w, "walk_to", obj if obj == "cereal" else "fridge")
        if obj == "milk":
            ok(w, "open", "fridge")
        ok(w, "pick_up", obj)
    ok(w, "walk_to", "pantry")
    ok(w, "put_in", "cereal", "pantry")
    ok(w, "put_in", "milk", "pantry")
    ok(w, "walk_to", "counter")
    ok(w, "pick_up", "groceries bag")
    ok(w, "walk_to", "pantry")
    assert fails(w, "put_in", "groceries bag", "pantry") == ("too_many", 4)


def test_affordances_are_the_preconditions_and_bad_starts_are_rejected() -> None:
    w = home()
    affs = w.affordances()
    assert {i for i, v in affs.items() if v == 1.0} == {("stand_up", ())}
    ok(w, "stand_up")
    assert w.affordances()[("walk_to", ("bedroom",))] == 0.0  # bedroom door closed
    scene, start = spot_home()
    with pytest.raises(ValueError, match="unknown place"):
        HouseholdWorld(scene, KitchenState("hallway", None, {**start.object_locations, "phone": "garage"}))
    with pytest.raises(ValueError, match="hands must be 1 or 2"):
        HouseholdWorld(scene, start, 3)
    assert w.execute("fly", []).error == SkillError.UNKNOWN_SKILL
    assert w.execute("pick_up", ["unicorn"]).error == SkillError.INVALID_ARGUMENTS
