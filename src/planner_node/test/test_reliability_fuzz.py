"""R1 short (docs/reliability.md): fuzzed LLM output through the real planner core for every strategy
and prompt profile (benchmarks/reliability/r1_fuzz.py; `make reliability` runs 100,000 outputs), plus
hypothesis-drawn outputs and the regressions the fuzzer found."""
from __future__ import annotations

import logging
import math
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monologue_domain.transcript import EventKind, Transcript, load_episode
from monologue_llm.fuzz import FuzzBackend
from monologue_llm.fuzz_corpus import CORPUS
from planner_node.core import strategies
from planner_node.core.episode import EpisodeError
from planner_node.core.runner import GoalRequest
from planner_node.core.strategies.cape import usable_logprob

REPO = Path(__file__).resolve().parents[3]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.reliability import r1_fuzz  # noqa: E402

LOG = logging.getLogger("test.reliability")


def test_a_thousand_fuzzed_outputs_crash_nothing_and_run_only_admissible_skills() -> None:
    c = r1_fuzz.fuzz(1_000, seed=20)
    assert c.outputs >= 1_000
    assert c.crashes == 0, c.problems
    assert c.not_admissible == 0, c.problems
    assert c.silent_rejections == 0, c.problems
    # every registered strategy and every IM prompt profile ran, skills ran and outputs were rejected
    ran = {label.split("/")[0] for label in c.per_scenario}
    assert ran == set(strategies.names())
    profiles = {label.split("/")[1].split("[")[0] for label in c.per_scenario if label.startswith("inner_monologue/")}
    assert profiles == set(r1_fuzz.im_profiles())
    assert c.executed > 50 and c.rejections > 50
    assert c.outcomes["INTERNAL_ERROR"] == 0


def texts() -> st.SearchStrategy[list[str]]:
    one = st.one_of(st.text(max_size=300), st.sampled_from(CORPUS),
                    st.builds(lambda a, b: a + b, st.sampled_from(CORPUS), st.text(max_size=50)))
    return st.lists(one, min_size=1, max_size=12)


@settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(outputs=texts(), which=st.sampled_from(["inner_monologue_generative/im_sim_object_success",
                                               "statler/im_sim_object_success", "cap_cot/im_sim_object_success",
                                               "multitalk/im_sim_object_success[multitalk.ablation=full,"
                                               "multitalk.accept_gate=ask,multitalk.planner_decoding=generate]",
                                               "multitalk/im_sim_object_success[multitalk.ablation=full,"
                                               "multitalk.accept_gate=off,multitalk.planner_decoding=scored]",
                                               "inner_monologue_generative/im_sim_human"]))
def test_hypothesis_outputs_end_every_episode_cleanly(outputs: list[str], which: str) -> None:
    sc = next(s for s in r1_fuzz.scenarios() if s.label == which)
    counts = r1_fuzz.Counts()
    with tempfile.TemporaryDirectory() as tmp:
        llm = FuzzBackend(seed=0, texts=iter(outputs))
        ports = r1_fuzz.FuzzPorts(sc.world, 1)
        runner = r1_fuzz.make_runner(sc, llm, ports, Path(tmp))
        r1_fuzz.run_episode(sc, runner, llm, ports, counts)
        files = list(Path(tmp).glob("*.jsonl"))
        assert len(files) == 1 and not load_episode(files[0]).interrupted  # the transcript is complete
    assert counts.crashes == 0 and counts.not_admissible == 0 and counts.silent_rejections == 0, counts.problems


def test_the_silent_rejection_detector_finds_a_re_prompt_without_an_event() -> None:
    calls = [("generate", "P"), ("generate", "P" + "Robot action:"), ("generate", "other")]
    assert r1_fuzz.silent(calls, marks=[]) == 1  # call 0 was re-prompted with nothing in between
    assert r1_fuzz.silent(calls, marks=[1]) == 0  # an event (an ERROR) came before the re-prompt
    assert r1_fuzz.silent([("score", "P"), ("score", "P")], marks=[]) == 0


# ---- regressions found by the fuzzer ----------------------------------------------------------------
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
    from planner_node.core.multitalk_parsing import OutputRejected, parse_analyzer_output, parse_planner_output

    for parse, text in ((parse_planner_output, "Step-by-step Instructions:\n" + "9" * 5000 + ": home()"),
                        (parse_analyzer_output, "9" * 5000 + ": the block collides")):
        with pytest.raises(OutputRejected):  # was: ValueError from int() (more than 4300 digits): INTERNAL_ERROR
            parse(text)  # type: ignore[operator]
