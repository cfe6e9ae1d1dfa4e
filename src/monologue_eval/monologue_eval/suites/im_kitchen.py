"""`monologue-bench --suite im_kitchen`: IM Table 3 on robot sim_kitchen, with IM §4.3's disturbances
(_kitchen.py)."""
from __future__ import annotations

from ._kitchen import kitchen_suite

SUITE = kitchen_suite("im_kitchen", "IM Table 3 on robot sim_kitchen (--conditions none|disturbances)")
