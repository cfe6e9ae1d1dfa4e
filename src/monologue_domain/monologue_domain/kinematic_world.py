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
from typing import Protocol

from .objects import ObjectState
from .scene_spec import KINEMATIC_LAYOUT_ATTEMPTS, SceneLayout, SceneSpec, layout_scene, random_spec
from .skills import Affordance
from .tabletop import (
    BLOCK_SIZE,
    BOWL_DIAMETER,
    BOWL_FLOOR,
    BOWL_HEIGHT,
    CUP_DIAMETER,
    CUP_HEIGHT,
    CUP_WALL,
    LOCATIONS,
    STACK_XY_TOLERANCE,
)
from .tabletop_preconditions import (
    STACK_MIN_RISE,
    Reach,
    TableThing,
    TabletopPrecondition,
    check_pick_place,
    unknown_argument,
)

PICKABLE = ("block", "cup")  # categories the suction cup picks (cups by their closed top)


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
        if self.category == "cup":
            return (CUP_DIAMETER, CUP_DIAMETER, CUP_HEIGHT)
        return (BLOCK_SIZE, BLOCK_SIZE, BLOCK_SIZE)


class WorldObserver(Protocol):
    """Told after every change of the world (a skill, a disturbance): Statler's ground truth
    (statler_domains.DomainTruth) settles dirt there."""

    def settle(self, world: TabletopWorld) -> None: ...


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
    reach: Reach | None = None  # what the arm can reach (tabletop_preconditions); None = everything
    logger: logging.Logger = field(default_factory=lambda: logging.getLogger("tabletop"))
    observer: WorldObserver | None = None  # settled after every change

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
        ]  # a cup laid out over a block stands on the table around it (it covers the block)
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

    @property
    def cups(self) -> list[KinematicObject]:
        return [o for o in self.objects if o.category == "cup"]

    def cover_of(self, name: str) -> str | None:
        """The cup that covers this block (the block is inside the cup's hollow), or None."""
        o = self.get(name)
        if o.category != "block":
            return None
        for cup in self.cups:
            if _xy_dist(cup, o) < CUP_DIAMETER / 2 - CUP_WALL and cup.z - 1e-4 <= o.z < cup.z + CUP_HEIGHT:
                return cup.name
        return None

    def covered(self) -> dict[str, str]:
        """Every covered block and the cup over it (hidden from perception: not in `snapshot`)."""
        return {b.name: c for b in self.blocks if (c := self.cover_of(b.name)) is not None}

    def target_names(self) -> list[str]:
        hidden = self.covered()
        return [o.name for o in self.objects if o.name not in hidden] + list(LOCATIONS)

    def position_of(self, name: str) -> tuple[float, float, float]:
        """Position of an object, or of a named location on the table surface (z = 0)."""
        if name in LOCATIONS:
            x, y = LOCATIONS[name]
            return (x, y, 0.0)
        o = self.get(name)
        return (o.x, o.y, o.z)

    def objects_on_top_of(self, name: str) -> list[KinematicObject]:
        """Blocks resting on the given block (directly or higher in the same stack): within 4 cm (x-y) and
        more than STACK_MIN_RISE higher, so a block in a bowl beside it (0.5 cm higher) is not on it."""
        base = self.get(name)
        if base.category == "cup":  # things on its closed top
            return [o for o in self.objects if o is not base and o.category in PICKABLE
                    and _xy_dist(o, base) < CUP_DIAMETER / 2 and o.z > base.z + CUP_HEIGHT - 1e-4]
        if base.category != "block":
            return []
        return [
            o for o in self.blocks
            if o is not base and _xy_dist(o, base) < STACK_XY_TOLERANCE and o.z > base.z + STACK_MIN_RISE
        ]

    def is_on(self, obj_name: str, target: str) -> bool:
        """IM sim success test: within 4 cm (x-y) of the target and higher than it (not for locations)."""
        o = self.get(obj_name)
        tx, ty, tz = self.position_of(target)
        if math.hypot(o.x - tx, o.y - ty) >= STACK_XY_TOLERANCE:
            return False
        return target in LOCATIONS or o.z > tz

    def snapshot(self, include_covered: bool = False) -> list[ObjectState]:
        """What an oracle perceives: every object except blocks covered by a cup (those only with
        `include_covered`, for scoring), then every named location."""
        hidden = set() if include_covered else set(self.covered())
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
            for o in self.objects if o.name not in hidden
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
        hidden = self.covered()
        things = self.things()  # the preconditions (tabletop_preconditions): e.g. out of reach -> 0.0
        for block in self.objects:
            if block.category not in PICKABLE or block.name in hidden:
                continue
            clear = not self.objects_on_top_of(block.name)
            for target in self.target_names():
                if target == block.name:
                    continue
                if not clear or check_pick_place(things, block.name, target, held=None, reach=self.reach) is not None:
                    value = 0.0
                elif self.is_on(block.name, target):
                    value = self.completed_affordance
                else:
                    value = 1.0
                if value > 0.0 or include_unaffordable:
                    out.append(Affordance("pick_place", (block.name, target), value))
        return out

    def things(self) -> dict[str, TableThing]:
        """What the preconditions see: every object (PICKABLE ones pickable; a block under a cup is not
        visible; what rests on each from objects_on_top_of) and every named location."""
        hidden = self.covered()
        things = {o.name: TableThing(o.name, o.category, (o.x, o.y, o.z), visible=o.name not in hidden,
                                     pickable=o.category in PICKABLE,
                                     on_top=tuple(a.name for a in self.objects_on_top_of(o.name)))
                  for o in self.objects}
        things.update({n: TableThing(n, "location", (x, y, 0.0), pickable=False) for n, (x, y) in LOCATIONS.items()})
        return things

    def precondition(self, obj_name: str, target: str) -> TabletopPrecondition | None:
        """The first violated precondition of pick_place(obj, target) (monologue_domain.tabletop_preconditions;
        nothing is ever held between skills here), or None. Both names must exist."""
        return check_pick_place(self.things(), obj_name, target, held=None, reach=self.reach)

    def check_pick_place(self, obj_name: str, target: str) -> None:
        """Raise SkillRejected if pick_place(obj, target) cannot start (an unknown name: INVALID_ARGUMENTS;
        a violated precondition: its CAPE line in failed_precondition); nothing is changed."""
        things = self.things()
        unknown = unknown_argument(things, obj_name, target)
        if unknown is not None:
            raise unknown
        violated = check_pick_place(things, obj_name, target, held=None, reach=self.reach)
        if violated is not None:
            raise violated.rejected()

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
        self.settle()
        return True, f"placed the {obj_name} at ({tx:.3f}, {ty:.3f}) m"

    def settle(self) -> None:
        """Tell the observer (Statler's ground truth) that the world changed."""
        if self.observer is not None:
            self.observer.settle(self)

    def move_object(self, name: str, x: float, y: float) -> None:
        """Disturbance: put an object somewhere else (it drops to its resting height)."""
        obj = self.get(name)
        obj.x, obj.y = x, y
        obj.z = self._resting_height(obj)
        self.settle()

    def _resting_height(self, obj: KinematicObject) -> float:
        """z of a placed object: a block's centre on the table, a bowl's floor, the block below or a
        cup's top; a cup's rim on the table or a bowl's floor, over the blocks it then covers."""
        if obj.category == "bowl":
            return 0.0
        cup = obj.category == "cup"
        support = 0.0 if cup else BLOCK_SIZE / 2
        for other in self.objects:
            if other is obj or _xy_dist(other, obj) >= BOWL_DIAMETER / 2:
                continue
            if other.category == "bowl" and _xy_dist(other, obj) < BOWL_DIAMETER / 2 - 0.01:
                support = max(support, BOWL_FLOOR + (0.0 if cup else BLOCK_SIZE / 2))
            elif cup:
                continue  # a cup goes over blocks (covering them) and is never put on another cup here
            elif other.category == "block" and _xy_dist(other, obj) < BLOCK_SIZE:
                support = max(support, other.z + BLOCK_SIZE)
            elif other.category == "cup" and _xy_dist(other, obj) < CUP_DIAMETER / 2:
                support = max(support, other.z + CUP_HEIGHT + BLOCK_SIZE / 2)
        return support


def _xy_dist(a: KinematicObject, b: KinematicObject) -> float:
    return math.hypot(a.x - b.x, a.y - b.y)


def world_with(objects: Iterable[tuple[str, tuple[float, float, float]]], **kwargs: object) -> TabletopWorld:
    """A world with objects at given positions (tests and hand-built states)."""
    objs: list[KinematicObject] = []
    for i, (name, (x, y, z)) in enumerate(objects):
        color, category = name.rsplit(" ", 1) if " " in name else ("white", "bowl")  # "disinfector"
        objs.append(KinematicObject(name, category, color, x, y, z, seg_id=i + 1))
    return TabletopWorld(objects=objs, **kwargs)  # type: ignore[arg-type]


__all__ = ["PICKABLE", "KinematicObject", "PlaceNoise", "SceneSpec", "TabletopWorld", "WorldObserver", "random_spec",
           "world_with"]
