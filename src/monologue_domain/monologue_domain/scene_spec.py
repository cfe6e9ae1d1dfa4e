"""Which objects a tabletop scene holds and where they start: the one scene sampler of every simulator.

`SceneSpec` names the objects (block and bowl colours, heavy blocks); `random_spec` / `make_spec` draw
or build one; `layout_scene` places its objects in the workspace, at least MIN_SEPARATION apart.
Both the kinematic world (`kinematic_world.TabletopWorld.from_spec`) and the physics simulator
(tabletop_sim) lay scenes out with these functions, so a seed gives the same colours and the same
positions in both. Lengths in metres, frame and conventions of `tabletop`.

RNG use (pinned by test_scene_spec.py): `random_spec` draws from `random.Random(seed)`: block colours
(`sample`), then bowl colours (`sample`, plus a `shuffle` with matching bowls). `layout_scene` draws
from a fresh `random.Random(seed)`: for each object in spec order (blocks, then bowls), uniform x then
uniform y, redrawing a point closer than MIN_SEPARATION to an earlier one (at most 200 times, then the
whole layout starts again, at most `attempts` times).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace

from .tabletop import (
    COLOR_RGB,
    COLORS,
    DISINFECTOR,
    DISINFECTOR_COLOR,
    LOCATIONS,
    MAX_BLOCKS,
    MAX_BOWLS,
    MIN_SEPARATION,
    WORKSPACE_X,
    WORKSPACE_Y,
)

MAX_CUPS = 3  # Statler's cup game: three cups

LAYOUT_ATTEMPTS = 1000  # full restarts of the position sampler before it gives up (tabletop_sim's count)
KINEMATIC_LAYOUT_ATTEMPTS = 10000  # the kinematic world's count (same positions whenever either succeeds)


@dataclass(frozen=True)
class SceneSpec:
    """Which objects a scene holds: colours of blocks and bowls, and which blocks are too heavy to lift.

    A heavy block is named by its colour ("purple") or its name ("purple block").
    Statler's domains (monologue_domain.statler_domains) add a disinfector (a container named
    "disinfector", category bowl) and upside-down cups ("<colour> cup", category cup); the i-th
    colour of `covered_blocks` is the block that starts under the i-th cup.
    """

    block_colors: tuple[str, ...]
    bowl_colors: tuple[str, ...]
    heavy_blocks: tuple[str, ...] = ()
    disinfector: bool = False
    cup_colors: tuple[str, ...] = ()
    covered_blocks: tuple[str, ...] = ()

    def names(self) -> list[str]:
        """Object names in scene order: the blocks, the bowls ("red block", ..., "blue bowl"), then the
        disinfector and the cups."""
        return ([f"{c} block" for c in self.block_colors] + [f"{c} bowl" for c in self.bowl_colors]
                + ([DISINFECTOR] if self.disinfector else []) + [f"{c} cup" for c in self.cup_colors])

    def validate(self, strict: bool = True) -> None:
        """Raise ValueError for duplicate objects or heavy blocks that are not in the scene; with
        `strict` (the physics simulator's check) also for unknown colours and more than
        MAX_BLOCKS / MAX_BOWLS objects. The kinematic world checks with strict=False."""
        if not strict:
            names = self.names()
            if len(set(names)) != len(names):
                raise ValueError(f"duplicate objects in scene spec: {names}")
        for kind, colors, limit in (("block", self.block_colors, MAX_BLOCKS), ("bowl", self.bowl_colors, MAX_BOWLS)):
            if not strict:
                break
            unknown = [c for c in colors if c not in COLOR_RGB]
            if unknown:
                raise ValueError(f"unknown {kind} colour(s) {unknown}; known: {list(COLORS)}")
            if len(set(colors)) != len(colors):
                raise ValueError(f"duplicate {kind} colours in {list(colors)}")
            if len(colors) > limit:
                raise ValueError(f"a scene holds at most {limit} {kind}s, got {len(colors)}")
        for color in self.heavy_blocks:
            if _strip(color, " block") not in self.block_colors:
                raise ValueError(f"heavy block {color!r} is not one of the blocks {list(self.block_colors)}")
        if strict and (len(set(self.cup_colors)) != len(self.cup_colors) or len(self.cup_colors) > MAX_CUPS
                       or any(c not in COLOR_RGB for c in self.cup_colors)):
            raise ValueError(f"cups: at most {MAX_CUPS} distinct known colours, got {list(self.cup_colors)}")
        if len(self.covered_blocks) > len(self.cup_colors):
            raise ValueError(f"{len(self.covered_blocks)} covered blocks but only {len(self.cup_colors)} cups")
        covered = [_strip(c, " block") for c in self.covered_blocks]
        if len(set(covered)) != len(covered) or any(c not in self.block_colors for c in covered):
            raise ValueError(f"covered blocks {list(self.covered_blocks)} must be distinct blocks of the scene "
                             f"{list(self.block_colors)}")

    def is_heavy(self, color: str) -> bool:
        """True if the block of this colour is too heavy to lift."""
        return any(_strip(h, " block") == color for h in self.heavy_blocks)


@dataclass(frozen=True)
class ObjectPlacement:
    """One object of a laid-out scene: where it starts (x, y on the table, m) and its identity."""

    name: str  # "red block", "blue bowl"
    category: str  # "block", "bowl" (the disinfector too) or "cup"
    color: str
    x: float  # m
    y: float  # m
    segmentation_id: int  # 1.. in scene order; 0 is the background, table and robot
    heavy: bool = False


@dataclass(frozen=True)
class SceneLayout:
    """A scene spec placed on the table, reproducibly from `seed`."""

    seed: int
    spec: SceneSpec
    objects: tuple[ObjectPlacement, ...]


def random_spec(seed: int, num_blocks: int, num_bowls: int, matching_bowls: bool = False) -> SceneSpec:
    """Random colours (IM §4.1: up to 4 blocks and 3 bowls in the 10 colours), reproducible from seed.

    With matching_bowls, every block colour also has a bowl (needs num_bowls >= num_blocks).
    """
    if not 0 <= num_blocks <= MAX_BLOCKS or not 0 <= num_bowls <= MAX_BOWLS:
        raise ValueError(f"a scene holds 0-{MAX_BLOCKS} blocks and 0-{MAX_BOWLS} bowls")
    rng = random.Random(seed)
    blocks = rng.sample(COLORS, num_blocks)
    if matching_bowls:
        if num_bowls < num_blocks:
            raise ValueError("matching_bowls needs at least as many bowls as blocks")
        rest = [c for c in COLORS if c not in blocks]
        bowls = list(blocks) + rng.sample(rest, num_bowls - num_blocks)
        rng.shuffle(bowls)
    else:
        bowls = rng.sample(COLORS, num_bowls)
    return SceneSpec(tuple(blocks), tuple(bowls))


def make_spec(
    seed: int,
    num_blocks: int,
    num_bowls: int,
    matching_bowls: bool = False,
    block_colors: tuple[str, ...] = (),
    bowl_colors: tuple[str, ...] = (),
    heavy_blocks: tuple[str, ...] = (),
    strict: bool = True,
) -> SceneSpec:
    """The scene spec a simulator's parameters describe: explicit colour lists win over random ones.

    If either colour list is given, both lists are taken as they are (an empty one means no objects of
    that kind); otherwise colours are drawn with random_spec. heavy_blocks applies in both cases. The
    result is validated (ValueError) with `SceneSpec.validate(strict)`: strict for the physics
    simulator, strict=False for the kinematic world's lenient check.
    """
    if block_colors or bowl_colors:
        spec = SceneSpec(tuple(block_colors), tuple(bowl_colors), tuple(heavy_blocks))
    else:
        drawn = random_spec(seed, num_blocks, num_bowls, matching_bowls)
        spec = SceneSpec(drawn.block_colors, drawn.bowl_colors, tuple(heavy_blocks))
    spec.validate(strict)
    return spec


def layout_scene(
    spec: SceneSpec, seed: int, *, strict: bool = True, attempts: int = LAYOUT_ATTEMPTS
) -> SceneLayout:
    """Place the spec's objects inside the workspace, at least MIN_SEPARATION apart, reproducibly.

    `strict` is passed to `SceneSpec.validate`; `attempts` bounds the sampler's restarts (RuntimeError
    when exhausted). Neither changes the positions of a layout that succeeds.
    """
    spec.validate(strict)
    rng = random.Random(seed)
    names = [(c, "block") for c in spec.block_colors] + [(c, "bowl") for c in spec.bowl_colors]
    if spec.disinfector:
        names.append((DISINFECTOR_COLOR, DISINFECTOR))
    covered = {cup: _strip(b, " block") for cup, b in zip(spec.cup_colors, spec.covered_blocks)}
    names += [(c, "cup") for c in spec.cup_colors if c not in covered]  # a covering cup stands on its block
    positions = sample_positions(rng, len(names), attempts)
    where = {(color, category): p for (color, category), p in zip(names, positions)}
    for cup, block in covered.items():
        names.append((cup, "cup"))
        where[(cup, "cup")] = where[(block, "block")]
    order = {name: i for i, name in enumerate(spec.names())}
    objects = tuple(sorted((
        ObjectPlacement(
            name=DISINFECTOR if category == DISINFECTOR else f"{color} {category}",
            category="bowl" if category == DISINFECTOR else category, color=color,
            x=where[(color, category)][0], y=where[(color, category)][1],
            segmentation_id=0, heavy=category == "block" and spec.is_heavy(color),
        )
        for color, category in names
    ), key=lambda o: order[o.name]))
    objects = tuple(replace(o, segmentation_id=i + 1) for i, o in enumerate(objects))
    return SceneLayout(seed, spec, objects)


def sample_positions(rng: random.Random, n: int, attempts: int = LAYOUT_ATTEMPTS) -> list[tuple[float, float]]:
    """n points (x, y, m) uniformly inside the workspace, pairwise at least MIN_SEPARATION apart."""
    for _ in range(attempts):
        pts: list[tuple[float, float]] = []
        for _ in range(n):
            for _ in range(200):
                p = (rng.uniform(*WORKSPACE_X), rng.uniform(*WORKSPACE_Y))
                if all(math.hypot(p[0] - q[0], p[1] - q[1]) >= MIN_SEPARATION for q in pts):
                    pts.append(p)
                    break
            else:
                break
        if len(pts) == n:
            return pts
    raise RuntimeError(f"could not place {n} objects {MIN_SEPARATION} m apart in the workspace")


def resolve_location(name: str) -> tuple[float, float]:
    """x, y (m) of a named location; KeyError with the known names otherwise."""
    try:
        return LOCATIONS[name]
    except KeyError:
        raise KeyError(f"unknown location {name!r}; known: {list(LOCATIONS)}") from None


def _strip(text: str, suffix: str) -> str:
    return text[: -len(suffix)] if text.endswith(suffix) else text


__all__ = [
    "KINEMATIC_LAYOUT_ATTEMPTS", "LAYOUT_ATTEMPTS", "ObjectPlacement", "SceneLayout", "SceneSpec", "layout_scene",
    "make_spec", "random_spec", "resolve_location", "sample_positions",
]
