"""The tabletop expert planner (monologue_domain.expert.tabletop): every IM Table 1 family solved on the
kinematic world with IM's place noise, stacking order, blocks already placed, covered blocks, occupied
targets, heavy blocks, the canonical wordings and the open-loop belief."""
from __future__ import annotations

import pytest

from monologue_domain.expert.tabletop import (
    Done,
    Step,
    Stuck,
    TableState,
    apply,
    goal_of_instruction,
    goal_of_task,
    next_step,
    reached,
    subgoals,
    tower_order,
)
from monologue_domain.kinematic_world import PlaceNoise, TabletopWorld, world_with
from monologue_domain.scene_spec import make_spec
from monologue_domain.tasks import FAMILIES, TaskInstance, sample_task, state_from_objects

MAX_STEPS = 15  # IM's k


def world_of(task: TaskInstance, noise_m: float, heavy: tuple[str, ...] = ()) -> TabletopWorld:
    spec = make_spec(task.scene.seed, 0, 0, False, task.scene.block_colors, task.scene.bowl_colors, heavy,
                     strict=False)
    return TabletopWorld.from_spec(spec, task.scene.seed, place_noise=PlaceNoise(noise_m))


def solve(task: TaskInstance, world: TabletopWorld) -> list[Step]:
    """Run the planner on the world's truth until Done/Stuck (at most MAX_STEPS moves)."""
    steps: list[Step] = []
    for _ in range(MAX_STEPS):
        plan = next_step(goal_of_task(task), TableState.of(world.snapshot()))
        if not isinstance(plan, Step):
            break
        # the move is among the affordable candidates the planner is offered (a 0 is never chosen in the graph)
        assert any(a.args == (plan.obj, plan.target) for a in world.affordances()), (task.instruction, plan)
        world.pick_place(plan.obj, plan.target)  # a refused move raises: the planner must never ask for one
        steps.append(plan)
    return steps


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_family_without_noise_in_the_fewest_moves(family: str) -> None:
    for seed in range(30):
        task = sample_task(family, 500 + seed)
        world = world_of(task, 0.0)
        steps = solve(task, world)
        assert task.reward(state_from_objects(world.snapshot())), (task.instruction, steps)
        assert len(steps) <= len(task.scene.blocks), steps  # no block is moved twice
        assert isinstance(next_step(goal_of_task(task), TableState.of(world.snapshot())), Done)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_family_with_place_noise_within_k_steps(family: str) -> None:
    """IM's 2 cm place noise: the closed-loop planner re-places what missed (>= 97% within k = 15)."""
    wins = 0
    for seed in range(60):
        task = sample_task(family, 2000 + seed)
        world = world_of(task, 0.02)
        solve(task, world)
        wins += task.reward(state_from_objects(world.snapshot()))
    assert wins >= 58


def test_canonical_wordings_parse_to_the_task_goal() -> None:
    for family in FAMILIES:
        for seed in range(20):
            task = sample_task(family, seed)
            assert goal_of_instruction(task.instruction) == goal_of_task(task), task.instruction
    assert goal_of_instruction("Put the blocks in their matching bowls") == {"family": "matching_bowls"}
    assert goal_of_instruction("Make me a sandwich.") is None
    assert goal_of_instruction("Put all the blocks on the moon.") is None


def _state(*things: tuple[str, tuple[float, float, float]]) -> TableState:
    return TableState.of(world_with(things).snapshot())


def test_stack_builds_on_the_tallest_tower_and_never_moves_it() -> None:
    s = _state(("red block", (0.4, 0.1, 0.02)), ("blue block", (0.4, 0.1, 0.06)),
               ("green block", (0.6, -0.1, 0.02)))
    assert next_step({"family": "stack"}, s) == Step("green block", "blue block", "the next block of the tower")
    assert tower_order(s) == ["red block", "blue block", "green block"]
    assert subgoals({"family": "stack"}, s) == [("blue block", "red block"), ("green block", "blue block")]


def test_a_heavy_block_is_the_base_of_the_stack() -> None:
    w = world_with([("red block", (0.4, 0.1, 0.02)), ("blue block", (0.6, -0.1, 0.02))])
    w.get("red block").heavy = False
    w.get("blue block").heavy = True
    plan = next_step({"family": "stack"}, TableState.of(w.snapshot()))
    assert isinstance(plan, Step) and (plan.obj, plan.target) == ("red block", "blue block")


def test_a_covered_block_is_uncovered_first_to_a_free_spot() -> None:
    s = _state(("red block", (0.4, 0.1, 0.02)), ("blue block", (0.4, 0.1, 0.06)), ("green bowl", (0.6, -0.1, 0.0)))
    plan = next_step({"family": "pick_place", "block": "red block", "target": "green bowl"}, s)
    assert isinstance(plan, Step) and plan.obj == "blue block" and plan.target not in ("green bowl",)
    assert next_step({"family": "pick_place", "block": "red block", "target": "green bowl"},
                     apply(s, plan.obj, plan.target)) == Step("red block", "green bowl", "the instruction")


def test_an_occupied_target_block_is_cleared_first() -> None:
    s = _state(("red block", (0.4, 0.1, 0.02)), ("blue block", (0.6, -0.1, 0.02)),
               ("green block", (0.6, -0.1, 0.06)))
    plan = next_step({"family": "pick_place", "block": "red block", "target": "blue block"}, s)
    assert isinstance(plan, Step) and plan.obj == "green block"


def test_a_tower_block_that_missed_the_location_is_re_placed_at_once_not_first_put_aside() -> None:
    """Ceiling run table1-kinematic-v3, stack_on_location seed 186176: the green block rested on the cyan one
    4.2 cm from the corner (tolerance 4 cm). The expert first put it aside to "uncover" the cyan block, then
    back, two moves a retry, and ran out of IM's 15 steps. Placing it on the cyan block where it already is
    has no affordance (completed); placed at the corner, it rests on the tower there."""
    s = _state(("red block", (0.5259, 0.0875, 0.02)), ("green block", (0.6727, 0.3319, 0.105)),
               ("blue block", (0.6915, 0.2902, 0.025)), ("cyan block", (0.6688, 0.3133, 0.065)),
               ("gray bowl", (0.4046, -0.2964, 0.0)), ("red bowl", (0.6428, 0.299, 0.0)))
    plan = next_step({"family": "stack_on_location", "location": "top left corner"}, s)
    assert isinstance(plan, Step) and (plan.obj, plan.target) == ("green block", "top left corner"), plan
    w = world_with([(t.name, t.position) for t in s.things.values()])
    assert next(a for a in w.affordances() if a.args == (plan.obj, plan.target)).affordance == 1.0
    w.pick_place(plan.obj, plan.target)
    after = TableState.of(w.snapshot())
    assert after.on("green block", "cyan block") and after.on("green block", "top left corner")


def test_a_block_resting_on_one_off_the_location_is_not_the_base() -> None:
    """stack_on_location with the blue block already at the corner but resting on the cyan one 4.3 cm off
    it: no tower stands on the corner, and "put the blue block on the corner" has no affordance (it is
    there); the cyan block is the lowest, so it is uncovered first, then a base goes on the corner."""
    s = _state(("purple block", (0.491, -0.276, 0.02)), ("blue block", (0.687, 0.295, 0.06)),
               ("cyan block", (0.659, 0.285, 0.02)), ("orange bowl", (0.631, 0.04, 0.0)))
    plan = next_step({"family": "stack_on_location", "location": "top left corner"}, s)
    assert isinstance(plan, Step) and plan.obj == "blue block" and plan.target != "top left corner", plan
    s = apply(s, plan.obj, plan.target)
    plan = next_step({"family": "stack_on_location", "location": "top left corner"}, s)
    assert isinstance(plan, Step) and plan.target == "top left corner" and not s.on(plan.obj, plan.target), plan


def test_placed_blocks_stay_and_heavy_ones_end_in_stuck() -> None:
    w = world_with([("red block", (0.48, 0.15, 0.025)), ("blue block", (0.6, -0.1, 0.02)),
                    ("green block", (0.35, -0.2, 0.02)), ("green bowl", (0.48, 0.15, 0.0))])
    w.get("green block").heavy = True
    goal = {"family": "blocks_to_bowl", "bowl": "green bowl"}
    s = TableState.of(w.snapshot())
    assert next_step(goal, s) == Step("blue block", "green bowl", "the blue block goes onto the green bowl")
    s = apply(s, "blue block", "green bowl")
    assert isinstance(next_step(goal, s), Stuck) and not reached(goal, s)


def test_different_corners_and_mismatched_bowls_assign_distinct_targets() -> None:
    s = _state(("red block", (0.70, 0.30, 0.02)), ("blue block", (0.5, 0.1, 0.02)), ("green block", (0.4, -0.1, 0.02)))
    corners = dict(subgoals({"family": "different_corners"}, s))
    assert corners["red block"] == "top left corner" and len(set(corners.values())) == 3
    s = _state(("red block", (0.5, 0.1, 0.02)), ("blue block", (0.4, -0.1, 0.02)), ("red bowl", (0.6, 0.2, 0.0)),
               ("blue bowl", (0.35, 0.2, 0.0)))
    bowls = dict(subgoals({"family": "mismatched_bowls"}, s))
    assert bowls == {"red block": "blue bowl", "blue block": "red bowl"}


def test_apply_rests_blocks_as_the_kinematic_world_does() -> None:
    w = world_with([("red block", (0.4, 0.1, 0.02)), ("blue block", (0.6, -0.1, 0.02)), ("green bowl", (0.5, 0.2, 0.0))])
    s = TableState.of(w.snapshot())
    for obj, target in (("red block", "green bowl"), ("blue block", "red block")):
        w.pick_place(obj, target)
        s = apply(s, obj, target)
        for name, thing in s.things.items():
            assert thing.position == pytest.approx(w.position_of(name), abs=1e-9)
