"""Build an :class:`LLMBackend` from a plain configuration mapping: the common keys (backend, cassette),
then the backend plug-in's own (monologue_llm.plugin)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from monologue_common.core.registry import UnknownPluginError

from .base import LLMBackend
from .cassette import CASSETTE_MODES, CassetteBackend
from .plugin import LLM_BACKENDS, BackendPlugin, KeySpec, read_key

# the keys every backend has: key -> (accepted types, default)
_COMMON: dict[str, KeySpec] = {
    "backend": ((str,), None),
    "cassette_path": ((str, Path), ""),
    "cassette_mode": ((str,), "off"),
}


def known_keys() -> frozenset[str]:
    """The common keys and those of every backend registered so far (config/llm/*.yaml sets them all)."""
    return frozenset(_COMMON).union(*(p.key_names for p in LLM_BACKENDS.items().values()))


# The built-in backends (plug-ins of monologue_llm.backends) and every key of theirs.
BACKENDS: tuple[str, ...] = LLM_BACKENDS.names()
ALL_KEYS: frozenset[str] = known_keys()


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


def backend_plugin(name: str) -> BackendPlugin:
    """The plug-in of backend `name` (a built-in, an entry point or a dotted module path); ValueError
    listing the known ones."""
    try:
        return LLM_BACKENDS.get(name)
    except UnknownPluginError as e:
        why = f" ({e})" if "." in name else ""
        raise ValueError(f"LLM config: 'backend' must be one of {LLM_BACKENDS.names()} or a dotted module path "
                         f"defining PLUGIN, got {name!r}{why}") from e


def _plugin_keys(name: object) -> frozenset[str]:
    """The keys of backend `name` if it is one (a plug-in from a dotted module path is loaded here)."""
    try:
        return LLM_BACKENDS.get(name).key_names if isinstance(name, str) else frozenset()
    except UnknownPluginError:
        return frozenset()  # make_backend reports it


def make_backend(
    cfg: Mapping[str, Any], logger: logging.Logger | None = None, strict: bool = True
) -> LLMBackend:
    """Create the backend described by ``cfg`` (see module constants for keys).

    ``cfg["backend"]`` names a plug-in of :data:`monologue_llm.plugin.LLM_BACKENDS`: ``"llama_cpp"``,
    ``"openai"``, ``"transformers"`` (whose keys are the ``transformers.*`` sub-block, nested or
    dotted) or a dotted module path defining ``PLUGIN``; ``model_path=""`` selects the embedded
    Gemma 3 270M model. ``cassette_mode`` ``record`` or
    ``replay`` wraps the backend in a :class:`CassetteBackend`; ``replay`` does
    not create (or load) the real backend at all. Unknown keys raise
    ``ValueError`` unless ``strict`` is false.
    """
    log = logger or logging.getLogger(__name__)
    cfg = flatten_llm_config(cfg)
    if strict:
        keys = known_keys() | _plugin_keys(cfg.get("backend"))
        unknown = sorted(set(cfg) - keys)
        if unknown:
            raise ValueError(
                f"LLM config: unknown key(s) {unknown}; valid keys: {sorted(keys)}"
            )
    plugin = backend_plugin(read_key(cfg, "backend", _COMMON["backend"]))
    mode = read_key(cfg, "cassette_mode", _COMMON["cassette_mode"])
    if mode not in CASSETTE_MODES:
        raise ValueError(
            f"LLM config: 'cassette_mode' must be one of {CASSETTE_MODES}, got {mode!r}"
        )
    cassette_path = str(read_key(cfg, "cassette_path", _COMMON["cassette_path"]))
    if mode != "off" and not cassette_path:
        raise ValueError(f"LLM config: cassette_mode={mode!r} needs a 'cassette_path'")
    values = plugin.read(cfg)  # checked even in replay
    if mode == "replay":
        return CassetteBackend(None, Path(cassette_path), mode)  # the real backend is not built
    inner = plugin.create(values, log)
    if mode == "off":
        return inner
    return CassetteBackend(inner, Path(cassette_path), mode)


def make_backend_from_params(params: Mapping[str, Any], logger: logging.Logger | None = None) -> LLMBackend:
    """:func:`make_backend` for a node's ``llm.*`` parameters (e.g. ``ParamReader.section("llm")``).

    The block is config/llm/<llm>.yaml's, the only place its values are set: every key of
    :data:`ALL_KEYS` must be present (no defaults fill in here). ``n_threads`` 0 means all CPU cores
    (llama-cpp-python's own default is half of them)."""
    params = flatten_llm_config(params)
    required = ALL_KEYS | _plugin_keys(params.get("backend"))
    missing = sorted(required - set(params))
    if missing:
        raise ValueError(f"LLM config: missing llm.{', llm.'.join(missing)} (the llm block of "
                         "config/llm/<llm>.yaml sets every key)")
    cfg = dict(params)
    if cfg.get("n_threads") == 0:
        cfg["n_threads"] = os.cpu_count() or 1
    return make_backend(cfg, logger)
