"""Retrieved goal examples (core/goal_examples.py) and the calibrated and retrieved goal groundings."""
from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import pytest

from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.scene_spec import SceneSpec
from monologue_domain.tasks import is_stack, state_from_objects
from monologue_domain.transcript import Transcript
from planner_node.core.goal_check import NO_GOAL, goal_candidates, ground_goal
from planner_node.core.goal_examples import GOAL_EXAMPLES_K, GoalExamples, goal_head, load_goal_examples, retrieve
from planner_node.core.prompts import load_profile
from planner_node.core.settings import episode_defaults

CONFIG = Path(__file__).resolve().parents[3] / "config"
PROFILE = load_profile(CONFIG / "prompts", "im_sim_object_success")
LIB = GoalExamples("Write the goal.", (
    ("Take the yellow block and drop it into the green bowl.", "Pick the yellow block and place it in the green bowl."),
    ("Make a pile out of all the cubes.", "Stack every block."),
    ("请把这些方块堆成一座塔。", "Stack every block."),
    ("Line the blocks up in a row.", NO_GOAL),
    ("Mets tous les cubes dans le bol violet.", "Pick every block and place it in the purple bowl."),
))
NAMES = ("red block", "blue bowl", "green bowl", "yellow block", "top side")


def test_the_most_similar_examples_come_last_and_k_bounds_them() -> None:
    got = retrieve(LIB, "make a pile of all cubes pls", NAMES, 2)
    assert len(got) == 2 and got[-1] == LIB.examples[1]
    assert retrieve(LIB, "x", NAMES, 99) and len(retrieve(LIB, "x", NAMES, 99)) == len(LIB.examples)
    assert retrieve(LIB, "x", NAMES, 0) == []


def test_retrieval_works_without_spaces_and_ignores_which_names_are_named() -> None:
    assert retrieve(LIB, "把这些方块堆成塔", NAMES, 1) == [LIB.examples[2]]
    # the same form with other names is the nearest: names are masked on both sides
    assert retrieve(LIB, "Take the red block and drop it into the blue bowl.", NAMES, 1) == [LIB.examples[0]]
    # without masking "the top side" would not matter either: no example names it
    assert retrieve(LIB, "Line the cubes up at the top side.", NAMES, 1) == [LIB.examples[3]]


def test_the_head_is_the_header_and_the_examples_as_lines() -> None:
    head = goal_head(LIB, LIB.examples[:2])
    assert head.splitlines() == ["Write the goal.", f"Instruction: {LIB.examples[0][0]}", f"Goal: {LIB.examples[0][1]}",
                                 f"Instruction: {LIB.examples[1][0]}", f"Goal: {LIB.examples[1][1]}"]


def test_the_shipped_library_loads_and_bad_ones_are_refused(tmp_path: Path) -> None:
    lib = PROFILE.goal_examples
    assert lib is not None and len(lib.examples) >= 5 * GOAL_EXAMPLES_K // 2
    goals = {g for _, g in lib.examples}
    assert NO_GOAL in goals and "Stack every block." in goals
    p = tmp_path / "ex.yaml"
    p.write_text("header: h\nexamples:\n  - [a, b]\n  - [only one]\n")
    with pytest.raises(ValueError, match=r"ex.yaml: example 1 must be \[instruction, goal\]"):
        load_goal_examples(p)
    p.write_text("examples: []\n")
    with pytest.raises(ValueError, match="header"):
        load_goal_examples(p)
    with pytest.raises(ValueError, match="cannot read"):
        load_goal_examples(tmp_path / "missing.yaml")


class PriorScorer:
    """Log-probabilities that favour `liked` whatever the instruction (also for "N/A"), and `meant` a little
    more after a real instruction; records the prompts."""

    def __init__(self, liked: str, meant: str) -> None:
        self.liked, self.meant, self.prompts = liked, meant, []  # type: ignore[var-annotated]

    def score(self, prompt: str, candidates: Sequence[str]):  # type: ignore[no-untyped-def]
        from monologue_llm.base import CandidateScore, ScoreResult

        self.prompts.append(prompt)
        content_free = prompt.endswith("Instruction: N/A\nGoal:")
        lp = [(-1.0 if self.liked in c else -6.0) + (0.0 if content_free or self.meant not in c else 3.0)
              for c in candidates]
        return ScoreResult(tuple(CandidateScore(c, x, 3, (x / 3,) * 3) for c, x in zip(candidates, lp)), 10, 10, 0.0)


def test_calibration_subtracts_what_the_model_says_for_no_instruction() -> None:
    cats = {"red block": "block", "green block": "block", "blue bowl": "bowl"}
    cands = goal_candidates([(b, t) for b in ("red block", "green block") for t in cats if t != b], cats,
                            lambda o, t: PROFILE.skill_text("pick_place", (o, t), cats))
    llm = PriorScorer(NO_GOAL, "Stack every block.")
    raw = ground_goal(llm, "head", "Türme alles auf.", cands, cats, named=True)
    assert raw[1] == NO_GOAL and len(llm.prompts) == 1  # -1 beats -6 + 3
    cal = ground_goal(llm, "head", "Türme alles auf.", cands, cats, named=True, calibrated=True)
    assert cal[1] == "Stack every block." and cal[0].tower == ("green block", "red block")
    assert llm.prompts[-1].endswith("Instruction: N/A\nGoal:") and len(llm.prompts) == 3


def test_retrieved_grounding_puts_the_nearest_library_examples_in_the_goal_prompt(planner, world_ports) -> None:  # type: ignore[no-untyped-def]
    class Picker:
        name = "picker"
        goal_prompts: list[str] = []

        def score(self, prompt: str, candidates: Sequence[str]):  # type: ignore[no-untyped-def]
            from monologue_llm.base import CandidateScore, ScoreResult

            if prompt.endswith("Goal:"):
                self.goal_prompts.append(prompt)
            lp = [-1.0 if c.strip() in ("Stack every block.", PROFILE.done_line) else -3.0 for c in candidates]
            return ScoreResult(tuple(CandidateScore(c, x, 3, (x / 3,) * 3) for c, x in zip(candidates, lp)),
                               10, 10, 0.0)

    world = TabletopWorld.from_spec(SceneSpec(("red", "green", "blue"), ("yellow",)), seed=3)
    ports, llm = world_ports(world), Picker()
    im = planner(llm, ports, ports, ports, PROFILE, logging.getLogger("t"))
    text = "Empila todos los bloques, uno sobre otro."
    res = im.run(text, episode_defaults(CONFIG, use_affordances=False, max_steps=6, goal_check="directed",
                                        goal_grounding="llm_named_retrieved"), Transcript("e"))
    assert len(llm.goal_prompts) == 1
    prompt = llm.goal_prompts[0]
    assert PROFILE.goal_examples is not None
    assert prompt.count("\nGoal: ") == GOAL_EXAMPLES_K and prompt.endswith(f"Instruction: {text}\nGoal:")
    names = [b.name for b in world.blocks] + world.target_names()
    nearest = retrieve(PROFILE.goal_examples, text, names, 1)[0]
    assert nearest[1] == "Stack every block." and prompt.endswith(f"Goal: {nearest[1]}\nInstruction: {text}\nGoal:")
    assert res.success and is_stack(state_from_objects(world.snapshot()), ["red block", "green block", "blue block"])


def test_no_library_instruction_is_an_im_table1_wording() -> None:
    from monologue_domain.tasks import FAMILIES, sample_task

    lib = PROFILE.goal_examples
    assert lib is not None
    instructions = [i.lower() for i, _ in lib.examples]
    for family in FAMILIES:
        for seed in range(10):
            task = sample_task(family, seed)
            text = task.instruction.lower()
            cut = min([text.find(v.lower()) for v in task.slots.values() if v.lower() in text] or [len(text)])
            fixed = text[:cut].strip()  # the wording up to its first slot
            assert text not in instructions and (len(fixed) < 12 or not any(i.startswith(fixed) for i in instructions))
