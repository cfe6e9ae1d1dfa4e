"""R1 short (docs/reliability.md): fuzzed LLM output through the real planner core for every strategy
and prompt profile (monologue_eval/reliability/r1_fuzz.py; `make reliability` runs 100,000 outputs), plus
hypothesis-drawn outputs. The regressions the fuzzer found are planner tests:
src/planner_node/test/test_fuzz_regressions.py."""
from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monologue_domain.transcript import load_episode
from monologue_eval.reliability import r1_fuzz
from monologue_llm.fuzz import FuzzBackend
from monologue_llm.fuzz_corpus import CORPUS
from planner_node.core import strategies

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
