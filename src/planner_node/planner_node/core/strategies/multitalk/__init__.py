"""`multitalk`: MultiTalk's Planner / Analyzer dialogue with questions to a person, perception reruns
and a simulator check before the robot moves (../shared/papers/multitalk_supplement.txt; the loop is
loop.py; no rclpy). The ablation (full pipeline, or Planner + Simulator) is the parameter
`multitalk.ablation`; the block `planner.multitalk.*` is read by settings.py."""
from __future__ import annotations

from ...episode import EpisodeResult
from ...strategy import EpisodeContext, SettingsBlock
from .. import SETTINGS_BLOCKS, STRATEGIES
from .loop import run_multitalk
from .settings import read_multitalk_settings

SETTINGS_BLOCKS.add("multitalk", SettingsBlock("multitalk", read_multitalk_settings))


@STRATEGIES.register("multitalk")
class Multitalk:
    """MultiTalk: Planner / Analyzer dialogue, questions, simulator check."""

    name = "multitalk"
    decoding = "generate"

    def run(self, episode: EpisodeContext) -> EpisodeResult:
        return run_multitalk(episode)
