"""The kinematic tabletop of IM §4.1: the plain kinematic model of the world every simulator shares.

Blocks and bowls (scene sampled by `scene_spec`), 9 named locations (`tabletop`), and IM's scripted
pick-and-place primitive as an instantaneous state change: a placed block drops to its resting
height (table, bowl floor or the block below). skills_node's kinematic backend runs skills on it;
the physics simulator (tabletop_sim) lays out the same scenes from the same seeds.

Frame: robot base, x forward (away from the robot, "top" of the table), y to the robot's left, z up.
All lengths are metres. Block poses are block centres; bowl poses are the centre of the bowl's base.
"""
from __future__ import annotations

import logging
import math
import random
from collections.abc import Iterable
from dataclasses import dataclass, field

from .objects import ObjectState
from .scene_spec import KINEMATIC_LAYOUT_ATTEMPTS, SceneLayout, SceneSpec, layout_scene, random_spec
from .skills import Affordance, SkillError, SkillRejected
from .tabletop import BLOCK_SIZE, BOWL_DIAMETER, BOWL_FLOOR, BOWL_HEIGHT, LOCATIONS, STACK_XY_TOLERANCE


@dataclass
class KinematicObject:
    """One object of the kinematic world: position of its centre (bowls: base centre), m."""

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


@dataclass
class PlaceNoise:
    """Test-time noise on the place location: N(0, std) per axis, in metres (IM §4.1 uses 0.02)."""

    std_m: float = 0.0


@dataclass
class TabletopWorld:
    """The world state plus the pick-and-place primitive. Not thread-safe; callers serialise access."""

    objects: list[KinematicObject] = field(default_factory=list)
    rng: random.Random = field(default_factory=random.Random)
    place_noise: PlaceNoise = field(default_factory=PlaceNoise)
    completed_affordance: float = 0.0
    logger: logging.Logger = field(default_factory=lambda: logging.getLogger("tabletop"))

    # ----- construction -------------------------------------------------------------------
    @classmethod
    def from_spec(cls, spec: SceneSpec, seed: int, **kwargs: object) -> TabletopWorld:
        """Place the spec's objects at random, at least MIN_SEPARATION apart, reproducibly from seed.

        The layout is `scene_spec.layout_scene`'s (the physics simulator's for the same spec and
        seed), with the kinematic world's lenient spec check (any colour names, no count limits).
        """
        return cls.from_layout(layout_scene(spec, seed, strict=False, attempts=KINEMATIC_LAYOUT_ATTEMPTS), **kwargs)

    @classmethod
    def from_layout(cls, layout: SceneLayout, **kwargs: object) -> TabletopWorld:
        """The world of a laid-out scene: objects resting on the table, place noise seeded by seed + 1."""
        objects = [
            KinematicObject(o.name, o.category, o.color, o.x, o.y, BLOCK_SIZE / 2 if o.category == "block" else 0.0,
                            seg_id=o.segmentation_id, heavy=o.heavy)
            for o in layout.objects
        ]
        return cls(objects=objects, rng=random.Random(layout.seed + 1), **kwargs)  # type: ignore[arg-type]

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
    def get(self, name: str) -> KinematicObject:
        for obj in self.objects:
            if obj.name == name:
                return obj
        raise KeyError(name)

    def has(self, name: str) -> bool:
        return any(o.name == name for o in self.objects)

    @property
    def blocks(self) -> list[KinematicObject]:
        return [o for o in self.objects if o.category == "block"]

    @property
    def bowls(self) -> list[KinematicObject]:
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

    def objects_on_top_of(self, name: str) -> list[KinematicObject]:
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
                heavy=o.heavy,
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

    def _resting_height(self, obj: KinematicObject) -> float:
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


def _xy_dist(a: KinematicObject, b: KinematicObject) -> float:
    return math.hypot(a.x - b.x, a.y - b.y)


def world_with(objects: Iterable[tuple[str, tuple[float, float, float]]], **kwargs: object) -> TabletopWorld:
    """A world with objects at given positions (tests and hand-built states)."""
    objs: list[KinematicObject] = []
    for i, (name, (x, y, z)) in enumerate(objects):
        color, category = name.rsplit(" ", 1)
        objs.append(KinematicObject(name, category, color, x, y, z, seg_id=i + 1))
    return TabletopWorld(objects=objs, **kwargs)  # type: ignore[arg-type]


__all__ = ["KinematicObject", "PlaceNoise", "SceneSpec", "TabletopWorld", "random_spec", "world_with"]
