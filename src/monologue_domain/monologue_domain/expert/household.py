"""The expert planner of CAPE's household (robot sim_household, monologue_domain.kitchen.household; no rclpy).

Truth: the household backend's ground truth encodes the whole symbolic state (kitchen.scene's encoding,
read back with `state_from_scene`); the scene's fixed part (rooms, doors, things and their properties) and
the number of hands come from the backend's `expert_extra()` under "household" (`scene_to_json`), or, from
a truth without it, from the scene of `kitchen.household.SCENES` whose things the truth names.

Goal (tasks.json, written by `monologue-bench --suite cape`, the demo or a test):

    {"atoms": ["at(phone, nightstand)", "held(water bottle)", "on(iron)"]}

a conjunction of kitchen.household goal atoms over the final state (`parse_atom`).

The next step is the first step of `kitchen.household.reference_program` from the given state: stand up,
open the doors and containers on the way while a hand is free, fetch, put, switch on; None (done) when
the goal holds. `plan_from` replays a plan over a start state as the planner believes it ran: steps
refused in the prompt (followed by an error) change nothing, the others take effect, even a refused one
the prompt does not show as refused (an open-loop plan; `HouseholdWorld.assume`).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..kitchen.household import (
    SCENES,
    Atom,
    Door,
    HouseholdScene,
    HouseholdWorld,
    NoReferencePlan,
    Thing,
    goal_holds,
    household_text,
    parse_atom,
    reference_program,
)
from ..kitchen.scene import state_from_scene
from ..kitchen.skills import HOUSEHOLD_SKILLS
from ..kitchen.state import HELD, KitchenState
from .channel import WorldTruth

WORLD = "household"
Step = tuple[str, tuple[str, ...]]  # (skill, args)


def scene_to_json(scene: HouseholdScene, hands: int) -> dict[str, Any]:
    """The scene's fixed part for the truth's `extra` (the household backend's `expert_extra`)."""
    return {"rooms": list(scene.rooms), "doors": [{"name": d.name, "rooms": list(d.rooms)} for d in scene.doors],
            "things": [{"name": t.name, "properties": sorted(t.properties), "capacity": t.capacity}
                       for t in scene.things], "hands": hands}


def scene_from_json(d: Mapping[str, Any]) -> tuple[HouseholdScene, int]:
    scene = HouseholdScene(
        rooms=tuple(str(r) for r in d["rooms"]),
        doors=tuple(Door(str(x["name"]), (str(x["rooms"][0]), str(x["rooms"][1]))) for x in d["doors"]),
        things=tuple(Thing(str(x["name"]), frozenset(str(p) for p in x["properties"]), int(x.get("capacity", 0)))
                     for x in d["things"]))
    return scene, int(d.get("hands", 1))


def scene_named(names: Iterable[str]) -> HouseholdScene:
    """The scene of SCENES whose things are exactly `names` (a truth without the scene in `extra`)."""
    want = set(names)
    for make in SCENES.values():
        scene = make()[0]
        if {t.name for t in scene.things} == want:
            return scene
    raise ValueError(f"no household scene has exactly the things {sorted(want)}")


@dataclass(frozen=True)
class HouseholdTruth:
    """A household world's truth, decoded."""

    scene: HouseholdScene
    state: KitchenState
    hands: int = 1

    def world(self) -> HouseholdWorld:
        return HouseholdWorld(self.scene, self.state, self.hands)


def household_truth(truth: WorldTruth) -> HouseholdTruth:
    """Decode a household backend's truth; ValueError when it is not one."""
    state = state_from_scene(truth.objects)
    extra = truth.extra.get(WORLD) if isinstance(truth.extra, Mapping) else None
    if isinstance(extra, Mapping):
        scene, hands = scene_from_json(extra)
    else:
        scene, hands = scene_named(state.object_locations), 1
    return HouseholdTruth(scene, state, hands)


def goal_atoms(goal: Mapping[str, Any]) -> tuple[Atom, ...]:
    """The atoms of a task's goal dict ({"atoms": [...]}); ValueError on a malformed one."""
    atoms = goal.get("atoms")
    if not isinstance(atoms, list) or not atoms:
        raise ValueError(f"household goal {dict(goal)!r}: expected {{'atoms': ['at(x, y)', ...]}}")
    return tuple(parse_atom(str(a)) for a in atoms)


def goal_json(atoms: Sequence[Atom]) -> dict[str, Any]:
    """The goal dict of a conjunction of atoms (what the runner writes to tasks.json)."""
    return {"atoms": [f"{a[0]}({', '.join(a[1:])})" for a in atoms]}


def step_text(step: Step) -> str:
    """The household's words for a step, as CAPE's household file and the household profile say it."""
    return household_text(step[0], step[1])


def instances(scene: HouseholdScene) -> dict[str, Step]:
    """Every skill instance of the scene by its text (lower case)."""
    w = HouseholdWorld(scene, KitchenState(scene.rooms[0], None, {t.name: scene.rooms[0] for t in scene.things}))
    return {step_text((s, a)): (s, a) for s, a in w.instances()}


def plan(t: HouseholdTruth, goal: Sequence[Atom]) -> list[Step]:
    """The reference program from the truth's state ([] when the goal holds); NoReferencePlan if none."""
    if goal_holds(t.state, goal):
        return []
    return [(s, tuple(a)) for s, a in reference_program(t.scene, t.state, goal, t.hands)]


def next_step(t: HouseholdTruth, goal: Sequence[Atom]) -> Step | None:
    """The next correct step, None when the goal holds (the plan is done)."""
    w = t.world()
    for step in plan(t, goal):  # the first step that changes the state (walking where it stands does not)
        before = w.state()
        w.execute(step[0], step[1])
        if w.state() != before:
            return step
    return None


def plan_from(t: HouseholdTruth, steps: Sequence[tuple[Step, bool]]) -> HouseholdTruth:
    """The state the planner believes in after `steps` from `t`: (step, refused) pairs; a refused step
    changes nothing, any other takes effect as if it had run (`HouseholdWorld.assume`)."""
    w = t.world()
    for step, refused in steps:
        if not refused:
            w.assume(step[0], step[1])
    return HouseholdTruth(t.scene, w.state(), t.hands)


def refused(t: HouseholdTruth, step: Step) -> bool:
    """Whether `step` would be refused (a precondition or an invalid call) in the truth's state."""
    w = t.world()
    return w.invalid(step[0], step[1]) is not None or w.check(step[0], step[1]) is not None


def wrong_steps(t: HouseholdTruth, goal: Sequence[Atom], limit: int = 3) -> list[Step]:
    """Plausible wrong next steps (for the stand-in's error rate): the plan's later steps taken too
    early (skipping standing up, a door, walking to the thing: CAPE's precondition errors, mostly), then
    the plan's steps from an optimistic start (standing, doors and containers open, hands free)."""
    right = next_step(t, goal)
    out: list[Step] = []
    try:
        p = plan(t, goal)
    except NoReferencePlan:
        p = []
    cands = list(p[1:4])
    where = dict(t.state.object_locations)
    free = {o: (t.scene.rooms[0] if w == HELD else w) for o, w in where.items()}
    optimistic = KitchenState(t.state.robot_location, None, free,
                              frozenset(x.name for x in t.scene.things if "openable" in x.properties),
                              {**dict(t.state.states), "robot": frozenset({"standing"})}, t.state.visited)
    try:
        cands += plan(HouseholdTruth(t.scene, optimistic, t.hands), goal)[:3]
    except (NoReferencePlan, ValueError):
        pass
    for s in cands:
        if s != right and s not in out:
            out.append(s)
    return out[:limit]


__all__ = ["WORLD", "HouseholdTruth", "NoReferencePlan", "Step", "goal_atoms", "goal_json", "household_truth",
           "instances", "next_step", "plan", "plan_from", "refused", "scene_from_json", "scene_named", "scene_to_json",
           "step_text", "wrong_steps", "HOUSEHOLD_SKILLS"]
