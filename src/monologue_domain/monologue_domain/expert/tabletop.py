"""The tabletop's expert planner: from the truth (object positions, `heavy`) and a task's goal, the next
correct pick-and-place, or done (no rclpy).

Goal dict (what the runner writes to tasks.json with `channel.write_task(dir, instruction, "tabletop", goal)`):

    {"family": <a key of monologue_domain.tasks.FAMILIES>, <the task's slots>}
    e.g. {"family": "pick_place", "block": "red block", "target": "blue bowl"},
         {"family": "stack"}, {"family": "blocks_to_location", "location": "top left corner"},
         {"family": "blocks_to_bowl", "bowl": "blue bowl"}, {"family": "different_corners"},
         {"family": "matching_bowls"}, {"family": "mismatched_bowls"},
         {"family": "stack_on_location", "location": "top side"}

`goal_of_task` builds it from a TaskInstance; `goal_of_instruction` parses IM Table 1's canonical wordings
when no goal was recorded. The reward is the task's (IM's sim test, monologue_domain.tasks), except that
"matching bowls" ignores blocks with no bowl of their colour (as `tasks.matching_bowls_done`).

The planner (`next_step`) handles stacking order (the largest tower already built is the base; a heavy
block, which cannot be lifted, is always a base), blocks already placed (never moved again), covered blocks
(the pile on them goes first) and occupied targets (what rests on a target block is moved aside to a free
named location). When the goal needs a heavy block moved it does everything else and then reports `Stuck`.
`apply` updates a believed state as the kinematic world would after a successful pick-and-place (the
open-loop expert's belief: it cannot see failures). Lengths in metres, robot base frame, table top z = 0.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..scene import SceneObject
from ..tabletop import BLOCK_SIZE, BOWL_DIAMETER, BOWL_FLOOR, CORNERS, LOCATIONS
from ..tabletop_preconditions import STACK_MIN_RISE
from ..tasks import FAMILIES, XY_TOLERANCE, Body, TaskInstance, is_on, is_stack

WORLD = "tabletop"
FREE_CLEARANCE = 0.08  # m: a free spot has no object centre closer than this
# m: a block within 4 cm (x-y) and more than this higher rests on another (every tabletop backend's
# precondition, tabletop_preconditions.STACK_MIN_RISE)
ON_TOP_RISE = STACK_MIN_RISE


@dataclass(frozen=True)
class Thing:
    """One block or bowl of the truth: centre position (bowls: base centre), m."""

    name: str
    category: str  # "block" | "bowl"
    position: tuple[float, float, float]
    heavy: bool = False


@dataclass(frozen=True)
class TableState:
    """The tabletop's blocks and bowls (named locations are not things)."""

    things: Mapping[str, Thing]

    @classmethod
    def of(cls, objects: Iterable[SceneObject]) -> TableState:
        return cls({o.name: Thing(o.name, o.category, (o.position[0], o.position[1], o.position[2]), o.heavy)
                    for o in objects if o.category in ("block", "bowl")})

    @property
    def blocks(self) -> list[str]:
        return sorted(n for n, t in self.things.items() if t.category == "block")

    @property
    def bowls(self) -> list[str]:
        return sorted(n for n, t in self.things.items() if t.category == "bowl")

    def bodies(self) -> dict[str, Body]:
        return {n: Body(t.position) for n, t in self.things.items()}

    def on(self, obj: str, target: str) -> bool:
        """IM's sim test (tasks.is_on): within 4 cm (x-y), and higher than a target object."""
        return is_on(self.bodies(), obj, target)

    def heavy(self, name: str) -> bool:
        return self.things[name].heavy

    def above(self, name: str) -> list[str]:
        """Blocks resting on `name` (directly or higher in its pile), lowest first."""
        base = self.things[name]
        if base.category != "block":
            return []
        out = [t for t in self.things.values() if t.category == "block" and t.name != name
               and _xy(t.position, base.position) < XY_TOLERANCE and t.position[2] > base.position[2] + ON_TOP_RISE]
        return [t.name for t in sorted(out, key=lambda t: t.position[2])]

    def clear(self, name: str) -> bool:
        return not self.above(name)

    def top_of(self, name: str) -> str:
        """The clear block at the top of `name`'s pile (`name` itself when nothing rests on it); a leaning
        pile is followed up block by block."""
        top = name
        while pile := self.above(top):
            top = pile[-1]
        return top


@dataclass(frozen=True)
class Step:
    """pick_place(obj, target)."""

    obj: str
    target: str
    why: str = ""


@dataclass(frozen=True)
class Done:
    why: str = "the goal holds"


@dataclass(frozen=True)
class Stuck:
    """The goal cannot be reached (e.g. it needs a heavy block moved); everything else is done."""

    why: str


Plan = Step | Done | Stuck


# ----- goals ------------------------------------------------------------------------------------
def goal_of_task(task: TaskInstance) -> dict[str, str]:
    """The goal dict of a Table 1 task instance."""
    return {"family": task.family, **dict(task.slots)}


_WORDINGS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((f, re.compile(p, re.IGNORECASE)) for f, p in (
    ("pick_place", r"pick (?:up )?the (?P<block>[\w ]+? block) and place it (?:in|on|into|onto) "
                   r"the (?P<target>[\w ]+)"),
    ("stack_on_location", r"stack all (?:of )?the blocks on the (?P<location>[\w ]+)"),
    ("stack", r"stack all (?:of )?the blocks"),
    ("blocks_to_bowl", r"put all (?:of )?the blocks in(?:to)? the (?P<bowl>[\w ]+? bowl)"),
    ("different_corners", r"put all (?:of )?the blocks in different corners"),
    ("blocks_to_location", r"put all (?:of )?the blocks on the (?P<location>[\w ]+)"),
    ("matching_bowls", r"put (?:all )?the blocks in(?:to)? their matching bowls"),
    ("mismatched_bowls", r"put (?:all )?the blocks (?:on|in|into) mismatched bowls"),
))


def goal_of_instruction(instruction: str) -> dict[str, str] | None:
    """The goal of an instruction in IM Table 1's canonical wording (monologue_domain.tasks), or None."""
    text = " ".join(instruction.strip().rstrip(".!").split())
    for family, pattern in _WORDINGS:
        m = pattern.fullmatch(text)
        if m is None:
            continue
        slots = {k: v.lower() for k, v in m.groupdict().items()}
        if "location" in slots and slots["location"] not in LOCATIONS:
            continue
        return {"family": family, **slots}
    return None


def check_goal(goal: Mapping[str, Any]) -> dict[str, str]:
    """A goal dict with its family's slots (ValueError naming what is wrong)."""
    family = str(goal.get("family", ""))
    if family not in FAMILIES:
        raise ValueError(f"tabletop goal: unknown family {family!r}; known {list(FAMILIES)}")
    needed = {"pick_place": ("block", "target"), "blocks_to_location": ("location",), "blocks_to_bowl": ("bowl",),
              "stack_on_location": ("location",)}.get(family, ())
    missing = [k for k in needed if not goal.get(k)]
    if missing:
        raise ValueError(f"tabletop goal {dict(goal)!r} lacks {missing}")
    return {str(k): str(v) for k, v in goal.items()}


# ----- reward -----------------------------------------------------------------------------------
def _color(name: str) -> str:
    return name.rsplit(" ", 1)[0]


def reached(goal: Mapping[str, Any], state: TableState) -> bool:
    """The task's binary reward on `state` (IM's sim test)."""
    g = check_goal(goal)
    family = g["family"]
    if family == "matching_bowls":
        blocks = [b for b in state.blocks if f"{_color(b)} bowl" in state.things]
        return bool(blocks) and all(state.on(b, f"{_color(b)} bowl") for b in blocks)
    for name in (g.get("block"), g.get("target"), g.get("bowl")):
        if name and name not in state.things and name not in LOCATIONS:
            return False
    slots = {k: v for k, v in g.items() if k != "family"}
    task = TaskInstance(family, "", _NO_SCENE, slots)
    return FAMILIES[family].reward(task, state.bodies())


class _NoScene:
    objects: list[str] = []


_NO_SCENE: Any = _NoScene()


# ----- the planner ------------------------------------------------------------------------------
def next_step(goal: Mapping[str, Any], state: TableState) -> Plan:
    """The next pick-and-place towards `goal` on `state`, Done when it holds, Stuck when it cannot."""
    g = check_goal(goal)
    if reached(g, state):
        return Done()
    family = g["family"]
    if family == "pick_place":
        return _pick_place(state, g["block"], g["target"])
    if family in ("blocks_to_location", "blocks_to_bowl"):
        return _all_to(state, g.get("location") or g["bowl"])
    if family == "different_corners":
        return _different_corners(state)
    if family == "matching_bowls":
        return _assigned(state, {b: f"{_color(b)} bowl" for b in state.blocks if f"{_color(b)} bowl" in state.things})
    if family == "mismatched_bowls":
        return _mismatched(state)
    if family == "stack":
        return _stack(state, None)
    return _stack(state, g["location"])


def _xy(a: Sequence[float], b: Sequence[float]) -> float:
    return math.hypot(a[0] - b[0], a[1] - b[1])


def _point(state: TableState, name: str) -> tuple[float, float]:
    if name in LOCATIONS:
        return LOCATIONS[name]
    p = state.things[name].position
    return (p[0], p[1])


def free_spot(state: TableState, avoid: Iterable[str] = ()) -> str:
    """The named location farthest from every object (not one of `avoid`), to put a block aside."""
    skip = set(avoid)
    names = [n for n in LOCATIONS if n not in skip]

    def clearance(n: str) -> float:
        return min((_xy(LOCATIONS[n], t.position) for t in state.things.values()), default=1.0)

    return max(names, key=lambda n: (clearance(n) >= FREE_CLEARANCE, clearance(n)))


def _move(state: TableState, obj: str, target: str, why: str, keep: Iterable[str] = ()) -> Plan:
    """Step(obj, target), first uncovering `obj` and clearing a target block."""
    if state.heavy(obj):
        return Stuck(f"the {obj} is too heavy to lift")
    aside = [target, *keep]
    for name in (obj, target):
        if name in state.things and not state.clear(name):
            top = state.top_of(name)
            if state.heavy(top):
                return Stuck(f"the {top} on the {name} is too heavy to lift")
            return Step(top, free_spot(state, aside), f"uncover the {name}")
    return Step(obj, target, why)


def _pick_place(state: TableState, block: str, target: str) -> Plan:
    if block not in state.things or (target not in state.things and target not in LOCATIONS):
        return Stuck(f"the scene has no {block if block not in state.things else target}")
    return _move(state, block, target, "the instruction")


def _assigned(state: TableState, targets: Mapping[str, str]) -> Plan:
    """Every block of `targets` onto its target: the clear, liftable ones first (by name)."""
    pending = [b for b in sorted(targets) if not state.on(b, targets[b])]
    if not pending:
        return Done()
    movable = [b for b in pending if not state.heavy(b)]
    if not movable:
        return Stuck(f"the {pending[0]} is too heavy to lift")
    clear = [b for b in movable if state.clear(b)]
    b = (clear or movable)[0]
    return _move(state, b, targets[b], f"the {b} goes onto the {targets[b]}", keep=targets.values())


def _all_to(state: TableState, target: str) -> Plan:
    return _assigned(state, {b: target for b in state.blocks})


def _different_corners(state: TableState) -> Plan:
    corner_of: dict[str, str] = {}
    taken: set[str] = set()
    # keep a block that alone holds a corner (the lowest one if several share it); heavy blocks first
    for b in sorted(state.blocks, key=lambda n: (not state.heavy(n), state.things[n].position[2], n)):
        c = next((c for c in CORNERS if state.on(b, c)), None)
        if c is not None and c not in taken:
            corner_of[b] = c
            taken.add(c)
    free = [c for c in CORNERS if c not in taken]
    for b in state.blocks:
        if b in corner_of:
            continue
        if not free:
            return Stuck("more blocks than corners")
        # the free corner nearest the block
        c = min(free, key=lambda c: _xy(LOCATIONS[c], state.things[b].position))
        corner_of[b] = c
        free.remove(c)
    return _assigned(state, corner_of)


def _mismatched(state: TableState) -> Plan:
    bowls = state.bowls
    inside: dict[str, int] = {w: sum(state.on(b, w) for b in state.blocks) for w in bowls}
    targets: dict[str, str] = {}
    for b in state.blocks:
        ok = [w for w in bowls if _color(w) != _color(b)]
        if not ok:
            return Stuck(f"no bowl of another colour than the {b}")
        now = next((w for w in ok if state.on(b, w)), None)
        if now is None:
            now = min(ok, key=lambda w: (inside[w], w))
            inside[now] += 1
        targets[b] = now
    return _assigned(state, targets)


def towers(state: TableState, location: str | None = None) -> list[list[str]]:
    """Valid towers, bottom first: chains where each block is on the one below (all on `location` if
    given), from every base block (one that is on no other block)."""
    blocks = state.blocks
    out: list[list[str]] = []
    for base in blocks:
        if any(state.on(base, o) for o in blocks if o != base):
            continue
        if location is not None and not state.on(base, location):
            continue
        chain = [base]
        while True:
            up = [o for o in blocks if o not in chain and state.on(o, chain[-1])
                  and (location is None or state.on(o, location))]
            if not up:
                break
            chain.append(min(up, key=lambda n: state.things[n].position[2]))
        out.append(chain)
    return out


def _stack(state: TableState, location: str | None) -> Plan:
    """One tower of all blocks (on `location` if given): the largest tower built is the base."""
    heavy = [b for b in state.blocks if state.heavy(b)]
    built = towers(state, location)
    if heavy:
        built = [t for t in built if t[0] in heavy]  # a heavy block can only be the base
        if len(heavy) > 1 and not any(set(heavy) <= set(t) for t in built):
            return Stuck(f"{len(heavy)} blocks are too heavy to lift: they cannot all be in one tower")
    if not built:
        if heavy:
            return Stuck(f"the {heavy[0]} is too heavy to lift")  # (not on the location)
        base = next((b for b in state.blocks if state.clear(b)), state.blocks[0])
        target = location if location is not None else None
        if target is not None:  # a block resting on another one off the location: the lowest is the base
            # (placing the upper one again where it is has no affordance; _move uncovers the lowest first)
            while (under := [o for o in state.blocks if o != base and state.on(base, o)]):
                base = min(under, key=lambda n: state.things[n].position[2])
        if target is None:  # a plain stack: any block is a base; put another on it
            others = [b for b in state.blocks if b != base and state.clear(b)]
            return _move(state, others[0] if others else base, base, "start the tower")
        return _move(state, base, target, "the tower's base")
    tower = max(built, key=len)  # the first of the largest (bases by name)
    top = tower[-1]
    rest = [b for b in state.blocks if b not in tower]
    if not rest:
        return Done()
    on_top = state.above(top)
    if on_top:  # something rests on the tower but is not part of it (off the location): re-place it
        if len(on_top) == 1:  # aimed at the location (it rests on the tower there): the tower's top block is
            # where it already is, and placing a block where it is has no affordance (SayCan's completed cap)
            return _move(state, on_top[0], location or top, "re-place it on the tower")
        return _move(state, on_top[-1], free_spot(state, [location] if location else []), "clear the tower")
    movable = [b for b in rest if not state.heavy(b)]
    if not movable:
        return Stuck(f"the {rest[0]} is too heavy to lift")
    clear = [b for b in movable if state.clear(b)]
    b = (clear or movable)[0]
    return _move(state, b, top, "the next block of the tower", keep=tower)


# ----- a believed state (open loop) --------------------------------------------------------------
def apply(state: TableState, obj: str, target: str) -> TableState:
    """`state` after a successful pick_place(obj, target), as the kinematic world rests things: on the
    table, a bowl's floor or the block below (what an open-loop planner believes happened)."""
    if obj not in state.things or (target not in state.things and target not in LOCATIONS):
        return state
    x, y = _point(state, target)
    moving = state.things[obj]
    if moving.category == "bowl":
        z = 0.0
    else:
        z = BLOCK_SIZE / 2
        for other in state.things.values():
            if other.name == obj:
                continue
            d = _xy(other.position, (x, y))
            if other.category == "bowl" and d < BOWL_DIAMETER / 2 - 0.01:
                z = max(z, BOWL_FLOOR + BLOCK_SIZE / 2)
            elif other.category == "block" and d < BLOCK_SIZE:
                z = max(z, other.position[2] + BLOCK_SIZE)
    things = dict(state.things)
    things[obj] = replace(moving, position=(x, y, z))
    return TableState(things)


def subgoals(goal: Mapping[str, Any], state: TableState) -> list[tuple[str, str]]:
    """The goal as (object, target) facts, as IM's Scene feedback states a goal (`"X is on the Y."`): for a
    tower, each block on the one below in the planned order (the largest tower built first)."""
    g = check_goal(goal)
    family = g["family"]
    blocks = state.blocks
    if family == "pick_place":
        return [(g["block"], g["target"])]
    if family in ("blocks_to_location", "blocks_to_bowl"):
        return [(b, g.get("location") or g["bowl"]) for b in blocks]
    if family == "matching_bowls":
        return [(b, f"{_color(b)} bowl") for b in blocks if f"{_color(b)} bowl" in state.things]
    if family in ("different_corners", "mismatched_bowls"):
        out: list[tuple[str, str]] = []
        s = state
        for _ in range(2 * len(blocks) + 2):  # run the planner on a believed state
            plan = next_step(g, s)
            if not isinstance(plan, Step):
                break
            s = apply(s, plan.obj, plan.target)
        for b in blocks:
            if family == "different_corners":
                out.append((b, next((c for c in CORNERS if s.on(b, c)), CORNERS[0])))
            else:
                out.append((b, next((w for w in s.bowls if _color(w) != _color(b) and s.on(b, w)), s.bowls[0])))
        return out
    order = tower_order(state, g.get("location"))
    facts = [(upper, lower) for lower, upper in zip(order, order[1:])]
    if family == "stack_on_location":
        facts = [(order[0], g["location"]), *facts]
    return facts


def tower_order(state: TableState, location: str | None = None) -> list[str]:
    """The planned tower, bottom first: the tower built so far (heavy base first), then the rest by name."""
    built = towers(state, location)
    heavy = [b for b in state.blocks if state.heavy(b)]
    if heavy:
        built = [t for t in built if t[0] in heavy] or [[heavy[0]]]
    base = max(built, key=len) if built else []
    return base + [b for b in state.blocks if b not in base]


def stack_reached(state: TableState) -> bool:
    return is_stack(state.bodies(), state.blocks)


__all__ = ["WORLD", "Done", "Plan", "Step", "Stuck", "TableState", "Thing", "apply", "check_goal", "free_spot",
           "goal_of_instruction", "goal_of_task", "next_step", "reached", "subgoals", "tower_order", "towers"]
