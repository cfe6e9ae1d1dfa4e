"""The Statler expert planner (monologue_domain.expert.statler): queries answered from the hidden truth,
moves played with the simulator's code, states in the writer's vocabulary."""
from __future__ import annotations

import pytest

from monologue_domain.expert.statler import TABLE, StatlerPlanError, StatlerWorld, cup_states, plan_query, state_of
from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.scene_spec import SceneSpec
from monologue_domain.statler_domains import DomainSettings, DomainTruth, domain_spec


def world_of(settings: DomainSettings, blocks: tuple[str, ...], bowls: tuple[str, ...]) -> StatlerWorld:
    spec = domain_spec(settings, SceneSpec(blocks, bowls))
    w = TabletopWorld.from_spec(spec, 0)
    truth = DomainTruth.create(settings, spec, 0)
    assert truth is not None
    w.observer = truth
    w.settle()
    return StatlerWorld.from_truth({"statler": {**truth.to_json(w), "order": [o.name for o in w.objects]}})


def covers() -> StatlerWorld:
    return world_of(DomainSettings("covers", ("orange",), ("red",)), ("red", "blue"), ("green",))


def disinfection() -> StatlerWorld:
    return world_of(DomainSettings("disinfection", dirty_blocks=("red",)), ("red", "blue", "green"), ("yellow",))


def weights() -> StatlerWorld:
    return world_of(DomainSettings("weights", block_weights=(2.0, 1.0, 1.0)), ("red", "blue", "green"),
                    ("pink", "gray"))


def test_a_world_without_a_statler_truth_is_refused() -> None:
    with pytest.raises(StatlerPlanError, match="no Statler domain state"):
        StatlerWorld.from_truth({})


def test_a_covered_block_is_uncovered_first_and_statements_move_nothing() -> None:
    w = covers()
    assert plan_query(w, "The red block is under the orange cup.").statement
    plan = plan_query(w, "Put the red block in the green bowl.")
    assert plan.moves == (("orange cup", TABLE), ("red block", "green bowl"))
    assert plan_query(w, "What is the color of the block under the orange cup?").say == \
        "The red block is under the orange cup"
    after = w.play(plan.moves)
    assert not after.covered() and plan_query(after, "How many blocks are in the green bowl?").say == \
        "There is 1 block in the green bowl"
    with pytest.raises(StatlerPlanError, match="no 'the purple block'"):
        plan_query(w, "Put the purple block in the green bowl")


def test_the_covers_state_names_a_hidden_block_only_once_told() -> None:
    w = covers()
    assert "red block" not in state_of(w, ["blue block", "green bowl", "orange cup"])["objects"]
    told = state_of(w, ["blue block", "green bowl", "orange cup"], "The red block is under the orange cup")
    assert told["red block"] == {"is": ["hidden"]} and "orange cup is on red block" in told["relations"]
    assert told["green bowl"] == {"contains": []}


def test_dirt_spreads_in_play_and_all_dirty_blocks_go_upper_first() -> None:
    w = disinfection()
    stacked = w.play(plan_query(w, "Put the blue block on the red block").moves)
    assert stacked.dirty("blue block") and not stacked.dirty("green block")
    plan = plan_query(stacked, "Put the dirty blocks in the disinfector")
    assert plan.moves == (("blue block", "disinfector"), ("red block", "disinfector"))
    assert plan_query(stacked, "Is the blue block clean?").say.startswith("No")
    clean = stacked.play(plan.moves)
    assert not clean.dirty("blue block") and not clean.dirty("red block")
    state = state_of(clean, [], "Put the blue block in the disinfector and the red block in the disinfector",
                     known=set())
    assert state["blue block"] == {"is": ["clean"]} and state["green block"] == {}  # never named
    assert set(state["disinfector"]["contains"]) == {"red block", "blue block"} and state["yellow bowl"] == {}


def test_weight_questions_and_equal_totals() -> None:
    w = weights()
    assert plan_query(w, "Which block is the heaviest?").say == "The red block is the heaviest"
    in_gray = w.play(plan_query(w, "Put the red block in the gray bowl.").moves)
    plan = plan_query(in_gray, "Put blocks in the pink bowl so that their total weight becomes identical to what "
                               "is in the gray bowl.")
    assert plan.moves == (("blue block", "pink bowl"), ("green block", "pink bowl"))
    assert plan_query(in_gray, "Is the total weight in the gray bowl more than the weight of the blue block?"
                      ).say.startswith("Yes")
    assert state_of(in_gray, [], "")["red block"] == {"weight": 2}


def test_cup_states_after_each_swap() -> None:
    assert cup_states([False, True, False], [(0, 1), (1, 2)]) == [[True, False, False], [True, False, False]]
