"""The expert planner of Statler's domains (../shared/papers/statler.txt §IV-A; no rclpy): the correct
answer to a query and the correct world state after it, from the simulator's hidden truth.

The truth is the kinematic tabletop's `extra["statler"]` in world.json: `DomainTruth.to_json` of the
scene (statler_domains), i.e. every object's position (covered blocks included), which block is under
which cup, which blocks are dirty, the hidden weights. `StatlerWorld.from_truth` rebuilds the kinematic
world and its domain truth from it, so playing a move here runs the simulator's own code.

No task goal is needed: a Statler query says what it wants, and the hidden state it depends on (dirt,
weights, covered blocks) is in the truth. `plan_query(world, query)` reads the query kinds of Statler's
domains (those of monologue_eval's episode generator, S Prompts 7-11 and the demonstrations):

- statements ("The pink block is under the blue cup", "The cyan block is dirty", "The brown block is twice
  the weight of the pink block", anything that is neither a request nor a question): nothing to do;
- moves ("Put the X in/on the Y", "... on the table", "Pick the X and put it ...", "Move the X into the
  Y"): a block under a cup is uncovered first (the cup to the table); "Put all the dirty|clean blocks
  in the Y|on the table" (highest first), "Put the heaviest|lightest block in the Y", "Put the block in
  the B on the Y", "Put the X in the empty bowl", "Put blocks in the E so that their total weight
  becomes identical to what is in the F" (the one subset of the free blocks with that total);
- questions: the colour of the block under a cup or right above a block, whether a block is higher than
  another, how many blocks are in a bowl, whether a block is dirty or clean, the heaviest or lightest
  block, whether a bowl's total weight exceeds a block's: a sentence with the answer word.

`state_of(world, objects)` is the world state in the vocabulary of the domain's writer demonstrations
(config/prompts/statler_*writer.txt): relations "X is on Y" / "X is in Y", a bowl's (or the
disinfector's) "contains", a block's "is": ["dirty"|"clean"|"hidden"] or "weight".
"""
from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..kinematic_world import KinematicObject, TabletopWorld
from ..statler_domains import DomainTruth
from ..statler_truth import DisinfectionTruth, WeightTruth, inside, touching
from ..tabletop import BLOCK_SIZE, BOWL_DIAMETER, DISINFECTOR, LOCATIONS

TABLE = "table"
EXTRA_KEY = "statler"  # world.json extra: DomainTruth.to_json of the scene
# where the planner's put_first_on_second(x, "table") goes (planner statler.table_locations' default)
TABLE_LOCATIONS: tuple[str, ...] = ("middle", "bottom side", "top side", "left side", "right side")
LEVEL_M = 0.006  # m: two blocks whose heights differ less are at the same height
_NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight")


class StatlerPlanError(ValueError):
    """The query is not one the expert understands, or names what the scene does not have."""


@dataclass(frozen=True)
class Plan:
    """The correct answer to one query."""

    moves: tuple[tuple[str, str], ...] = ()  # (object, target); target "table" = a free table spot
    say: str = ""  # the answer to a question ("" = none)
    statement: bool = False  # the query tells something (nothing to do; Statler updates its state)
    thoughts: tuple[str, ...] = ()  # what the answer rests on (CaP+CoT's `# THINK:` lines)

    @property
    def kind(self) -> str:
        return "question" if self.say else "action" if self.moves else "statement"


@dataclass
class StatlerWorld:
    """The kinematic world of a Statler scene with its domain truth (positions in m, base_link)."""

    scene: str  # covers | disinfection | weights
    world: TabletopWorld
    truth: DomainTruth
    used_table: list[str] = field(default_factory=list)  # table locations put on by `play`

    @classmethod
    def from_truth(cls, extra: Mapping[str, Any]) -> StatlerWorld:
        """From world.json's `extra` (its `statler` entry: DomainTruth.to_json and `order`, the objects in the
        scene's order, which breaks ties such as the order of equally high blocks); StatlerPlanError without one."""
        d = extra.get(EXTRA_KEY)
        if not isinstance(d, Mapping) or not isinstance(d.get("objects"), Mapping):
            raise StatlerPlanError("the world's truth has no Statler domain state (extra['statler']): is the "
                                   "simulator a kinematic tabletop with sim.scene covers|disinfection|weights?")
        order = [str(n) for n in d.get("order", ()) if n in d["objects"]]  # the scene's order (world.json sorts keys)
        named = [*order, *(n for n in d["objects"] if n not in order)]
        objects = []
        for i, name in enumerate(named):
            o = d["objects"][name]
            x, y, z = (float(v) for v in o["position"])
            objects.append(KinematicObject(name, str(o["category"]), name.split(" ")[0], x, y, z, i + 1))
        world = TabletopWorld(objects=objects)
        scene = str(d.get("scene", ""))
        truth = DomainTruth(scene)
        if scene == "disinfection":
            truth.disinfection = DisinfectionTruth(set(d.get("dirty", ())),
                                                   frozenset({DISINFECTOR}) if world.has(DISINFECTOR) else frozenset())
        if isinstance(d.get("weights"), Mapping):
            truth.weights = WeightTruth({str(k): float(v) for k, v in d["weights"].items()})
        world.observer = truth
        return cls(scene, world, truth)

    def copy(self) -> StatlerWorld:
        w = TabletopWorld(objects=[copy.copy(o) for o in self.world.objects])
        t = DomainTruth(self.truth.scene, DisinfectionTruth(set(self.truth.disinfection.dirty),
                                                            self.truth.disinfection.disinfectors),
                        self.truth.weights, self.truth.revision)
        w.observer = t
        return StatlerWorld(self.scene, w, t, list(self.used_table))

    # -- what the world shows ---------------------------------------------------------------------
    @property
    def blocks(self) -> list[str]:
        return [b.name for b in self.world.blocks]

    @property
    def containers(self) -> list[str]:
        return [b.name for b in self.world.bowls]

    def covered(self) -> dict[str, str]:
        return self.world.covered()

    def visible_blocks(self) -> list[str]:
        hidden = self.covered()
        return [b for b in self.blocks if b not in hidden]

    def clear(self, name: str) -> bool:
        return not self.world.objects_on_top_of(name)

    def container_of(self, block: str) -> str | None:
        return next((c for c in self.containers if block in inside(self.world, c)), None)

    def on_table(self, name: str) -> bool:
        return abs(self.world.get(name).z - BLOCK_SIZE / 2) < 1e-6

    def directly_on(self, lower: str) -> list[str]:
        return [u for u, lo in touching(self.world) if lo == lower]

    def dirty(self, block: str) -> bool:
        return self.truth.disinfection.is_dirty(block)

    def weight(self, block: str) -> float:
        if self.truth.weights is None:
            raise StatlerPlanError("the scene has no weights")
        return self.truth.weights.weights[block]

    # -- playing moves (the simulator's code) -----------------------------------------------------
    def table_spot(self) -> str:
        """The planner's "table": the first of TABLE_LOCATIONS not put on yet with nothing near it."""
        for loc in TABLE_LOCATIONS:
            x, y = LOCATIONS[loc]
            if loc not in self.used_table and all(
                    (o.x - x) ** 2 + (o.y - y) ** 2 >= (BOWL_DIAMETER / 2) ** 2 for o in self.world.objects):
                return loc
        return TABLE_LOCATIONS[0]

    def play(self, moves: Sequence[tuple[str, str]]) -> StatlerWorld:
        """A copy after `moves` (the kinematic world's pick_place; "table" = `table_spot`)."""
        out = self.copy()
        for obj, target in moves:
            if target == TABLE:
                target = out.table_spot()
                out.used_table.append(target)
            out.world.pick_place(obj, target)
        return out


# ---- reading queries ----------------------------------------------------------------------------------

def _norm(text: str) -> str:
    t = " ".join(text.strip().lower().split())
    return t.rstrip(".?! ")


def _name(world: StatlerWorld, text: str) -> str:
    """An object of the scene named by `text` ("the cyan block", "Cyan Block"); StatlerPlanError if none."""
    t = _norm(text)
    t = t[4:] if t.startswith("the ") else t
    if t == TABLE:
        return TABLE
    for o in world.world.objects:
        if o.name == t:
            return o.name
    raise StatlerPlanError(f"the scene has no {text!r} (objects: {[o.name for o in world.world.objects]})")


def _color(block: str) -> str:
    return block.rsplit(" ", 1)[0]


def _join(names: Sequence[str]) -> str:
    items = [f"the {n}" for n in names]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _yes(cond: bool, sentence: str) -> str:
    return f"{'Yes' if cond else 'No'}, {sentence}"


def _uncovered(world: StatlerWorld, obj: str, target: str) -> tuple[tuple[str, str], ...]:
    """Move `obj` onto `target`, its cup to the table first when a cup hides it."""
    cup = world.covered().get(obj)
    return ((cup, TABLE), (obj, target)) if cup else ((obj, target),)


_MOVE = re.compile(r"^(?:pick up|pick|move|place|put|take)\s+(?:up\s+)?(.+?)\s+(?:and\s+(?:put|place|move)\s+it\s+)?"
                   r"(?:on top of|into|onto|inside|in|on|to)\s+(.+)$")
_ALL = re.compile(r"^(?:put|place|move) (?:all )?(?:of )?the (dirty|clean) blocks (?:(?:in|into) (.+)|on the table)$")
_EXTREME = re.compile(r"^put the (heaviest|lightest) block (?:in|into) (.+)$")
_SAME_TOTAL = re.compile(r"^put blocks in (.+) so that their total weight becomes identical to what is in (.+)$")
_BOWL_REF = re.compile(r"^put the block in (.+?) on (.+)$")
_EMPTY = re.compile(r"^put (.+) in the empty bowl$")
_UNDER = re.compile(r"^what is the colou?r of the block under (.+)$")
_ABOVE = re.compile(r"^what is the colou?r of the block right above (.+)$")
_HIGHER = re.compile(r"^is (.+) in a higher position than (.+)$")
_COUNT = re.compile(r"^how many blocks are (?:there )?in (.+)$")
_IS_STATE = re.compile(r"^is (.+) (dirty|clean)$")
_WHICH = re.compile(r"^which block is the (heaviest|lightest)(?: one)?$")
_MORE = re.compile(r"^is the total weight in (.+) more than the weight of (.+)$")


def plan_query(world: StatlerWorld, query: str) -> Plan:
    """The correct answer to `query` in `world` (module docstring); StatlerPlanError if not understood."""
    q = _norm(query)
    question = query.strip().endswith("?") or q.split(" ", 1)[0] in ("what", "which", "how", "is", "are", "does")
    if question:
        return _question(world, q)
    if (m := _ALL.match(q)) is not None:
        want = m[1] == "dirty"
        target = _name(world, m[2]) if m[2] else TABLE
        group = [b for b in world.blocks if world.dirty(b) == want]
        todo = [b for b in group if not world.on_table(b)] if target == TABLE \
            else [b for b in group if b not in inside(world.world, target)]
        order = sorted(todo, key=lambda b: -world.world.get(b).z)
        thought = f"The {m[1]} blocks are {_join(group)}" if group else f"No block is {m[1]}"
        return Plan(tuple(mv for b in order for mv in _uncovered(world, b, target)), thoughts=(thought,))
    if (m := _EXTREME.match(q)) is not None:
        pick = max if m[1] == "heaviest" else min
        best = pick(world.blocks, key=world.weight)
        return Plan(_uncovered(world, best, _name(world, m[2])), thoughts=(f"The {m[1]} block is the {best}",))
    if (m := _SAME_TOTAL.match(q)) is not None:
        empty, full = _name(world, m[1]), _name(world, m[2])
        total = sum(world.weight(b) for b in inside(world.world, full))
        free = [b for b in world.blocks if world.container_of(b) is None and world.clear(b)]
        subsets = [s for n in range(1, len(free) + 1) for s in itertools.combinations(free, n)
                   if abs(sum(world.weight(b) for b in s) - total) < 1e-9]
        if not subsets:
            raise StatlerPlanError(f"no set of free blocks weighs what is in the {full}")
        return Plan(tuple((b, empty) for b in subsets[0]),
                    thoughts=(f"The {full} holds a total weight of {total:g}",))
    if (m := _BOWL_REF.match(q)) is not None and _name(world, m[1]) in world.containers:
        bowl, target = _name(world, m[1]), _name(world, m[2])
        held = [b for b in inside(world.world, bowl) if b in world.visible_blocks() and world.clear(b)]
        if not held:
            raise StatlerPlanError(f"no block to take out of the {bowl}")
        return Plan(((held[0], target),), thoughts=(f"The block in the {bowl} is the {held[0]}",))
    if (m := _EMPTY.match(q)) is not None:
        empties = [c for c in world.containers if c != DISINFECTOR and not inside(world.world, c)]
        if not empties:
            raise StatlerPlanError("no bowl is empty")
        return Plan(_uncovered(world, _name(world, m[1]), empties[0]),
                    thoughts=(f"The empty bowl is the {empties[0]}",))
    if (m := _MOVE.match(q)) is not None:
        obj, target = _name(world, m[1]), _name(world, m[2])
        if target != TABLE and target in world.covered():  # onto a hidden block: its cup comes off first
            return Plan(((world.covered()[target], TABLE), *_uncovered(world, obj, target)))
        return Plan(_uncovered(world, obj, target))
    return Plan(statement=True)


def _question(world: StatlerWorld, q: str) -> Plan:
    w = world.world
    if (m := _UNDER.match(q)) is not None:
        cup = _name(world, m[1])
        under = [b for b, c in world.covered().items() if c == cup]
        if not under:
            return Plan(say=f"There is no block under the {cup}")
        return Plan(say=f"The {under[0]} is under the {cup}", thoughts=(f"The {cup} covers the {under[0]}",))
    if (m := _ABOVE.match(q)) is not None:
        lower = _name(world, m[1])
        up = world.directly_on(lower)
        return Plan(say=f"The {up[0]} is right above the {lower}" if up else f"There is no block on the {lower}")
    if (m := _HIGHER.match(q)) is not None:
        a, b = _name(world, m[1]), _name(world, m[2])
        dz = w.get(a).z - w.get(b).z
        higher = dz > 0.0 and abs(dz) >= LEVEL_M
        return Plan(say=_yes(higher, f"the {a} is {'' if higher else 'not '}higher than the {b}"))
    if (m := _COUNT.match(q)) is not None:
        bowl = _name(world, m[1])
        n = len(inside(w, bowl))
        if n == 0:
            return Plan(say=f"There is no block in the {bowl}")
        return Plan(say=f"There {'is' if n == 1 else 'are'} {n} block{'' if n == 1 else 's'} in the {bowl}",
                    thoughts=(f"The {bowl} holds {_join(inside(w, bowl))}",))
    if (m := _IS_STATE.match(q)) is not None and m[1].endswith("block"):
        block = _name(world, m[1])
        holds = world.dirty(block) == (m[2] == "dirty")
        return Plan(say=_yes(holds, f"the {block} is {'' if holds else 'not '}{m[2]}"))
    if (m := _WHICH.match(q)) is not None:
        pick = max if m[1] == "heaviest" else min
        best = pick(world.blocks, key=world.weight)
        return Plan(say=f"The {best} is the {m[1]}")
    if (m := _MORE.match(q)) is not None:
        bowl, block = _name(world, m[1]), _name(world, m[2])
        total = sum(world.weight(b) for b in inside(w, bowl))
        more = total > world.weight(block)
        return Plan(say=_yes(more, f"the total weight in the {bowl} is {'' if more else 'not '}more than the "
                                   f"weight of the {block}"))
    raise StatlerPlanError(f"the expert does not know how to answer the question {q!r}")


# ---- the world state in the writer's vocabulary --------------------------------------------------------

def _weight_value(w: float) -> float | int:
    return int(w) if float(w).is_integer() else w


def state_of(world: StatlerWorld, objects: Sequence[str] = (), mentioned: str = "",
             known: Collection[str] | None = None) -> dict[str, Any]:
    """The state after everything so far, in the domain writer's vocabulary (module docstring). `objects`:
    the state's object list so far (kept in order); objects of the scene that are in view, or that
    `mentioned` (the text told so far) names, are added after them. Covered blocks stay "hidden".
    `known`: the blocks whose cleanliness or weight the state already gave; with it, a block's hidden
    property is written only when known or named in `mentioned` (what the robot was told; the rest
    stays `{}` as in the writer's demonstrations), without it always."""
    w = world.world
    covered = world.covered()
    text = mentioned.lower()

    def named(name: str) -> bool:
        return re.search(rf"\b{re.escape(name)}\b", text) is not None

    names = [o for o in objects if w.has(o)]
    for o in w.objects:
        if o.name not in names and (o.name not in covered or named(o.name)):
            names.append(o.name)
    relations: list[str] = []
    for upper, lower in touching(w):
        if upper in names and lower in names:
            relations.append(f"{upper} is on {lower}")
    for block, cup in covered.items():
        if block in names:
            relations.append(f"{cup} is on {block}")
    contains = {c: [b for b in inside(w, c) if b in names] for c in world.containers}
    for c, held in contains.items():
        relations.extend(f"{b} is in {c}" for b in held)
    state: dict[str, Any] = {"objects": names,
                             "relations": [[r] for r in relations] if world.scene == "disinfection" else relations}
    for n in names:
        o = w.get(n)
        entry: dict[str, Any] = {}
        if o.category == "bowl":
            if world.scene != "disinfection" or n == DISINFECTOR:
                entry["contains"] = contains.get(n, [])
        elif o.category == "block" and (known is None or n in known or named(n)):
            if world.scene == "disinfection":
                entry["is"] = ["dirty" if world.dirty(n) else "clean"]
            elif world.scene == "covers" and n in covered:
                entry["is"] = ["hidden"]
            elif world.scene == "weights" and world.truth.weights is not None:
                entry["weight"] = _weight_value(world.weight(n))
        state[n] = entry
    return state


# ---- the cup game (S Prompts 1-3) ------------------------------------------------------------------------

def cup_states(initial: Sequence[bool], swaps: Sequence[tuple[int, int]]) -> list[list[bool]]:
    """The cups after each swap (statler_truth.cup_game, step by step)."""
    cups, out = list(initial), []
    for i, j in swaps:
        cups[i], cups[j] = cups[j], cups[i]
        out.append(list(cups))
    return out


def count_word(n: int) -> str:
    return _NUMBERS[n] if 0 <= n < len(_NUMBERS) else str(n)


__all__ = ["EXTRA_KEY", "TABLE", "TABLE_LOCATIONS", "Plan", "StatlerPlanError", "StatlerWorld", "count_word",
           "cup_states", "plan_query", "state_of"]
