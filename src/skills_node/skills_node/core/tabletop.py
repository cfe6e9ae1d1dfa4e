"""Kinematic tabletop world of IM §4.1: 4 cm blocks and bowls in 10 colours, 9 named locations.

Frame: robot base, x forward (away from the robot, "top" of the table), y to the robot's left, z up.
All lengths are metres. Block poses are block centres; bowl poses are the centre of the bowl's base.
"""
from __future__ import annotations

import logging
import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from monologue_domain.tabletop import (  # noqa: F401  (re-exported: the world's constants)
    BLOCK_SIZE,
    BOWL_DIAMETER,
    BOWL_FLOOR,
    BOWL_HEIGHT,
    COLORS,
    CORNERS,
    LOCATIONS,
    MIN_SEPARATION,
    SIDES,
    STACK_XY_TOLERANCE,
    WORKSPACE_X,
    WORKSPACE_Y,
)

from .types import Affordance, ObjectState, SkillError, SkillRejected



@dataclass
class _Object:
    name: str
    category: str
    color: str
    x: float
    y: float
    z: float
    seg_id: int
    heavy: bool = False

    @property
    def size(self) -> tuple[float, float, float]:
        if self.category == "bowl":
            return (BOWL_DIAMETER, BOWL_DIAMETER, BOWL_HEIGHT)
        return (BLOCK_SIZE, BLOCK_SIZE, BLOCK_SIZE)


@dataclass(frozen=True)
class SceneSpec:
    """Which objects a scene holds: colours of blocks and bowls, and which blocks are too heavy."""

    block_colors: tuple[str, ...]
    bowl_colors: tuple[str, ...]
    heavy_blocks: tuple[str, ...] = ()


@dataclass
class PlaceNoise:
    """Test-time noise on the place location: N(0, std) per axis, in metres (IM §4.1 uses 0.02)."""

    std_m: float = 0.0


@dataclass
class TabletopWorld:
    """The world state plus the pick-and-place primitive. Not thread-safe; callers serialise access."""

    objects: list[_Object] = field(default_factory=list)
    rng: random.Random = field(default_factory=random.Random)
    place_noise: PlaceNoise = field(default_factory=PlaceNoise)
    completed_affordance: float = 0.0
    logger: logging.Logger = field(default_factory=lambda: logging.getLogger("tabletop"))

    # ----- construction -------------------------------------------------------------------
    @classmethod
    def from_spec(cls, spec: SceneSpec, seed: int, **kwargs: object) -> TabletopWorld:
        """Place the spec's objects at random, at least MIN_SEPARATION apart, reproducibly from seed."""
        rng = random.Random(seed)
        names = [f"{c} block" for c in spec.block_colors] + [f"{c} bowl" for c in spec.bowl_colors]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate objects in scene spec: {names}")
        for color in spec.heavy_blocks:
            if f"{color} block" not in names and color not in names:
                raise ValueError(f"heavy block {color!r} is not in the scene")
        positions = _sample_positions(rng, len(names))
        objects: list[_Object] = []
        for i, (name, (x, y)) in enumerate(zip(names, positions)):
            color, category = name.rsplit(" ", 1)
            z = BLOCK_SIZE / 2 if category == "block" else 0.0
            is_heavy = category == "block" and (color in spec.heavy_blocks or name in spec.heavy_blocks)
            objects.append(_Object(name, category, color, x, y, z, seg_id=i + 1, heavy=is_heavy))
        world = cls(objects=objects, rng=random.Random(seed + 1), **kwargs)  # type: ignore[arg-type]
        return world

    @classmethod
    def random(
        cls,
        seed: int,
        num_blocks: int = 3,
        num_bowls: int = 3,
        matching_bowls: bool = False,
        **kwargs: object,
    ) -> TabletopWorld:
        """A random scene of IM §4.1: at most 4 blocks and 3 bowls in the 10 colours.

        With matching_bowls, every block colour also has a bowl (needs num_bowls >= num_blocks).
        """
        return cls.from_spec(random_spec(seed, num_blocks, num_bowls, matching_bowls), seed, **kwargs)

    # ----- queries ------------------------------------------------------------------------
    def get(self, name: str) -> _Object:
        for obj in self.objects:
            if obj.name == name:
                return obj
        raise KeyError(name)

    def has(self, name: str) -> bool:
        return any(o.name == name for o in self.objects)

    @property
    def blocks(self) -> list[_Object]:
        return [o for o in self.objects if o.category == "block"]

    @property
    def bowls(self) -> list[_Object]:
        return [o for o in self.objects if o.category == "bowl"]

    def target_names(self) -> list[str]:
        return [o.name for o in self.objects] + list(LOCATIONS)

    def position_of(self, name: str) -> tuple[float, float, float]:
        """Position of an object, or of a named location on the table surface (z = 0)."""
        if name in LOCATIONS:
            x, y = LOCATIONS[name]
            return (x, y, 0.0)
        o = self.get(name)
        return (o.x, o.y, o.z)

    def objects_on_top_of(self, name: str) -> list[_Object]:
        """Blocks resting on the given block (directly or higher in the same stack)."""
        base = self.get(name)
        if base.category != "block":
            return []
        return [
            o for o in self.blocks
            if o is not base and _xy_dist(o, base) < STACK_XY_TOLERANCE and o.z > base.z + 1e-4
        ]

    def is_on(self, obj_name: str, target: str) -> bool:
        """IM sim success test: within 4 cm (x-y) of the target and higher than it (not for locations)."""
        o = self.get(obj_name)
        tx, ty, tz = self.position_of(target)
        if math.hypot(o.x - tx, o.y - ty) >= STACK_XY_TOLERANCE:
            return False
        return target in LOCATIONS or o.z > tz

    def snapshot(self) -> list[ObjectState]:
        """Ground truth of every object, then every named location."""
        states = [
            ObjectState(
                name=o.name,
                category=o.category,
                position=(o.x, o.y, o.z),
                size=o.size,
                color=o.color,
                segmentation_id=o.seg_id,
                properties={"heavy": "true"} if o.heavy else {},
            )
            for o in self.objects
        ]
        states += [
            ObjectState(name=n, category="location", position=(x, y, 0.0), size=(0.0, 0.0, 0.0))
            for n, (x, y) in LOCATIONS.items()
        ]
        return states

    # ----- skills -------------------------------------------------------------------------
    def affordances(self, include_unaffordable: bool = False) -> list[Affordance]:
        """Every pick_place(block, target) instance with its affordance.

        1.0 when the pick is possible; 0.0 when the block has another block on top; and
        `completed_affordance` when the block is already on the target (SayCan's cap on completed
        skills, SC:L429).
        """
        out: list[Affordance] = []
        for block in self.blocks:
            clear = not self.objects_on_top_of(block.name)
            for target in self.target_names():
                if target == block.name:
                    continue
                if not clear:
                    value = 0.0
                elif self.is_on(block.name, target):
                    value = self.completed_affordance
                else:
                    value = 1.0
                if value > 0.0 or include_unaffordable:
                    out.append(Affordance("pick_place", (block.name, target), value))
        return out

    def check_pick_place(self, obj_name: str, target: str) -> None:
        """Raise SkillRejected if pick_place(obj, target) cannot start; nothing is changed."""
        if not self.has(obj_name):
            raise SkillRejected(SkillError.INVALID_ARGUMENTS, f"there is no {obj_name!r} in the scene")
        if target not in LOCATIONS and not self.has(target):
            raise SkillRejected(SkillError.INVALID_ARGUMENTS, f"there is no {target!r} in the scene")
        obj = self.get(obj_name)
        if obj.category != "block":
            raise SkillRejected(
                SkillError.PRECONDITION_FAILED,
                f"cannot pick {obj_name}",
                failed_precondition=f"only blocks can be picked, and the {obj_name} is a {obj.category}",
            )
        if target == obj_name:
            raise SkillRejected(
                SkillError.PRECONDITION_FAILED,
                f"cannot place {obj_name} on itself",
                failed_precondition="the place target must differ from the picked object",
            )
        above = self.objects_on_top_of(obj_name)
        if above:
            names = ", ".join(o.name for o in above)
            raise SkillRejected(
                SkillError.PRECONDITION_FAILED,
                f"{obj_name} is not clear",
                failed_precondition=f"the {obj_name} has the {names} on top of it",
            )

    def pick_place(self, obj_name: str, target: str) -> tuple[bool, str]:
        """Run the primitive on the world. Returns (effect achieved, message)."""
        self.check_pick_place(obj_name, target)
        obj = self.get(obj_name)
        if obj.heavy:
            return False, f"the suction cup could not lift the {obj_name}"
        tx, ty, _ = self.position_of(target)
        if self.place_noise.std_m > 0.0:
            tx += self.rng.gauss(0.0, self.place_noise.std_m)
            ty += self.rng.gauss(0.0, self.place_noise.std_m)
        obj.x, obj.y = tx, ty
        obj.z = self._resting_height(obj)
        self.logger.debug("placed %s at (%.3f, %.3f, %.3f)", obj_name, obj.x, obj.y, obj.z)
        return True, f"placed the {obj_name} at ({tx:.3f}, {ty:.3f}) m"

    def move_object(self, name: str, x: float, y: float) -> None:
        """Disturbance: put an object somewhere else (it drops to its resting height)."""
        obj = self.get(name)
        obj.x, obj.y = x, y
        obj.z = self._resting_height(obj)

    def _resting_height(self, obj: _Object) -> float:
        if obj.category == "bowl":
            return 0.0
        support = BLOCK_SIZE / 2
        for other in self.objects:
            if other is obj or _xy_dist(other, obj) >= BOWL_DIAMETER / 2:
                continue
            if other.category == "bowl" and _xy_dist(other, obj) < BOWL_DIAMETER / 2 - 0.01:
                support = max(support, BOWL_FLOOR + BLOCK_SIZE / 2)
            elif other.category == "block" and _xy_dist(other, obj) < BLOCK_SIZE:
                support = max(support, other.z + BLOCK_SIZE)
        return support


def random_spec(seed: int, num_blocks: int, num_bowls: int, matching_bowls: bool = False) -> SceneSpec:
    """Colours for a random scene (IM §4.1: up to 4 blocks and 3 bowls, 10 colours)."""
    if not 0 <= num_blocks <= 4 or not 0 <= num_bowls <= 3:
        raise ValueError("a scene holds 0-4 blocks and 0-3 bowls")
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


def _sample_positions(rng: random.Random, n: int, attempts: int = 10000) -> list[tuple[float, float]]:
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
    raise RuntimeError(f"could not place {n} objects {MIN_SEPARATION} m apart")


def _xy_dist(a: _Object, b: _Object) -> float:
    return math.hypot(a.x - b.x, a.y - b.y)


def world_with(objects: Iterable[tuple[str, tuple[float, float, float]]], **kwargs: object) -> TabletopWorld:
    """A world with objects at given positions (tests and hand-built states)."""
    objs: list[_Object] = []
    for i, (name, (x, y, z)) in enumerate(objects):
        color, category = name.rsplit(" ", 1)
        objs.append(_Object(name, category, color, x, y, z, seg_id=i + 1))
    return TabletopWorld(objects=objs, **kwargs)  # type: ignore[arg-type]


def scene_names(states: Sequence[ObjectState]) -> list[str]:
    return [s.name for s in states]


__all__ = [
    "BLOCK_SIZE", "BOWL_DIAMETER", "COLORS", "CORNERS", "LOCATIONS", "SIDES", "PlaceNoise",
    "SceneSpec", "TabletopWorld", "random_spec", "replace", "world_with",
]
