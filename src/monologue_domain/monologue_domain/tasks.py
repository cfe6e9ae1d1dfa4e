"""The 8 task families of IM Table 1 (IM §4.1): slot sampling, scenes, instructions, binary rewards.

A task instance is sampled from a seeded RNG: the scene it needs (block and bowl colours; at most 4
blocks and 3 bowls in the 10 colours, IM §4.1), its slots ([x] bowl from the scene's objects,
[x] corner/side from all locations, as IM §4.1 says), and the instruction in Table 1's wording.
The reward is binary and computed on a plain ground-truth state: object name -> position and size,
metres, robot base frame, table top at z = 0 (the `sim/ground_truth` convention of every simulator:
a block's position is its centre, a bowl's the centre of its base).

Geometry is IM's sim success test (requirements §6): an object is on/in a target object when their
x-y distance is < 4 cm and it is higher than the target; on a named location when it is < 4 cm
(x-y) from the location's point (height not checked). "Higher" means by more than MIN_RISE, so
that two cubes touching side by side on the table never count as stacked whatever physics jitter
does to their heights.
"""
from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from .objects import ObjectState
from .tabletop import COLORS, CORNERS, LOCATIONS, MAX_BLOCKS, MAX_BOWLS, SIDES

XY_TOLERANCE = 0.04  # m, x-y distance of IM's sim success test
MIN_RISE = 0.01  # m, how much higher than its target an object must be to count as on/in it
# Named locations a "[x] corner/side" slot is drawn from (the middle is neither).
CORNERS_AND_SIDES: tuple[str, ...] = CORNERS + SIDES

Position = tuple[float, float, float]  # m, base frame, table top z = 0
Split = Literal["seen", "unseen"]


@dataclass(frozen=True)
class Body:
    """Ground truth of one object: centre position (bowls: centre of the base) and extent, metres."""

    position: Position
    size: Position = (0.0, 0.0, 0.0)


# Object name ("red block", "blue bowl") -> body. Named locations are not objects and not in it.
State = Mapping[str, Body]


@dataclass(frozen=True)
class TaskScene:
    """The objects a task needs. Their positions are the simulator's, drawn from `seed`."""

    block_colors: tuple[str, ...]
    bowl_colors: tuple[str, ...]
    seed: int

    @property
    def blocks(self) -> list[str]:
        return [f"{c} block" for c in self.block_colors]

    @property
    def bowls(self) -> list[str]:
        return [f"{c} bowl" for c in self.bowl_colors]

    @property
    def objects(self) -> list[str]:
        return self.blocks + self.bowls


@dataclass(frozen=True)
class TaskInstance:
    """One sampled task: family key, instruction, scene and slot values (e.g. {"bowl": "blue bowl"})."""

    family: str
    instruction: str
    scene: TaskScene
    slots: Mapping[str, str] = field(default_factory=dict)

    def reward(self, state: State) -> bool:
        """Binary ground-truth reward; ValueError if the state lacks one of the scene's objects."""
        missing = [n for n in self.scene.objects if n not in state]
        if missing:
            raise ValueError(f"ground-truth state lacks {missing}; it has {sorted(state)}")
        return FAMILIES[self.family].reward(self, state)


@dataclass(frozen=True)
class TaskFamily:
    """One row of IM Table 1."""

    key: str  # short name used on the command line and in result files
    title: str  # the row label of IM Table 1, verbatim
    split: Split  # "seen": in the few-shot prompt or CLIPort's training tasks; "unseen": not
    sample: Callable[[random.Random, int], TaskInstance]  # (rng, scene seed) -> instance
    reward: Callable[[TaskInstance, State], bool]


# ----- geometry --------------------------------------------------------------------------------
def xy_distance(a: Sequence[float], b: Sequence[float]) -> float:
    return math.hypot(a[0] - b[0], a[1] - b[1])


def is_on(state: State, obj: str, target: str) -> bool:
    """IM's sim test: `obj` within 4 cm (x-y) of `target` and higher than it; for a named location
    only the x-y distance to the location's point counts."""
    pos = state[obj].position
    if target in LOCATIONS:
        return xy_distance(pos, LOCATIONS[target]) < XY_TOLERANCE
    below = state[target].position
    return xy_distance(pos, below) < XY_TOLERANCE and pos[2] > below[2] + MIN_RISE


def is_stack(state: State, blocks: Sequence[str]) -> bool:
    """All `blocks` form one tower: ordered by height, each is on the one below it."""
    if len(blocks) < 2:
        return len(blocks) == 1
    tower = sorted(blocks, key=lambda n: state[n].position[2])
    return all(is_on(state, upper, lower) for lower, upper in zip(tower, tower[1:]))


def _color(name: str) -> str:
    return name.rsplit(" ", 1)[0]


def _blocks(state: State) -> list[str]:
    return [n for n in state if n.endswith(" block")]


def _bowls(state: State) -> list[str]:
    return [n for n in state if n.endswith(" bowl")]


# ----- scene sampling --------------------------------------------------------------------------
def _colors(rng: random.Random, n: int, exclude: Iterable[str] = ()) -> list[str]:
    pool = [c for c in COLORS if c not in set(exclude)]
    return rng.sample(pool, n)


def _scene(
    rng: random.Random, seed: int, blocks: tuple[int, int], bowls: tuple[int, int], bowls_match: bool = False
) -> TaskScene:
    """Random colours: a block count in `blocks`, a bowl count in `bowls` (inclusive ranges).

    With `bowls_match`, every block colour also has a bowl (more bowls are distractors).
    """
    n_blocks = rng.randint(*blocks)
    block_colors = _colors(rng, n_blocks)
    if bowls_match:
        n_bowls = rng.randint(max(bowls[0], n_blocks), bowls[1])
        bowl_colors = block_colors + _colors(rng, n_bowls - n_blocks, exclude=block_colors)
        rng.shuffle(bowl_colors)
    else:
        bowl_colors = _colors(rng, rng.randint(*bowls))
    return TaskScene(tuple(block_colors), tuple(bowl_colors), seed)


def _prep(target: str) -> str:
    return "in" if target.endswith(" bowl") else "on"


# ----- the eight families ----------------------------------------------------------------------
def _sample_pick_place(rng: random.Random, seed: int) -> TaskInstance:
    scene = _scene(rng, seed, (1, MAX_BLOCKS), (0, MAX_BOWLS))
    block = rng.choice(scene.blocks)
    # [y]: another object of the scene or any location; the kind first, so each is as likely.
    kinds = [k for k in (
        [b for b in scene.blocks if b != block], scene.bowls, list(LOCATIONS)) if k]
    target = rng.choice(rng.choice(kinds))
    return TaskInstance("pick_place", f"Pick the {block} and place it {_prep(target)} the {target}.", scene,
                        {"block": block, "target": target})


def _reward_pick_place(task: TaskInstance, state: State) -> bool:
    return is_on(state, task.slots["block"], task.slots["target"])


def _sample_stack(rng: random.Random, seed: int) -> TaskInstance:
    scene = _scene(rng, seed, (2, MAX_BLOCKS), (0, MAX_BOWLS))
    return TaskInstance("stack", "Stack all the blocks.", scene)


def _reward_stack(task: TaskInstance, state: State) -> bool:
    return is_stack(state, _blocks(state))


def _sample_blocks_to_location(rng: random.Random, seed: int) -> TaskInstance:
    scene = _scene(rng, seed, (2, MAX_BLOCKS), (0, MAX_BOWLS))
    where = rng.choice(CORNERS_AND_SIDES)
    return TaskInstance("blocks_to_location", f"Put all the blocks on the {where}.", scene, {"location": where})


def _reward_blocks_to_location(task: TaskInstance, state: State) -> bool:
    return all(is_on(state, b, task.slots["location"]) for b in _blocks(state))


def _sample_blocks_to_bowl(rng: random.Random, seed: int) -> TaskInstance:
    scene = _scene(rng, seed, (2, MAX_BLOCKS), (1, MAX_BOWLS))
    bowl = rng.choice(scene.bowls)
    return TaskInstance("blocks_to_bowl", f"Put all the blocks in the {bowl}.", scene, {"bowl": bowl})


def _reward_blocks_to_bowl(task: TaskInstance, state: State) -> bool:
    return all(is_on(state, b, task.slots["bowl"]) for b in _blocks(state))


def _sample_different_corners(rng: random.Random, seed: int) -> TaskInstance:
    scene = _scene(rng, seed, (2, len(CORNERS)), (0, MAX_BOWLS))
    return TaskInstance("different_corners", "Put all the blocks in different corners.", scene)


def _reward_different_corners(task: TaskInstance, state: State) -> bool:
    used: set[str] = set()
    for b in _blocks(state):
        corner = next((c for c in CORNERS if is_on(state, b, c)), None)
        if corner is None or corner in used:
            return False
        used.add(corner)
    return True


def _sample_matching_bowls(rng: random.Random, seed: int) -> TaskInstance:
    scene = _scene(rng, seed, (2, MAX_BOWLS), (2, MAX_BOWLS), bowls_match=True)
    return TaskInstance("matching_bowls", "Put the blocks in their matching bowls.", scene)


def _reward_matching_bowls(task: TaskInstance, state: State) -> bool:
    blocks = _blocks(state)
    return bool(blocks) and all(
        f"{_color(b)} bowl" in state and is_on(state, b, f"{_color(b)} bowl") for b in blocks)


def _sample_mismatched_bowls(rng: random.Random, seed: int) -> TaskInstance:
    # The bowls share the blocks' colours, so "mismatched" rules out a real choice.
    scene = _scene(rng, seed, (2, MAX_BOWLS), (2, MAX_BOWLS), bowls_match=True)
    return TaskInstance("mismatched_bowls", "Put the blocks on mismatched bowls.", scene)


def _reward_mismatched_bowls(task: TaskInstance, state: State) -> bool:
    """Every block is in a bowl of another colour (two blocks may share a bowl)."""
    bowls = _bowls(state)
    blocks = _blocks(state)
    return bool(blocks) and all(
        any(_color(w) != _color(b) and is_on(state, b, w) for w in bowls) for b in blocks)


def _sample_stack_on_location(rng: random.Random, seed: int) -> TaskInstance:
    scene = _scene(rng, seed, (2, MAX_BLOCKS), (0, MAX_BOWLS))
    where = rng.choice(CORNERS_AND_SIDES)
    return TaskInstance("stack_on_location", f"Stack all the blocks on the {where}.", scene, {"location": where})


def _reward_stack_on_location(task: TaskInstance, state: State) -> bool:
    blocks = _blocks(state)
    return is_stack(state, blocks) and all(is_on(state, b, task.slots["location"]) for b in blocks)


FAMILIES: dict[str, TaskFamily] = {f.key: f for f in (
    TaskFamily("pick_place", '"Pick and place"', "seen", _sample_pick_place, _reward_pick_place),
    TaskFamily("stack", '"Stack all the blocks"', "seen", _sample_stack, _reward_stack),
    TaskFamily("blocks_to_location", '"Put all the blocks on the [x] corner/side"', "seen",
               _sample_blocks_to_location, _reward_blocks_to_location),
    TaskFamily("blocks_to_bowl", '"Put all the blocks in the [x] bowl"', "seen",
               _sample_blocks_to_bowl, _reward_blocks_to_bowl),
    TaskFamily("different_corners", '"Put all the blocks in different corners"', "unseen",
               _sample_different_corners, _reward_different_corners),
    TaskFamily("matching_bowls", '"Put the blocks in their matching bowls"', "unseen",
               _sample_matching_bowls, _reward_matching_bowls),
    TaskFamily("mismatched_bowls", '"Put the blocks on mismatched bowls"', "unseen",
               _sample_mismatched_bowls, _reward_mismatched_bowls),
    TaskFamily("stack_on_location", '"Stack all the blocks on the [x] corner/side"', "unseen",
               _sample_stack_on_location, _reward_stack_on_location),
)}


def sample_task(family: str, seed: int) -> TaskInstance:
    """The instance of `family` for `seed`: same seed, same instruction, colours and positions."""
    if family not in FAMILIES:
        raise ValueError(f"unknown task family {family!r}; known: {list(FAMILIES)}")
    return FAMILIES[family].sample(random.Random(seed), seed)


def reword(task: TaskInstance, wording: str) -> TaskInstance:
    """`task` with another wording of the same goal: `wording` may use the task's slots ({block}, {target},
    {location}, {bowl}) and {prep} ("in" or "on", as Table 1 words the target). KeyError for a slot the task
    does not have."""
    slots = dict(task.slots)
    if "target" in slots:
        slots["prep"] = _prep(slots["target"])
    return replace(task, instruction=wording.format(**slots))


def state_from_objects(objects: Iterable[ObjectState]) -> dict[str, Body]:
    """Ground-truth object states -> State (named locations are dropped)."""
    return {o.name: Body(o.position, o.size) for o in objects if o.category != "location"}


def matching_bowls_done(states: Sequence[ObjectState]) -> bool:
    """"Put the blocks in their matching bowls" on any scene: every block whose colour has a bowl
    is in that bowl, and at least one block has one."""
    state = state_from_objects(states)
    blocks = [b for b in _blocks(state) if f"{_color(b)} bowl" in state]
    return bool(blocks) and all(is_on(state, b, f"{_color(b)} bowl") for b in blocks)


__all__ = [
    "CORNERS_AND_SIDES", "FAMILIES", "MIN_RISE", "XY_TOLERANCE", "Body", "State", "TaskFamily",
    "TaskInstance", "TaskScene", "is_on", "is_stack", "matching_bowls_done", "reword", "sample_task",
    "state_from_objects",
]
