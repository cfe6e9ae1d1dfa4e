"""IM kitchen rendering (numbered steps), active scene description (` and ask:`), "please stop",
and Object feedback every step with occluded objects (IM Listing 2). Scripted LLM, no ROS."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from monologue_domain.transcript import EventKind, Transcript
from planner_node.core.episode import EpisodeError
from planner_node.core.ports import SceneItem, SkillOption, SkillResult, SuccessReport
from planner_node.core.prompts import PromptProfile, load_profile
from planner_node.core.settings import episode_defaults

CONFIG = Path(__file__).resolve().parents[3] / "config"  # the YAML holds the episode defaults

PROMPTS = Path(__file__).resolve().parents[3] / "config" / "prompts"


class Kitchen:
    """Skills, scene, success and human ports of a tiny kitchen; every skill succeeds."""

    def __init__(self, answers: Sequence[str | None] = (), visible: Sequence[str] = ("coke", "counter"),
                 hidden: Sequence[str] = ()) -> None:
        self.answers = list(answers)
        self.questions: list[tuple[str, float]] = []
        self.executed: list[tuple[str, tuple[str, ...]]] = []
        self.inbox: list[str] = []
        self.visible, self.hidden = list(visible), list(hidden)

    def affordances(self) -> list[SkillOption]:
        return [SkillOption("find", ("apple",), 1.0), SkillOption("pick_up", ("coke",), 1.0),
                SkillOption("go_to", ("counter",), 1.0), SkillOption("bring_to_user", (), 1.0)]

    def execute(self, skill: str, args: Sequence[str], cancel: threading.Event) -> SkillResult:
        self.executed.append((skill, tuple(args)))
        return SkillResult(0, "NONE", "", "", time.time(), time.time())

    def describe(self) -> list[SceneItem]:
        return [SceneItem(n, "object") for n in self.visible] + [SceneItem(n, "object", False) for n in self.hidden]

    def detect(self, skill: str, args: Sequence[str], start_s: float, end_s: float) -> SuccessReport:
        return SuccessReport(True, 1.0, "ok")

    def poll(self) -> list[str]:
        out, self.inbox = self.inbox, []
        return out

    def ask(self, question: str, timeout_s: float, cancel: threading.Event) -> str | None:
        self.questions.append((question, timeout_s))
        return self.answers.pop(0) if self.answers else None


def profile(name: str) -> PromptProfile:
    return load_profile(PROMPTS, name)


def make(planner, scripted, ports: Kitchen, prof: PromptProfile, pick, lines=()):  # type: ignore[no-untyped-def]
    llm = scripted(pick, lines)
    im = planner(llm, ports, ports, ports, prof, logging.getLogger("t"), human=ports)
    return im, llm


def test_numbered_rendering_reproduces_listing_4() -> None:
    """Events of the Listing 4 drink example render to the listing's own lines."""
    prof = profile("im_kitchen_human")
    t = Transcript("e")
    t.append(EventKind.HUMAN_INSTRUCTION, prof.instruction("can you bring me a drink from the counter?"))
    t.append(EventKind.ROBOT_ACTION, "go to counter", {"suffix": "ask"})
    t.append(EventKind.ROBOT_QUESTION, "Do you have a preference on what drink you would want?",
             {"question": "Do you have a preference on what drink you would want?"})
    t.append(EventKind.HUMAN_ANSWER, "Human: I don’t want to take in too much sugar, so please bring me anything "
             "that’s healthier", {"text": "I don’t want to take in too much sugar, so please bring me anything "
                                          "that’s healthier"})
    t.append(EventKind.ROBOT_ACTION, "pick up tea", {"suffix": "continue"})
    t.append(EventKind.ROBOT_ACTION, "bring it to you", {"suffix": "continue"})
    t.append(EventKind.ROBOT_ACTION, "put down tea")
    t.append(EventKind.HUMAN_INTERJECTION, "Human: Actually, can you also bring me an energy bar?",
             {"text": "Actually, can you also bring me an energy bar?"})
    prompt = prof.prompt(t.prompt_events())
    listing = prof.preamble.split("Human: can you bring me a drink from the counter?\n", 1)[1]
    expected = "Human: can you bring me a drink from the counter?\n" + "\n".join(listing.splitlines()[:4]) + "\n5."
    assert prompt.endswith(expected), prompt[-600:]
    assert prof.prompt(t.prompt_events(), next_step=False).endswith("energy bar?\n")


def test_listing_3_tags_and_articles() -> None:
    prof = profile("im_kitchen")
    t = Transcript("e")
    t.append(EventKind.HUMAN_INSTRUCTION, prof.instruction("hold the snickers"))
    t.append(EventKind.ROBOT_ACTION, prof.action("pick_up", ("snickers",), {}))
    t.append(EventKind.SUCCESS, prof.success(False))
    t.append(EventKind.SCENE_OBJECTS, prof.objects(["snickers"]))
    t.append(EventKind.ROBOT_ACTION, prof.action("find", ("apple",), {}))
    assert prof.prompt(t.prompt_events()).endswith(
        "Human: hold the snickers\nRobot: 1. pick up the snickers[success: no][scene: snickers]\n"
        "2. find an apple\n3.")


def test_score_mode_asks_and_appends_the_answer(planner, scripted) -> None:  # type: ignore[no-untyped-def]
    ports = Kitchen(answers=["There is a coke on the counter."])
    prof = profile("im_kitchen_human")

    def pick(cands: Sequence[str], prompt: str) -> int:
        if cands[-1] == " and ask:":
            return 1 if "ask:" not in prompt.split("Human: bring me a coke")[-1] else 0
        if "Human: There is a coke" in prompt.split("Human: bring me a coke")[-1]:
            return len(cands) - 1  # done
        return [c.strip() for c in cands].index("go to the counter")

    im, llm = make(planner, scripted, ports, prof, pick, lines=[" What is on the counter?"])
    t = Transcript("e")
    res = im.run("bring me a coke", episode_defaults(CONFIG, success_feedback=False, object_feedback=False,
                                                   answer_timeout_s=5.0), t)
    assert res.error == EpisodeError.NONE and ports.executed == [("go_to", ("counter",))]
    assert ports.questions == [("What is on the counter?", 5.0)]
    kinds = [e.kind for e in t.events]
    assert kinds[:4] == [EventKind.HUMAN_INSTRUCTION, EventKind.ROBOT_ACTION, EventKind.ROBOT_QUESTION,
                         EventKind.HUMAN_ANSWER]
    # the question is generated after " and ask:", and the next step sees the whole exchange
    assert llm.gen_prompts[0].endswith("Robot: 1. go to the counter and ask:")
    assert llm.prompts[-1].endswith(
        "Human: bring me a coke\nRobot: 1. go to the counter and ask: What is on the counter? "
        "Human: There is a coke on the counter.\n2.")


def test_unanswered_question_is_logged_not_prompted(planner, scripted) -> None:  # type: ignore[no-untyped-def]
    ports = Kitchen(answers=[None])
    prof = profile("im_kitchen_human")
    calls = {"n": 0}

    def pick(cands: Sequence[str], prompt: str) -> int:
        calls["n"] += 1
        if cands[-1] == " and ask:":
            return 1
        return 2 if calls["n"] == 1 else len(cands) - 1

    im, _ = make(planner, scripted, ports, prof, pick, lines=[" Is it open?"])
    t = Transcript("e")
    im.run("open it", episode_defaults(CONFIG, success_feedback=False, object_feedback=False, answer_timeout_s=0.5), t)
    errors = [e.text for e in t.events if e.kind == EventKind.ERROR]
    assert any("No answer to 'Is it open?' within" in x for x in errors)
    assert EventKind.HUMAN_ANSWER not in [e.kind for e in t.events]


def test_generated_suffix_is_parsed_and_continue_rendered(planner, scripted) -> None:  # type: ignore[no-untyped-def]
    ports = Kitchen(answers=["yes"])
    prof = profile("im_kitchen_human")
    im, llm = make(planner, scripted, ports, prof, lambda c, p: len(c) - 1,
                   lines=[" go to the counter and continue", " pick up the coke and ask: Is this the one?",
                          " done."])
    t = Transcript("e")
    res = im.run("bring me a coke", episode_defaults(CONFIG, decoding="generate", success_feedback=False,
                                                   object_feedback=False), t)
    assert res.error == EpisodeError.NONE
    assert ports.executed == [("go_to", ("counter",)), ("pick_up", ("coke",))]
    assert ports.questions[0][0] == "Is this the one?"
    assert llm.gen_prompts[-1].endswith(
        "Robot: 1. go to the counter and continue\n2. pick up the coke and ask: Is this the one? Human: yes\n3.")


@pytest.mark.parametrize("said,by_phrase", [("please stop.", True), ("Enough for today, thanks.", False)])
def test_stop_request_ends_with_stopped_by_human(planner, scripted, world_ports, said: str, by_phrase: bool) -> None:  # type: ignore[no-untyped-def]
    """A stop phrase ends the episode at the step boundary; any other interjection after which the LLM
    chooses done also counts as stopped by the person."""
    from monologue_domain.kinematic_world import TabletopWorld

    world = TabletopWorld.random(3, num_blocks=2, num_bowls=2, matching_bowls=True)
    ports = world_ports(world)
    inbox: list[str] = []

    class Human:
        def poll(self) -> list[str]:
            out = list(inbox)
            inbox.clear()
            return out

        def ask(self, question: str, timeout_s: float, cancel: threading.Event) -> str | None:
            return None

    def pick(cands: Sequence[str], prompt: str) -> int:
        if prompt.rstrip().endswith("Human: " + said):
            return len(cands) - 1
        inbox.append(said)  # said while the first skill runs
        return 0

    llm = scripted(pick)
    im = planner(llm, ports, ports, ports, profile("im_sim_object_success"), logging.getLogger("t"),
                        human=Human())
    t = Transcript("e")
    res = im.run("Put the blocks in their matching bowls.", episode_defaults(CONFIG), t)
    assert res.error == EpisodeError.STOPPED_BY_HUMAN and not res.success
    assert res.steps_taken == 1 and len(ports.executed) == 1
    assert said in res.reason
    assert [e.text for e in t.events if e.kind == EventKind.HUMAN_INTERJECTION] == ["Human: " + said]
    assert len(llm.prompts) == (1 if by_phrase else 2)  # a stop phrase does not ask the LLM
    kinds = [e.kind for e in t.events]
    assert kinds[-3:] == [EventKind.ROBOT_THOUGHT, EventKind.ERROR, EventKind.EPISODE_END]
    assert t.events[-3].text == "Robot thought: None."


def test_real_tabletop_lists_visible_and_occluded_objects_every_step(planner, scripted) -> None:  # type: ignore[no-untyped-def]
    ports = Kitchen(visible=["yellow block", "cyan block"], hidden=["brown block"])

    ports.affordances = lambda: [SkillOption("pick_place", ("cyan block", "yellow block"), 1.0)]  # type: ignore[method-assign]
    prof = profile("im_real_tabletop")
    im, llm = make(planner, scripted, ports, prof, lambda c, p: 0 if "Successful action" not in p[-300:] else len(c) - 1)
    t = Transcript("e")
    res = im.run("Stack the cyan block on the yellow block", episode_defaults(CONFIG), t)
    assert res.error == EpisodeError.NONE
    lines = t.prompt_lines()
    assert lines[:4] == [
        "Task: Stack the cyan block on the yellow block.",
        'Scene: Visible objects are ["cyan block", "yellow block"]',
        'Scene: Occluded objects are ["brown block"]',
        'Robot action: robot.pick_place("cyan block", "yellow block")',
    ]
    assert lines[4:] == ["Successful action: True", 'Scene: Visible objects are ["cyan block", "yellow block"]',
                         'Scene: Occluded objects are ["brown block"]', "Robot action: robot.stop()", "STOP"]


@pytest.mark.parametrize("word,art", [("orange", "an"), ("apple", "an"), ("red", "a"), ("unicorn", "a"),
                                      ("energy bar", "an"), ("kettle chips", "a")])
def test_articles(word: str, art: str) -> None:
    from planner_node.core.prompts import article

    assert article(word) == art


def test_resume_an_interrupted_episode(planner, tmp_path: Path, scripted, world_ports) -> None:  # type: ignore[no-untyped-def]
    """A crash after an action was sent: the resumed episode settles that action from the world,
    keeps counting steps, and finishes in the same file."""
    from monologue_domain.kinematic_world import TabletopWorld
    from monologue_domain.transcript import find_interrupted, load_episode

    world = TabletopWorld.random(4, num_blocks=2, num_bowls=2, matching_bowls=True)
    ports = world_ports(world)
    prof = profile("im_sim_object_success")
    cats = {o.name: o.category for o in world.objects}
    first = sorted(n for n in cats if cats[n] == "block")[0]
    bowl = first.replace("block", "bowl")
    t = Transcript("crashed", tmp_path / "crashed.jsonl", header={"instruction": "x"})
    t.append(EventKind.SCENE_OBJECTS, prof.objects(list(cats)))
    t.append(EventKind.HUMAN_INSTRUCTION, prof.instruction("Put the blocks in their matching bowls."))
    t.append(EventKind.ROBOT_ACTION, prof.action("pick_place", (first, bowl), cats),
             {"skill": "pick_place", "args": [first, bowl]})
    world.pick_place(first, bowl)  # the skill finished, then the planner died before writing Success
    with open(tmp_path / "crashed.jsonl", "a", encoding="utf-8") as f:
        f.write("{\"record\": \"event\", \"ind")  # cut mid-line
    [stored] = find_interrupted(tmp_path)

    def pick(cands: Sequence[str], prompt: str) -> int:
        for i, c in enumerate(cands):
            w = c.split()
            if "bowl." in c and w[4] == w[-2] and c + "\nSuccess: True" not in prompt[len(prof.preamble):]:
                return i
        return len(cands) - 1

    im = planner(scripted(pick), ports, ports, ports, prof, logging.getLogger("t"))
    resumed = Transcript.reopen(stored)
    res = im.run("Put the blocks in their matching bowls.", episode_defaults(CONFIG, max_steps=5), resumed, resume=True)
    assert res.error == EpisodeError.NONE and res.steps_taken == 1  # one more skill in this run
    texts = [e.text for e in load_episode(tmp_path / "crashed.jsonl").events]
    assert texts[3].startswith("Resumed after an interruption, 1 steps in") and texts[4] == "Success: True"
    assert texts.count("Human: Put the blocks in their matching bowls.") == 1
    assert not load_episode(tmp_path / "crashed.jsonl").interrupted
    assert [a for _, a in ports.executed] == [(f, f.replace("block", "bowl"))
                                             for f in sorted(n for n in cats if cats[n] == "block")[1:]]


def test_saycan_steps_share_the_robot_line() -> None:
    prof = profile("saycan")
    t = Transcript("e")
    t.append(EventKind.HUMAN_INSTRUCTION, prof.instruction("How would you bring me a coke?"))
    assert prof.prompt(t.prompt_events()).endswith("Human: How would you bring me a coke?\nRobot: 1.")
    t.append(EventKind.ROBOT_ACTION, prof.action("find", ("coke",), {}))
    t.append(EventKind.ROBOT_ACTION, prof.action("pick_up", ("coke",), {}))
    assert prof.prompt(t.prompt_events()).endswith(
        "Human: How would you bring me a coke?\nRobot: 1. find a coke, 2. pick up the coke, 3.")
    assert prof.prompt(t.prompt_events(), next_step=False).endswith("2. pick up the coke\n")


class Status:
    """A robot that is faulted for the first `faulted_s` seconds of each wait (or for ever)."""

    def __init__(self, clears: bool) -> None:
        self.clears, self.waits = clears, 0
        self._fault: str | None = "protective stop"

    def fault(self) -> str | None:
        return self._fault

    def wait_ok(self, timeout_s: float, cancel: threading.Event) -> str | None:
        self.waits += 1
        if self.clears:
            self._fault = None
        return self._fault


@pytest.mark.parametrize("clears", [True, False])
def test_planner_pauses_while_the_robot_is_faulted(planner, scripted, world_ports, clears: bool) -> None:  # type: ignore[no-untyped-def]
    from monologue_domain.kinematic_world import TabletopWorld

    world = TabletopWorld.random(3, num_blocks=1, num_bowls=1, matching_bowls=True)
    ports = world_ports(world)
    status = Status(clears)
    im = planner(scripted(lambda c, p: 0 if "Success: True" not in p[-40:] else len(c) - 1), ports, ports,
                        ports, profile("im_sim_object_success"), logging.getLogger("t"), robot=status)
    t = Transcript("e")
    res = im.run("Put the blocks in their matching bowls.", episode_defaults(CONFIG, fault_pause_s=1.0), t)
    errors = [e.text for e in t.events if e.kind == EventKind.ERROR]
    assert errors[0] == "Paused: protective stop" and status.waits == 1
    if clears:
        assert res.error == EpisodeError.NONE and len(ports.executed) == 1
        assert errors[1] == "Resumed: the robot can move again"
    else:
        assert res.error == EpisodeError.ROBOT_FAULT and ports.executed == []
        assert "protective stop" in res.reason
