"""Backend-neutral LLM interface: result types, errors and score normalisation."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

NormalizePolicy = Literal["sum", "mean", "softmax"]
NORMALIZE_POLICIES: tuple[str, ...] = ("sum", "mean", "softmax")


@dataclass(frozen=True)
class CandidateScore:
    """Log-probability of one candidate continuation given the prompt."""

    text: str
    logprob: float  # sum of natural-log token probabilities of the candidate
    token_count: int
    token_logprobs: tuple[float, ...]


@dataclass(frozen=True)
class ScoreResult:
    """Result of one :meth:`LLMBackend.score` call."""

    scores: tuple[CandidateScore, ...]
    prompt_tokens: int
    new_tokens_processed: int  # tokens actually evaluated (after prefix/KV reuse)
    wall_time_s: float


@dataclass(frozen=True)
class Generation:
    """Result of one :meth:`LLMBackend.generate` call."""

    text: str
    prompt_tokens: int
    new_tokens_processed: int
    completion_tokens: int
    finish_reason: str  # "stop" (stop string or end-of-sequence) or "length"
    wall_time_s: float


@dataclass(frozen=True)
class Sample:
    """One sampled continuation and the model's log-probability of each of its tokens."""

    text: str
    token_logprobs: tuple[float, ...]  # natural log, under the model (not the sampling distribution)
    finish_reason: str  # "stop" (stop string or end-of-sequence) or "length"

    @property
    def mean_logprob(self) -> float:
        """Mean token log-probability (CAPE's P_theta; 0.0 for an empty sample)."""
        n = len(self.token_logprobs)
        return math.fsum(self.token_logprobs) / n if n else 0.0


@dataclass(frozen=True)
class SampleResult:
    """Result of one :meth:`SamplingBackend.sample` call."""

    samples: tuple[Sample, ...]
    prompt_tokens: int
    new_tokens_processed: int
    wall_time_s: float


Vector = tuple[float, ...]


@runtime_checkable
class LLMBackend(Protocol):
    """Interface implemented by every LLM backend."""

    name: str

    def generate(
        self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64
    ) -> Generation:
        """Greedy (temperature 0) completion of ``prompt``."""
        ...

    def score(self, prompt: str, candidates: Sequence[str]) -> ScoreResult:
        """Log-probability of each candidate appended verbatim to ``prompt``."""
        ...

    def close(self) -> None:
        """Release resources; the backend must not be used afterwards."""
        ...


@runtime_checkable
class SamplingBackend(Protocol):
    """Optional capability: temperature sampling with per-token log-probabilities."""

    def sample(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64, n: int = 1,
               temperature: float = 1.0, presence_penalty: float = 0.0, seed: int = 0) -> SampleResult:
        """``n`` continuations of ``prompt`` drawn at ``temperature`` (0 = greedy); a positive
        ``presence_penalty`` lowers the logits of tokens the sample already contains (where the
        backend supports it). The same request with the same ``seed`` gives the same samples."""
        ...


@runtime_checkable
class PrefillBackend(Protocol):
    """Optional capability: evaluate a static prompt prefix ahead of the first call that uses it."""

    def prefill(self, text: str) -> int:
        """Put ``text`` in the backend's prompt cache; the number of tokens evaluated."""
        ...


@runtime_checkable
class EmbeddingBackend(Protocol):
    """Optional capability: sentence embeddings (mean pooled, L2-normalised)."""

    def embed(self, texts: Sequence[str]) -> tuple[Vector, ...]:
        """One unit-length vector per text, in order."""
        ...


class LLMError(Exception):
    """Base class of all LLM backend errors."""


class LLMUnavailableError(LLMError):
    """The backend cannot be reached (server down, timeout) after all retries."""


class ScoringUnsupportedError(LLMError):
    """The backend cannot return log-probabilities of given text."""


class CapabilityUnsupportedError(LLMError):
    """The backend has no such capability (sampling or embeddings)."""


class CassetteMissError(LLMError):
    """A replayed request is not in the cassette."""


class InvalidOutputError(LLMError):
    """The backend returned a response that cannot be interpreted."""


_UNCONSTRAINED_WARNED: set[str] = set()
_WARN_LOCK = threading.Lock()


def warn_unconstrained_once(log: logging.Logger, name: str, why: str) -> None:
    """Log once per ``name`` (a backend) that a grammar was asked for but the output is not constrained."""
    with _WARN_LOCK:
        if name in _UNCONSTRAINED_WARNED:
            return
        _UNCONSTRAINED_WARNED.add(name)
    log.warning("%s: grammar-constrained generation unavailable (%s); the output is NOT constrained", name, why)


def generate_constrained(
    llm: LLMBackend,
    prompt: str,
    stop: Sequence[str] = (),
    max_tokens: int = 64,
    grammar: str | None = None,
    log: logging.Logger | None = None,
) -> Generation:
    """``llm.generate`` with a GBNF ``grammar`` (llama.cpp's format, rule ``root``) when the backend takes
    one (``accepts_grammar``: llama.cpp, cassettes, an OpenAI-compatible server with ``grammar_field`` set);
    otherwise (or with ``grammar`` None / empty) unconstrained, logged once per backend."""
    if not grammar:
        return llm.generate(prompt, stop=stop, max_tokens=max_tokens)
    if getattr(llm, "accepts_grammar", False):
        gen: Generation = llm.generate(prompt, stop=stop, max_tokens=max_tokens, grammar=grammar)  # type: ignore[call-arg]
        return gen
    warn_unconstrained_once(log or logging.getLogger(__name__), llm.name, "the backend takes no grammar")
    return llm.generate(prompt, stop=stop, max_tokens=max_tokens)


def l2_normalize(vector: Sequence[float]) -> Vector:
    """``vector`` scaled to unit length (a zero vector stays zero)."""
    norm = math.sqrt(math.fsum(x * x for x in vector))
    if norm == 0.0 or not math.isfinite(norm):
        return tuple(0.0 for _ in vector)
    return tuple(float(x) / norm for x in vector)


def _log_score(score: CandidateScore, policy: str) -> float:
    if policy == "mean":
        return score.logprob / score.token_count if score.token_count > 0 else 0.0
    return score.logprob


def calibrate_scores(
    scores: Sequence[CandidateScore], baseline: Sequence[CandidateScore], weight: float = 1.0
) -> tuple[CandidateScore, ...]:
    """Contextual calibration of candidate log-probabilities (natural log): each candidate's
    ``logprob`` minus ``weight`` times its log-probability under a content-free ``baseline`` prompt
    (weight 1 = pointwise mutual information with what the baseline left out, Holtzman et al. 2021;
    0 = unchanged). Per-token log-probabilities are calibrated the same way when both sides have the
    same tokens (else they are kept), so ``"mean"`` normalisation divides the calibrated sum by the
    candidate's token count. ValueError if the two lists do not hold the same candidates in order."""
    if len(scores) != len(baseline) or any(s.text != b.text for s, b in zip(scores, baseline)):
        raise ValueError("calibration needs the same candidates, in the same order, on both prompts")
    out = []
    for s, b in zip(scores, baseline):
        tokens = s.token_logprobs
        if len(tokens) == len(b.token_logprobs):
            tokens = tuple(t - weight * u for t, u in zip(tokens, b.token_logprobs))
        out.append(CandidateScore(s.text, s.logprob - weight * b.logprob, s.token_count, tokens))
    return tuple(out)


def normalize_scores(
    scores: Sequence[CandidateScore], policy: NormalizePolicy | str = "softmax"
) -> tuple[float, ...]:
    """Turn candidate log-probs into probabilities over the candidate set.

    ``policy`` selects the per-candidate log score that is softmax-ed:

    * ``"sum"`` -- total log-probability (favours short candidates);
    * ``"mean"`` -- log-probability per token (length-normalised);
    * ``"softmax"`` -- alias of ``"sum"``: softmax of the summed log-probs,
      i.e. the candidates' joint probabilities renormalised to sum to one.

    The result has one value in [0, 1] per candidate, summing to 1 (an empty
    input gives an empty tuple). ``-inf`` scores map to 0 unless all are
    ``-inf``, in which case the distribution is uniform.
    """
    if policy not in NORMALIZE_POLICIES:
        raise ValueError(
            f"unknown normalisation policy {policy!r}; expected one of {NORMALIZE_POLICIES}"
        )
    if not scores:
        return ()
    logs = [_log_score(s, policy) for s in scores]
    if any(math.isnan(v) for v in logs):
        raise ValueError("candidate log score is NaN")
    top = max(logs)
    if top == -math.inf:
        return tuple(1.0 / len(logs) for _ in logs)
    exps = [math.exp(v - top) for v in logs]
    total = math.fsum(exps)
    return tuple(e / total for e in exps)
