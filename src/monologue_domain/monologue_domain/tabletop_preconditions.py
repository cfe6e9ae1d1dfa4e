"""The tabletop's pick-and-place preconditions in CAPE's form, one definition for every tabletop backend
(the kinematic world, the MuJoCo simulator's arm and the UR5e; no rclpy).

A backend describes what it knows - the objects and named locations (`TableThing`: position, whether it
is visible now and whether it can be picked), what the suction cup holds, and whether the arm can reach a
point (`Reach`: the arm backends ask their own safety limits) - and `check_pick_place` returns the first
violated precondition of pick_place(object, target), checked before anything moves:

    proposition    level  violated when                                       CAPE error type
    not_pickable   1      the object is a place target (bowl, plate, location)  X is not movable
    same_object    1      the target is the object itself                      X is not a receptacle
    hand_full      4      the suction cup already holds something               agent does not have a free hand
    not_visible    3      the object or target is known but not seen now        (ours; like agent is not close to X)
    not_clear      2      another block rests on the object                     (ours; like X is not open)
    not_reachable  4      the pick or place motion leaves the arm's limits      (ours; no skill brings it closer)

Levels follow CAPE Tables III-V (1 no correction needed, 2 one-step, 3 multi-step, 4 long-term or
ambiguous); `hand_full` is the kitchen's proposition with the kitchen's level. The refusal travels in
ExecuteSkill's `failed_precondition` as the kitchen's line (monologue_domain.kitchen.skills):

    <proposition>: I cannot <part of the skill> because <reason>
    e.g. "not_clear: I cannot pick up the red block because the blue block is on top of it"

The part is the half of the skill that cannot run ("pick up the red block", "place the red block on the
blue bowl"). Error code PRECONDITION_FAILED, except not_reachable: OUT_OF_LIMITS (the interface's code
for a target outside the configured workspace; nothing moved), with the same line. A name the backend does
not know at all is INVALID_ARGUMENTS, not a precondition.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from .skills import SkillError, SkillRejected
from .tabletop import BLOCK_SIZE, STACK_XY_TOLERANCE

Vec3 = tuple[float, float, float]

# proposition -> (CAPE difficulty level 1-4, the CAPE error type it corresponds to)
PROPOSITIONS: dict[str, tuple[int, str]] = {
    "not_pickable": (1, "X is not movable"),
    "same_object": (1, "X is not a receptacle"),
    "not_clear": (2, "X is covered (ours; like X is not open: one step uncovers it)"),
    "not_visible": (3, "X is not seen (ours; like agent is not close to X)"),
    "hand_full": (4, "agent does not have a free hand"),
    "not_reachable": (4, "X is out of reach (ours; no skill brings it closer)"),
}
SKILL_TEXT = "pick up the {0} and place it on the {1}"  # pick_place(object, target) in words
STACK_MIN_RISE = BLOCK_SIZE / 2  # m: a thing counts as resting on a block when its centre is this much higher


@dataclass(frozen=True)
class TableThing:
    """An object or named location as a backend knows it: `position` is its pick point (a block's centre
    or top, a bowl's base centre, a location's table point), m in the base frame."""

    name: str
    category: str  # "block", "bowl", "location", a detector label
    position: Vec3
    visible: bool = True  # seen now; False: remembered but occluded or out of view
    pickable: bool = True  # False for place targets (bowls, plates, locations)
    on_top: tuple[str, ...] | None = None  # what rests on it, if the backend knows (ground truth); None =
    # from the positions (things_on_top)


class Reach(Protocol):
    """Whether the arm can reach a thing: the arm backends answer from their own safety limits."""

    def unreachable(self, thing: TableThing, place: bool) -> str | None:
        """Why the pick (place=False) or place motion at `thing` would leave the limits, or None."""
        ...


@dataclass(frozen=True)
class TabletopPrecondition:
    """One violated precondition of pick_place(object, target)."""

    proposition: str  # a key of PROPOSITIONS
    action: str  # the half of the skill that cannot run: "pick up the red block"
    reason: str  # first person / world: "the blue block is on top of it"
    detail: str = ""  # the backend's own words (e.g. the safety layer's), for the message only

    @property
    def difficulty(self) -> int:
        """CAPE difficulty level, 1-4."""
        return PROPOSITIONS[self.proposition][0]

    @property
    def implicit(self) -> str:
        """CAPE Z_I: "I cannot pick up the red block"."""
        return f"I cannot {self.action}"

    @property
    def explicit(self) -> str:
        """CAPE Z_E: "I cannot pick up the red block because the blue block is on top of it"."""
        return f"{self.implicit} because {self.reason}"

    @property
    def text(self) -> str:
        """The `failed_precondition` line: "<proposition>: <explicit>"."""
        return f"{self.proposition}: {self.explicit}"

    @property
    def error(self) -> SkillError:
        return SkillError.OUT_OF_LIMITS if self.proposition == "not_reachable" else SkillError.PRECONDITION_FAILED

    def rejected(self) -> SkillRejected:
        """The refusal a backend raises: code, message (the explicit cause, then the detail) and line."""
        message = f"{self.explicit}; nothing moved" + (f": {self.detail}" if self.detail else "")
        return SkillRejected(self.error, message, self.text)


def pick_text(obj: str) -> str:
    return f"pick up the {obj}"


def place_text(obj: str, target: str) -> str:
    return f"place the {obj} on the {target}"


def _names(names: list[str]) -> str:
    """"the a", "the a and the b", "the a, the b and the c"."""
    the = [f"the {n}" for n in names]
    return the[0] if len(the) == 1 else ", ".join(the[:-1]) + " and " + the[-1]


def things_on_top(things: Mapping[str, TableThing], name: str) -> list[str]:
    """Pickable things resting on `name` (directly or higher in the same stack): the backend's own
    answer if it gave one (TableThing.on_top), else those within STACK_XY_TOLERANCE in x-y and more
    than STACK_MIN_RISE higher, m."""
    base = things[name]
    if base.on_top is not None:
        return list(base.on_top)
    if not base.pickable:
        return []
    bx, by, bz = base.position
    return [t.name for t in things.values()
            if t.name != name and t.pickable and math.hypot(t.position[0] - bx, t.position[1] - by) < STACK_XY_TOLERANCE
            and t.position[2] > bz + STACK_MIN_RISE]


def unknown_argument(things: Mapping[str, TableThing], obj: str, target: str) -> SkillRejected | None:
    """INVALID_ARGUMENTS for a name the backend does not know at all (not a precondition)."""
    for role, name in (("object", obj), ("target", target)):
        if name not in things:
            known = sorted(things)
            return SkillRejected(SkillError.INVALID_ARGUMENTS, f"there is no {name!r} ({role}) in the scene; "
                                 f"known: {known}")
    return None


def check_pick_place(things: Mapping[str, TableThing], obj: str, target: str, *, held: str | None,
                     reach: Reach | None) -> TabletopPrecondition | None:
    """The first violated precondition of pick_place(obj, target), or None if it may run. Both names
    must be keys of `things` (see unknown_argument). `held`: what the suction cup holds ("something" if
    it holds an unknown thing), None if nothing; `reach`: None = everything is reachable."""
    o, t = things[obj], things[target]
    pick, place = pick_text(obj), place_text(obj, target)
    if not o.pickable:
        return TabletopPrecondition("not_pickable", pick, f"I can only put things on the {obj}")
    if target == obj:
        return TabletopPrecondition("same_object", place, "nothing can be placed on itself")
    if held is not None:
        what = "something" if held == "something" else f"the {held}"
        return TabletopPrecondition("hand_full", pick, f"I am already holding {what}")
    if not o.visible:
        return TabletopPrecondition("not_visible", pick, f"I cannot see the {obj}")
    above = things_on_top(things, obj)
    if above:
        verb = "is" if len(above) == 1 else "are"
        return TabletopPrecondition("not_clear", pick, f"{_names(above)} {verb} on top of it")
    if not t.visible:
        return TabletopPrecondition("not_visible", place, f"I cannot see the {target}")
    if reach is not None:
        for thing, is_place, action in ((o, False, pick), (t, True, place)):
            why = reach.unreachable(thing, is_place)
            if why is not None:
                return TabletopPrecondition("not_reachable", action, f"the {thing.name} is out of my reach", why)
    return None


__all__ = ["PROPOSITIONS", "SKILL_TEXT", "STACK_MIN_RISE", "Reach", "TableThing", "TabletopPrecondition",
           "check_pick_place", "things_on_top", "unknown_argument"]
