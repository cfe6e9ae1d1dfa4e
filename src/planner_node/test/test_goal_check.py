"""The goal check (`scoring.goal_check`): the instruction's in/on facts and the stop rule (no ROS, no LLM)."""
from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import pytest

from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.scene_spec import SceneSpec
from monologue_domain.tabletop import LOCATIONS
from monologue_domain.transcript import Transcript
from planner_node.core.goal_check import parse_goal
from planner_node.core.monologue import EpisodeError, InnerMonologue
from planner_node.core.prompts import load_profile
from planner_node.core.settings import episode_defaults

CONFIG = Path(__file__).resolve().parents[3] / "config"
PROFILE = load_profile(CONFIG / "prompts", "im_sim_object_success")
CATS = {"red block": "block", "green block": "block", "blue block": "block", "blue bowl": "bowl",
        "yellow bowl": "bowl", **{n: "location" for n in LOCATIONS}}
BLOCKS = ("blue block", "green block", "red block")


@pytest.mark.parametrize(("instruction", "facts"), [
    ("Pick the red block and place it in the blue bowl.", [("red block", "blue bowl")]),
    ("put the green block onto the red block", [("green block", "red block")]),
    ("Move every block to the top left corner, please.", [(b, "top left corner") for b in BLOCKS]),
    ("Place all of the blocks inside the yellow bowl", [(b, "yellow bowl") for b in BLOCKS]),
    ("Stack all the blocks on the left side.", [(b, "left side") for b in BLOCKS]),
    ("Put the blocks on the middle.", [(b, "middle") for b in BLOCKS]),
    ("Put all the blocks on the red block.", [("blue block", "red block"), ("green block", "red block")]),
])
def test_in_on_instructions_parse_to_facts(instruction: str, facts: list[tuple[str, str]]) -> None:
    assert [(f.obj, f.target) for f in parse_goal(instruction, CATS)] == facts


@pytest.mark.parametrize("instruction", [
    "Stack all the blocks.",                                  # no target
    "Put all the blocks in different corners.",               # a relation between objects, no scene name
    "Put the blocks in their matching bowls.",
    "Put the blocks on mismatched bowls.",
    "Put every block except the red block in the blue bowl.",  # an exception
    "Put the red and green blocks in the blue bowl.",          # a subset the grammar does not name
    "Put the red block in the blue bowl and the green block in the yellow bowl.",  # two targets
    "Put the red block in the blue bowl and then stack the rest.",  # another clause after the target
    "把所有方块放进蓝色的碗里。",                                  # not the planner's language: no facts, no rule
    "Put the purple block in the blue bowl.",                 # no such object: no subject
])
def test_other_instructions_parse_to_nothing(instruction: str) -> None:
    assert parse_goal(instruction, CATS) == ()


class StopShyScorer:
    """Prefers "Pick the <first block> ... blue bowl" for the first step, then the done line (stops early,
    as the embedded model often does); records the candidates it was offered."""

    name = "stop_shy"

    def __init__(self) -> None:
        self.offered: list[list[str]] = []

    def score(self, prompt: str, candidates: Sequence[str]):  # type: ignore[no-untyped-def]
        from monologue_llm.base import CandidateScore, ScoreResult

        self.offered.append(list(candidates))
        first = "Success: True" not in prompt.split("===============")[-1]

        def lp(c: str) -> float:
            if c == PROFILE.done_line:
                return -2.0 if first else -0.5
            return -1.0 if c.endswith("in the blue bowl.") else -4.0

        return ScoreResult(tuple(CandidateScore(c, lp(c), 3, (lp(c) / 3,) * 3) for c in candidates), 10, 10, 0.0)

    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64):  # type: ignore[no-untyped-def]
        raise AssertionError("scoring only")

    def close(self) -> None:
        pass


def _run(world_ports, goal_check: str):  # type: ignore[no-untyped-def]
    world = TabletopWorld.from_spec(SceneSpec(("red", "green"), ("blue",)), seed=5)
    ports, llm, steps = world_ports(world), StopShyScorer(), []
    im = InnerMonologue(llm, ports, ports, ports, PROFILE, logging.getLogger("t"), on_step=steps.append)
    t = Transcript("e")
    res = im.run("Put all the blocks in the blue bowl.",
                 episode_defaults(CONFIG, use_affordances=False, max_steps=6, goal_check=goal_check), t)
    return res, world, llm, steps, t


def test_goal_check_keeps_going_until_the_goal_holds_then_stops(world_ports) -> None:  # type: ignore[no-untyped-def]
    res, world, llm, steps, _ = _run(world_ports, "off")  # as before: the model stops after one block
    assert res.error == EpisodeError.NONE and len(steps) == 2
    assert sum(world.is_on(b, "blue bowl") for b in ("red block", "green block")) == 1

    res, world, llm, steps, t = _run(world_ports, "stop")
    assert res.error == EpisodeError.NONE and res.success
    assert world.is_on("red block", "blue bowl") and world.is_on("green block", "blue bowl")
    assert all(PROFILE.done_line not in offered for offered in llm.offered)  # never offered while unmet
    assert steps[-1].candidates == (steps[-1].chosen,) and steps[-1].chosen.option is None  # done, no LLM call
    assert len(llm.offered) == len(steps) - 1
    assert t.events[-2].text == PROFILE.done_line


def test_affordance_mode_does_not_offer_moving_a_block_already_in_place(world_ports) -> None:  # type: ignore[no-untyped-def]
    res, world, llm, steps, _ = _run(world_ports, "affordance")
    assert res.success and world.is_on("red block", "blue bowl") and world.is_on("green block", "blue bowl")
    placed = steps[0].chosen.option.args[0]  # type: ignore[union-attr]
    assert all(not c.startswith(f"Robot action: Pick the {placed} ") for c in llm.offered[1])
    assert any(c.startswith(f"Robot action: Pick the {placed} ") for c in llm.offered[0])
