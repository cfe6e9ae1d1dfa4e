"""The episode runner without ROS: goal -> options, transcript header, strategies by name, resume,
cancel, people's input and post-task answers (kinematic tabletop, scripted LLM)."""
from __future__ import annotations

import json
import threading
from pathlib import Path

from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.transcript import Event, EventKind, Transcript, load_episode
from planner_node.core import strategies
from planner_node.core.episode import EpisodeError, StepRecord
from planner_node.core.runner import GoalRequest, PreparedEpisode, episode_options
from planner_node.core.settings import episode_defaults

CONFIG = Path(__file__).resolve().parents[3] / "config"  # the YAML holds the episode defaults

TASK = "Put the blocks in their matching bowls."


def header(path: Path | None) -> dict[str, object]:
    assert path is not None
    return dict(json.loads(path.read_text(encoding="utf-8").splitlines()[0]))


def test_goal_runs_the_default_strategy_and_reports_everything(make_runner, scripted, world_ports) -> None:  # type: ignore[no-untyped-def]
    ports = world_ports(TabletopWorld.random(4, num_blocks=2, num_bowls=2, matching_bowls=True))
    runner = make_runner(scripted(scripted.matching_bowls), ports)
    started: list[PreparedEpisode] = []
    events: list[Event] = []
    steps: list[tuple[str, StepRecord]] = []
    busy: list[bool] = []

    def on_start(p: PreparedEpisode) -> None:
        started.append(p)
        busy.append(runner.busy)

    out = runner.execute(GoalRequest(TASK, objects=(" red block", "red block", "")), on_start=on_start,
                         on_event=events.append, on_step=lambda eid, r: steps.append((eid, r)))
    assert out.result.success and out.result.error == EpisodeError.NONE and out.result.steps_taken == 2
    assert busy == [True] and not runner.busy
    [p] = started
    assert p.episode_id == out.episode_id and p.objects == ("red block",) and p.strategy.name == "inner_monologue"
    assert [e.index for e in events] == [e.index for e in out.events] and events[-1].kind == EventKind.EPISODE_END
    assert [eid for eid, _ in steps] == [out.episode_id] * 3
    h = header(out.path)
    assert h["strategy"] == "inner_monologue" and h["prompt_profile"] == "im_sim_object_success"
    assert h["objects"] == ["red block"] and h["llm"] == "scripted"
    yaml_options = episode_defaults(CONFIG)
    assert h["options"] == {**yaml_options.__dict__, "stop_phrases": list(yaml_options.stop_phrases)}
    assert out.path is not None and not load_episode(out.path).interrupted


def test_goal_switches_override_the_parameters() -> None:
    defaults = episode_defaults(CONFIG, max_steps=15)
    gen = strategies.get("inner_monologue_generative")
    opts = episode_options(defaults, GoalRequest(TASK, success_feedback=False, scene_feedback=True, max_steps=3), gen)
    assert (opts.success_feedback, opts.scene_feedback, opts.object_feedback) == (False, True, True)
    assert opts.max_steps == 3 and opts.decoding == "generate"
    assert episode_options(defaults, GoalRequest(TASK), strategies.get("saycan")).decoding == "score"


def test_saycan_gives_no_feedback_whatever_the_goal_asks(make_runner, scripted, world_ports) -> None:  # type: ignore[no-untyped-def]
    ports = world_ports(TabletopWorld.random(4, num_blocks=2, num_bowls=2, matching_bowls=True))
    runner = make_runner(scripted(lambda c, p: 0 if p.split(TASK)[-1].count("Robot action") < 2 else len(c) - 1), ports)
    out = runner.execute(GoalRequest(TASK, strategy="saycan", object_feedback=True, success_feedback=True))
    assert out.result.success and len(ports.executed) == 2
    kinds = {e.kind for e in out.events}
    assert EventKind.SCENE_OBJECTS not in kinds and EventKind.SUCCESS not in kinds
    # the header keeps what the goal asked for (replay sends it again)
    h = header(out.path)
    assert h["strategy"] == "saycan" and h["options"]["success_feedback"] is True  # type: ignore[index]


def test_generative_strategy_is_chosen_by_name(make_runner, scripted, world_ports) -> None:  # type: ignore[no-untyped-def]
    ports = world_ports(TabletopWorld.random(4, num_blocks=1, num_bowls=1, matching_bowls=True))
    block = next(o.name for o in ports.world.snapshot() if o.category == "block")
    llm = scripted(scripted.matching_bowls, [f"Pick the {block} and place it in the {block.replace('block', 'bowl')}.",
                              "Robot thought: None."])
    out = make_runner(llm, ports).execute(GoalRequest(TASK, strategy="inner_monologue_generative"))
    assert out.result.success and llm.prompts == [] and len(llm.gen_prompts) == 2
    assert header(out.path)["options"]["decoding"] == "generate"  # type: ignore[index]


def test_invalid_goals_are_refused_before_an_episode_starts(make_runner, scripted, world_ports, tmp_path) -> None:  # type: ignore[no-untyped-def]
    runner = make_runner(scripted(scripted.matching_bowls), world_ports(TabletopWorld.random(1)))
    for goal, why in [(GoalRequest(TASK, strategy="no_such_strategy"), "unknown strategy 'no_such_strategy'"),
                      (GoalRequest(TASK, prompt_profile="nope"), "prompt profile 'nope' not found"),
                      (GoalRequest(resume_episode="latest"), "no interrupted episode")]:
        out = runner.execute(goal)
        assert out.result.error == EpisodeError.INVALID_GOAL and why in out.result.reason
        assert out.transcript is None and out.path is None and out.events == ()
    assert list((tmp_path / "transcripts").iterdir()) == []


def test_an_interrupted_episode_is_resumed_in_its_file(make_runner, scripted, world_ports, tmp_path) -> None:  # type: ignore[no-untyped-def]
    ports = world_ports(TabletopWorld.random(4, num_blocks=2, num_bowls=2, matching_bowls=True))
    runner = make_runner(scripted(scripted.matching_bowls), ports)
    path = tmp_path / "transcripts" / "crashed.jsonl"
    t = Transcript("crashed", path, header={"episode_id": "crashed", "instruction": TASK,
                                            "prompt_profile": "im_sim_object_success", "objects": ["x"]})
    t.append(EventKind.HUMAN_INSTRUCTION, f"Human: {TASK}")
    assert [e.path for e in runner.interrupted()] == [path]
    started: list[PreparedEpisode] = []
    out = runner.execute(GoalRequest(resume_episode="crashed"), on_start=started.append)
    assert out.result.success and out.path == path and out.episode_id == "crashed"
    assert started[0].resume and started[0].instruction == TASK and started[0].objects == ("x",)
    texts = [e.text for e in load_episode(path).events]
    assert texts[1] == "Resumed after an interruption, 0 steps in" and texts.count(f"Human: {TASK}") == 1
    assert runner.interrupted() == []


def test_a_cancel_request_stops_the_running_skill(make_runner, scripted, world_ports) -> None:  # type: ignore[no-untyped-def]
    ports = world_ports(TabletopWorld.random(4, num_blocks=2, num_bowls=2, matching_bowls=True))
    asked = threading.Event()

    def execute(skill, args, cancel):  # type: ignore[no-untyped-def]
        asked.set()  # the client asks to cancel once a skill runs
        assert cancel.wait(10.0)
        return ports.__class__.execute(ports, skill, args, threading.Event())

    ports.execute = execute
    out = make_runner(scripted(scripted.matching_bowls), ports).execute(GoalRequest(TASK), cancel_requested=asked.is_set)
    assert out.result.error == EpisodeError.CANCELED and out.result.reason == "cancelled during a skill"


def test_people_reach_the_running_episode_or_get_an_answer_after_it(make_runner, scripted, world_ports) -> None:  # type: ignore[no-untyped-def]
    ports = world_ports(TabletopWorld.random(4, num_blocks=2, num_bowls=2, matching_bowls=True))
    llm = scripted(scripted.matching_bowls)
    runner = make_runner(llm, ports)
    assert not runner.human_input("hello")  # nothing runs
    assert not runner.human_input("what is in the bowl?", question=True)  # nothing ran yet
    said: list[bool] = []

    def on_event(e: Event) -> None:
        if e.index == 0:  # the episode runs: its inbox is open
            said.append(runner.human_input("把蓝色的积木放进碗里", e.episode_id))
            said.append(runner.human_input("not for this one", "another-episode"))

    out = runner.execute(GoalRequest(TASK), on_event=on_event)
    assert said == [True, False]
    assert [e.text for e in out.events if e.kind == EventKind.HUMAN_INTERJECTION] == ["Human: 把蓝色的积木放进碗里"]
    llm.lines = ["The red bowl holds the red block."]
    assert runner.human_input("What is in the red bowl?", question=True)
    assert [e.text for e in out.events[-2:]] == ["Human: What is in the red bowl?",
                                                 "Robot thought: The red bowl holds the red block."]
