"""`statler`, `statler_unified`, `statler_auto`: Statler's world-state reader and writer
(../shared/papers/statler.txt; the loop is core.statler_loop; no rclpy).

- statler: the reader (demos, current state, query) writes whitelisted code; each update_wm(text)
  calls the writer (its own state-update demos), whose state replaces the current one (S §III);
- statler_unified: one prompt; the reader writes the code, then the state after it (S l.203);
- statler_auto: as statler, but the writer has an instruction instead of demos (S Prompt 6).
"""
from __future__ import annotations

from ..episode import EpisodeResult
from ..statler_loop import VARIANTS, run_statler
from ..statler_settings import read_statler_settings
from ..strategy import EpisodeContext
from . import register, register_settings

register_settings("statler", read_statler_settings)  # also read by cap and cap_cot


@register("statler")
class Statler:
    name = "statler"
    decoding = "generate"

    def run(self, episode: EpisodeContext) -> EpisodeResult:
        return run_statler(episode, VARIANTS[self.name])


@register("statler_unified")
class StatlerUnified(Statler):
    name = "statler_unified"


@register("statler_auto")
class StatlerAuto(Statler):
    name = "statler_auto"
