"""The Inner Monologue family (IM §3; no rclpy): the closed loop of core.loop, where the transcript
carries the enabled feedback (Object, Success, Scene, Human).

- inner_monologue: the LLM scores the admissible lines (SayCan-style scoring x affordance);
- inner_monologue_generative: the LLM writes each line (IM's sim and real-tabletop mode); the parser
  maps it to an admissible skill, with bounded re-prompts and the `generation_fallback` (score the
  admissible lines, or fail); see generation.py.
"""
from __future__ import annotations

from ...episode import EpisodeResult
from ...loop import run_closed_loop
from ...scoring import score_step
from ...strategy import EpisodeContext
from .. import STRATEGIES
from .generation import generate_step


@STRATEGIES.register("inner_monologue")
class InnerMonologueStrategy:
    """IM: the LLM scores the admissible lines; feedback in the transcript."""

    name = "inner_monologue"
    decoding = "score"
    choose = staticmethod(score_step)

    def run(self, episode: EpisodeContext) -> EpisodeResult:
        return run_closed_loop(episode, self.choose)


@STRATEGIES.register("inner_monologue_generative")
class GenerativeInnerMonologueStrategy(InnerMonologueStrategy):
    """IM: the LLM writes each line, parsed to an admissible skill."""

    name = "inner_monologue_generative"
    decoding = "generate"
    choose = staticmethod(generate_step)
