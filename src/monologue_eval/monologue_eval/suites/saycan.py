"""`monologue-bench --suite saycan`: SayCan's 101 instructions (SC Table 2) on robot sim_kitchen (_kitchen.py)."""
from __future__ import annotations

from ._kitchen import kitchen_suite

SUITE = kitchen_suite("saycan", "SayCan's 101 instructions (SC Table 2) on robot sim_kitchen")
