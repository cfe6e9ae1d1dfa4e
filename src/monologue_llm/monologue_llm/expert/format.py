"""What a prompt-format responder of the expert stand-in is, and their registry `FORMATS`.

A responder knows one strategy's prompt format (IM, SayCan, CAPE, Statler, MultiTalk, ...). It reads
the prompt as a model would: the instruction, the scene, the history. It answers with the next correct
text in that format, decided from the truth (`Truth`): the simulated world's state and the task's goal,
through the world's expert planner (monologue_domain.expert). Built-ins are the modules of
`monologue_llm.expert.formats`, each defining `RESPONDER`.
"""
from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from monologue_common.core.registry import Registry
from monologue_domain.expert.channel import WorldTruth, read_task, wait_world

QueryKind = Literal["generate", "score", "sample"]


@dataclass(frozen=True)
class Truth:
    """Read access to the side channel (the directory the simulator and the runner write)."""

    directory: Path
    timeout_s: float = 10.0  # s to wait for a simulator's first truth

    def world(self) -> WorldTruth:
        """The latest world truth (waits for the first; TruthUnavailableError after `timeout_s`)."""
        return wait_world(self.directory, self.timeout_s)

    def task(self, instruction: str) -> Mapping[str, Any] | None:
        """The goal recorded for `instruction` ({"world", "goal"}), or None."""
        return read_task(self.directory, instruction)


@dataclass(frozen=True)
class Query:
    """One request to the stand-in."""

    kind: QueryKind
    prompt: str
    truth: Truth
    candidates: tuple[str, ...] = ()  # score: the continuations to rank
    stop: tuple[str, ...] = ()  # generate/sample: stop strings
    grammar: str | None = None  # generate: the GBNF grammar asked for (the answer must satisfy it)


@dataclass(frozen=True)
class Answer:
    """The correct continuation and, for the error rate, plausible wrong ones."""

    text: str  # generate/sample: the completion; score: the candidate to favour (verbatim)
    wrong: tuple[str, ...] = ()  # well-formed but wrong continuations (other admissible lines)
    note: str = ""  # why (logged at debug level: which expert rule decided)


@dataclass(frozen=True)
class Slip:
    """A format slip: text a model might produce that the strategy's parser must reject."""

    text: str


class Responder(Protocol):
    """One prompt format."""

    name: str
    priority: int  # higher is tried first (a more specific format before a general one)

    def claims(self, query: Query) -> bool:
        """Whether `query`'s prompt is in this format."""
        ...

    def answer(self, query: Query) -> Answer:
        """The next correct text (raises ExpertError when the truth does not decide it)."""
        ...


class ExpertError(RuntimeError):
    """The expert cannot answer (no format recognised, or the truth does not decide the answer)."""


class NoPreference(ExpertError):
    """The query has no right answer to prefer (a content-free calibration prompt): scored candidates tie."""


@dataclass
class SlipMaker:
    """Format slips for generated text: drop the first word, cut mid-way, or answer off-format."""

    rng: random.Random = field(default_factory=random.Random)

    def slip(self, text: str) -> str:
        choice = self.rng.randrange(3)
        words = text.split()
        if choice == 0 and len(words) > 1:
            return " ".join(words[1:])
        if choice == 1 and len(text) > 4:
            return text[: len(text) // 2]
        return "I am not sure what to do next."


def first_claiming(responders: Sequence[Responder], query: Query) -> Responder:
    """The responder of highest priority that claims `query`; ExpertError naming the prompt's tail."""
    for r in sorted(responders, key=lambda r: (-r.priority, r.name)):
        if r.claims(query):
            return r
    tail = query.prompt[-300:]
    raise ExpertError(f"expert: no prompt format recognises this {query.kind} query; prompt ends {tail!r}")


FORMATS: Registry[Responder] = Registry("expert_formats", package="monologue_llm.expert.formats",
                                        attribute="RESPONDER", describe=lambda r: f"priority {r.priority}")
