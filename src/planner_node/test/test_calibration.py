"""Calibrated step scoring (`scoring.calibration: content_free`) with a scorer that has a prior (no ROS, no LLM)."""
from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.scene_spec import SceneSpec
from monologue_domain.transcript import Event, EventKind, Transcript
from monologue_llm.base import CandidateScore, Generation, ScoreResult
from planner_node.core.calibration import CONTENT_FREE, content_free_events
from planner_node.core.episode import EpisodeError
from planner_node.core.prompts import load_profile
from planner_node.core.settings import episode_defaults

CONFIG = Path(__file__).resolve().parents[3] / "config"
PROFILE = load_profile(CONFIG / "prompts", "im_sim_object_success")
INSTRUCTION = "Put the red block in the blue bowl."


class PriorScorer:
    """A model with a strong prior for stopping: the done line scores -1 on any prompt, other lines -3.
    The instruction lifts the line it asks for by 1.5 (not enough to beat the prior), and, once that
    line succeeded, the done line by 1."""

    name = "prior"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def score(self, prompt: str, candidates: Sequence[str]) -> ScoreResult:
        self.prompts.append(prompt)
        episode = prompt.split("===============")[-1]  # after the few-shot preamble
        finished = "red block and place it in the blue bowl.\nSuccess: True" in episode
        asked = INSTRUCTION in episode

        def lp(c: str) -> float:
            if c == PROFILE.done_line:
                return -1.0 + (1.0 if asked and finished else 0.0)
            return -3.0 + (1.5 if asked and not finished and c.endswith("red block and place it in the blue bowl.")
                           else 0.0)

        return ScoreResult(tuple(CandidateScore(c, lp(c), 4, (lp(c) / 4,) * 4) for c in candidates), 100, 10, 0.0)

    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64) -> Generation:
        raise AssertionError("scoring only")

    def close(self) -> None:
        pass


def _episode(planner, world_ports, **options: object) -> tuple[EpisodeError, TabletopWorld, PriorScorer, list]:  # type: ignore[no-untyped-def,type-arg]
    world = TabletopWorld.from_spec(SceneSpec(("red", "green"), ("blue",)), seed=3)
    ports, llm, steps = world_ports(world), PriorScorer(), []
    im = planner(llm, ports, ports, ports, PROFILE, logging.getLogger("t"), on_step=steps.append)
    res = im.run(INSTRUCTION, episode_defaults(CONFIG, use_affordances=False, max_steps=4, **options),
                 Transcript("e"))
    return res.error, world, llm, steps


def test_content_free_prompt_replaces_only_the_instruction() -> None:
    events = [Event("e", 0, EventKind.SCENE_OBJECTS, "Scene: There is a red block."),
              Event("e", 1, EventKind.HUMAN_INSTRUCTION, PROFILE.instruction(INSTRUCTION), {"instruction": INSTRUCTION}),
              Event("e", 2, EventKind.ROBOT_ACTION, "Robot action: Pick the red block and place it on the middle.")]
    free = content_free_events(events, PROFILE)
    assert [e.text for e in free] == [events[0].text, f"Human: {CONTENT_FREE}.", events[2].text]
    assert free[1].data == {"instruction": CONTENT_FREE} and events[1].data == {"instruction": INSTRUCTION}
    assert PROFILE.prompt(free).startswith(PROFILE.preamble)


def test_raw_scores_stop_at_once_and_calibrated_scores_do_the_task(planner, world_ports) -> None:  # type: ignore[no-untyped-def]
    error, world, llm, steps = _episode(planner, world_ports)  # the default: raw sums, as before
    assert error == EpisodeError.NONE and len(steps) == 1 and steps[0].chosen.option is None
    assert len(llm.prompts) == 1 and not world.is_on("red block", "blue bowl")

    error, world, llm, steps = _episode(planner, world_ports, calibration="content_free", calibration_weight=1.0)
    assert error == EpisodeError.NONE and world.is_on("red block", "blue bowl")
    assert steps[0].chosen.text.endswith("red block and place it in the blue bowl.")
    assert len(steps) == 2 and steps[-1].chosen.option is None  # then done (lifted by the instruction)
    # two calls per step: the content-free prompt (instruction "N/A") and the step's own prompt
    assert len(llm.prompts) == 2 * len(steps)
    assert "Human: N/A" in llm.prompts[0] and INSTRUCTION in llm.prompts[1]
    assert steps[0].prompt_tokens == 200  # both calls counted

    # a small weight does not overcome this prior: -3 + 1.5 + 0.2 x 3 = -0.9 < -1 + 0.2 x 1 = -0.8
    error, world, _, steps = _episode(planner, world_ports, calibration="content_free", calibration_weight=0.2)
    assert steps[0].chosen.option is None and not world.is_on("red block", "blue bowl")
