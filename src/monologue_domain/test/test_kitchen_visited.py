"""`visited(L)` goals are checked over the episode: the worlds record the robot's places in the state
(KitchenState.visited), the ground truth carries them, so the final state alone decides the goal (before,
only the final robot_location counted and "go to the table, then come back" could not succeed)."""
from __future__ import annotations

from dataclasses import replace

from monologue_domain.kitchen.goals import apply, evaluate, make_state, run
from monologue_domain.kitchen.household import HouseholdWorld, spot_lab
from monologue_domain.kitchen.scene import state_from_scene, to_scene_objects
from monologue_domain.kitchen.world import KitchenWorld
from monologue_domain.kitchen.world import make_state as world_state


def test_the_kitchen_world_records_every_place_the_robot_was_at() -> None:
    w = KitchenWorld(world_state({"coke": "far counter"}))
    assert w.state().visited == set() and w.state().places_visited == {"initial position"}  # the start state
    for skill, args in (("go_to", ["table"]), ("find", ["coke"]), ("pick_up", ["coke"]),
                        ("go_to", ["trash"]), ("bring_to_user", [])):
        assert w.execute(skill, args).ok
    s = w.state()
    assert s.robot_location == "user"
    assert s.visited == {"initial position", "table", "far counter", "trash", "user"}
    # a failed precondition moves nothing and records nothing
    assert not w.execute("open_drawer", ["top drawer"]).ok and w.state().visited == s.visited


def test_go_there_and_come_back_is_decided_on_the_final_ground_truth_alone() -> None:
    w = KitchenWorld(world_state({"coke": "far counter"}))
    for loc in ("table", "trash"):
        assert w.execute("go_to", [loc]).ok
    final = state_from_scene(to_scene_objects(w.state()))  # what the bench reads from sim/ground_truth
    assert final.visited == {"initial position", "table", "trash"}
    assert evaluate("all(visited(table), visited(trash))", final)  # no history given
    assert not evaluate("visited(far counter)", final)
    # at the end somewhere else than the places: the record, not the final place, decides
    assert final.robot_location == "trash" and evaluate("visited(table)", final)


def test_visit_records_survive_the_scene_round_trip_and_absent_records_fall_back() -> None:
    s = make_state("table", {"coke": "trash"})
    assert not s.visited and evaluate("visited(table)", s) and not evaluate("visited(trash)", s)
    moved = apply("go to the trash", apply("go to the close counter", s))
    assert moved.visited == {"table", "close counter", "trash"}
    assert state_from_scene(to_scene_objects(moved)) == moved
    back = run(["go to the table", "go to the far counter", "go to the table"], s)[-1]
    assert back.robot_location == "table" and evaluate("visited(far counter)", back)  # final state only


def test_the_household_records_rooms_and_the_things_it_went_to() -> None:
    scene, start = spot_lab()
    w = HouseholdWorld(scene, start)
    for step in (("stand_up",), ("walk_to", "storage room door"), ("open", "storage room door"),
                 ("walk_to", "shelf"), ("walk_to", "desk")):
        assert w.execute(step[0], list(step[1:])).ok, step
    s = state_from_scene(w.scene_objects())
    assert s == w.state() and s.robot_location == "desk"
    assert {"lab", "storage room", "shelf", "storage room door", "desk"} == s.visited
    assert "storage room" in s.places_visited and "storage room" not in {s.robot_location}


def test_without_the_record_only_the_final_place_counts() -> None:
    """The final state of "go to the table, then the trash" without its record (the old behaviour)."""
    w = KitchenWorld(world_state({"coke": "far counter"}))
    w.execute("go_to", ["table"])
    w.execute("go_to", ["trash"])

    forgot = replace(w.state(), visited=frozenset())
    assert not evaluate("visited(table)", forgot) and evaluate("visited(table)", w.state())
