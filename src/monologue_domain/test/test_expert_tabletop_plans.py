"""Whole plans from the tabletop expert (monologue_domain.expert.tabletop_plans): every Table 1 family's plan,
run on the kinematic world, reaches the task's reward; a plan continues from moves already made; a heavy
block that must move means no plan."""
from __future__ import annotations

import pytest

from monologue_domain.expert.tabletop import goal_of_task
from monologue_domain.expert.tabletop_plans import NoPlan, goal_reached, plan_pick_places, state_after
from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.scene_spec import make_spec
from monologue_domain.tasks import FAMILIES, TaskInstance, sample_task, state_from_objects


def world_of(task: TaskInstance, heavy: tuple[str, ...] = ()) -> TabletopWorld:
    spec = make_spec(task.scene.seed, 0, 0, False, task.scene.block_colors, task.scene.bowl_colors, heavy,
                     strict=False)
    return TabletopWorld.from_spec(spec, task.scene.seed)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_familys_plan_reaches_the_reward_on_the_kinematic_world(family: str) -> None:
    for seed in range(1, 9):
        task = sample_task(family, seed)
        world = world_of(task)
        plan = plan_pick_places(world.snapshot(), goal_of_task(task))
        assert plan, task.instruction
        for obj, target in plan:
            moved, message = world.pick_place(obj, target)
            assert moved, message
        assert task.reward(state_from_objects(world.snapshot(include_covered=True))), (task.instruction, plan)


def test_a_plan_continues_from_the_moves_already_made() -> None:
    task = sample_task("matching_bowls", 3)
    world = world_of(task)
    goal = goal_of_task(task)
    plan = plan_pick_places(world.snapshot(), goal)
    assert len(plan) >= 2
    assert plan_pick_places(world.snapshot(), goal, plan[:1]) == plan[1:]
    assert plan_pick_places(world.snapshot(), goal, plan) == []
    assert goal_reached(state_after(world.snapshot(), plan), goal)
    assert not goal_reached(state_after(world.snapshot(), plan[:-1]), goal)


def test_a_heavy_block_that_must_move_means_no_plan() -> None:
    task = sample_task("pick_place", 4)
    world = world_of(task, heavy=(task.slots["block"],))
    with pytest.raises(NoPlan, match="heavy"):
        plan_pick_places(world.snapshot(), goal_of_task(task))
