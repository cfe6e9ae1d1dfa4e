"""Goal predicates on a KitchenState, and a reference symbolic executor of SayCan's skills (no rclpy).

Predicate language (data, e.g. in config/benchmarks/*.yaml):

    at(O, L)            an instance of object O (or instance "coke#2") lies at location / in container L
    in(O, C)            the same as at(O, C), for containers ("top drawer")
    holding(O)          the robot holds an instance of O
    hand_empty()        the robot holds nothing
    robot_at(L)         the robot is at L
    open(C)             container C is open
    delivered(O)        at(O, user), or the robot holds O at the user (handed over, not yet put down)
    visited(L)          the robot was at L at some point of the episode: the state's own record
                        (KitchenState.visited, kept by the worlds and their ground truth) or the history
    n_at(N, O, L)       at least N instances of O lie at L
    not(P)  all(P, ...)  any(P, ...)
    any_of_objects([O, ...], P)   P holds with `?` replaced by one of the objects
    at_least(N, [O, ...], P)      P holds for at least N of the objects (distinct ones)

A list may name a category of vocabulary.CATEGORIES with `@`, e.g. `any_of_objects([@sodas], holding(?))`.
Names may contain spaces: `at(grapefruit soda, far counter)`.

`apply(skill, state)` executes one skill symbolically, raising SkillError when a precondition fails.
It is the reference semantics the benchmark's acceptable plans are checked against, and follows the
preconditions of the `sim_kitchen` world (kitchen.world.KitchenWorld; a test checks they agree):
- find a X: not when holding an X or when it is in a closed drawer; the robot goes to where an instance
  of X is (in a drawer: to the drawers): one not in the trash or at the user if there is one, at the
  robot's own place if possible, else the first in the state's order;
- go to the L: the robot moves to L (a NAV_TARGET);
- pick up the X: the hand is empty and an instance of X is at the robot's place (not in a closed drawer);
- put down the X: the robot holds an X; it lands at the robot's place;
- bring it to you: the robot holds something and moves to the user, still holding it (SayCan's prompt
  follows it with "put down the X" to hand the object over);
- open / close the drawer: at the drawers, with an empty hand, the drawer closed / open;
- put X in the drawer: holding an X at the drawers, the drawer open; X goes into it;
- done: nothing.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from .state import HELD, KitchenState
from .vocabulary import (
    BRING,
    CATEGORIES,
    CLOSE,
    CONTAINERS,
    DONE,
    DRAWERS,
    FIND,
    GO_TO,
    LOCATIONS,
    OPEN,
    PICK,
    PLACES,
    PUT,
    PUT_IN,
    USER,
    is_object,
    object_type,
    parse_skill,
)

VAR = "?"


# ----- AST -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Call:
    """A predicate application: name(args); an argument is a name, a list of names, or a Call."""

    name: str
    args: tuple[Arg, ...]

    def __str__(self) -> str:
        return f"{self.name}({', '.join(_arg_text(a) for a in self.args)})"


Arg = str | tuple[str, ...] | Call


def _arg_text(a: Arg) -> str:
    if isinstance(a, tuple):
        return "[" + ", ".join(a) + "]"
    return str(a)


# Predicate name -> argument kinds: o object, l location (PLACES and containers), r a place the robot can
# be at, c container, n count, p predicate,
# L object list, * any number of predicates.
SIGNATURES: dict[str, str] = {
    "at": "ol", "in": "oc", "holding": "o", "hand_empty": "", "robot_at": "r", "open": "c",
    "delivered": "o", "visited": "r", "n_at": "nol", "not": "p", "all": "*", "any": "*",
    "any_of_objects": "Lp", "at_least": "nLp",
}


class PredicateError(ValueError):
    """An unparsable or ill-typed predicate."""


_TOKEN = re.compile(r"\s*([(),\[\]]|[^(),\[\]]+)")


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:  # pragma: no cover - the pattern matches any character
            raise PredicateError(f"cannot tokenize {text[pos:]!r}")
        tok = m.group(1).strip()
        if tok:
            out.append(tok)
        pos = m.end()
    return out


def parse(text: str) -> Call:
    """The predicate `text` parsed and checked (names, arity, argument kinds); PredicateError if not."""
    toks = _tokens(text)
    if not toks:
        raise PredicateError("empty predicate")
    node, i = _parse_term(toks, 0, text)
    if i != len(toks):
        raise PredicateError(f"unexpected {toks[i]!r} in {text!r}")
    if not isinstance(node, Call):
        raise PredicateError(f"{text!r} is not a predicate call")
    _check(node, bound=False)
    return node


def _parse_term(toks: list[str], i: int, src: str) -> tuple[Arg, int]:
    if i >= len(toks):
        raise PredicateError(f"unexpected end of {src!r}")
    tok = toks[i]
    if tok == "[":
        items: list[str] = []
        i += 1
        while i < len(toks) and toks[i] != "]":
            if toks[i] == ",":
                i += 1
                continue
            if toks[i] in "()[":
                raise PredicateError(f"a list holds names only: {src!r}")
            items.extend(_expand(" ".join(toks[i].split())))
            i += 1
        if i >= len(toks):
            raise PredicateError(f"unclosed [ in {src!r}")
        return tuple(items), i + 1
    if tok in "()],":
        raise PredicateError(f"unexpected {tok!r} in {src!r}")
    name = " ".join(tok.split())
    if i + 1 < len(toks) and toks[i + 1] == "(":
        args: list[Arg] = []
        i += 2
        while True:
            if i >= len(toks):
                raise PredicateError(f"unclosed ( in {src!r}")
            if toks[i] == ")":
                return Call(name, tuple(args)), i + 1
            arg, i = _parse_term(toks, i, src)
            args.append(arg)
            if i < len(toks) and toks[i] == ",":
                i += 1
            elif i < len(toks) and toks[i] != ")":
                raise PredicateError(f"expected , or ) after {_arg_text(arg)!r} in {src!r}")
    return name, i + 1


def _expand(name: str) -> list[str]:
    if name.startswith("@"):
        try:
            return list(CATEGORIES[name[1:]])
        except KeyError:
            raise PredicateError(f"unknown category {name!r}; known: {sorted(CATEGORIES)}") from None
    return [name]


def _check(node: Call, bound: bool) -> None:
    sig = SIGNATURES.get(node.name)
    if sig is None:
        raise PredicateError(f"unknown predicate {node.name!r}; known: {sorted(SIGNATURES)}")
    if sig == "*":
        if not node.args:
            raise PredicateError(f"{node.name}() needs at least one predicate")
        kinds = "p" * len(node.args)
    else:
        kinds = sig
    if len(node.args) != len(kinds):
        raise PredicateError(f"{node} takes {len(kinds)} argument(s)")
    for kind, a in zip(kinds, node.args):
        if kind == "p":
            if not isinstance(a, Call):
                raise PredicateError(f"{node}: {_arg_text(a)!r} is not a predicate")
            _check(a, bound or node.name in ("any_of_objects", "at_least"))
            continue
        if isinstance(a, Call):
            raise PredicateError(f"{node}: {a} where a name is expected")
        if kind == "L":
            if not isinstance(a, tuple) or not a:
                raise PredicateError(f"{node}: expected a non-empty object list")
            for o in a:
                if not is_object(o):
                    raise PredicateError(f"{node}: unknown object {o!r}")
            continue
        if isinstance(a, tuple):
            raise PredicateError(f"{node}: unexpected list {_arg_text(a)}")
        if kind == "n":
            if not a.isdigit() or int(a) < 1:
                raise PredicateError(f"{node}: {a!r} is not a positive count")
        elif kind == "o":
            if not (is_object(a) or (bound and a == VAR)):
                raise PredicateError(f"{node}: unknown object {a!r}" + (
                    "" if bound else " (`?` only inside any_of_objects / at_least)"))
        elif kind == "l" and a not in LOCATIONS:
            raise PredicateError(f"{node}: unknown location {a!r}; known: {list(LOCATIONS)}")
        elif kind == "r" and a not in PLACES:
            raise PredicateError(f"{node}: unknown robot place {a!r}; known: {list(PLACES)}")
        elif kind == "c" and a not in CONTAINERS:
            raise PredicateError(f"{node}: unknown container {a!r}; known: {list(CONTAINERS)}")


# ----- evaluation ----------------------------------------------------------------------------------
def _instances(state: KitchenState, obj: str) -> list[str]:
    if obj != object_type(obj):  # an instance name
        return [obj] if obj in state.object_locations else []
    return [o for o in state.object_locations if object_type(o) == obj]


def _holds(state: KitchenState, obj: str) -> bool:
    return state.holding is not None and (state.holding == obj or object_type(state.holding) == obj)


def evaluate(pred: Call | str, state: KitchenState, history: Sequence[KitchenState] = ()) -> bool:
    """Whether `pred` holds on `state`; `history` are the episode's earlier states (for visited)."""
    node = parse(pred) if isinstance(pred, str) else pred
    return _eval(node, state, history, None)


def _name(a: Arg, var: str | None) -> str:
    assert isinstance(a, str)
    return var if a == VAR and var is not None else a


def _eval(node: Call, s: KitchenState, hist: Sequence[KitchenState], var: str | None) -> bool:
    n, a = node.name, node.args
    if n in ("at", "in"):
        loc = _name(a[1], var)
        return any(s.object_locations[o] == loc for o in _instances(s, _name(a[0], var)))
    if n == "holding":
        return _holds(s, _name(a[0], var))
    if n == "hand_empty":
        return s.holding is None
    if n == "robot_at":
        return s.robot_location == _name(a[0], var)
    if n == "open":
        return _name(a[0], var) in s.open_containers
    if n == "delivered":
        obj = _name(a[0], var)
        return (any(s.object_locations[o] == USER for o in _instances(s, obj))
                or (_holds(s, obj) and s.robot_location == USER))
    if n == "visited":
        loc = _name(a[0], var)
        return any(loc in h.places_visited for h in (*hist, s))
    if n == "n_at":
        count, obj, loc = int(_name(a[0], var)), _name(a[1], var), _name(a[2], var)
        return sum(s.object_locations[o] == loc for o in _instances(s, obj)) >= count
    if n == "not":
        return not _eval(_sub(a[0]), s, hist, var)
    if n == "all":
        return all(_eval(_sub(p), s, hist, var) for p in a)
    if n == "any":
        return any(_eval(_sub(p), s, hist, var) for p in a)
    if n == "any_of_objects":
        objs = a[0]
        assert isinstance(objs, tuple)
        return any(_eval(_sub(a[1]), s, hist, o) for o in objs)
    if n == "at_least":
        objs = a[1]
        assert isinstance(objs, tuple)
        return sum(_eval(_sub(a[2]), s, hist, o) for o in dict.fromkeys(objs)) >= int(_name(a[0], var))
    raise PredicateError(f"unknown predicate {n!r}")  # pragma: no cover - parse() rejects it


def _sub(a: Arg) -> Call:
    assert isinstance(a, Call)
    return a


def objects_named(pred: Call) -> set[str]:
    """The object types a predicate mentions (for start-state checks)."""
    out: set[str] = set()
    for a in pred.args:
        if isinstance(a, Call):
            out |= objects_named(a)
        elif isinstance(a, tuple):
            out |= {object_type(o) for o in a}
        elif is_object(a):
            out.add(object_type(a))
    return out


# ----- reference executor --------------------------------------------------------------------------
class SkillError(RuntimeError):
    """A skill whose precondition fails on the state (the state is left unchanged)."""

    def __init__(self, skill: str, reason: str) -> None:
        super().__init__(f"{skill!r}: {reason}")
        self.skill = skill
        self.reason = reason


def _place(state: KitchenState, where: str) -> str:
    """The robot-reachable place of an object location (a container is at the drawers)."""
    return DRAWERS if where in CONTAINERS else where


def _moved(state: KitchenState, to: str) -> KitchenState:
    """The robot at `to`, its visit recorded (as kitchen.world does: from the first move on)."""
    if to == state.robot_location:
        return state
    return replace(state, robot_location=to, visited=state.places_visited | {to})


def apply(skill: str, state: KitchenState) -> KitchenState:
    """The state after executing `skill` (vocabulary words, e.g. "pick up the coke"); SkillError if a
    precondition fails, ValueError if the words are not a skill. Moves are recorded in `visited`."""
    template, arg = parse_skill(skill)
    locs = dict(state.object_locations)
    here = state.robot_location
    drawer = CONTAINERS[0]
    if template == DONE:
        return state
    if template == GO_TO:
        return _moved(state, arg)
    if template == BRING:
        if state.holding is None:
            raise SkillError(skill, "the robot is not holding anything")
        return _moved(state, USER)
    reachable = [o for o in _instances(state, arg)
                 if locs[o] != HELD and not (locs[o] in CONTAINERS and locs[o] not in state.open_containers)]
    if template == FIND:
        if _holds(state, arg):
            raise SkillError(skill, f"the robot already holds the {arg}")
        if not reachable:
            raise SkillError(skill, f"no {arg} to find (none, or inside a closed drawer)")
        fresh = [o for o in reachable if locs[o] not in ("trash", USER)] or reachable
        target = next((o for o in fresh if _place(state, locs[o]) == here), fresh[0])
        return _moved(state, _place(state, locs[target]))
    if template == PICK:
        if state.holding is not None:
            raise SkillError(skill, f"the hand is not empty (holding the {object_type(state.holding)})")
        cands = [o for o in reachable if _place(state, locs[o]) == here]
        if not cands:
            raise SkillError(skill, f"no {arg} at the {here} (or only inside a closed drawer)")
        locs[cands[0]] = HELD
        return replace(state, holding=cands[0], object_locations=locs)
    if template in (PUT, PUT_IN):
        if state.holding is None or not _holds(state, arg):
            raise SkillError(skill, f"the robot does not hold the {arg}")
        if template == PUT_IN and here != DRAWERS:
            raise SkillError(skill, "the robot is not at the drawers")
        if template == PUT_IN and drawer not in state.open_containers:
            raise SkillError(skill, f"the {drawer} is closed")
        locs[state.holding] = drawer if template == PUT_IN else here
        return replace(state, holding=None, object_locations=locs)
    if template in (OPEN, CLOSE):
        is_open = drawer in state.open_containers
        if template == OPEN and is_open:
            raise SkillError(skill, f"the {drawer} is already open")
        if template == CLOSE and not is_open:
            raise SkillError(skill, f"the {drawer} is already closed")
        if here != DRAWERS:
            raise SkillError(skill, "the robot is not at the drawers")
        if state.holding is not None:
            raise SkillError(skill, f"the hand is not empty (holding the {object_type(state.holding)})")
        opened = state.open_containers - {drawer} if is_open else state.open_containers | {drawer}
        return replace(state, open_containers=frozenset(opened))
    raise ValueError(f"unhandled skill {skill!r}")  # pragma: no cover - parse_skill rejects it


def run(skills: Iterable[str], state: KitchenState) -> list[KitchenState]:
    """The states after each skill (the start state first); SkillError at the first failing skill."""
    out = [state]
    for skill in skills:
        out.append(apply(skill, out[-1]))
    return out


def make_state(robot: str, places: Mapping[str, str], holding: str | None = None,
               open_containers: Iterable[str] = ()) -> KitchenState:
    """A KitchenState from object -> location (the held object, if any, is added as HELD)."""
    locs = dict(places)
    if holding is not None:
        locs[holding] = HELD
    return KitchenState(robot_location=robot, holding=holding, object_locations=locs,
                        open_containers=frozenset(open_containers))


__all__ = ["Call", "PredicateError", "SkillError", "SIGNATURES", "apply", "evaluate", "make_state",
           "objects_named", "parse", "run"]
