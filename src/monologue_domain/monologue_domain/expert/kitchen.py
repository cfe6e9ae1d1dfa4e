"""The kitchen's expert planner (SayCan's office kitchen, monologue_domain.kitchen; no rclpy): from the
world's truth and an instruction's goal, the shortest correct skill sequence.

Truth: the kitchen scene the `kitchen` skills backend writes (`channel.write_world`), which encodes the
whole KitchenState losslessly (kitchen.scene: object places, the held object, the open drawers, the
robot's place and the places it has `visited` during the episode). The backend's `expert_extra()` adds
the same state as JSON under "kitchen_state" (used when present, else the scene is decoded).

Goal (`tasks.json`, written by the kitchen suites through `goal_of`), a dict:

    {"predicate": "<goal predicate, kitchen.goals' language>",     # required
     "plans": [["find a coke", "pick up the coke", "done"], ...]}   # optional: the suite's example plans

The planner searches breadth first over the reference semantics (kitchen.goals.apply, which the world
follows) from the current state to a state where the predicate holds. The steps it considers: "find a X",
"pick up the X", "put down the X" and "put X in the drawer" for the objects the predicate names and the
held one, "go to the L" for every navigation target, "bring it to you", and the drawer's open / close.
Among shortest plans it prefers, in this order, one that continues an example plan (the steps taken so
far are a prefix of it), then the first found in the step order above (find before go to, so reaching an
object reads "find a X" as in SayCan's prompt). A state where the predicate holds gets "done".
"""
from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..kitchen.goals import Call, SkillError, apply, evaluate, objects_named, parse
from ..kitchen.scene import state_from_scene
from ..kitchen.state import HELD, KitchenState
from ..kitchen.vocabulary import (
    BRING,
    CLOSE,
    CONTAINERS,
    DONE,
    FIND,
    GO_TO,
    NAV_TARGETS,
    OPEN,
    PICK,
    PUT,
    PUT_IN,
    object_type,
    skill_text,
)
from .channel import WorldTruth

WORLD = "kitchen"
MAX_DEPTH = 24  # skills; the longest SayCan 101 plan has 12
MAX_NODES = 200_000  # states expanded before giving up


class KitchenPlanError(RuntimeError):
    """No plan reaches the goal from this state (or the goal / truth is malformed)."""


@dataclass(frozen=True)
class KitchenGoal:
    """An instruction's goal, parsed."""

    predicate: Call
    plans: tuple[tuple[str, ...], ...] = ()  # example plans, each ending with "done"
    objects: frozenset[str] = field(default_factory=frozenset)  # object types the predicate names

    @classmethod
    def from_dict(cls, goal: Mapping[str, Any]) -> KitchenGoal:
        try:
            pred = parse(str(goal["predicate"]))
        except KeyError:
            raise KitchenPlanError(f"kitchen goal {dict(goal)!r} has no 'predicate'") from None
        except ValueError as e:
            raise KitchenPlanError(f"kitchen goal: {e}") from None
        plans = tuple(tuple(_norm(s) for s in p) for p in goal.get("plans") or ())
        return cls(pred, plans, frozenset(objects_named(pred)))


def goal_dict(predicate: str, plans: Sequence[Sequence[str]] = ()) -> dict[str, Any]:
    """The goal dict of the module docstring."""
    return {"predicate": predicate, "plans": [list(p) for p in plans]}


def goal_of(instr: Any) -> dict[str, Any]:
    """The goal dict of a kitchen suite's Instruction (kitchen.suites): its predicate and example plans."""
    from ..kitchen.suites import example_plans

    return goal_dict(str(instr.goal), example_plans(instr))


def state_json(state: KitchenState) -> dict[str, Any]:
    """A KitchenState as JSON (the backend's `expert_extra()["kitchen_state"]`)."""
    return {"robot": state.robot_location, "holding": state.holding, "objects": dict(state.object_locations),
            "open": sorted(state.open_containers), "visited": sorted(state.visited),
            "states": {k: sorted(v) for k, v in state.states.items()}}


def state_from_json(d: Mapping[str, Any]) -> KitchenState:
    """The inverse of `state_json`."""
    states = {str(k): frozenset(v) for k, v in (d.get("states") or {}).items()}
    return KitchenState(str(d["robot"]), d.get("holding"), dict(d["objects"]), frozenset(d.get("open", ())),
                        states, frozenset(d.get("visited", ())))


def state_of(truth: WorldTruth) -> KitchenState:
    """The KitchenState in a kitchen world's truth."""
    if truth.world != WORLD:
        raise KitchenPlanError(f"the truth is of a {truth.world!r} world, not the kitchen")
    raw = truth.extra.get("kitchen_state")
    if isinstance(raw, Mapping):
        return state_from_json(raw)
    return state_from_scene(truth.objects)


def _norm(skill: str) -> str:
    return " ".join(skill.strip().lower().rstrip(".").split())


def _key(s: KitchenState, with_visited: bool) -> tuple[Any, ...]:
    return (s.robot_location, s.holding, tuple(sorted(s.object_locations.items())), s.open_containers,
            s.visited if with_visited else None)


def _fetchable(s: KitchenState, obj: str) -> bool:
    """Whether an instance of `obj` lies somewhere "find" would fetch it from (not delivered or thrown away)."""
    return any(object_type(o) == obj and w not in ("trash", "user", HELD) for o, w in s.object_locations.items())


def candidate_steps(s: KitchenState, goal: KitchenGoal) -> list[str]:
    """The steps considered from `s`, in preference order."""
    objs = sorted(goal.objects | ({object_type(s.holding)} if s.holding else set()))
    # "find a X" only to fetch X (an empty hand, an X not yet where the goal may want it), never as a way
    # to walk somewhere: a model following SayCan's prompt finds what it picks up next
    finds = [skill_text(FIND, o) for o in objs if s.holding is None and _fetchable(s, o)]
    out = finds + [skill_text(PICK, o) for o in objs]
    out += [skill_text(PUT, o) for o in objs] + [skill_text(GO_TO, loc) for loc in NAV_TARGETS] + [BRING]
    if any(s.object_locations.get(o) in CONTAINERS for o in s.object_locations) or any(
            c in str(goal.predicate) for c in CONTAINERS):
        out += [OPEN, CLOSE] + [skill_text(PUT_IN, o) for o in objs]
    return out


def plan(state: KitchenState, goal: KitchenGoal, done_steps: Sequence[str] = ()) -> list[str]:
    """The shortest skill sequence from `state` that makes the goal hold, ending with "done" (just
    ["done"] when it holds). `done_steps`: the episode's steps so far, to prefer continuing an example
    plan. KitchenPlanError when no plan of at most MAX_DEPTH skills exists."""
    if evaluate(goal.predicate, state):
        return [DONE]
    taken = [_norm(s) for s in done_steps]
    preferred = [list(p[len(taken):]) for p in goal.plans if list(p[:len(taken)]) == taken]
    best: list[str] | None = None
    for p in preferred:  # an example plan's rest that works from here, as short as any
        body = [s for s in p if s != DONE]
        try:
            s = state
            for step in body:
                s = apply(step, s)
        except (SkillError, ValueError):
            continue
        if evaluate(goal.predicate, s) and (best is None or len(body) < len(best)):
            best = body
    depth = len(best) - 1 if best is not None else MAX_DEPTH  # only a shorter plan beats an example's
    found = None
    pending = _found_last(state, taken)
    if pending:  # having just found an X, a model picks up that X when a plan goes on so
        found = _shortest(state, goal, depth, pending)
    if found is None:
        found = _shortest(state, goal, depth)
    if best is not None and (found is None or len(best) <= len(found)):
        return best + [DONE]
    if found is None:
        raise KitchenPlanError(f"no plan of at most {MAX_DEPTH} skills reaches {goal.predicate} from "
                               f"{state_json(state)}")
    return found + [DONE]


def _found_last(state: KitchenState, taken: Sequence[str]) -> str:
    """X when the episode's last step was "find a X" and the hand is empty (else "")."""
    if not taken or state.holding is not None:
        return ""
    words = taken[-1].split(" ", 2)
    return words[2] if len(words) == 3 and words[0] == "find" and words[1] in ("a", "an") else ""


def _search(state: KitchenState, goal: KitchenGoal, target: Call, with_visited: bool,
            depth: int, pending: str = "") -> list[str] | None:
    """Breadth-first search: the first shortest plan of at most `depth` skills that makes `target` hold, or
    None. A "find a X" is followed by "pick up the X" (find fetches, it does not walk); `pending`: an X
    the episode's last step found."""
    seen = {(_key(state, with_visited), pending)}
    queue: deque[tuple[KitchenState, tuple[str, ...], str]] = deque([(state, (), pending)])
    expanded = 0
    while queue:
        s, path, pending = queue.popleft()
        if len(path) >= depth:
            continue
        expanded += 1
        if expanded > MAX_NODES:
            raise KitchenPlanError(f"the search for {target} expanded {MAX_NODES} states")
        steps = [skill_text(PICK, pending)] if pending else candidate_steps(s, goal)
        for step in steps:
            try:
                nxt = apply(step, s)
            except (SkillError, ValueError):
                continue
            found = step.startswith("find ") and nxt.robot_location != s.robot_location
            if step.startswith("find ") and not found:
                continue  # already there: "find" would do nothing
            obj = step.split(" ", 2)[2] if found else ""
            k = (_key(nxt, with_visited), obj)
            if k in seen:
                continue
            if not obj and evaluate(target, nxt):
                return [*path, step]
            seen.add(k)
            queue.append((nxt, (*path, step), obj))
    return None


def _conjuncts(pred: Call) -> list[Call]:
    """The parts of a top-level all(...), else the predicate itself."""
    if pred.name == "all":
        return [a for a in pred.args if isinstance(a, Call)]
    return [pred]


def _shortest(state: KitchenState, goal: KitchenGoal, depth: int, pending: str = "") -> list[str] | None:
    """A plan to the goal: one search for a single predicate; for all(P1, P2, ...) the parts are reached
    one after the other in the instruction's order, each search keeping the parts reached before
    (searching the conjunction at once is too slow for three deliveries)."""
    with_visited = "visited(" in str(goal.predicate)
    parts = _conjuncts(goal.predicate)
    if len(parts) == 1:
        return _search(state, goal, goal.predicate, with_visited, depth, pending)
    out: list[str] = []
    s = state
    kept: list[Call] = []
    for part in parts:
        kept.append(part)
        target = Call("all", tuple(kept))
        if evaluate(target, s):
            continue
        sub = _search(s, goal, target, with_visited, depth - len(out), pending if not out else "")
        if sub is None:
            return None
        for step in sub:
            s = apply(step, s)
        out += sub
    return out


def next_step(state: KitchenState, goal: KitchenGoal, done_steps: Sequence[str] = ()) -> str:
    """The next skill's words ("done" when the goal holds)."""
    return plan(state, goal, done_steps)[0]


__all__ = ["HELD", "WORLD", "KitchenGoal", "KitchenPlanError", "candidate_steps", "goal_dict", "goal_of",
           "next_step", "plan", "state_from_json", "state_json", "state_of"]
