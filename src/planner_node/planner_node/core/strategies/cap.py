"""`cap`, `cap_cot`: the Code-as-Policies baselines of Statler (../shared/papers/statler.txt l.158;
the loop is core.statler_loop; no rclpy).

- cap: no state; `# objects = [...]`, the episode's earlier queries and code, the query (S Prompt 10);
- cap_cot: the initial state and that history; the demos' `# THINK:` lines deduce the intermediate
  states from the initial state and the past actions (S l.158).
Both use the same code whitelist as Statler without update_wm (put_first_on_second, say, noop).
"""
from __future__ import annotations

from ..episode import EpisodeResult
from ..statler_loop import VARIANTS, run_statler
from ..strategy import EpisodeContext
from . import register


@register("cap")
class CodeAsPolicies:
    name = "cap"
    decoding = "generate"

    def run(self, episode: EpisodeContext) -> EpisodeResult:
        return run_statler(episode, VARIANTS[self.name])


@register("cap_cot")
class CodeAsPoliciesCoT(CodeAsPolicies):
    name = "cap_cot"
