"""The Inner Monologue loop over the kinematic tabletop with a scripted scorer (no ROS, no LLM)."""
from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.scene_spec import SceneSpec
from monologue_domain.tasks import matching_bowls_done
from monologue_domain.transcript import EventKind, Transcript, load_episode
from monologue_llm.base import LLMUnavailableError
from planner_node.core.episode import EpisodeError
from planner_node.core.prompts import load_profile
from planner_node.core.scoring import DONE_AFFORDANCE
from planner_node.core.settings import episode_defaults

CONFIG = Path(__file__).resolve().parents[3] / "config"  # the YAML holds the episode defaults

PROFILE = load_profile(Path(__file__).resolve().parents[3] / "config" / "prompts", "im_sim_object_success")


@pytest.fixture
def make(planner, scripted, world_ports):  # type: ignore[no-untyped-def]
    def _make(world: TabletopWorld, pick=scripted.matching_bowls, **kw):  # type: ignore[no-untyped-def]
        return _build(planner, scripted, world_ports, world, pick, **kw)
    return _make


def _build(planner, scripted, world_ports, world, pick, **kw):  # type: ignore[no-untyped-def]
    ports = world_ports(world)
    llm = scripted(pick)
    steps = []
    im = planner(llm, ports, ports, ports, PROFILE, logging.getLogger("t"), on_step=steps.append, **kw)
    return im, ports, llm, steps


def test_matching_bowls_episode(tmp_path: Path, make) -> None:
    world = TabletopWorld.random(4, num_blocks=3, num_bowls=3, matching_bowls=True)
    im, ports, llm, steps = make(world)
    t = Transcript("e", tmp_path / "e.jsonl")
    res = im.run("Put the blocks in their matching bowls.", episode_defaults(CONFIG), t)
    assert res.error == EpisodeError.NONE and res.success and res.steps_taken == 3
    assert matching_bowls_done(world.snapshot())
    kinds = [e.kind for e in t.events]
    assert kinds[:2] == [EventKind.SCENE_OBJECTS, EventKind.HUMAN_INSTRUCTION]
    assert t.texts(EventKind.SUCCESS) == ["Success: True"] * 3
    assert t.events[-2].text == "Robot thought: None." and kinds[-1] == EventKind.EPISODE_END
    assert t.events[0].text.startswith(("Scene: There is a ", "Scene: There is an "))
    # the prompt grows with the transcript and starts with the few-shot preamble
    assert llm.prompts[0].startswith(PROFILE.preamble)
    assert llm.prompts[1].startswith(llm.prompts[0])
    # the score table has the done line with SayCan's 0.1 affordance
    done = [c for c in steps[0].candidates if c.option is None][0]
    assert done.affordance == DONE_AFFORDANCE
    assert not load_episode(tmp_path / "e.jsonl").interrupted


def test_failed_pick_is_reported_and_retried(make) -> None:
    world = TabletopWorld.from_spec(SceneSpec(("purple",), ("purple",), heavy_blocks=("purple",)), seed=2)
    im, ports, _, _ = make(world)
    t = Transcript("e")
    res = im.run("Put the blocks in their matching bowls.", episode_defaults(CONFIG, max_steps=3), t)
    assert res.error == EpisodeError.MAX_STEPS_REACHED and res.steps_taken == 3
    assert t.texts(EventKind.SUCCESS) == ["Success: False"] * 3
    assert any("EXECUTION_FAILED" in e.text for e in t.events if e.kind == EventKind.ERROR)
    # ERROR events never reach the prompt
    assert all("Skill error" not in line for line in t.prompt_lines())


def test_open_loop_variant_has_no_success_lines(make) -> None:
    world = TabletopWorld.random(1, num_blocks=2, num_bowls=2, matching_bowls=True)
    im, _, _, _ = make(world, pick=lambda c, p: 0 if "Robot action" in c[0] and "Success" not in p[-200:] else len(c) - 1)
    t = Transcript("e")
    im.run("Put the blocks in their matching bowls.", episode_defaults(CONFIG, success_feedback=False, max_steps=2), t)
    assert t.texts(EventKind.SUCCESS) == []


def test_no_value_function_offers_unaffordable_skills(make) -> None:
    world = TabletopWorld.random(1, num_blocks=2, num_bowls=2, matching_bowls=True)
    _, _, _, steps_vf = (x := make(world))
    x[0].run("Stack the blocks.", episode_defaults(CONFIG, max_steps=1), Transcript("a"))
    im2, _, _, steps_novf = make(TabletopWorld.random(1, num_blocks=2, num_bowls=2, matching_bowls=True))
    im2.run("Stack the blocks.", episode_defaults(CONFIG, max_steps=1, use_affordances=False), Transcript("b"))
    assert all(c.affordance == 1.0 for c in steps_novf[0].candidates)


def test_llm_failure_ends_episode_cleanly(make) -> None:
    world = TabletopWorld.random(1)

    def boom(c: Sequence[str], p: str) -> int:
        raise LLMUnavailableError("server down after 3 retries")

    im, ports, _, _ = make(world, pick=boom)
    t = Transcript("e")
    res = im.run("Stack the blocks.", episode_defaults(CONFIG), t)
    assert res.error == EpisodeError.LLM_FAILED and "server down" in res.reason
    assert ports.executed == []
    assert t.events[-1].kind == EventKind.EPISODE_END


def test_cancel_before_first_step(make) -> None:
    im, ports, _, _ = make(TabletopWorld.random(1))
    cancel = threading.Event()
    cancel.set()
    res = im.run("Stack the blocks.", episode_defaults(CONFIG), Transcript("e"), cancel)
    assert res.error == EpisodeError.CANCELED and ports.executed == []


def test_empty_instruction_is_invalid(make) -> None:
    im, _, _, _ = make(TabletopWorld.random(1))
    res = im.run("   ", episode_defaults(CONFIG), Transcript("e"))
    assert res.error == EpisodeError.INVALID_GOAL and res.reason == "the instruction is empty"


class Say:
    """A person who says `text` once, before planning step `at_step` (1-based)."""

    def __init__(self, text: str, at_step: int) -> None:
        self.text, self.at_step, self.polls = text, at_step, 0

    def poll(self) -> list[str]:
        self.polls += 1
        return [self.text] if self.polls == self.at_step else []


def test_interjection_enters_transcript_and_prompt_at_a_step_boundary(make) -> None:
    world = TabletopWorld.random(4, num_blocks=2, num_bowls=2, matching_bowls=True)
    im, _, llm, _ = make(world)
    im.human = Say("把蓝色的积木放进碗里", at_step=2)
    t = Transcript("e")
    im.run("Put the blocks in their matching bowls.", episode_defaults(CONFIG), t)
    kinds = [e.kind for e in t.events]
    i = kinds.index(EventKind.HUMAN_INTERJECTION)
    assert t.events[i].text == "Human: 把蓝色的积木放进碗里"
    # after the first action and its Success line, before the second action
    assert kinds[i - 2:i] == [EventKind.ROBOT_ACTION, EventKind.SUCCESS]
    assert kinds[i + 1] == EventKind.ROBOT_ACTION
    assert "Human: 把蓝色的积木放进碗里\n" in llm.prompts[1] and "把蓝色" not in llm.prompts[0]


def test_interjection_ignored_when_human_feedback_is_off(make) -> None:
    im, _, llm, _ = make(TabletopWorld.random(4, num_blocks=2, num_bowls=2, matching_bowls=True))
    im.human = Say("please stop", at_step=1)
    t = Transcript("e")
    im.run("Put the blocks in their matching bowls.", episode_defaults(CONFIG, human_feedback=False), t)
    assert t.texts(EventKind.HUMAN_INTERJECTION) == []
    assert all("please stop" not in p for p in llm.prompts)


def test_generative_rejects_bad_lines_then_executes_admissible_one(make) -> None:
    world = TabletopWorld.from_spec(SceneSpec(("red", "blue"), ("red", "blue")), seed=3)
    im, ports, llm, _ = make(world)
    llm.lines = [
        "Scene: There is a purple cube.",  # another speaker: rejected
        "Pick the purple cube and place it in the red bowl.",  # unknown object: rejected
        "Pick the red block and place it in the red bowl.",  # admissible
        "Pick the blue block and place it in the blue bowl.",
        "Robot thought: None.",
    ]
    t = Transcript("e")
    opts = episode_defaults(CONFIG, decoding="generate", max_reprompts=2, generation_fallback="fail")
    res = im.run("Put the blocks in their matching bowls.", opts, t)
    assert res.success and ports.executed == [("pick_place", ("red block", "red bowl")),
                                              ("pick_place", ("blue block", "blue bowl"))]
    errors = [e for e in t.events if e.kind == EventKind.ERROR]
    assert [e.data["attempt"] for e in errors] == [1, 2]
    assert "purple cube" in errors[1].data["reason"]
    # rejected output never reaches the prompt; later attempts continue an action line
    assert all("purple cube" not in p for p in llm.gen_prompts)
    assert llm.gen_prompts[1].endswith("Robot action: ") and not llm.gen_prompts[0].endswith("action: ")
    assert matching_bowls_done(world.snapshot())


def test_generative_gives_up_after_bounded_reprompts(make) -> None:
    im, ports, llm, _ = make(TabletopWorld.random(2, num_blocks=2, num_bowls=2, matching_bowls=True))
    llm.lines = ["robot.fly()", "\x00\x01binary", "x" * 900, "never asked"]
    t = Transcript("e")
    res = im.run("Stack the blocks.", episode_defaults(CONFIG, decoding="generate", max_reprompts=2,
                                                     generation_fallback="fail"), t)
    assert res.error == EpisodeError.PLANNING_FAILED and ports.executed == []
    assert len([e for e in t.events if e.kind == EventKind.ERROR and "Rejected" in e.text]) == 3
    assert llm.lines == ["never asked"]


def test_generative_falls_back_to_scoring(make) -> None:
    im, ports, llm, _ = make(TabletopWorld.random(2, num_blocks=2, num_bowls=2, matching_bowls=True))
    llm.lines = ["gibberish", "more gibberish"]
    t = Transcript("e")
    im.run("Put the blocks in their matching bowls.", episode_defaults(CONFIG, decoding="generate", max_reprompts=1,
                                                                     max_steps=1), t)
    assert len(ports.executed) == 1 and llm.prompts  # the scorer chose the step


SCENE_PROFILE = load_profile(Path(__file__).resolve().parents[3] / "config" / "prompts", "im_sim_object_scene")


def test_goal_state_parsing_resolves_known_names() -> None:
    from planner_node.core.scene_feedback import parse_goal_state

    cats = {"cyan block": "block", "top left corner": "location", "red bowl": "bowl"}
    goals = parse_goal_state('Robot thought: Goal state is ["Cyan block is on the top left corner.", '
                             '"Purple block is in the red bowl.", "the cyan block is in the red bowl"]', cats)
    assert [(g.obj, g.target) for g in goals] == [("cyan block", "top left corner"), ("", ""),
                                                  ("cyan block", "red bowl")]
    assert goals[1].text == "Purple block is in the red bowl."
    assert parse_goal_state("Robot thought: no list here", cats) == []
    # a missing opening quote or doubled brackets still give the items
    sloppy = parse_goal_state('Goal state is [[cyan block is on the top left corner.", "Purple block is in', cats)
    assert [(g.obj, g.target, g.text) for g in sloppy] == [
        ("cyan block", "top left corner", "cyan block is on the top left corner."), ("", "", "Purple block is in")]


def test_scene_feedback_recomputes_progress_and_stops_on_none_thought(make) -> None:
    world = TabletopWorld.from_spec(SceneSpec(("blue", "red"), ("blue", "red")), seed=3)
    im, ports, llm, _ = make(world)
    im.profile = SCENE_PROFILE
    llm.lines = [
        '"Red block is in the red bowl.", "Blue block is in the blue bowl.", "Gold block is in the red bowl."]',
        "Blue block is not in the blue bowl.",  # thought after step 1
        "Red block is not in the red bowl.",  # thought after step 2 (the red block was knocked out)
        "None.",  # thought after step 3
    ]
    executed_before = len(ports.executed)
    orig_execute = ports.execute

    def execute_then_disturb(skill, args, cancel):  # type: ignore[no-untyped-def]
        r = orig_execute(skill, args, cancel)
        if len(ports.executed) == 2:  # knock the red block out of its bowl after the second skill
            world.move_object("red block", 0.35, -0.25)
        return r

    ports.execute = execute_then_disturb
    t = Transcript("e")
    res = im.run("Put the blocks in their matching bowls.", episode_defaults(CONFIG, scene_feedback=True, success_feedback=False),
                 t)
    assert res.success and res.reason == "the planner thought it was done"
    lines = [e.text for e in t.events]
    assert lines[2].startswith('Robot thought: Goal state is ["Red block is in the red bowl."')
    progress = t.texts(EventKind.SCENE_PROGRESS)
    assert progress[0] in ('Scene: You have completed ["Red block is in the red bowl."]',
                           'Scene: You have completed ["Blue block is in the blue bowl."]')
    assert progress[1] == 'Scene: You have completed ["Blue block is in the blue bowl."]'  # red was lost again
    assert progress[2] == ('Scene: You have completed ["Red block is in the red bowl.", '
                           '"Blue block is in the blue bowl."]')
    assert lines[-2] == "Robot thought: None." and len(ports.executed) - executed_before == 3
    # the done line is not a scoring candidate in Scene mode: the thought decides termination
    assert all("None." not in p.split("\n")[-1] for p in llm.prompts)


def test_scene_feedback_needs_a_scene_profile(make) -> None:
    im, _, _, _ = make(TabletopWorld.random(1))
    res = im.run("Stack the blocks.", episode_defaults(CONFIG, scene_feedback=True), Transcript("e"))
    assert res.error == EpisodeError.INVALID_GOAL and "im_sim_object_scene" in res.reason


def test_post_task_question_is_answered_in_text_only(make, tmp_path: Path) -> None:
    world = TabletopWorld.random(4, num_blocks=2, num_bowls=2, matching_bowls=True)
    im, ports, llm, _ = make(world)
    t = Transcript("e", tmp_path / "e.jsonl")
    im.run("Put the blocks in their matching bowls.", episode_defaults(CONFIG), t)
    moved = list(ports.executed)
    llm.lines = ["The red bowl contains the red block."]
    answer = im.answer("What objects are in the red bowl?", t)
    assert answer == "The red bowl contains the red block."
    assert ports.executed == moved  # nothing moved
    assert [e.text for e in t.events[-2:]] == ["Human: What objects are in the red bowl?",
                                                "Robot thought: The red bowl contains the red block."]
    assert all(e.data.get("post_task") for e in t.events[-2:])
    assert llm.gen_prompts[-1].endswith("Human: What objects are in the red bowl?\nRobot thought: ")
    stored = load_episode(tmp_path / "e.jsonl")
    assert not stored.interrupted and stored.events[-1].text.endswith("red block.")
    with pytest.raises(RuntimeError):
        t.append(EventKind.ROBOT_ACTION, "Robot action: not after the end")


def test_profile_without_success_lines_is_refused_when_success_is_on(make) -> None:
    im, ports, _, _ = make(TabletopWorld.random(1))
    im.profile = SCENE_PROFILE
    res = im.run("Stack the blocks.", episode_defaults(CONFIG, scene_feedback=True, success_feedback=True), Transcript("e"))
    assert res.error == EpisodeError.INVALID_GOAL and "no Success lines" in res.reason and ports.executed == []


def test_unexpected_error_ends_episode_with_transcript(make, tmp_path: Path) -> None:
    im, ports, _, _ = make(TabletopWorld.random(1))

    def broken(*_a):  # type: ignore[no-untyped-def]
        raise KeyError("bug")

    ports.affordances = broken
    t = Transcript("e", tmp_path / "e.jsonl")
    res = im.run("Stack the blocks.", episode_defaults(CONFIG), t)
    assert res.error == EpisodeError.INTERNAL_ERROR and "bug" in res.reason
    assert not load_episode(tmp_path / "e.jsonl").interrupted
