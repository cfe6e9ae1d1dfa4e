"""Planner strategies by name, in the plug-in registry of monologue_common (no rclpy).

Every sub-package here is a strategy family (inner_monologue, saycan, cape, statler, multitalk) that
registers its strategy names when imported; the registry imports them all the first time a name is
looked up, so adding a family is adding a folder. A name may also be an entry point of the group
`monologue.strategies` or a dotted module path importable from PYTHONPATH (a strategy outside this
package, see docs/adding_a_strategy.md). A family with a parameter block of its own registers a
`SettingsBlock` in SETTINGS_BLOCKS; the planner's settings read every block at start-up.
"""
from __future__ import annotations

from monologue_common.core.registry import Registry, UnknownPluginError

from ..strategy import Publication, SettingsBlock, Strategy, StrategyFactory

__all__ = ["SETTINGS_BLOCKS", "STRATEGIES", "UnknownPluginError", "get", "names", "publications"]


def _describe(factory: StrategyFactory) -> str:
    return (factory.__doc__ or "").strip()


STRATEGIES: Registry[StrategyFactory] = Registry("strategies", package=__name__, attribute="STRATEGY",
                                                 describe=_describe)
SETTINGS_BLOCKS: Registry[SettingsBlock] = Registry("strategy_settings", package=__name__)


def get(name: str) -> Strategy:
    """A new instance of the strategy called `name`; UnknownPluginError (a ValueError) if there is none."""
    try:
        factory = STRATEGIES.get(name)
    except UnknownPluginError as e:
        detail = f" ({e})" if "." in name else ""  # why a module path did not load
        raise UnknownPluginError(f"unknown strategy {name!r}; available: {names()}{detail}") from e
    return factory()


def names() -> tuple[str, ...]:
    """Every known strategy name (built-in families first)."""
    return STRATEGIES.names()


def publications() -> tuple[Publication, ...]:
    """What the known strategies publish beyond the transcript, one per topic."""
    by_topic: dict[str, Publication] = {}
    for factory in STRATEGIES.items().values():
        declared: tuple[Publication, ...] = tuple(getattr(factory, "publications", ()))
        for pub in declared:
            by_topic.setdefault(pub.topic, pub)
    return tuple(by_topic.values())
