"""LLM backends as plug-ins (no heavy imports): the registry `LLM_BACKENDS` (kind "llm_backends") and
what a backend plug-in is.

The built-ins are the modules of `monologue_llm.backends` (one per backend, named as the backend: the
`backend` value of config/llm/<llm>.yaml), each defining `PLUGIN`; the heavy backend code (llama.cpp,
openai, transformers) is imported only by `create`. Another backend is a module on PYTHONPATH that
defines `PLUGIN`, selected by its dotted module path (`backend: my_pkg.my_backend`), or an entry point
in the group `monologue.llm_backends`. factory.make_backend reads a plug-in's keys, checks them and
builds it (docs/llm.md).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monologue_common.core.registry import Registry

from .base import LLMBackend

KeySpec = tuple[tuple[type, ...], Any]  # (accepted types, default); default None = required


def _no_check(values: Mapping[str, Any]) -> None:
    """No checks beyond the keys' types."""


@dataclass(frozen=True)
class BackendPlugin:
    """One LLM backend: its configuration keys and how to build it.

    `create(values, logger)` gets the type-checked `values` of `keys` (by their names without
    `prefix`) and builds the backend; it is not called in cassette replay (the backend's keys are
    still read and checked then). `check(values)` raises ValueError for values out of range."""

    keys: Mapping[str, KeySpec]
    create: Callable[[Mapping[str, Any], logging.Logger], LLMBackend]
    description: str
    check: Callable[[Mapping[str, Any]], None] = _no_check
    prefix: str = ""  # the keys' sub-block, e.g. "transformers." (a YAML sub-block `transformers:`)
    key_names: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key_names", frozenset(self.prefix + k for k in self.keys))

    def read(self, cfg: Mapping[str, Any]) -> dict[str, Any]:
        """The type-checked values of this backend's keys in the flat `cfg` (defaults for absent ones)."""
        values = {k: read_key(cfg, self.prefix + k, spec) for k, spec in self.keys.items()}
        self.check(values)
        return values


def read_key(cfg: Mapping[str, Any], key: str, spec: KeySpec) -> Any:
    """`cfg[key]` (or the spec's default) if its type is one the spec accepts; ValueError otherwise."""
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


def check_at_least(values: Mapping[str, Any], key: str, low: float, name: str | None = None) -> None:
    """ValueError unless `values[key]` >= `low` (`name`: the key as the configuration spells it)."""
    if values[key] < low:
        raise ValueError(f"LLM config: {(name or key)!r} must be >= {low:g}, got {values[key]}")


def check_choice(values: Mapping[str, Any], key: str, choices: tuple[str, ...], name: str | None = None) -> None:
    """ValueError unless `values[key]` is one of `choices`."""
    if values[key] not in choices:
        raise ValueError(f"LLM config: {(name or key)!r} must be one of {choices}, got {values[key]!r}")


def cache_dir(enabled: bool, sub: str) -> Path | None:
    """The model-files cache's `sub` directory, or None when the cache is off."""
    from .model_files import default_cache_dir

    return default_cache_dir() / sub if enabled else None


def model_file(path: str | Path) -> str:
    """`path`, or the embedded Gemma 3 270M model's when it is empty."""
    from .model_files import embedded_model_path

    return str(path) or str(embedded_model_path())


def adapter_file(spec: str | Path) -> str | None:
    """The LoRA adapter file of a `lora_path` value: None for "", a bare file name (no directory) is one of
    the adapters shipped in monologue_llm/adapters/, anything else a path. Existence is checked by the
    backend (monologue_llm.lora), which names the file when it is missing."""
    text = str(spec)
    if not text:
        return None
    if "/" not in text and "\\" not in text:
        return str(Path(__file__).resolve().parent / "adapters" / text)
    return str(Path(text).expanduser())


LLM_BACKENDS: Registry[BackendPlugin] = Registry("llm_backends", package="monologue_llm.backends", attribute="PLUGIN",
                                                 describe=lambda p: p.description)
