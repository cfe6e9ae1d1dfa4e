"""Decoding helpers shared by the backends: the candidates' tokens for scoring, stop strings, the
sampling of one token and the argument checks of `sample` (numpy only)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from .base import CandidateScore, LLMError

Tokens = TypeVar("Tokens", bound=Sequence[int])


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Number of leading tokens `a` and `b` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def candidate_tokens(tokenize: Callable[[str], Tokens], prompt: str, candidates: Sequence[str],
                     n_ctx: int) -> tuple[Tokens, list[Tokens], list[int], list[int]]:
    """(prompt tokens, tokens of each prompt + candidate, index of each candidate's first own token,
    indices of the candidates with tokens of their own). A candidate's tokens are the suffix of
    ``tokenize(prompt + candidate)`` after its common prefix with ``tokenize(prompt)``, so a token that
    merges the end of the prompt with the candidate start is scored as candidate."""
    ptoks = tokenize(prompt)
    fulls = [tokenize(prompt + c) for c in candidates]
    firsts = [common_prefix(ptoks, f) for f in fulls]
    longest = max((len(f) for f in fulls), default=0)
    if longest - 1 > n_ctx:
        raise LLMError(f"prompt+candidate has {longest} tokens, n_ctx is {n_ctx}")
    active = [i for i, f in enumerate(fulls) if firsts[i] < len(f)]
    if any(firsts[i] == 0 for i in active):
        raise LLMError("cannot score: a candidate changes the first prompt token")
    return ptoks, fulls, firsts, active


def candidate_scores(candidates: Sequence[str], lps: Mapping[int, Sequence[float]]) -> tuple[CandidateScore, ...]:
    """One CandidateScore per candidate from the token log-probs `lps` of candidate i (none: 0.0)."""
    return tuple(
        CandidateScore(text=c, logprob=math.fsum(lps.get(i, [])), token_count=len(lps.get(i, [])),
                       token_logprobs=tuple(lps.get(i, [])))
        for i, c in enumerate(candidates)
    )


def stop_at(text: str, stops: Sequence[str]) -> int | None:
    """Character offset of the earliest of the (non-empty) `stops` in `text`, None if none occurs."""
    hits = [i for i in (text.find(s) for s in stops if s) if i >= 0]
    return min(hits) if hits else None


def cut_sample(text: str, lps: list[float], starts: Sequence[int],
               stops: Sequence[str]) -> tuple[str, list[float]] | None:
    """`text` cut before its earliest stop string and the log-probs of the tokens that start before
    it (`starts`: each token's character offset), or None if no stop string occurs."""
    cut = stop_at(text, stops)
    if cut is None:
        return None
    return text[:cut], [lp for lp, st in zip(lps, starts, strict=True) if st < cut]


def check_sample_args(max_tokens: int, n: int, temperature: float | None = None) -> None:
    """ValueError for a `sample` request no backend can serve (`temperature` None: not checked)."""
    if max_tokens < 1 or n < 1:
        raise ValueError(f"max_tokens and n must be >= 1, got {max_tokens}, {n}")
    if temperature is not None and temperature < 0.0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")


def sample_rng(seed: int, i: int) -> np.random.Generator:
    """The generator of sample `i` of a request with `seed` (reproducible per request)."""
    return np.random.default_rng([max(seed, 0), i])


def pick_token(row: Any, seen: set[int], temperature: float, presence_penalty: float, rng: np.random.Generator,
               dtype: Any = None) -> int:
    """A token drawn from the logits (or log-probs) `row` at `temperature` (0 = argmax), after
    `presence_penalty` is subtracted from the tokens in `seen` (OpenAI's definition); the arithmetic is
    in `dtype` (None: the row's)."""
    if temperature == 0.0:
        return int(np.argmax(row))
    adj = np.array(row, dtype=dtype)  # a copy
    if presence_penalty and seen:
        adj[np.fromiter(seen, dtype=np.int64)] -= presence_penalty
    z = adj / temperature
    p = np.exp(z - z.max())
    return int(rng.choice(len(p), p=p / p.sum()))
