"""`saycan`: scoring x affordance with no feedback in the prompt (SC Algorithm 1; no rclpy): whatever
the goal or the parameters ask for, Object, Success, Scene and Human feedback are off."""
from __future__ import annotations

from dataclasses import replace

from ...episode import EpisodeResult
from ...loop import run_closed_loop
from ...scoring import score_step
from ...strategy import EpisodeContext
from .. import STRATEGIES


@STRATEGIES.register("saycan")
class SayCanStrategy:
    """SayCan: scoring x affordance, no feedback in the prompt."""

    name = "saycan"
    decoding = "score"

    def run(self, episode: EpisodeContext) -> EpisodeResult:
        open_loop = replace(episode.options, object_feedback=False, success_feedback=False,
                            human_feedback=False, scene_feedback=False)
        return run_closed_loop(replace(episode, options=open_loop), score_step)
