"""Calibrated step scoring (no rclpy): the content-free prompt of a step, and the scores of the step's
candidates minus their log-probability under it (`scoring.calibration: content_free`).

The content-free prompt is the step's own prompt with the episode's instruction replaced by "N/A": the
same few-shot preamble, scene and history. A candidate the model likes whatever the instruction says
(a short line, the first object listed, `done` after a few steps) loses that prior; what is left is how
much the instruction raises its probability (pointwise mutual information for weight 1).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from monologue_domain.transcript import Event, EventKind
from monologue_llm.base import LLMBackend, ScoreResult, calibrate_scores

from .prompts import PromptProfile

CONTENT_FREE = "N/A"  # the instruction of the content-free prompt


def content_free_events(events: Sequence[Event], profile: PromptProfile) -> list[Event]:
    """`events` with every instruction event's text (and `instruction` datum) replaced by "N/A"."""
    out: list[Event] = []
    for e in events:
        if e.kind == EventKind.HUMAN_INSTRUCTION:
            data = {**e.data, "instruction": CONTENT_FREE} if "instruction" in e.data else dict(e.data)
            e = replace(e, text=profile.instruction(CONTENT_FREE), data=data)
        out.append(e)
    return out


def calibrated_score(llm: LLMBackend, profile: PromptProfile, events: Sequence[Event], candidates: Sequence[str],
                     weight: float) -> tuple[ScoreResult, ScoreResult]:
    """Score `candidates` on the step's prompt and on its content-free prompt; returns (calibrated, baseline):
    the calibrated result holds the step prompt's token counts with both calls' tokens and wall time
    summed, and each candidate's log-probability minus `weight` x its content-free one."""
    baseline = llm.score(profile.prompt(content_free_events(events, profile)), candidates)
    result = llm.score(profile.prompt(events), candidates)
    return ScoreResult(
        scores=calibrate_scores(result.scores, baseline.scores, weight),
        prompt_tokens=result.prompt_tokens + baseline.prompt_tokens,
        new_tokens_processed=result.new_tokens_processed + baseline.new_tokens_processed,
        wall_time_s=result.wall_time_s + baseline.wall_time_s,
    ), baseline
