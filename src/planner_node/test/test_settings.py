"""The planner's parameters: the YAML files are complete (no defaults in code), and every problem is
reported at once."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from planner_node.core import strategies
from planner_node.core.settings import episode_defaults, settings_from_parameters

REPO = Path(__file__).resolve().parents[3]
Params = Callable[..., dict[str, object]]


@pytest.mark.parametrize("llm", ["embedded", "openai"])
def test_the_yaml_files_hold_every_parameter(llm: str, planner_parameters: Params) -> None:
    s = settings_from_parameters(planner_parameters(llm))
    assert s.strategy in strategies.names() and s.prompt_profile == "im_sim_object_success"
    assert s.prompt_dir == REPO / "config" / "prompts" and "~" not in str(s.transcript_dir)
    assert s.service_timeout_s > 0 and s.skill_timeout_s > 0
    assert s.episode.max_steps == 15 and s.episode.normalization == "sum" and "stop" in s.episode.stop_phrases
    assert s.llm["backend"] == ("llama_cpp" if llm == "embedded" else "openai")
    assert s.unused == ()


def test_episode_defaults_match_the_yaml(planner_parameters: Params) -> None:
    """episode_defaults (core callers without a node: tests, benchmarks) reads the same YAML the node does."""
    assert settings_from_parameters(planner_parameters()).episode == episode_defaults(REPO / "config")
    assert episode_defaults(REPO / "config", max_steps=3).max_steps == 3


def test_every_problem_is_reported_at_once(planner_parameters: Params) -> None:
    p = planner_parameters()
    p.update({"strategy": "no_such_strategy", "max_steps": 0, "scoring.normalization": "max", "timeouts.skill": -1.0,
              "generation.fallback": "retry", "feedback.object": "yes", "prompt_dir": ""})
    del p["timeouts.answer"]
    del p["llm.backend"]
    with pytest.raises(ValueError) as e:
        settings_from_parameters(p)
    msg = str(e.value)
    for name in ("strategy", "max_steps", "scoring.normalization", "timeouts.skill", "generation.fallback",
                 "feedback.object", "prompt_dir", "timeouts.answer: missing", "llm.backend: missing"):
        assert name in msg, name


def test_unused_parameters_are_listed(planner_parameters: Params) -> None:
    p = planner_parameters()
    p["feedback.objects"] = True  # a typo
    p["use_sim_time"] = False
    assert settings_from_parameters(p).unused == ("feedback.objects",)
