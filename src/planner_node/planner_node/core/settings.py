"""The planner node's parameters as one frozen settings object, validated once (no rclpy).

Defaults live only in config/monologue.yaml (`planner:`) and config/llm/*.yaml; the node reads its
parameters with monologue_common.params.parameter_values and calls `settings_from_parameters`.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType

from monologue_common.core.settings import ParamReader, parameters_from_files

from . import strategies
from .episode import CALIBRATIONS, GENERATION_FALLBACKS, NORMALIZATIONS, EpisodeOptions
from .goal_check import GOAL_CHECKS, GOAL_GROUNDINGS
from .strategy import StrategySettings


@dataclass(frozen=True)
class PlannerSettings:
    """What the planner node runs with; `episode` holds the goal defaults (a goal's OPTION_DEFAULT)."""

    strategy: str  # a strategy name (core.strategies.names()) or a dotted module path
    prompt_dir: Path  # directory of prompt profiles (config/prompts)
    prompt_profile: str  # default profile, a file <prompt_dir>/<name>.yaml
    transcript_dir: Path  # where episode transcripts (JSONL) are written
    service_timeout_s: float  # s, for services and goal acceptance
    skill_timeout_s: float  # s, for one skill to finish
    episode: EpisodeOptions  # default episode options (decoding is set per strategy)
    llm: Mapping[str, object]  # the `llm.*` block for monologue_llm.factory.make_backend_from_params
    # every family's own block (planner.cape.* -> CapeSettings, ...), by settings class
    strategy_settings: StrategySettings = field(default_factory=StrategySettings)
    unused: tuple[str, ...] = ()  # parameters set but never read (typos; the node warns)


def settings_from_parameters(params: Mapping[str, object]) -> PlannerSettings:
    """Build PlannerSettings from the node's flat parameter values (dotted names).

    Raises ValueError listing every missing, mistyped or out-of-range parameter.
    """
    r = ParamReader(params, "planner")
    strategy = r.string("strategy", nonempty=True)
    decoding = "score"
    try:  # a built-in name, an entry point or a dotted module path (which registers its own blocks)
        decoding = strategies.get(strategy).decoding if strategy else decoding
    except strategies.UnknownPluginError:
        r.check(False, f"strategy: must be one of {list(strategies.names())} or a dotted module path, got {strategy!r}")
    prompt_dir = r.string("prompt_dir", nonempty=True)
    prompt_profile = r.string("prompt_profile", nonempty=True)
    transcript_dir = r.string("transcript_dir", nonempty=True)
    service_timeout_s = r.number("timeouts.service", low=0.0, low_open=True)
    skill_timeout_s = r.number("timeouts.skill", low=0.0, low_open=True)
    episode = EpisodeOptions(
        object_feedback=r.boolean("feedback.object"),
        success_feedback=r.boolean("feedback.success"),
        scene_feedback=r.boolean("feedback.scene"),
        human_feedback=r.boolean("feedback.human"),
        use_affordances=r.boolean("use_affordances"),
        max_steps=r.integer("max_steps", low=1),
        normalization=r.string("scoring.normalization", choices=NORMALIZATIONS),
        calibration=r.string("scoring.calibration", choices=CALIBRATIONS),
        calibration_weight=r.number("scoring.calibration_weight", low=0.0, high=1.0),
        goal_check=r.string("scoring.goal_check", choices=GOAL_CHECKS),
        goal_grounding=r.string("scoring.goal_grounding", choices=GOAL_GROUNDINGS),
        max_reprompts=r.integer("generation.max_reprompts", low=0),
        generation_fallback=r.string("generation.fallback", choices=GENERATION_FALLBACKS),
        max_tokens=r.integer("generation.max_tokens", low=1),
        decoding=decoding,
        answer_timeout_s=r.number("timeouts.answer", low=0.0, low_open=True),
        stop_phrases=r.strings("human.stop_phrases"),
        fault_pause_s=r.number("timeouts.fault_pause", low=0.0, low_open=True),
    )
    llm = r.section("llm")
    # every strategy's own block (config/monologue.yaml always sets them): a goal may pick any strategy
    blocks = strategies.SETTINGS_BLOCKS.items().values()
    strategy_settings = StrategySettings(block.read(r, prompt_dir) for block in blocks)
    r.check("backend" in llm, "llm.backend: missing (set it in config/*.yaml or with -p llm.backend:=...)")
    r.finish()
    return PlannerSettings(
        strategy=strategy,
        prompt_dir=Path(os.path.expanduser(prompt_dir)),
        prompt_profile=prompt_profile,
        transcript_dir=Path(os.path.expanduser(transcript_dir)),
        service_timeout_s=service_timeout_s,
        skill_timeout_s=skill_timeout_s,
        episode=episode,
        llm=MappingProxyType(dict(llm)),
        strategy_settings=strategy_settings,
        unused=tuple(r.unused()),
    )


def settings_from_files(config_dir: Path, llm: str = "embedded") -> PlannerSettings:
    """The settings the graph's parameter files give the planner (config/monologue.yaml, then
    config/llm/<llm>.yaml; prompt_dir = config/prompts), for callers without a node."""
    params = parameters_from_files([config_dir / "monologue.yaml", config_dir / "llm" / f"{llm}.yaml"], "planner")
    params["prompt_dir"] = str(config_dir / "prompts")
    return settings_from_parameters(params)


@lru_cache(maxsize=4)
def _yaml_episode(config_dir: Path) -> EpisodeOptions:
    return settings_from_files(config_dir).episode


def episode_defaults(config_dir: Path, **changes: object) -> EpisodeOptions:
    """config/monologue.yaml's episode options with `changes` applied (tests, benchmarks)."""
    return replace(_yaml_episode(Path(config_dir)), **changes)  # type: ignore[arg-type]
