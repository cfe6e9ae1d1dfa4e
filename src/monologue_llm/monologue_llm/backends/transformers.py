"""Backend `transformers`: a Hugging Face causal LM in-process through transformers and torch; its keys
are the `transformers:` sub-block (`transformers.device` as a node sees them)."""
from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..base import LLMBackend
from ..plugin import BackendPlugin, KeySpec, adapter_file, cache_dir, check_at_least, check_choice, model_file

PREFIX = "transformers."
KEYS: dict[str, KeySpec] = {
    "model_path": ((str, Path), ""),
    "device": ((str,), "cpu"),
    "dtype": ((str,), "float32"),
    "n_ctx": ((int,), 4096),
    "n_threads": ((int,), 0),
    "reuse_prefix": ((bool,), True),
    "batch_size": ((int,), 16),
    "convert_cache": ((bool,), True),
    "lora_path": ((str, Path), ""),
}


def check(values: Mapping[str, Any]) -> None:
    from ..transformers_backend import DTYPES

    check_choice(values, "dtype", DTYPES, PREFIX + "dtype")
    if not values["device"].strip():
        raise ValueError("LLM config: 'transformers.device' must be a torch device (cpu, cuda, cuda:1)")
    check_at_least(values, "n_ctx", 16, PREFIX + "n_ctx")
    if values["n_threads"] < 0 or values["batch_size"] < 1:
        raise ValueError("LLM config: 'transformers.n_threads' must be >= 0 and 'transformers.batch_size' >= 1")


def create(values: Mapping[str, Any], logger: logging.Logger) -> LLMBackend:
    from ..transformers_backend import TransformersBackend

    return TransformersBackend(
        model_file(values["model_path"]),
        device=values["device"],
        dtype=values["dtype"],
        n_ctx=values["n_ctx"],
        n_threads=values["n_threads"] or None,  # 0 = torch's default
        reuse_prefix=values["reuse_prefix"],
        batch_size=values["batch_size"],
        convert_cache_dir=cache_dir(values["convert_cache"], "transformers"),
        logger=logger,
        lora_path=adapter_file(values["lora_path"]),
    )


PLUGIN = BackendPlugin(KEYS, create, "a Hugging Face causal LM in-process (transformers, torch)", check, PREFIX)
