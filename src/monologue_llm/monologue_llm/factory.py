"""Build an :class:`LLMBackend` from a plain configuration mapping."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .base import LLMBackend
from .cassette import CASSETTE_MODES, CassetteBackend

BACKENDS: tuple[str, ...] = ("llama_cpp", "openai", "transformers")

# key -> (accepted types, default)
_COMMON: dict[str, tuple[tuple[type, ...], Any]] = {
    "backend": ((str,), None),
    "cassette_path": ((str, Path), ""),
    "cassette_mode": ((str,), "off"),
}
_LLAMA: dict[str, tuple[tuple[type, ...], Any]] = {
    "model_path": ((str, Path), ""),
    "n_ctx": ((int,), 4096),
    "n_threads": ((int, type(None)), None),
    "seed": ((int,), 0),
    "reuse_prefix": ((bool,), True),
    "batch_invariant": ((bool,), True),
    "tree_scoring": ((bool,), False),
    "embedding_cache": ((bool,), True),
}
_OPENAI: dict[str, tuple[tuple[type, ...], Any]] = {
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
# the `transformers:` sub-block; a node sees these keys flattened (`transformers.device`)
_TRANSFORMERS: dict[str, tuple[tuple[type, ...], Any]] = {
    "model_path": ((str, Path), ""),
    "device": ((str,), "cpu"),
    "dtype": ((str,), "float32"),
    "n_ctx": ((int,), 4096),
    "n_threads": ((int,), 0),
    "reuse_prefix": ((bool,), True),
    "batch_size": ((int,), 16),
    "convert_cache": ((bool,), True),
}
TRANSFORMERS_PREFIX = "transformers."
ALL_KEYS: frozenset[str] = (frozenset(_COMMON) | frozenset(_LLAMA) | frozenset(_OPENAI)
                            | frozenset(TRANSFORMERS_PREFIX + k for k in _TRANSFORMERS))


def flatten_llm_config(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """``cfg`` with nested sub-blocks (``{"transformers": {"device": ...}}``, as in the YAML) turned
    into dotted keys (``"transformers.device"``, as a ROS node sees them)."""
    out: dict[str, Any] = {}
    for key, value in cfg.items():
        if isinstance(value, Mapping):
            out.update({f"{key}.{k}": v for k, v in flatten_llm_config(value).items()})
        else:
            out[key] = value
    return out


def _get(cfg: Mapping[str, Any], key: str, spec: tuple[tuple[type, ...], Any]) -> Any:
    types, default = spec
    value = cfg.get(key, default)
    if value is None and type(None) not in types and default is None:
        raise ValueError(f"LLM config: {key!r} is required")
    # bool is an int subclass; only accept it where bool is asked for
    bad_bool = isinstance(value, bool) and bool not in types
    if bad_bool or not isinstance(value, types):
        names = "/".join(t.__name__ for t in types)
        raise ValueError(f"LLM config: {key!r} must be {names}, got {value!r}")
    return value


def make_backend(
    cfg: Mapping[str, Any], logger: logging.Logger | None = None, strict: bool = True
) -> LLMBackend:
    """Create the backend described by ``cfg`` (see module constants for keys).

    ``cfg["backend"]`` is ``"llama_cpp"``, ``"openai"`` or ``"transformers"`` (whose keys are
    the ``transformers.*`` sub-block, nested or dotted); ``model_path=""`` selects the embedded
    Gemma 3 270M model. ``cassette_mode`` ``record`` or
    ``replay`` wraps the backend in a :class:`CassetteBackend`; ``replay`` does
    not create (or load) the real backend at all. Unknown keys raise
    ``ValueError`` unless ``strict`` is false.
    """
    log = logger or logging.getLogger(__name__)
    cfg = flatten_llm_config(cfg)
    if strict:
        unknown = sorted(set(cfg) - ALL_KEYS)
        if unknown:
            raise ValueError(
                f"LLM config: unknown key(s) {unknown}; valid keys: {sorted(ALL_KEYS)}"
            )
    backend = _get(cfg, "backend", _COMMON["backend"])
    if backend not in BACKENDS:
        raise ValueError(f"LLM config: 'backend' must be one of {BACKENDS}, got {backend!r}")
    mode = _get(cfg, "cassette_mode", _COMMON["cassette_mode"])
    if mode not in CASSETTE_MODES:
        raise ValueError(
            f"LLM config: 'cassette_mode' must be one of {CASSETTE_MODES}, got {mode!r}"
        )
    cassette_path = str(_get(cfg, "cassette_path", _COMMON["cassette_path"]))
    if mode != "off" and not cassette_path:
        raise ValueError(f"LLM config: cassette_mode={mode!r} needs a 'cassette_path'")

    inner: LLMBackend | None = None
    if backend == "llama_cpp":
        values = {k: _get(cfg, k, spec) for k, spec in _LLAMA.items()}
        if values["n_ctx"] < 16:
            raise ValueError(f"LLM config: 'n_ctx' must be >= 16, got {values['n_ctx']}")
        if values["n_threads"] is not None and values["n_threads"] < 0:
            raise ValueError(f"LLM config: 'n_threads' must be >= 0, got {values['n_threads']}")
        n_threads = values["n_threads"] or None  # 0 = llama.cpp default
        if mode != "replay":
            from .llama_cpp_backend import LlamaCppBackend
            from .model_files import default_cache_dir, embedded_model_path

            model_path = str(values["model_path"]) or str(embedded_model_path())
            inner = LlamaCppBackend(
                model_path,
                n_ctx=values["n_ctx"],
                n_threads=n_threads,
                seed=values["seed"],
                logger=log,
                reuse_prefix=values["reuse_prefix"],
                batch_invariant=values["batch_invariant"],
                tree_scoring=values["tree_scoring"],
                embedding_cache_dir=default_cache_dir() / "embeddings" if values["embedding_cache"] else None,
            )
    elif backend == "transformers":
        inner = _make_transformers(cfg, mode, log)
    else:
        values = {k: _get(cfg, k, spec) for k, spec in _OPENAI.items()}
        if not values["base_url"]:
            raise ValueError(
                "LLM config: backend 'openai' needs 'base_url' (e.g. http://127.0.0.1:8000/v1)"
            )
        if not values["model"]:
            raise ValueError("LLM config: backend 'openai' needs 'model'")
        if values["timeout_s"] <= 0:
            raise ValueError(f"LLM config: 'timeout_s' must be > 0, got {values['timeout_s']}")
        if values["max_retries"] < 0 or values["backoff_s"] < 0:
            raise ValueError("LLM config: 'max_retries' and 'backoff_s' must be >= 0")
        from .openai_backend import GENERATION_APIS, SCORING_MODES, OpenAICompatBackend

        if values["generation_api"] not in GENERATION_APIS:
            raise ValueError(
                f"LLM config: 'generation_api' must be one of {GENERATION_APIS}, "
                f"got {values['generation_api']!r}"
            )
        if values["scoring"] not in SCORING_MODES:
            raise ValueError(
                f"LLM config: 'scoring' must be one of {SCORING_MODES}, got {values['scoring']!r}"
            )
        if mode != "replay":
            inner = OpenAICompatBackend(
                base_url=values["base_url"],
                model=values["model"],
                api_key_env=values["api_key_env"],
                timeout_s=float(values["timeout_s"]),
                max_retries=values["max_retries"],
                backoff_s=float(values["backoff_s"]),
                generation_api=values["generation_api"],
                scoring=values["scoring"],
                logger=log,
                grammar_field=values["grammar_field"],
            )
    if mode == "off":
        assert inner is not None
        return inner
    return CassetteBackend(inner, Path(cassette_path), mode)


def _make_transformers(cfg: Mapping[str, Any], mode: str, log: logging.Logger) -> LLMBackend | None:
    """The transformers backend of ``cfg``'s ``transformers.*`` keys (validated even in replay)."""
    values = {k: _get(cfg, TRANSFORMERS_PREFIX + k, (types, default))
              for k, (types, default) in _TRANSFORMERS.items()}
    from .transformers_backend import DTYPES

    if values["dtype"] not in DTYPES:
        raise ValueError(f"LLM config: 'transformers.dtype' must be one of {DTYPES}, got {values['dtype']!r}")
    if not values["device"].strip():
        raise ValueError("LLM config: 'transformers.device' must be a torch device (cpu, cuda, cuda:1)")
    if values["n_ctx"] < 16:
        raise ValueError(f"LLM config: 'transformers.n_ctx' must be >= 16, got {values['n_ctx']}")
    if values["n_threads"] < 0 or values["batch_size"] < 1:
        raise ValueError("LLM config: 'transformers.n_threads' must be >= 0 and 'transformers.batch_size' >= 1")
    if mode == "replay":
        return None
    from .model_files import default_cache_dir, embedded_model_path
    from .transformers_backend import TransformersBackend

    model_path = str(values["model_path"]) or str(embedded_model_path())
    return TransformersBackend(
        model_path,
        device=values["device"],
        dtype=values["dtype"],
        n_ctx=values["n_ctx"],
        n_threads=values["n_threads"] or None,  # 0 = torch's default
        reuse_prefix=values["reuse_prefix"],
        batch_size=values["batch_size"],
        convert_cache_dir=default_cache_dir() / "transformers" if values["convert_cache"] else None,
        logger=log,
    )


def make_backend_from_params(params: Mapping[str, Any], logger: logging.Logger | None = None) -> LLMBackend:
    """:func:`make_backend` for a node's ``llm.*`` parameters (e.g. ``ParamReader.section("llm")``).

    The block is config/llm/<llm>.yaml's, the only place its values are set: every key of
    :data:`ALL_KEYS` must be present (no defaults fill in here). ``n_threads`` 0 means all CPU cores
    (llama-cpp-python's own default is half of them)."""
    params = flatten_llm_config(params)
    missing = sorted(ALL_KEYS - set(params))
    if missing:
        raise ValueError(f"LLM config: missing llm.{', llm.'.join(missing)} (the llm block of "
                         "config/llm/<llm>.yaml sets every key)")
    cfg = dict(params)
    if cfg.get("n_threads") == 0:
        cfg["n_threads"] = os.cpu_count() or 1
    return make_backend(cfg, logger)
