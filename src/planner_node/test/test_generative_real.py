"""Generative Inner Monologue with the real embedded model: whatever the 270M model writes, only
admissible skills run, and every rejected line is logged with its reason (mechanics, not wisdom)."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.transcript import EventKind, Transcript
from planner_node.core.episode import EpisodeError
from planner_node.core.prompts import load_profile
from planner_node.core.settings import episode_defaults

CONFIG = Path(__file__).resolve().parents[3] / "config"  # the YAML holds the episode defaults

pytestmark = pytest.mark.llm
PROMPTS = Path(__file__).resolve().parents[3] / "config" / "prompts"


@pytest.mark.parametrize("seed", [0, 2, 3])
def test_generative_episode_only_executes_admissible_skills(planner, llama_backend, world_ports, seed: int) -> None:  # type: ignore[no-untyped-def]
    world = TabletopWorld.random(seed, num_blocks=2 + seed % 2, num_bowls=3, matching_bowls=True)
    ports = world_ports(world)
    admissible_before = {(a.skill, a.args) for a in ports.affordances()}
    im = planner(llama_backend, ports, ports, ports, load_profile(PROMPTS, "im_sim_object_success"),
                        logging.getLogger("gen"))
    t = Transcript(f"gen{seed}")
    res = im.run("Put the blocks in their matching bowls.",
                 episode_defaults(CONFIG, decoding="generate", generation_fallback="fail", max_steps=5), t)
    assert res.error in (EpisodeError.NONE, EpisodeError.MAX_STEPS_REACHED, EpisodeError.PLANNING_FAILED)
    actions = [e for e in t.events if e.kind == EventKind.ROBOT_ACTION]
    assert len(actions) == len(ports.executed) == res.steps_taken
    for e, (skill, args) in zip(actions, ports.executed):
        assert (e.data["skill"], tuple(e.data["args"])) == (skill, args)
        assert skill == "pick_place" and args[0] in {o.name for o in world.blocks}
    if ports.executed:
        assert ports.executed[0] in admissible_before
    rejected = [e for e in t.events if e.kind == EventKind.ERROR and e.text.startswith("Rejected LLM output")]
    for e in rejected:
        assert e.data["reason"] and e.data["output"]
    if res.error == EpisodeError.PLANNING_FAILED:
        assert len(rejected) == 3 and not any(r.data["output"] in p for r in rejected for p in t.prompt_lines())


def test_scene_feedback_episode_mechanics(planner, llama_backend, world_ports) -> None:  # type: ignore[no-untyped-def]
    """IM Object + Scene with the real model: a goal-state thought first, then after every action a
    recomputed progress line listing only goal items, then a thought."""
    from monologue_domain.scene_spec import SceneSpec

    world = TabletopWorld.from_spec(SceneSpec(("brown", "cyan", "yellow"), ()), seed=1)
    ports = world_ports(world)
    im = planner(llama_backend, ports, ports, ports, load_profile(PROMPTS, "im_sim_object_scene"),
                        logging.getLogger("scene"))
    t = Transcript("scene")
    res = im.run("Move all the blocks to the top right corner.",
                 episode_defaults(CONFIG, scene_feedback=True, success_feedback=False, max_steps=4), t)
    assert res.error in (EpisodeError.NONE, EpisodeError.MAX_STEPS_REACHED)
    kinds = [e.kind for e in t.events]
    assert kinds[:3] == [EventKind.SCENE_OBJECTS, EventKind.HUMAN_INSTRUCTION, EventKind.ROBOT_THOUGHT]
    assert t.events[2].text.startswith("Robot thought: Goal state is [")
    goals = t.events[2].data["goal_state"]
    for i, k in enumerate(kinds):
        if k == EventKind.ROBOT_ACTION:
            assert kinds[i + 1] == EventKind.SCENE_PROGRESS and kinds[i + 2] == EventKind.ROBOT_THOUGHT
    for e in t.events:
        if e.kind == EventKind.SCENE_PROGRESS:
            assert e.text.startswith("Scene: You have completed [") and set(e.data["completed"]) <= set(goals)
    assert len(t.texts(EventKind.SCENE_PROGRESS)) == res.steps_taken
