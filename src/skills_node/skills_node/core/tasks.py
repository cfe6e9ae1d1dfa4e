"""Ground-truth reward functions of IM Table 1's tasks over object states (positions in metres)."""
from __future__ import annotations

import math
from collections.abc import Sequence

from .types import ObjectState

XY_TOLERANCE = 0.04  # m, as in the IM sim success test
BOWL_RADIUS = 0.06  # m


def _by_name(states: Sequence[ObjectState]) -> dict[str, ObjectState]:
    return {s.name: s for s in states}


def _xy(a: ObjectState, b: ObjectState) -> float:
    return math.hypot(a.position[0] - b.position[0], a.position[1] - b.position[1])


def in_bowl(block: ObjectState, bowl: ObjectState) -> bool:
    """The block rests inside the bowl's rim (x-y within the bowl radius) and above its base."""
    return _xy(block, bowl) < BOWL_RADIUS and block.position[2] > bowl.position[2]


def matching_bowls_done(states: Sequence[ObjectState]) -> bool:
    """"Put the blocks in their matching bowls": every block whose colour has a bowl is in that bowl."""
    objs = _by_name(states)
    blocks = [s for s in states if s.category == "block"]
    checked = 0
    for b in blocks:
        bowl = objs.get(f"{b.color} bowl")
        if bowl is None:
            continue
        checked += 1
        if not in_bowl(b, bowl):
            return False
    return checked > 0
