"""Regressions the R1 fuzzer (monologue_eval/reliability/r1_fuzz.py, docs/reliability.md) found in the
planner core: each was a crash or an INTERNAL_ERROR on some LLM output."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from monologue_domain.transcript import EventKind, Transcript, load_episode
from monologue_llm.fuzz import FuzzBackend
from planner_node.core.episode import EpisodeError
from planner_node.core.runner import GoalRequest
from planner_node.core.strategies.cape import usable_logprob


def test_a_nan_log_probability_ends_the_episode_llm_failed_not_internal_error(make_runner, world_ports) -> None:  # type: ignore[no-untyped-def]
    from monologue_domain.kinematic_world import TabletopWorld
    from monologue_llm.base import CandidateScore, ScoreResult

    class NanScorer(FuzzBackend):
        def score(self, prompt, candidates):  # type: ignore[no-untyped-def]
            return ScoreResult(tuple(CandidateScore(c, math.nan, 1, (math.nan,)) for c in candidates), 1, 1, 0.0)

    ports = world_ports(TabletopWorld.random(4, num_blocks=2, num_bowls=2, matching_bowls=True))
    out = make_runner(NanScorer(), ports).execute(GoalRequest("Put the blocks in their matching bowls."))
    assert out.result.error == EpisodeError.LLM_FAILED and "NaN" in out.result.reason
    assert ports.executed == []
    assert any(e.kind == EventKind.ERROR and "unusable scores" in e.text for e in out.events)


def test_cape_sample_log_probabilities_that_are_not_finite_are_clamped() -> None:
    assert usable_logprob(()) == 0.0
    assert usable_logprob((-1.0, -3.0)) == -2.0
    assert usable_logprob((math.inf, -math.inf)) == -math.inf  # fsum raised ValueError here
    assert usable_logprob((math.nan,)) == -math.inf
    assert usable_logprob((1e308, 5.0)) == 0.0  # positive log-probs are invalid: no overflow in e^P
    assert usable_logprob((-1e308, -1e308)) == -math.inf  # fsum raised OverflowError here


def test_lone_surrogates_from_an_llm_are_written_as_valid_utf8(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    t = Transcript("e", path, header={"instruction": "a \ud800 b"})
    seen: list[str] = []
    t.add_listener(lambda e: seen.append(e.text))
    t.append(EventKind.ERROR, "Rejected LLM output '\ud800\udfff'", {"output": ["\udfff"]})
    t.append(EventKind.ROBOT_THOUGHT, "Robot thought: None.")
    path.read_bytes().decode("utf-8")  # valid UTF-8 throughout
    events = load_episode(path).events
    assert [e.text for e in events] == ["Rejected LLM output '??'", "Robot thought: None."]
    assert seen == [e.text for e in events] and t.events[0].data == {"output": ["?"]}


def test_nul_in_interjections_and_answers_does_not_end_the_episode(make_runner, world_ports) -> None:  # type: ignore[no-untyped-def]
    from monologue_domain.kinematic_world import TabletopWorld

    ports = world_ports(TabletopWorld.random(4, num_blocks=1, num_bowls=1, matching_bowls=True))
    block = next(o.name for o in ports.world.snapshot() if o.category == "block")
    act = f"Robot action: Pick the {block} and place it in the {block.replace('block', 'bowl')}."
    llm = FuzzBackend(seed=0, texts=iter([act, "Robot thought: None."]), honour_stop=1.0)
    runner = make_runner(llm, ports, strategy="inner_monologue_generative")
    original = llm.generate

    def generate(prompt, stop=(), max_tokens=64):  # type: ignore[no-untyped-def]
        runner.inbox.offer("use the\x00 red bowl")
        return original(prompt, stop, max_tokens)

    llm.generate = generate  # type: ignore[method-assign]
    out = runner.execute(GoalRequest("Put the blocks in their matching bowls."))
    assert out.result.error != EpisodeError.INTERNAL_ERROR
    assert "Human: use the red bowl" in [e.text for e in out.events]


def test_multitalk_step_numbers_of_thousands_of_digits_are_rejected_not_a_crash() -> None:
    from planner_node.core.strategies.multitalk.parsing import (
        OutputRejected,
        parse_analyzer_output,
        parse_planner_output,
    )

    for parse, text in ((parse_planner_output, "Step-by-step Instructions:\n" + "9" * 5000 + ": home()"),
                        (parse_analyzer_output, "9" * 5000 + ": the block collides")):
        with pytest.raises(OutputRejected):  # was: ValueError from int() (more than 4300 digits): INTERNAL_ERROR
            parse(text)  # type: ignore[operator]
