"""Backend `llama_cpp`: a GGUF model in-process through llama-cpp-python (`model_path` "" = the
embedded Gemma 3 270M; `lora_path` a GGUF LoRA adapter applied to it, "" = none)."""
from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..base import LLMBackend
from ..plugin import BackendPlugin, KeySpec, adapter_file, cache_dir, check_at_least, model_file

KEYS: dict[str, KeySpec] = {
    "model_path": ((str, Path), ""),
    "n_ctx": ((int,), 4096),
    "n_threads": ((int, type(None)), None),
    "seed": ((int,), 0),
    "reuse_prefix": ((bool,), True),
    "batch_invariant": ((bool,), True),
    "tree_scoring": ((bool,), False),
    "embedding_cache": ((bool,), True),
    "lora_path": ((str, Path), ""),
}


def check(values: Mapping[str, Any]) -> None:
    check_at_least(values, "n_ctx", 16)
    if values["n_threads"] is not None:
        check_at_least(values, "n_threads", 0)


def create(values: Mapping[str, Any], logger: logging.Logger) -> LLMBackend:
    from ..llama_cpp_backend import LlamaCppBackend

    return LlamaCppBackend(
        model_file(values["model_path"]),
        n_ctx=values["n_ctx"],
        n_threads=values["n_threads"] or None,  # 0 = llama.cpp default
        seed=values["seed"],
        logger=logger,
        reuse_prefix=values["reuse_prefix"],
        batch_invariant=values["batch_invariant"],
        tree_scoring=values["tree_scoring"],
        embedding_cache_dir=cache_dir(values["embedding_cache"], "embeddings"),
        lora_path=adapter_file(values["lora_path"]),
    )


PLUGIN = BackendPlugin(KEYS, create, "a GGUF model in-process (llama.cpp)", check)
