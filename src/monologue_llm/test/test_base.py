"""Tests of the backend-neutral types and score normalisation."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from monologue_llm.base import (
    CandidateScore,
    CassetteMissError,
    InvalidOutputError,
    LLMError,
    LLMUnavailableError,
    ScoringUnsupportedError,
    normalize_scores,
)


def cs(logprob: float, n: int = 1) -> CandidateScore:
    return CandidateScore(text="x", logprob=logprob, token_count=n, token_logprobs=(logprob,) * n)


def test_error_hierarchy() -> None:
    for err in (LLMUnavailableError, ScoringUnsupportedError, CassetteMissError, InvalidOutputError):
        assert issubclass(err, LLMError)


def test_softmax_and_sum_agree() -> None:
    scores = [cs(-1.0), cs(-2.0), cs(-3.0)]
    probs = normalize_scores(scores, "softmax")
    assert probs == normalize_scores(scores, "sum")
    assert math.isclose(sum(probs), 1.0)
    assert probs[0] > probs[1] > probs[2]
    assert math.isclose(probs[0] / probs[1], math.e)


def test_mean_normalises_by_length() -> None:
    long_good = cs(-4.0, n=4)  # -1 per token
    short_bad = cs(-2.0, n=1)  # -2 per token
    assert normalize_scores([long_good, short_bad], "sum")[0] < 0.5
    assert normalize_scores([long_good, short_bad], "mean")[0] > 0.5


def test_edge_cases() -> None:
    assert normalize_scores([], "sum") == ()
    assert normalize_scores([cs(-math.inf), cs(-math.inf)], "sum") == (0.5, 0.5)
    assert normalize_scores([cs(-1.0), cs(-math.inf)], "sum") == (1.0, 0.0)
    assert normalize_scores([cs(0.0, n=0)], "mean") == (1.0,)
    with pytest.raises(ValueError, match="policy"):
        normalize_scores([cs(-1.0)], "max")


@given(
    st.lists(
        st.tuples(st.floats(min_value=-1e4, max_value=0.0), st.integers(0, 50)),
        min_size=1,
        max_size=30,
    ),
    st.sampled_from(["sum", "mean", "softmax"]),
)
def test_probabilities_are_a_distribution(items: list[tuple[float, int]], policy: str) -> None:
    probs = normalize_scores([cs(lp, n) for lp, n in items], policy)
    assert len(probs) == len(items)
    assert all(0.0 <= p <= 1.0 for p in probs)
    assert math.isclose(sum(probs), 1.0, rel_tol=1e-9)


def test_calibrate_scores_subtracts_the_content_free_logprob() -> None:
    from monologue_llm.base import calibrate_scores

    real = (CandidateScore("a", -2.0, 2, (-1.5, -0.5)), CandidateScore("b", -6.0, 3, (-2.0, -2.0, -2.0)))
    free = (CandidateScore("a", -0.5, 2, (-0.25, -0.25)), CandidateScore("b", -7.0, 1, (-7.0,)))
    full = calibrate_scores(real, free)
    assert [s.logprob for s in full] == [-1.5, 1.0]  # b gains most from the context: it now wins
    assert full[0].token_logprobs == (-1.25, -0.25)  # same tokens: calibrated per token too
    assert full[1].token_logprobs == (-2.0, -2.0, -2.0) and full[1].token_count == 3  # other tokens: kept
    assert [s.logprob for s in calibrate_scores(real, free, 0.5)] == [-1.75, -2.5]
    assert calibrate_scores(real, free, 0.0) == real
    # mean normalisation divides the calibrated sum by the token count
    assert normalize_scores(full, "mean")[1] > normalize_scores(full, "mean")[0]
    with pytest.raises(ValueError, match="same candidates"):
        calibrate_scores(real, free[::-1])
    with pytest.raises(ValueError, match="same candidates"):
        calibrate_scores(real, free[:1])
