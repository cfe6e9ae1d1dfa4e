"""`inner_monologue_generative`: the IM closed loop where the LLM writes each line (IM's sim and
real-tabletop mode); the parser maps it to an admissible skill, with bounded re-prompts and the
`generation_fallback` (score the admissible lines, or fail)."""
from __future__ import annotations

from ..episode import EpisodeResult
from ..generation import generate_step
from ..loop import run_closed_loop
from ..strategy import EpisodeContext
from . import register


@register("inner_monologue_generative")
class GenerativeInnerMonologueStrategy:
    name = "inner_monologue_generative"
    decoding = "generate"

    def run(self, episode: EpisodeContext) -> EpisodeResult:
        return run_closed_loop(episode, generate_step)
