"""`cape`: CAPE, corrective actions from precondition errors (../shared/papers/cape.txt; no rclpy).

Per step the LLM samples free-form steps that are grounded to the admissible actions; a skill refused
for a precondition gets a corrective prompt (or, by `cape.method`, the open-loop or resampling
baselines). The loop is loop.py, the grounding grounding.py, the prompts and error messages
prompts.py, the block `planner.cape.*` settings.py.
"""
from __future__ import annotations

from monologue_llm.base import LLMError

from ...episode import EpisodeResult, InvalidEpisode
from ...strategy import EpisodeContext, SettingsBlock
from .. import SETTINGS_BLOCKS, STRATEGIES
from .grounding import Embedder
from .loop import CapeEpisode, admissible_options, correction_examples, make_embedder, usable_logprob
from .prompts import load_domain
from .settings import CapeSettings, read_cape_settings

__all__ = ["CapeSettings", "CapeStrategy", "admissible_options", "correction_examples", "make_embedder",
           "usable_logprob"]

SETTINGS_BLOCKS.add("cape", SettingsBlock("cape", read_cape_settings))


@STRATEGIES.register("cape")
class CapeStrategy:
    """CAPE and its baselines (`planner.cape.method`)."""

    name = "cape"
    decoding = "generate"

    def __init__(self, settings: CapeSettings | None = None, embedder: Embedder | None = None) -> None:
        self._settings = settings
        self._embedder = embedder

    def run(self, episode: EpisodeContext) -> EpisodeResult:
        ep = episode
        s = self._settings or ep.settings.get(CapeSettings)
        if not ep.instruction.strip():
            raise InvalidEpisode("the instruction is empty")
        if ep.resume:
            raise InvalidEpisode("cape cannot resume an interrupted episode")
        try:
            domain = load_domain(s.prompt_dir, s.demonstrations)
            embedder = self._embedder or make_embedder(s, ep.llm)
        except (ValueError, LLMError) as e:
            raise InvalidEpisode(f"cape: {e}") from e
        return CapeEpisode(ep, s, domain, embedder).run()
