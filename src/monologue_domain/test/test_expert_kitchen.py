"""The kitchen's expert planner (monologue_domain.expert.kitchen): its plans are the suites' acceptable plans,
it replans from any state, and it reads the kitchen's truth as the skills node writes it."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from monologue_domain.expert.channel import read_world, write_world
from monologue_domain.expert.kitchen import (
    KitchenGoal,
    KitchenPlanError,
    goal_dict,
    goal_of,
    next_step,
    plan,
    state_from_json,
    state_json,
    state_of,
)
from monologue_domain.kitchen.goals import apply, evaluate, run
from monologue_domain.kitchen.suites import judge_plan, load_suite, normalize, suite_path
from monologue_domain.kitchen.vocabulary import parse_skill
from monologue_domain.kitchen.world import KitchenWorld

CONFIG = Path(__file__).resolve().parents[3] / "config"
SUITES = {name: load_suite(suite_path(CONFIG, name)) for name in ("saycan", "im_kitchen")}
ALL = [(name, i) for name, s in SUITES.items() for i in s.instructions]


@pytest.mark.parametrize("with_examples", [True, False])
def test_every_plan_from_the_start_is_acceptable(with_examples: bool) -> None:
    """Also without the suite's example plans: the search alone finds plans the suites accept (it once
    used "find a X" to walk to the user or to the table, which no acceptable plan does)."""
    bad = []
    for name, instr in ALL:
        g = goal_of(instr)
        if not with_examples:
            g["plans"] = []
        p = plan(instr.start, KitchenGoal.from_dict(g))
        if judge_plan(instr, p):
            bad.append((name, instr.key, p, judge_plan(instr, p)))
    assert bad == []


def test_find_is_only_ever_followed_by_picking_that_object() -> None:
    for _, instr in ALL:
        p = plan(instr.start, KitchenGoal.from_dict(goal_dict(str(instr.goal))))
        for a, b in zip(p, p[1:]):
            if a.startswith("find "):
                assert b == "pick up the " + a.split(" ", 2)[2], (instr.key, p)


def test_after_finding_an_x_it_picks_that_x() -> None:
    """"pick up a caffeinated drink": tea and pepsi stand together; having found the tea, the next step is
    the tea, not the pepsi the search meets first (regression: "find a tea / pick up the pepsi")."""
    instr = SUITES["im_kitchen"].by_key()["manipulation_04"]
    goal = KitchenGoal.from_dict(goal_dict(str(instr.goal)))  # no example plans: only the rule decides
    after = apply("find a tea", instr.start)
    assert after.object_locations["pepsi"] == after.object_locations["tea"] == after.robot_location
    assert next_step(after, goal, ["find a tea"]) == "pick up the tea"
    assert next_step(after, goal, []) == "pick up the pepsi"  # without that history, any soda will do


def test_it_replans_after_a_person_moves_the_object() -> None:
    instr = SUITES["saycan"].by_key()["long_horizon_01"]
    goal = KitchenGoal.from_dict(goal_of(instr))
    world = KitchenWorld(instr.start)
    taken: list[str] = []
    for _ in range(20):
        step = next_step(world.state(), goal, taken)
        if step == "done":
            break
        template, arg = parse_skill(normalize(step))
        skill = {"find a X": "find", "pick up the X": "pick_up", "put down the X": "put_down",
                 "go to the L": "go_to", "bring it to you": "bring_to_user"}[template]
        world.execute(skill, [arg] if arg else [])
        taken.append(step)
        if len(taken) == 3:  # the energy bar is carried to the table; a person takes the water bottle away
            world.move("water bottle", "close counter")
    assert evaluate(instr.goal, world.state())
    assert taken[-1] == "put down the water bottle"


def test_done_when_the_goal_holds_and_an_error_when_it_cannot() -> None:
    instr = SUITES["saycan"].instructions[0]
    goal = KitchenGoal.from_dict(goal_of(instr))
    end = run(plan(instr.start, goal)[:-1], instr.start)[-1]
    assert plan(end, goal) == ["done"]
    gone = replace(instr.start, object_locations={k: v for k, v in instr.start.object_locations.items()
                                                  if k != "coke"})
    with pytest.raises(KitchenPlanError):
        plan(gone, KitchenGoal.from_dict(goal_dict("holding(coke)")))
    with pytest.raises(KitchenPlanError, match="predicate"):
        KitchenGoal.from_dict({"plans": []})


def test_truth_reads_back_from_the_scene_and_from_the_extra(tmp_path: Path) -> None:
    instr = SUITES["saycan"].by_key()["long_horizon_01"]
    world = KitchenWorld(instr.start)
    world.execute("find", ["energy bar"])
    world.execute("pick_up", ["energy bar"])
    s = world.state()
    assert state_from_json(state_json(s)) == s
    write_world(tmp_path, "kitchen", world.scene_objects())
    truth = read_world(tmp_path)
    assert truth is not None and state_of(truth) == replace(s, states={})
    write_world(tmp_path, "kitchen", [], extra={"kitchen_state": state_json(s)})
    truth = read_world(tmp_path)
    assert truth is not None and state_of(truth) == s and s.visited
