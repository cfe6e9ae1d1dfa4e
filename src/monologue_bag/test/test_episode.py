"""A recorded run rebuilt from a bag: episodes, skill calls with results and timing, affordances,
the goal; replayed transcripts compared event for event; the stand-in skills server; bag info."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from rclpy.serialization import serialize_message

from monologue_bag.core.bagio import Bag, BagWriter, QosSpec
from monologue_bag.core.compare import first_divergence
from monologue_bag.core.episode import (
    AFFORDANCES_TOPIC,
    SKILL_STATUS_TOPIC,
    TRANSCRIPT_TOPIC,
    RecordedEvent,
    goal_spec,
    planner_params,
    read_recording,
)
from monologue_bag.core.replay import EXECUTION_FAILED, INVALID_ARGUMENTS, RecordedSkills
from monologue_bag.core.stats import episode_stats, format_info, llm_stats
from monologue_common.core.msgdefs import MessageDefinitions

NS = 1_000_000_000
T0 = 1_700_000_000 * NS
EVENTS = [  # (t s, kind, text, data)
    (1.0, 3, "Scene: There is a red, blue block and a red bowl.", {"objects": ["red block", "blue block"]}),
    (1.1, 0, "Human: Put the blocks in the red bowl.", {"instruction": "Put the blocks in the red bowl."}),
    (2.0, 1, "Robot action: Pick the red block and place it in the red bowl.",
     {"skill": "pick_place", "args": ["red block", "red bowl"], "step": 1, "llm_score": 0.8, "affordance": 1.0}),
    (3.5, 5, "Success: True", {"success": True, "confidence": 1.0, "explanation": "in"}),
    (4.0, 1, "Robot action: Pick the blue block and place it in the red bowl.",
     {"skill": "pick_place", "args": ["blue block", "red bowl"], "step": 2, "llm_score": 0.7, "affordance": 1.0}),
    (4.6, 9, "Skill error EXECUTION_FAILED: grasp slipped",
     {"error_code": 4, "error_name": "EXECUTION_FAILED", "message": "grasp slipped", "failed_precondition": ""}),
    (4.7, 5, "Success: False", {"success": False, "confidence": 1.0, "explanation": "the skill reported x"}),
    (5.0, 2, "Robot thought: None.", {"done": True}),
    (5.1, 10, "Episode succeeded: the planner chose done", {"success": True, "error": "NONE", "steps_taken": 2}),
]


def _t(s: float) -> object:
    from builtin_interfaces.msg import Time

    ns = T0 + int(s * NS)
    return Time(sec=ns // NS, nanosec=ns % NS)


def write_run(path: Path, definitions: MessageDefinitions, log: logging.Logger, status: bool = True) -> Path:
    from action_msgs.msg import GoalInfo, GoalStatus, GoalStatusArray

    from monologue_interfaces.msg import AffordanceReport, SkillAffordance, TranscriptEvent

    w = BagWriter(path, definitions, log, compress=True).open()
    w.add_topic(TRANSCRIPT_TOPIC, "monologue_interfaces/msg/TranscriptEvent", QosSpec(True, True, 1000))
    w.add_topic(AFFORDANCES_TOPIC, "monologue_interfaces/msg/AffordanceReport", QosSpec(True, True, 100))
    w.add_topic(SKILL_STATUS_TOPIC, "action_msgs/msg/GoalStatusArray", QosSpec(True, True, 1))
    for i, (t, kind, text, data) in enumerate(EVENTS):
        msg = TranscriptEvent(episode_id="ep1", index=i, kind=kind, text=text, data_json=json.dumps(data),
                              stamp=_t(t))
        w.write(TRANSCRIPT_TOPIC, T0 + int((t + 0.001) * NS), serialize_message(msg))
    post = TranscriptEvent(episode_id="ep1", index=len(EVENTS), kind=8, text="Human: what is red?",
                           data_json='{"post_task": true}', stamp=_t(9.0))
    w.write(TRANSCRIPT_TOPIC, T0 + 9 * NS, serialize_message(post))
    for t, aff in ((1.9, 1.0), (3.9, 0.5), (4.9, 0.25)):
        rep = AffordanceReport(success=True, skills=[SkillAffordance(skill="pick_place", args=["a", "b"],
                                                                     description="pick_place(a, b)", affordance=aff)],
                               objects=["a"], locations=["b"])
        rep.header.stamp = _t(t)
        w.write(AFFORDANCES_TOPIC, T0 + int(t * NS), serialize_message(rep))
    if status:
        goals = []
        for n, (start, end, final) in enumerate(((2.01, 3.4, 4), (4.01, 4.5, 6))):
            info = GoalInfo(stamp=_t(start))
            info.goal_id.uuid = [n + 1] * 16
            goals.append(GoalStatus(goal_info=info, status=2))
            w.write(SKILL_STATUS_TOPIC, T0 + int(start * NS), serialize_message(GoalStatusArray(status_list=goals)))
            goals[-1] = GoalStatus(goal_info=info, status=final)
            w.write(SKILL_STATUS_TOPIC, T0 + int(end * NS), serialize_message(GoalStatusArray(status_list=goals)))
    w.close()
    tdir = path / "transcripts"
    tdir.mkdir()
    header = {"record": "header", "episode_id": "ep1", "instruction": "Put the blocks in the red bowl.",
              "strategy": "inner_monologue", "prompt_profile": "im_sim_object_success",
              "options": {"object_feedback": True, "success_feedback": True, "human_feedback": False,
                          "scene_feedback": False, "use_affordances": True, "max_steps": 7,
                          "normalization": "mean", "max_reprompts": 2, "generation_fallback": "score",
                          "max_tokens": 48, "decoding": "score"},
              "objects": ["red block", "red bowl"]}
    (tdir / "ep1.jsonl").write_text(json.dumps(header) + "\n")
    (path / "llm_cassette.jsonl").write_text("\n".join(json.dumps(e) for e in [
        {"key": "k1", "kind": "score", "backend": "llama_cpp:x", "prompt": "p", "args": {},
         "response": {"scores": [{"text": "a"}, {"text": "b"}], "prompt_tokens": 100, "new_tokens_processed": 90,
                      "wall_time_s": 1.5}},
        {"key": "k2", "kind": "generate", "backend": "llama_cpp:x", "prompt": "p", "args": {},
         "response": {"text": "x", "prompt_tokens": 50, "new_tokens_processed": 5, "completion_tokens": 7,
                      "finish_reason": "stop", "wall_time_s": 0.5}},
    ]) + "\nnot json\n")
    return path


@pytest.fixture
def run(tmp_path: Path, definitions: MessageDefinitions, log: logging.Logger) -> Path:
    return write_run(tmp_path / "run", definitions, log)


def test_episode_skill_calls_and_timing_from_the_status_topic(run: Path, log: logging.Logger) -> None:
    with Bag(run) as bag:
        rec = read_recording(bag, log)
    assert rec.skill_timing_source == "status topic"
    (ep,) = rec.episodes
    assert ep.episode_id == "ep1" and ep.instruction == "Put the blocks in the red bowl."
    assert len(ep.events) == len(EVENTS) and len(rec.all_events) == len(EVENTS) + 1  # post-task kept apart
    ok, failed = ep.skill_calls
    assert (ok.skill, ok.args, ok.error_code) == ("pick_place", ("red block", "red bowl"), 0)
    assert (ok.start_ns, ok.end_ns) == (T0 + int(2.01 * NS), T0 + int(3.4 * NS))
    assert (failed.error_code, failed.error_msg) == (4, "grasp slipped")
    assert failed.end_ns == T0 + int(4.5 * NS)
    assert [a.skills[0][3] for a in rec.affordances] == [1.0, 0.5, 0.25]


def test_without_a_status_topic_the_transcript_times_the_skills(tmp_path: Path, definitions: MessageDefinitions,
                                                                 log: logging.Logger) -> None:
    with Bag(write_run(tmp_path / "r", definitions, log, status=False)) as bag:
        rec = read_recording(bag, log)
    assert rec.skill_timing_source == "transcript"
    ok, failed = rec.skill_calls
    assert (ok.start_ns, ok.end_ns) == (T0 + 2 * NS, T0 + int(3.5 * NS))  # action event .. Success line
    assert failed.end_ns == T0 + int(4.6 * NS)


def test_goal_and_planner_parameters_come_from_the_transcript_header(run: Path, log: logging.Logger) -> None:
    with Bag(run) as bag:
        (ep,) = read_recording(bag, log).episodes
    g = goal_spec(ep)
    assert (g.instruction, g.strategy, g.prompt_profile, g.max_steps) == (
        "Put the blocks in the red bowl.", "inner_monologue", "im_sim_object_success", 7)
    assert g.objects == ("red block", "red bowl")  # sent again, so perception looks for the same names
    assert g.flags == {"object_feedback": True, "success_feedback": True, "scene_feedback": False,
                       "human_feedback": False, "use_affordances": True}
    assert planner_params(ep) == {"scoring.normalization": "mean", "generation.max_reprompts": "2",
                                  "generation.fallback": "score", "generation.max_tokens": "48"}


def _ev(i: int, kind: str, text: str, **data: object) -> RecordedEvent:
    return RecordedEvent("x", i, kind, text, data, 0)


def test_first_divergence_names_the_first_differing_event() -> None:
    a = [_ev(0, "HUMAN_INSTRUCTION", "Human: go"), _ev(1, "ROBOT_ACTION", "Robot action: a", llm_score=0.5)]
    same = [RecordedEvent("other-episode", e.index, e.kind, e.text, dict(e.data), 99) for e in a]
    assert first_divergence(a, same) is None  # episode id and stamp do not count
    close = [a[0], _ev(1, "ROBOT_ACTION", "Robot action: a", llm_score=0.5 + 1e-13)]
    assert first_divergence(a, close) is None
    d = first_divergence(a, [a[0], _ev(1, "ROBOT_ACTION", "Robot action: b", llm_score=0.5)])
    assert d is not None and d.index == 1 and d.reason == "text"
    assert "event 1" in d.describe() and "'Robot action: a'" in d.describe() and "'Robot action: b'" in d.describe()
    d = first_divergence(a, [a[0], _ev(1, "ROBOT_ACTION", "Robot action: a", llm_score=0.6)])
    assert d is not None and d.reason == "data ['llm_score']"
    assert first_divergence(a, a[:1]).reason == "the replay has fewer events"  # type: ignore[union-attr]
    d = first_divergence(a[:1], a)
    assert d is not None and d.index == 1 and d.expected is None and "(no event)" in d.describe()
    assert first_divergence(a, [_ev(0, "ERROR", "Human: go")]).reason == "kind"  # type: ignore[union-attr]
    assert first_divergence([_ev(0, "SUCCESS", "S", success=True)], [_ev(0, "SUCCESS", "S", success=1)]) is not None


def test_data_keys_added_since_a_recording_are_not_a_divergence_but_other_new_keys_are() -> None:
    old = [_ev(0, "EPISODE_END", "done", success=True)]
    newer = [_ev(0, "EPISODE_END", "done", success=True, decisions=3, single_candidate=0)]
    assert first_divergence(old, newer) is None  # the recording predates the counts
    assert first_divergence(newer, [_ev(0, "EPISODE_END", "done", success=True, decisions=4,
                                        single_candidate=0)]) is not None  # recorded: compared
    d = first_divergence(old, [_ev(0, "EPISODE_END", "done", success=True, surprise=1)])
    assert d is not None and d.reason == "data ['surprise']"


def test_recorded_skills_answer_in_order_and_refuse_other_goals(run: Path, log: logging.Logger) -> None:
    with Bag(run) as bag:
        rec = read_recording(bag, log)
    skills = RecordedSkills(rec.skill_calls, rec.affordances, log)
    assert skills.limit_ns() == rec.skill_calls[0].start_ns
    assert skills.affordances().skills[0][3] == 1.0  # type: ignore[union-attr]
    wrong = skills.begin("pick_place", ["blue block", "red bowl"])
    assert wrong.call is None and wrong.error_code == INVALID_ARGUMENTS and "red block" in wrong.error_msg
    first = skills.begin("pick_place", ["red block", "red bowl"])
    assert first.call is not None and first.error_code == 0
    skills.finish(first.call)
    assert skills.limit_ns() == rec.skill_calls[1].start_ns
    assert skills.affordances().skills[0][3] == 0.5  # type: ignore[union-attr]
    second = skills.begin("pick_place", ["blue block", "red bowl"])
    assert second.call is not None and (second.error_code, second.error_msg) == (4, "grasp slipped")
    skills.finish(second.call)
    assert skills.limit_ns() is None and skills.calls_served == 2
    assert skills.begin("pick_place", ["a", "b"]).error_code == EXECUTION_FAILED
    assert skills.affordances().skills[0][3] == 0.25  # type: ignore[union-attr]
    assert skills.affordances() is None


def test_bag_info_shows_transcript_steps_successes_and_llm_use(run: Path, log: logging.Logger) -> None:
    llm = llm_stats(run / "llm_cassette.jsonl")
    assert llm is not None and (llm.calls, llm.score_calls, llm.generate_calls, llm.malformed_lines) == (2, 1, 1, 1)
    assert (llm.prompt_tokens, llm.completion_tokens, llm.candidates_scored) == (150, 7, 2)
    assert llm.wall_time_s == pytest.approx(2.0)
    assert llm_stats(run / "absent.jsonl") is None
    with Bag(run) as bag:
        rec = read_recording(bag, log)
        text = format_info(bag.path, bag.topics, bag.start_ns, bag.end_ns, bag.custom_data, rec, llm)
    st = episode_stats(rec.episodes[0])
    assert (st.steps, st.successes, st.success_checks, st.skill_errors, st.outcome) == (2, 1, 2, 1, "succeeded")
    assert "    2 ROBOT_ACTION       Robot action: Pick the red block and place it in the red bowl." in text
    assert "steps: 2; successes: 1/2; skill errors: 1; outcome: succeeded" in text
    assert "Human: what is red?" in text
    assert "LLM: 2 calls (1 score, 1 generate)" in text and "150 prompt" in text and "7 completion" in text


def test_with_a_tolerance_numbers_printed_in_data_strings_may_differ_in_their_last_digit() -> None:
    def ev(text: str) -> list[RecordedEvent]:
        return [_ev(0, "SUCCESS", "Success: True", explanation=text, confidence=0.9589)]

    rec = ev("the brown block is 0.8 cm (x-y) from the place point; sorting needs < 10 cm")
    near = ev("the brown block is 0.9 cm (x-y) from the place point; sorting needs < 10 cm")
    assert first_divergence(rec, near, rel_tol=0.01) is None  # one unit of the last printed digit
    assert first_divergence(rec, near) is not None  # exact comparison without a tolerance
    far = ev("the brown block is 1.1 cm (x-y) from the place point; sorting needs < 10 cm")
    other = ev("the brown block is 0.8 cm (x-y) from the place point; stacking needs < 3 cm")
    for got in (far, other):
        d = first_divergence(rec, got, rel_tol=0.01)
        assert d is not None and d.reason == "data ['explanation']"
