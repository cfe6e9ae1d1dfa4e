"""Ground truth of Statler's domains over the kinematic tabletop, for scoring only: never shown to
perception or the planner (../shared/papers/statler.txt §IV-A, Prompt 11 l.474-478).

- Block disinfection: a clean block becomes dirty when it touches a dirty block, whether the dirty one
  is stacked on it or right under it, so dirt spreads up and down a stack; the table, bowls and the
  gripper stay clean forever; a block put into a disinfector (a container named as one) is clean.
- Relative weights: hidden weights per block (stated to the robot only in language); the total
  weight in a container.
- The cup game (S Prompts 1-3, l.32-58): where the ball is after a list of swaps.

Contact and containment are read from the world's geometry: a block is on another when their x-y
distance is below a block edge and its centre is one block edge higher (m); a block is in a container
when its x-y distance to the container's centre is within the container's inner radius.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .kinematic_world import KinematicObject, TabletopWorld
from .tabletop import BLOCK_SIZE, BOWL_DIAMETER

_Z_TOLERANCE = 0.005  # m, between a block's height and one block edge above the block below
_RIM = 0.01  # m, from the bowl's outer radius to where a block still counts as inside


def _xy(a: KinematicObject, b: KinematicObject) -> float:
    return math.hypot(a.x - b.x, a.y - b.y)


def touching(world: TabletopWorld) -> list[tuple[str, str]]:
    """(upper, lower) for every pair of blocks where the upper rests directly on the lower."""
    pairs = []
    for a in world.blocks:
        for b in world.blocks:
            if a is not b and _xy(a, b) < BLOCK_SIZE and abs(a.z - b.z - BLOCK_SIZE) < _Z_TOLERANCE:
                pairs.append((a.name, b.name))
    return pairs


def inside(world: TabletopWorld, container: str) -> list[str]:
    """The blocks in `container` (a bowl), stacked ones included."""
    c = world.get(container)
    return [b.name for b in world.blocks if _xy(b, c) < BOWL_DIAMETER / 2 - _RIM]


@dataclass
class DisinfectionTruth:
    """Which blocks are dirty. Call `settle(world)` after every change of the world (a skill, a
    disturbance) and `make_dirty` / `make_clean` for what the episode says happened off-camera."""

    dirty: set[str] = field(default_factory=set)
    disinfectors: frozenset[str] = frozenset()  # names of containers that clean what is put in them

    def make_dirty(self, *names: str) -> None:
        self.dirty.update(names)

    def make_clean(self, *names: str) -> None:
        self.dirty.difference_update(names)

    def settle(self, world: TabletopWorld) -> None:
        """Contagion between touching blocks to a fixed point, then the disinfectors clean."""
        pairs = touching(world)
        changed = True
        while changed:
            changed = False
            for upper, lower in pairs:
                if (upper in self.dirty) != (lower in self.dirty):
                    self.dirty.update((upper, lower))
                    changed = True
        for d in self.disinfectors:
            if world.has(d):
                self.dirty.difference_update(inside(world, d))

    def is_dirty(self, name: str) -> bool:
        return name in self.dirty

    def clean_blocks(self, world: TabletopWorld) -> list[str]:
        return [b.name for b in world.blocks if b.name not in self.dirty]


@dataclass(frozen=True)
class WeightTruth:
    """Hidden block weights (any unit; only ratios are ever stated)."""

    weights: dict[str, float]

    def total_in(self, world: TabletopWorld, container: str) -> float:
        return sum(self.weights.get(b, 0.0) for b in inside(world, container))

    def heaviest(self, names: Iterable[str]) -> str:
        return max(names, key=lambda n: self.weights[n])


def cup_game(initial: Sequence[bool], swaps: Iterable[tuple[int, int]]) -> list[bool]:
    """The cups after the swaps (S l.32-58: `cups = [False, True, False]`, `Swapping cup 1 with cup 2`)."""
    cups = list(initial)
    for i, j in swaps:
        cups[i], cups[j] = cups[j], cups[i]
    return cups
