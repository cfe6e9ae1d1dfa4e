"""The Statler family (../shared/papers/statler.txt; the loop is loop.py; no rclpy): Statler's
world-state reader and writer and the Code-as-Policies baselines its paper compares them with.

- statler: the reader (demos, current state, query) writes whitelisted code; each update_wm(text)
  calls the writer (its own state-update demos), whose state replaces the current one (S §III);
- statler_unified: one prompt; the reader writes the code, then the state after it (S l.203);
- statler_auto: as statler, but the writer has an instruction instead of demos (S Prompt 6);
- cap: no state; `# objects = [...]`, the episode's earlier queries and code, the query (S Prompt 10);
- cap_cot: the initial state and that history; the demos' `# THINK:` lines deduce the intermediate
  states from the initial state and the past actions (S l.158).
CaP uses the same code whitelist as Statler without update_wm (put_first_on_second, say, noop). One
parameter block, `planner.statler.*` (settings.py), serves all five. The statler* strategies publish
every state they keep on `planner/world_state` (latched JSON).
"""
from __future__ import annotations

import json

from monologue_domain.transcript import Event

from ...episode import EpisodeResult
from ...strategy import EpisodeContext, Publication, SettingsBlock
from .. import SETTINGS_BLOCKS, STRATEGIES
from .loop import VARIANTS, run_statler
from .settings import read_statler_settings

SETTINGS_BLOCKS.add("statler", SettingsBlock("statler", read_statler_settings))


def is_state_event(event: Event) -> bool:
    """A Statler state event (the loop's ROBOT_THOUGHT with `statler: "state"`)."""
    return event.data.get("statler") == "state"


def world_state_json(event: Event) -> str:
    """The `planner/world_state` message of a Statler state event: episode, query, cause, the state
    as JSON and as the prompts render it."""
    return json.dumps({"episode_id": event.episode_id, "query_index": event.data.get("query_index"),
                       "cause": event.data.get("cause", ""), "state": event.data.get("world_state", {}),
                       "text": event.text, "stamp": event.stamp}, ensure_ascii=False)


WORLD_STATE = Publication("planner/world_state", "string", latched=True, select=is_state_event,
                          render=world_state_json)


@STRATEGIES.register("statler")
class Statler:
    """Statler: world-state reader and writer (demos)."""

    name = "statler"
    decoding = "generate"
    publications: tuple[Publication, ...] = (WORLD_STATE,)

    def run(self, episode: EpisodeContext) -> EpisodeResult:
        return run_statler(episode, VARIANTS[self.name])


@STRATEGIES.register("statler_unified")
class StatlerUnified(Statler):
    """Statler: one prompt writes the code, then the new state."""

    name = "statler_unified"


@STRATEGIES.register("statler_auto")
class StatlerAuto(Statler):
    """Statler: the writer has an instruction instead of demos."""

    name = "statler_auto"


@STRATEGIES.register("cap")
class CodeAsPolicies(Statler):
    """Code as Policies (Statler's baseline): no state, the episode's history."""

    name = "cap"
    publications = ()


@STRATEGIES.register("cap_cot")
class CodeAsPoliciesCoT(CodeAsPolicies):
    """CaP with chain of thought from the initial state (Statler's baseline)."""

    name = "cap_cot"
