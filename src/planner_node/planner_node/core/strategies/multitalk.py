"""`multitalk`: MultiTalk's Planner / Analyzer dialogue with questions to a person, perception reruns
and a simulator check before the robot moves (../shared/papers/multitalk_supplement.txt; the loop is
core.multitalk_loop; no rclpy). The ablation (full pipeline, or Planner + Simulator) is the
parameter `multitalk.ablation`."""
from __future__ import annotations

from ..episode import EpisodeResult
from ..multitalk_loop import run_multitalk
from ..multitalk_settings import read_multitalk_settings
from ..strategy import EpisodeContext
from . import register, register_settings

register_settings("multitalk", read_multitalk_settings)


@register("multitalk")
class Multitalk:
    name = "multitalk"
    decoding = "generate"

    def run(self, episode: EpisodeContext) -> EpisodeResult:
        return run_multitalk(episode)
