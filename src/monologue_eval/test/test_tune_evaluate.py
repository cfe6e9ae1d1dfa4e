"""The held-out check of a tuned adapter (monologue_eval.tune.evaluate, issue 30): held-out examples only,
the same seeded sample for every adapter, top-1 / exact / stopped outcomes, Wilson intervals, pairing."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from monologue_eval.tune.evaluate import compare, judge, rates, sample_heldout
from monologue_eval.tune.examples import Example


def ex(i: int, kind: str = "score", split: str = "heldout", strategy: str = "inner_monologue") -> Example:
    line = f"Robot action: Pick the block {i}."
    return Example(id=f"kinematic/{strategy}/{i}/0", world="kinematic", strategy=strategy, format=strategy,
                   kind=kind, prompt=f"Human: move block {i}\n", completion=line, family="f", instruction="i",
                   split=split, candidates=(line, "Robot thought: None.") if kind == "score" else ())


@dataclass
class _Score:
    text: str
    logprob: float


@dataclass
class _Scores:
    scores: tuple[_Score, ...]


@dataclass
class _Gen:
    text: str
    finish_reason: str


class FakeLLM:
    """Prefers "Robot thought" when the prompt mentions block 1; writes `answer` and ends it by `finish`."""

    def __init__(self, answer: str, finish: str) -> None:
        self.answer, self.finish = answer, finish
        self.stops: list[Sequence[str]] = []

    def score(self, prompt: str, candidates: Sequence[str]) -> _Scores:
        return _Scores(tuple(_Score(c, -1.0 if ("thought" in c) == ("block 1" in prompt) else -5.0)
                             for c in candidates))

    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64) -> _Gen:
        self.stops.append(stop)
        return _Gen(self.answer, self.finish)


def test_only_held_out_examples_are_sampled_the_same_way_every_time() -> None:
    pool = [ex(i) for i in range(30)] + [ex(100 + i, kind="generate") for i in range(5)]
    a = sample_heldout(pool, 4, seed=1)
    assert a == sample_heldout(pool, 4, seed=1)
    assert len(a) == 8 and sum(e.kind == "generate" for e in a) == 4
    assert {a[0].kind, a[1].kind} == {"score", "generate"}  # strata in turn: a run stopped early saw each
    with pytest.raises(ValueError, match="training example"):
        sample_heldout(pool + [ex(99, split="train")], 4, seed=1)


def test_outcomes_rates_and_pairs() -> None:
    llm = FakeLLM("Robot action: Pick the block 5. ", "stop")
    rows = [judge(llm, ex(i), 64) for i in range(4)]  # block 1: the model prefers the wrong candidate
    assert [r["ok"] for r in rows] == [True, False, True, True]
    gen = judge(llm, ex(5, kind="generate"), 64)
    assert gen["ok"] and gen["stopped"] and list(llm.stops[-1]) == ["\n"]  # IM's stop string
    runaway = judge(FakeLLM("Robot action: Pick the block 5.\nSuccess", "length"), ex(5, kind="generate"), 64)
    assert not runaway["ok"] and not runaway["stopped"]
    r = rates(rows)
    assert r["all"]["k"] == 3 and r["all"]["n"] == 4
    lo, hi = r["all"]["wilson95"]
    assert lo < 0.75 < hi
    frozen = {"rows": [{**x, "ok": False} for x in rows]}
    pairs = compare(frozen, {"rows": rows})["all"]
    assert pairs == {"n": 4, "a": 0, "b": 3, "b_only": 3, "a_only": 0}
