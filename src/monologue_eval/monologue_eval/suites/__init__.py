"""The benchmark suites of `monologue-bench --suite <name>`: one module per suite, each defining `SUITE`
(a harness.Suite), found by the plug-in registry (monologue_common.core.registry): a module added here
is a new suite, and an installed distribution adds one with an entry point in `monologue.suites`."""
from __future__ import annotations

from monologue_common.core.registry import Registry

from ..harness import Suite

SUITES: Registry[Suite] = Registry("suites", package="monologue_eval.suites", attribute="SUITE",
                                   describe=lambda s: s.description)
