"""`inner_monologue`: the IM closed loop, the LLM scores the admissible lines (SayCan-style scoring x
affordance) and the transcript carries the enabled feedback (Object, Success, Scene, Human)."""
from __future__ import annotations

from ..episode import EpisodeResult
from ..loop import run_closed_loop
from ..scoring import score_step
from ..strategy import EpisodeContext
from . import register


@register("inner_monologue")
class InnerMonologueStrategy:
    name = "inner_monologue"
    decoding = "score"

    def run(self, episode: EpisodeContext) -> EpisodeResult:
        return run_closed_loop(episode, score_step)
