"""Test doubles for the planner's unit tests (no rclpy): an LLM that only samples, with bag-of-words
embeddings, and ports over a world double, as CAPE's tests use them."""
from __future__ import annotations

import re
import threading
import time
import zlib
from collections.abc import Sequence
from typing import Any

from monologue_domain.skills import SkillError
from monologue_llm.base import Generation, ScoreResult, l2_normalize

from .core.ports import SkillOption, SkillResult, SuccessReport


def bow(text: str, dims: int = 256) -> tuple[float, ...]:
    """Bag-of-words vector (crc32 buckets), unit length: cosine = shared words."""
    v = [0.0] * dims
    for w in re.findall(r"[a-z0-9]+", text.lower()):
        v[zlib.crc32(w.encode()) % dims] += 1.0
    return l2_normalize(v)


class SamplingOnlyLLM:
    """Base of a scripted LLM that samples (its subclass gives `sample`): bag-of-words embeddings;
    generating or scoring fails the test."""

    name = "sampling-only"

    def embed(self, texts: Sequence[str]) -> tuple[tuple[float, ...], ...]:
        return tuple(bow(t) for t in texts)

    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64) -> Generation:
        raise AssertionError(f"{self.name} samples, it does not generate")

    def score(self, prompt: str, candidates: Sequence[str]) -> ScoreResult:
        raise AssertionError(f"{self.name} samples, it does not score")

    def close(self) -> None:
        pass


class WorldPorts:
    """Skill and success ports over a world double (`world.affordances(include_unaffordable)`): every
    skill instance on request, as GetAffordances' include_unaffordable; `run` (the subclass's) executes
    one; every executed skill is recorded. The success port is not used by CAPE."""

    def __init__(self, world: Any) -> None:
        self.world = world
        self.executed: list[tuple[str, tuple[str, ...]]] = []

    def affordances(self, include_unaffordable: bool = False) -> list[SkillOption]:
        return [SkillOption(a.skill, a.args, a.affordance) for a in self.world.affordances(include_unaffordable)]

    def execute(self, skill: str, args: Sequence[str], cancel: threading.Event) -> SkillResult:
        self.executed.append((skill, tuple(args)))
        t = time.time()
        error, message, failed_precondition = self.run(skill, args)
        return SkillResult(int(error), error.name, message, failed_precondition, t, time.time())

    def run(self, skill: str, args: Sequence[str]) -> tuple[SkillError, str, str]:
        """(error, message, failed precondition) of executing the skill in the world."""
        raise NotImplementedError

    def detect(self, skill: str, args: Sequence[str], start_s: float, end_s: float) -> SuccessReport:
        return SuccessReport(True, 1.0, "not used by cape")
