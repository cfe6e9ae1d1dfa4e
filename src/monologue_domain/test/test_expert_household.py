"""The household's expert planner (monologue_domain.expert.household) and the household world defects the
CAPE ceiling runs exposed (each a regression test)."""
from __future__ import annotations

from pathlib import Path

import pytest

from monologue_domain.expert.channel import read_world, write_world
from monologue_domain.expert.household import (
    HouseholdTruth,
    goal_atoms,
    goal_json,
    household_truth,
    next_step,
    plan_from,
    refused,
    scene_to_json,
    wrong_steps,
)
from monologue_domain.kitchen.household import (
    SCENES,
    HouseholdWorld,
    goal_holds,
    parse_atom,
    reference_program,
    start_with,
)
from monologue_domain.kitchen.scene import state_from_scene
from monologue_domain.kitchen.state import HELD


def truth_of(world: HouseholdWorld) -> HouseholdTruth:
    return HouseholdTruth(world.scene, world.state(), world.hands)


def follow(world: HouseholdWorld, goal: tuple[tuple[str, ...], ...], cap: int = 30) -> list[tuple[str, tuple[str, ...]]]:
    """Execute the expert's next step until it says done; every step must run."""
    done: list[tuple[str, tuple[str, ...]]] = []
    for _ in range(cap):
        step = next_step(truth_of(world), goal)
        if step is None:
            return done
        assert world.execute(step[0], step[1]).error.name == "NONE", (step, done)
        done.append(step)
    raise AssertionError(f"no end after {cap} steps: {done}")


def test_the_truth_round_trips_through_the_side_channel(tmp_path: Path) -> None:
    scene, start = SCENES["lab"]()
    w = HouseholdWorld(scene, start)
    write_world(tmp_path, "household", w.scene_objects(), extra={"household": scene_to_json(scene, 1)})
    truth = read_world(tmp_path)
    assert truth is not None
    t = household_truth(truth)
    assert t.scene == scene and t.state.object_locations == start.object_locations and t.hands == 1
    write_world(tmp_path, "household", w.scene_objects())  # no scene in `extra`: found by its things
    t2 = household_truth(read_world(tmp_path))  # type: ignore[arg-type]
    assert t2.scene == scene


def test_goal_dicts() -> None:
    atoms = (parse_atom("at(phone, nightstand)"), parse_atom("held(water bottle)"))
    assert goal_atoms(goal_json(atoms)) == atoms
    with pytest.raises(ValueError):
        goal_atoms({"atoms": []})


@pytest.mark.parametrize("scene_name", sorted(SCENES))
def test_following_the_expert_is_the_reference_program(scene_name: str) -> None:
    scene, start = SCENES[scene_name]()
    movable = sorted(t.name for t in scene.things if "grabbable" in t.properties)
    recs = sorted(t.name for t in scene.things if "receptacle" in t.properties)
    for x in movable[:4]:
        for y in recs[:4]:
            goal = (("at", x, y),)
            if goal_holds(start, goal):
                continue
            ref = reference_program(scene, start, goal)
            w = HouseholdWorld(scene, start)
            assert follow(w, goal) == [(s, tuple(a)) for s, a in ref]
            assert goal_holds(w.state(), goal)


def test_regression_a_plan_from_the_door_does_not_walk_to_it_again() -> None:
    """Defect: the reference planner walked to a door it already stood at, so the expert asked for
    "walk to the storage room door" forever (paper_run_lab, step 3)."""
    scene, start = SCENES["lab"]()
    w = HouseholdWorld(scene, start)
    for s, a in (("stand_up", ()), ("walk_to", ("storage room door",))):
        w.execute(s, a)
    goal = (("at", "shoes", "desk"),)
    assert next_step(truth_of(w), goal) == ("open", ("storage room door",))
    assert reference_program(scene, w.state(), goal)[0] == ("open", ("storage room door",))


def test_regression_holding_the_thing_for_an_open_container_keeps_it() -> None:
    """Defect: with the mail in hand and the storage box already open, the planner dropped the mail to
    "free a hand" for opening it, then picked it up again, forever (paper_mail_lab, step 8)."""
    scene, start = SCENES["lab"]()
    w = HouseholdWorld(scene, start)
    for s, a in (("stand_up", ()), ("walk_to", ("storage room door",)), ("open", ("storage room door",)),
                 ("walk_to", ("storage box",)), ("open", ("storage box",)), ("walk_to", ("desk",)),
                 ("pick_up", ("mail",))):
        assert w.execute(s, a).error.name == "NONE"
    goal = (("at", "mail", "storage box"),)
    assert next_step(truth_of(w), goal) == ("walk_to", ("storage box",))
    assert follow(w, goal) == [("walk_to", ("storage box",)), ("put_in", ("mail", "storage box"))]


def test_regression_the_ground_truth_after_picking_up_what_it_stood_by_reloads() -> None:
    """Defect: after "walk to the water bottle, pick up the water bottle" the robot was "near" a held
    thing, so its room was lost: the ground truth could not be loaded into a world again."""
    scene, start = SCENES["lab"]()
    w = HouseholdWorld(scene, start)
    for s, a in (("stand_up", ()), ("walk_to", ("water bottle",)), ("pick_up", ("water bottle",))):
        assert w.execute(s, a).error.name == "NONE"
    state = state_from_scene(w.scene_objects())
    assert state.object_locations["water bottle"] == HELD
    assert state.robot_location == "desk"  # next to where the bottle was
    again = HouseholdWorld(scene, state)
    assert again.state() == w.state()


def test_belief_of_an_open_loop_plan_and_wrong_steps() -> None:
    scene, start = SCENES["lab"]()
    t = HouseholdTruth(scene, start)
    goal = (("at", "phone", "nightstand"),)
    assert next_step(t, goal) == ("stand_up", ())
    # a refused step the prompt does not show as refused still counts in the belief
    assert refused(t, ("walk_to", ("phone",)))
    believed = plan_from(t, [(("stand_up", ()), False), (("walk_to", ("phone",)), False)])
    assert next_step(believed, goal) == ("pick_up", ("phone",))
    # shown as refused: nothing changed
    assert plan_from(t, [(("walk_to", ("phone",)), True)]).state == t.state
    wrong = wrong_steps(t, goal)
    assert wrong and ("stand_up", ()) not in wrong
    assert any(refused(t, s) for s in wrong)  # mostly precondition errors


def test_a_held_thing_at_the_start() -> None:
    scene, start = SCENES["kitchen"]()
    begin = start_with(start, "mail", standing=True)
    w = HouseholdWorld(scene, begin)
    goal = (("held", "phone"),)
    steps = follow(w, goal)
    assert steps[0] == ("drop", ("mail",)) or steps[0][0] == "walk_to"
    assert goal_holds(w.state(), goal)
