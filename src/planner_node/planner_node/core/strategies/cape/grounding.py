"""CAPE's translation step: ground free-form samples to admissible actions by cosine similarity of
sentence embeddings, and score them (no rclpy).

    P  = mean token log-probability of a sample (CAPE eq. above (1))
    C  = cosine similarity of the sample's and the action's embeddings
    S_w(a_e) = max over samples of  C + beta * P                 (eq. 1, the default)
    S_g(a_e) = max over samples of  ((C + 1) / 2) * exp(P)       (eq. 2, in (0, 1))

The embedder returns unit vectors, so C is a dot product.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from monologue_llm.base import Vector

SCORES = ("weighted", "geometric")


class Embedder(Protocol):
    """Texts -> unit vectors (monologue_llm.embeddings.Embedder)."""

    def embed(self, texts: Sequence[str]) -> tuple[Vector, ...]: ...


def score_weighted(c: float, p: float, beta: float) -> float:
    """S_w's term: C + beta * P."""
    return c + beta * p


def score_geometric(c: float, p: float) -> float:
    """S_g's term: ((C + 1) / 2) * e^P."""
    return (c + 1.0) / 2.0 * math.exp(p)


def step_score(kind: str, c: float, p: float, beta: float) -> float:
    if kind == "weighted":
        return score_weighted(c, p, beta)
    if kind == "geometric":
        return score_geometric(c, p)
    raise ValueError(f"score must be one of {SCORES}, got {kind!r}")


@dataclass(frozen=True)
class Proposal:
    """A free-form sampled step and its mean token log-probability P."""

    text: str
    mean_logprob: float


@dataclass(frozen=True)
class Grounded:
    """An admissible action with its best sample: score = max over samples."""

    index: int  # into the admissible list
    action: str
    score: float
    similarity: float  # C of the best sample
    mean_logprob: float  # P of the best sample
    sample: str  # the best sample's text


def _matrix(vectors: Sequence[Vector]) -> npt.NDArray[np.float64]:
    m = np.asarray(vectors, dtype=np.float64)
    if m.ndim != 2:
        raise ValueError("embeddings must be a list of equally long vectors")
    return m


class Grounder:
    """Grounds samples to a fixed list of admissible action texts (embedded once)."""

    def __init__(self, embedder: Embedder, actions: Sequence[str]) -> None:
        if not actions:
            raise ValueError("no admissible actions to ground to")
        self.embedder = embedder
        self.actions = tuple(actions)
        self._emb = _matrix(embedder.embed(self.actions))

    def similarities(self, texts: Sequence[str]) -> npt.NDArray[np.float64]:
        """(len(texts), len(actions)) cosine similarities."""
        return _matrix(self.embedder.embed(list(texts))) @ self._emb.T

    def ground(self, proposals: Sequence[Proposal], kind: str, beta: float) -> list[Grounded]:
        """Every admissible action scored by its best sample (eq. 1 or 2), best first (ties: the
        order of the admissible list)."""
        props = [p for p in proposals if p.text]
        if not props:
            return []
        sims = self.similarities([p.text for p in props])
        out: list[Grounded] = []
        for j, action in enumerate(self.actions):
            best: Grounded | None = None
            for i, p in enumerate(props):
                c = float(sims[i, j])
                s = step_score(kind, c, p.mean_logprob, beta)
                if best is None or s > best.score:
                    best = Grounded(j, action, s, c, p.mean_logprob, p.text)
            assert best is not None
            out.append(best)
        out.sort(key=lambda g: (-g.score, g.index))
        return out


def most_similar(embedder: Embedder, query: str, texts: Sequence[str]) -> list[tuple[int, float]]:
    """(index, cosine similarity) of `texts` by similarity to `query`, best first (stable)."""
    if not texts:
        return []
    vecs = _matrix(embedder.embed([query, *texts]))
    sims = vecs[1:] @ vecs[0]
    order = sorted(range(len(texts)), key=lambda i: (-float(sims[i]), i))
    return [(i, float(sims[i])) for i in order]
