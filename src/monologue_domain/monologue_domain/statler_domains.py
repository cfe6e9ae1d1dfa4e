"""Statler's three tabletop domains as scenes of the kinematic world and the physics simulator
(../shared/papers/statler.txt §IV-A, §V; no rclpy).

One parameter, `sim.scene`, picks the domain; the scene's blocks and bowls come from the usual spec
(seed or colour lists) and the domain adds its own objects and hidden ground truth:

- `covers`: upside-down cups (`sim.cup_colors`, default two colours no block or bowl has); the blocks of
  `sim.covered_blocks` (default the first block) start under the cups, in order. A covered block is
  left out of what an oracle perceives (`TabletopWorld.snapshot`, the simulator's sim/ground_truth) and
  cannot be picked; picking and placing its cup moves the cup only and reveals the block.
- `disinfection`: a disinfector (a bowl-shaped container named "disinfector"); the blocks of
  `sim.dirty_blocks` start dirty; dirt spreads and the disinfector cleans after every change
  (statler_truth.DisinfectionTruth.settle). Never perceived.
- `weights`: hidden block weights (`sim.block_weights`, one per block; all 0 = drawn from the seed,
  1-4 units), stated to the robot only in language.

`DomainTruth` is the scoring side: `settle(world)` after every change, `to_json(world)` for the latched
`sim/statler_truth` topic (std_msgs/String). It never reaches perception or the planner.
"""
from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .kinematic_world import KinematicObject, TabletopWorld
from .scene import SceneObject
from .scene_spec import SceneSpec
from .statler_truth import DisinfectionTruth, WeightTruth, inside, touching
from .tabletop import COLORS, DISINFECTOR

PLAIN = "tabletop"  # IM's scene, no Statler domain
SCENES: tuple[str, ...] = (PLAIN, "covers", "disinfection", "weights")
TRUTH_TOPIC = "sim/statler_truth"
WEIGHT_CHOICES = (1.0, 2.0, 3.0, 4.0)  # units of the weights drawn from the seed


@dataclass(frozen=True)
class DomainSettings:
    """The domain parameters of a simulated tabletop (`sim.scene`, `sim.cup_colors`, ...)."""

    scene: str = PLAIN  # one of SCENES
    cup_colors: tuple[str, ...] = ()  # covers: cup colours ("" = two colours of no other object)
    covered_blocks: tuple[str, ...] = ()  # covers: block colours under the cups, in order ("" = the first block)
    dirty_blocks: tuple[str, ...] = ()  # disinfection: block colours (or names) that start dirty
    block_weights: tuple[float, ...] = ()  # weights: one per block, in spec order (all 0 = drawn from the seed)

    def validate(self) -> None:
        """ValueError for an unknown scene or a negative weight."""
        if self.scene not in SCENES:
            raise ValueError(f"unknown scene {self.scene!r}; known: {list(SCENES)}")
        if any(w < 0 for w in self.block_weights):
            raise ValueError(f"block weights must be >= 0, got {list(self.block_weights)}")


def domain_spec(settings: DomainSettings, spec: SceneSpec) -> SceneSpec:
    """The scene spec with the domain's objects added (disinfector, cups and the blocks under them)."""
    settings.validate()
    if settings.scene == "disinfection":
        return replace(spec, disinfector=True)
    if settings.scene == "covers":
        used = set(spec.block_colors) | set(spec.bowl_colors)
        cups = settings.cup_colors or tuple(c for c in COLORS if c not in used)[:2]
        covered = settings.covered_blocks or spec.block_colors[:1]
        return replace(spec, cup_colors=tuple(cups), covered_blocks=tuple(_color(b) for b in covered))
    return spec


@dataclass
class DomainTruth:
    """The hidden state of one domain's episode, for scoring only (module docstring)."""

    scene: str
    disinfection: DisinfectionTruth = field(default_factory=DisinfectionTruth)
    weights: WeightTruth | None = None
    revision: int = 0  # counts settles: a new value on the topic after every change

    @classmethod
    def create(cls, settings: DomainSettings, spec: SceneSpec, seed: int) -> DomainTruth | None:
        """The truth at the start of the scene of `spec` (already `domain_spec`'d); None for PLAIN."""
        settings.validate()
        if settings.scene == PLAIN:
            return None
        blocks = [f"{c} block" for c in spec.block_colors]
        truth = cls(settings.scene)
        if settings.scene == "disinfection":
            truth.disinfection = DisinfectionTruth(
                {f"{_color(b)} block" for b in settings.dirty_blocks}, frozenset({DISINFECTOR}))
        if settings.scene == "weights":
            given = settings.block_weights
            if any(given) and len(given) != len(blocks):
                raise ValueError(f"block_weights: {len(given)} weights for {len(blocks)} blocks")
            if not any(given):
                rng = random.Random(seed)
                given = tuple(rng.choice(WEIGHT_CHOICES) for _ in blocks)
            truth.weights = WeightTruth(dict(zip(blocks, (float(w) for w in given))))
        unknown = sorted(truth.disinfection.dirty - set(blocks))
        if unknown:
            raise ValueError(f"dirty_blocks: {unknown} are not blocks of the scene {blocks}")
        return truth

    def settle(self, world: TabletopWorld) -> None:
        """After every change of the world: dirt spreads and the disinfector cleans."""
        if self.scene == "disinfection":
            self.disinfection.settle(world)
        self.revision += 1

    def to_json(self, world: TabletopWorld) -> dict[str, Any]:
        """Everything scoring needs (names as perception spells them; positions in m, base_link)."""
        containers = [b.name for b in world.bowls]
        out: dict[str, Any] = {
            "scene": self.scene,
            "revision": self.revision,
            "objects": {o.name: {"category": o.category, "position": [round(o.x, 4), round(o.y, 4), round(o.z, 4)]}
                        for o in world.objects},
            "contains": {c: inside(world, c) for c in containers},
            "on": dict(touching(world)),
        }
        if self.scene == "covers":
            covered = world.covered()
            out["covered"] = covered
            out["cup_game"] = cup_game_state(world)
        if self.scene == "disinfection":
            out["dirty"] = sorted(self.disinfection.dirty)
            out["clean"] = sorted(self.disinfection.clean_blocks(world))
        if self.weights is not None:
            out["weights"] = dict(self.weights.weights)
            out["total_weight"] = {c: self.weights.total_in(world, c) for c in containers}
        return out


def cup_game_state(world: TabletopWorld) -> dict[str, Any]:
    """S Prompts 1-3's state over the physical cups: the cups from left to right (+y to -y, as the
    robot sees the table) and whether each hides a block (`cups = [False, True, False]`)."""
    cups = sorted(world.cups, key=lambda c: -c.y)
    covered = world.covered()
    return {"cups": [c.name for c in cups], "state": [c.name in covered.values() for c in cups]}


def world_from_objects(objects: Iterable[SceneObject | KinematicObject]) -> TabletopWorld:
    """A kinematic world at the given objects' poses (the physics simulator's truth, for settling)."""
    out = []
    for i, o in enumerate(objects):
        if isinstance(o, KinematicObject):
            out.append(KinematicObject(o.name, o.category, o.color, o.x, o.y, o.z, o.seg_id, o.heavy))
        elif o.category != "location":
            x, y, z = o.position
            out.append(KinematicObject(o.name, o.category, o.color, x, y, z, o.segmentation_id or i + 1, o.heavy))
    return TabletopWorld(objects=out)


def read_domain(params: Mapping[str, object], prefix: str = "sim.") -> DomainSettings:
    """DomainSettings from already-typed parameter values (tests and tools; nodes use ParamReader)."""
    def strings(key: str) -> tuple[str, ...]:
        v = params.get(prefix + key, ())
        return tuple(str(s).strip() for s in v if str(s).strip()) if isinstance(v, Sequence) else ()

    weights = params.get(prefix + "block_weights", ())
    return DomainSettings(str(params.get(prefix + "scene", PLAIN)) or PLAIN, strings("cup_colors"),
                          strings("covered_blocks"), strings("dirty_blocks"),
                          tuple(float(w) for w in weights) if isinstance(weights, Sequence) else ())


def _color(name: str) -> str:
    return name[: -len(" block")] if name.endswith(" block") else name


__all__ = ["PLAIN", "SCENES", "TRUTH_TOPIC", "DomainSettings", "DomainTruth", "cup_game_state", "domain_spec",
           "read_domain", "world_from_objects"]
