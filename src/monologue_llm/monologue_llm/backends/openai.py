"""Backend `openai`: any OpenAI-compatible HTTP server (vLLM, llama-server, OpenAI)."""
from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ..base import LLMBackend
from ..plugin import BackendPlugin, KeySpec, check_choice

KEYS: dict[str, KeySpec] = {
    "base_url": ((str,), ""),
    "model": ((str,), ""),
    "api_key_env": ((str,), "OPENAI_API_KEY"),
    "timeout_s": ((int, float), 30.0),
    "max_retries": ((int,), 2),
    "backoff_s": ((int, float), 0.5),
    "generation_api": ((str,), "completions"),
    "scoring": ((str,), "echo_logprobs"),
    "grammar_field": ((str,), ""),
}


def check(values: Mapping[str, Any]) -> None:
    if not values["base_url"]:
        raise ValueError("LLM config: backend 'openai' needs 'base_url' (e.g. http://127.0.0.1:8000/v1)")
    if not values["model"]:
        raise ValueError("LLM config: backend 'openai' needs 'model'")
    if values["timeout_s"] <= 0:
        raise ValueError(f"LLM config: 'timeout_s' must be > 0, got {values['timeout_s']}")
    if values["max_retries"] < 0 or values["backoff_s"] < 0:
        raise ValueError("LLM config: 'max_retries' and 'backoff_s' must be >= 0")
    from ..openai_backend import GENERATION_APIS, SCORING_MODES

    check_choice(values, "generation_api", GENERATION_APIS)
    check_choice(values, "scoring", SCORING_MODES)


def create(values: Mapping[str, Any], logger: logging.Logger) -> LLMBackend:
    from ..openai_backend import OpenAICompatBackend

    return OpenAICompatBackend(
        base_url=values["base_url"],
        model=values["model"],
        api_key_env=values["api_key_env"],
        timeout_s=float(values["timeout_s"]),
        max_retries=values["max_retries"],
        backoff_s=float(values["backoff_s"]),
        generation_api=values["generation_api"],
        scoring=values["scoring"],
        logger=logger,
        grammar_field=values["grammar_field"],
    )


PLUGIN = BackendPlugin(KEYS, create, "an OpenAI-compatible HTTP server", check)
