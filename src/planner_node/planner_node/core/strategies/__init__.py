"""Planner strategies by name: `register(name)` a factory, `get(name)` a strategy, `names()`.

Every module of this package registers one strategy when imported, and every module of this package
is imported below: adding a strategy is adding a module here (see docs/adding_a_strategy.md). A strategy
with a parameter block of its own (e.g. `cape.*`) registers its reader with `register_settings`; the
planner's settings read every registered block at start-up into `EpisodeContext.strategy_settings`.
"""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import TypeVar

from monologue_common.core.settings import ParamReader

from ..strategy import Strategy

StrategyFactory = Callable[[], Strategy]
F = TypeVar("F", bound=StrategyFactory)

_REGISTRY: dict[str, StrategyFactory] = {}
SettingsReader = Callable[[ParamReader, str], object]  # (the planner's reader, prompt_dir) -> settings
_SETTINGS: dict[str, SettingsReader] = {}


def register_settings(block: str, reader: SettingsReader) -> None:
    """Register the reader of a strategy's parameter block `block.*` (errors collected in the reader)."""
    if _SETTINGS.get(block, reader) is not reader:
        raise ValueError(f"settings block {block!r} is already registered")
    _SETTINGS[block] = reader


def settings_readers() -> dict[str, SettingsReader]:
    """Every registered parameter block and its reader."""
    return dict(_SETTINGS)


def register(name: str) -> Callable[[F], F]:
    """Decorator: register `factory` (a Strategy class, or a function returning one) as `name`."""
    if not name or name != name.strip():
        raise ValueError(f"invalid strategy name {name!r}")

    def add(factory: F) -> F:
        if name in _REGISTRY and _REGISTRY[name] is not factory:
            raise ValueError(f"strategy {name!r} is already registered")
        _REGISTRY[name] = factory
        return factory

    return add


def unregister(name: str) -> None:
    """Remove `name` (tests that register a strategy of their own)."""
    _REGISTRY.pop(name, None)


def get(name: str) -> Strategy:
    """A new instance of the strategy registered as `name`; ValueError if there is none."""
    factory = _REGISTRY.get(name)
    if factory is None:
        raise ValueError(f"unknown strategy {name!r}; available: {names()}")
    return factory()


def names() -> tuple[str, ...]:
    """The registered strategy names, in registration order."""
    return tuple(_REGISTRY)


def _import_all() -> None:
    """Import every module of this package (each registers its strategy), in name order."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        importlib.import_module(f"{__name__}.{info.name}")


_import_all()
