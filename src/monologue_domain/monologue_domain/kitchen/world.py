"""SayCan's office kitchen as a symbolic world with preconditions (SC §3.4, IM §4.3, CAPE §2; no rclpy).

Build one from a start state (`KitchenState`, see `make_state` / `default_state`), run skills with
`execute(skill, args)` and read it back with `state()` or, as a scene, `scene_objects()`
(kitchen.scene). Every skill has preconditions (`check`); a skill whose preconditions fail changes
nothing and returns PRECONDITION_FAILED with a `PreconditionError.text` line. Affordances
(`affordances`) come from the same preconditions: a perfect oracle, or a noisy one that flips each
value with probability `KitchenNoise.affordance_flip` (CAPE's noisy SayCan: 6%).

IM §4.3's disturbances, all seeded: a skill that fails at random (nothing happens), a carried object
dropped during a skill, and an object moved by a person during a skill. By default they are silent
(the skill reports NONE, as a policy that believes it finished would), so only success detection
notices them; `KitchenNoise.report_failures` makes a random failure report EXECUTION_FAILED.
"""
from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..scene import SceneObject
from ..skills import Affordance, SkillError, SkillOutcome
from .layout import (
    DEFAULT_PLACEMENTS,
    DRAWERS,
    DRAWERS_LOCATION,
    LOCATIONS,
    NAV_TARGETS,
    OBJECTS,
    START,
    SURFACES,
    USER,
    object_type,
)
from .skills import SKILLS, PreconditionError, skill_text
from .state import HELD, KitchenState


def parse_placements(items: Iterable[str]) -> dict[str, str]:
    """"object@where" strings (where: a location, a drawer or "robot") -> {object: where}."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, where = item.partition("@")
        name, where = name.strip(), where.strip()
        if not sep or not name or not where:
            raise ValueError(f"placement {item!r}: expected 'object@location', e.g. 'coke@far counter'")
        if name in out:
            raise ValueError(f"placement {item!r}: the {name} is placed twice")
        out[name] = where
    return out


def make_state(placements: Mapping[str, str], robot_location: str = START,
               open_drawers: Iterable[str] = (), drawers: Sequence[str] = DRAWERS) -> KitchenState:
    """A validated start state. An object placed at "robot" (HELD) is the one held; ValueError
    naming the problem otherwise (unknown location or drawer, two objects held)."""
    known = set(LOCATIONS) | set(drawers) | {HELD}
    held = [o for o, w in placements.items() if w == HELD]
    problems = [f"the {o} is at unknown place {w!r} (known: {sorted(known)})"
                for o, w in placements.items() if w not in known]
    if robot_location not in LOCATIONS:
        problems.append(f"unknown robot location {robot_location!r} (known: {list(LOCATIONS)})")
    if len(held) > 1:
        problems.append(f"one hand holds one object, not {held}")
    bad = [d for d in open_drawers if d not in drawers]
    if bad:
        problems.append(f"unknown drawers {bad} (known: {list(drawers)})")
    if problems:
        raise ValueError("; ".join(problems))
    return KitchenState(robot_location, held[0] if held else None, dict(placements), frozenset(open_drawers))


def default_state() -> KitchenState:
    return make_state(DEFAULT_PLACEMENTS)


@dataclass(frozen=True)
class KitchenNoise:
    """Probabilities in [0, 1], drawn from the world's seed."""

    affordance_flip: float = 0.0  # each affordance value flipped (CAPE's noisy oracle: 0.06)
    failure_rate: float = 0.0  # an executable skill does nothing
    drop_rate: float = 0.0  # the carried object falls at the robot's place during a skill
    move_rate: float = 0.0  # a person moves an object (the skill's, else a random one) during a skill
    report_failures: bool = False  # a random failure reports EXECUTION_FAILED instead of NONE

    def __post_init__(self) -> None:
        for name in ("affordance_flip", "failure_rate", "drop_rate", "move_rate"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {v}")


class KitchenWorld:
    """The mutable world. Not thread-safe: the backend serialises access."""

    def __init__(self, start: KitchenState, seed: int = 0, noise: KitchenNoise | None = None,
                 drawers: Sequence[str] = DRAWERS, completed_affordance: float = 0.0) -> None:
        if not 0.0 <= completed_affordance <= 1.0:
            raise ValueError(f"completed_affordance must be in [0, 1], got {completed_affordance}")
        self.completed_affordance = completed_affordance
        make_state(start.object_locations, start.robot_location, start.open_containers, drawers)  # validate
        if start.holding is not None and start.object_locations.get(start.holding) != HELD:
            raise ValueError(f"holding the {start.holding} but it is not placed at {HELD!r}")
        self.drawers = tuple(drawers)
        self.noise = noise or KitchenNoise()
        self.seed = seed
        self._where = dict(start.object_locations)
        self._robot = start.robot_location
        self._open = set(start.open_containers)
        self._states = dict(start.states)
        self._visited = set(start.visited)  # the places the robot has been at since it first moved
        # separate streams: asking for affordances never changes what execution draws
        self._aff_rng = random.Random(f"{seed}:affordance")
        self._exec_rng = random.Random(f"{seed}:execution")
        self.events: list[str] = []  # disturbances and random failures, in words

    @classmethod
    def from_state(cls, start: KitchenState, seed: int = 0, noise: KitchenNoise | None = None,
                   drawers: Sequence[str] = DRAWERS, completed_affordance: float = 0.0) -> KitchenWorld:
        return cls(start, seed, noise, drawers, completed_affordance)

    # ---- reading ------------------------------------------------------------------------------
    @property
    def objects(self) -> list[str]:
        """The object instances ("coke", "coke#2")."""
        return list(self._where)

    @property
    def types(self) -> list[str]:
        """The object types skills name, in the order of the start state."""
        return list(dict.fromkeys(object_type(o) for o in self._where))

    def instances_of(self, obj: str) -> list[str]:
        """The instances a skill argument names: itself if it is an instance name, else every
        instance of that type."""
        if obj in self._where and obj != object_type(obj):
            return [obj]
        return [o for o in self._where if object_type(o) == obj]

    def _holds(self, obj: str) -> bool:
        held = self.holding
        return held is not None and held in self.instances_of(obj)

    def _reachable(self, obj: str) -> list[str]:
        """Instances of `obj` not held and not in a closed drawer."""
        return [o for o in self.instances_of(obj)
                if self._where[o] != HELD and not (self._where[o] in self.drawers and self._where[o] not in self._open)]

    def _find_target(self, obj: str) -> str | None:
        """The instance "find" goes to: one not in the trash or at the user if there is one, at the
        robot's own place if possible, else the first (kitchen.goals' reference semantics)."""
        reach = self._reachable(obj)
        fresh = [o for o in reach if self._where[o] not in ("trash", USER)] or reach
        return next((o for o in fresh if self.place_of(o) == self._robot), fresh[0] if fresh else None)

    @property
    def locations(self) -> list[str]:
        return list(LOCATIONS) + list(self.drawers)

    @property
    def holding(self) -> str | None:
        held = [o for o, w in self._where.items() if w == HELD]
        return held[0] if held else None

    def state(self) -> KitchenState:
        return KitchenState(self._robot, self.holding, dict(self._where), frozenset(self._open),
                            dict(self._states), frozenset(self._visited))

    def place_of(self, obj: str) -> str:
        """The location the object is at: the robot's for a held one, the drawers' for one in a drawer."""
        where = self._where[obj]
        if where == HELD:
            return self._robot
        return DRAWERS_LOCATION if where in self.drawers else where

    def scene_objects(self) -> list[SceneObject]:
        """Ground truth as scene objects (encoding: kitchen.scene)."""
        from .scene import to_scene_objects

        return to_scene_objects(self.state(), self.drawers)

    # ---- preconditions ------------------------------------------------------------------------
    def instances(self) -> list[tuple[str, tuple[str, ...]]]:
        """Every skill instance of this world (what GetAffordances ranks)."""
        out: list[tuple[str, tuple[str, ...]]] = []
        types = self.types
        for skill in ("find", "pick_up", "put_down"):
            out += [(skill, (o,)) for o in types]
        out += [("go_to", (loc,)) for loc in NAV_TARGETS if loc != DRAWERS_LOCATION or self.drawers]
        out.append(("bring_to_user", ()))
        for d in self.drawers:
            out += [("open_drawer", (d,)), ("close_drawer", (d,))]
            out += [("put_in_drawer", (o, d)) for o in types]
        return out

    def invalid(self, skill: str, args: Sequence[str]) -> SkillOutcome | None:
        """UNKNOWN_SKILL / INVALID_ARGUMENTS outcome, or None if the call is well formed."""
        if skill not in SKILLS:
            return SkillOutcome(SkillError.UNKNOWN_SKILL, f"unknown skill {skill!r}; known: {sorted(SKILLS)}")
        arity = SKILLS[skill][0]
        if len(args) != arity:
            return SkillOutcome(SkillError.INVALID_ARGUMENTS, f"{skill} takes {arity} arguments, got {list(args)}")
        kinds = {"find": "o", "pick_up": "o", "put_down": "o", "go_to": "l", "open_drawer": "d",
                 "close_drawer": "d", "put_in_drawer": "od"}.get(skill, "")
        for kind, a in zip(kinds, args):
            known = {"o": set(self.types) | set(self._where), "l": NAV_TARGETS, "d": self.drawers}[kind]
            if a not in known:
                noun = {"o": "object", "l": "location", "d": "drawer"}[kind]
                return SkillOutcome(SkillError.INVALID_ARGUMENTS,
                                    f"{skill}: unknown {noun} {a!r}; known: {sorted(known)}")
        return None

    def check(self, skill: str, args: Sequence[str]) -> PreconditionError | None:
        """The first violated precondition of a well-formed skill call, or None if it can run."""
        a = tuple(args)

        def err(prop: str, reason: str) -> PreconditionError:
            return PreconditionError(skill, a, prop, reason)

        held = self.holding
        if skill == "find":
            if self._holds(a[0]):
                return err("already_holding", f"I am already holding the {a[0]}")
            return None if self._reachable(a[0]) else self._closed_in(skill, a, a[0])
        if skill == "pick_up":
            obj = a[0]
            if self._holds(obj):
                return err("already_holding", f"I am already holding the {obj}")
            if held is not None:
                return err("hand_full", f"I am already holding the {object_type(held)}")
            reach = self._reachable(obj)
            if not reach:
                return self._closed_in(skill, a, obj)
            if not any(self.place_of(o) == self._robot for o in reach):
                return err("not_near", f"I am not near the {obj}")
            return None
        if skill == "put_down":
            return None if self._holds(a[0]) else err("not_holding", f"I am not holding the {a[0]}")
        if skill == "bring_to_user":
            return None if held is not None else err("hand_empty", "I am not holding anything")
        if skill in ("open_drawer", "close_drawer"):
            drawer = a[0]
            is_open = drawer in self._open
            if skill == "open_drawer" and is_open:
                return err("already_open", f"the {drawer} is already open")
            if skill == "close_drawer" and not is_open:
                return err("already_closed", f"the {drawer} is already closed")
            if self._robot != DRAWERS_LOCATION:
                return err("not_near", f"I am not near the {drawer}")
            if held is not None:
                return err("hand_full", f"I am holding the {object_type(held)}")
            return None
        if skill == "put_in_drawer":
            obj, drawer = a
            if not self._holds(obj):
                return err("not_holding", f"I am not holding the {obj}")
            if self._robot != DRAWERS_LOCATION:
                return err("not_near", f"I am not near the {drawer}")
            if drawer not in self._open:
                return err("not_open", f"the {drawer} is closed")
            return None
        return None  # go_to: always possible

    def _closed_in(self, skill: str, args: tuple[str, ...], obj: str) -> PreconditionError:
        """Why no instance of `obj` is reachable (none is held: the caller checked that)."""
        for o in self.instances_of(obj):
            where = self._where[o]
            if where in self.drawers and where not in self._open:
                return PreconditionError(skill, args, "inside_closed", f"the {obj} is inside the closed {where}")
        return PreconditionError(skill, args, "not_near", f"there is no {obj} I can reach")

    def completed(self, skill: str, args: Sequence[str]) -> bool:
        """True if the skill's effect already holds (SayCan's completed-skill cap, SC:L392/L429:
        "navigating to the table the robot is already in front of" should not be performed)."""
        if skill == "go_to":
            return self._robot == args[0]
        if skill == "find":
            target = self._find_target(args[0])
            return target is not None and self._robot == self.place_of(target)
        if skill == "bring_to_user":
            return self._robot == USER
        return False

    def affordances(self, include_unaffordable: bool = False) -> list[Affordance]:
        """1.0 where the preconditions hold (`completed_affordance` where the effect already
        holds), else 0.0; each flipped with probability noise.affordance_flip (a flipped value is
        1 - value). Without include_unaffordable only values > 0 are returned."""
        out = []
        for skill, args in self.instances():
            value = 0.0
            if self.check(skill, args) is None:
                value = self.completed_affordance if self.completed(skill, args) else 1.0
            if self.noise.affordance_flip > 0.0 and self._aff_rng.random() < self.noise.affordance_flip:
                value = 1.0 - value
            if value > 0.0 or include_unaffordable:
                out.append(Affordance(skill, args, value))
        return out

    # ---- acting -------------------------------------------------------------------------------
    def execute(self, skill: str, args: Sequence[str]) -> SkillOutcome:
        """Run one skill: invalid calls and failed preconditions change nothing; then the seeded
        random failure, the effect, and the drop and move disturbances."""
        bad = self.invalid(skill, args)
        if bad is not None:
            return bad
        a = tuple(args)
        pre = self.check(skill, a)
        if pre is not None:
            return SkillOutcome(SkillError.PRECONDITION_FAILED, pre.explicit, pre.text)
        text = skill_text(skill, a)
        fail, drop, move = (self._exec_rng.random() for _ in range(3))  # always three draws: replayable
        if fail < self.noise.failure_rate:
            self.events.append(f"{text}: the skill failed at random")
            if self.noise.report_failures:
                return SkillOutcome(SkillError.EXECUTION_FAILED, f"{text}: the policy failed")
            return SkillOutcome(SkillError.NONE, f"{text}: finished")
        was = self._robot
        self._apply(skill, a)
        if self._robot != was:  # recorded as goals.apply does
            self._visited |= {was, self._robot}
        held = self.holding
        if held is not None and skill != "put_down" and drop < self.noise.drop_rate:
            self._where[held] = self._robot
            self.events.append(f"{text}: the {held} was dropped at the {self._robot}")
        if move < self.noise.move_rate:
            self._disturb_move(a)
        return SkillOutcome(SkillError.NONE, f"{text}: finished")

    def _apply(self, skill: str, a: tuple[str, ...]) -> None:
        held = self.holding
        if skill == "find":
            target = self._find_target(a[0])
            assert target is not None  # check() found one
            self._robot = self.place_of(target)
        elif skill == "go_to":
            self._robot = a[0]
        elif skill == "pick_up":
            here = [o for o in self._reachable(a[0]) if self.place_of(o) == self._robot]
            self._where[here[0]] = HELD
        elif skill == "put_down":
            assert held is not None
            self._where[held] = self._robot
        elif skill == "bring_to_user":
            self._robot = USER
        elif skill == "open_drawer":
            self._open.add(a[0])
        elif skill == "close_drawer":
            self._open.discard(a[0])
        elif skill == "put_in_drawer":
            assert held is not None
            self._where[held] = a[1]

    def _disturb_move(self, args: tuple[str, ...]) -> None:
        movable = [o for o, w in self._where.items()
                   if w != HELD and not (w in self.drawers and w not in self._open)]
        target = [o for a in args for o in self.instances_of(a) if o in movable]
        if not movable:
            return
        obj = target[0] if target else self._exec_rng.choice(sorted(movable))
        to = self._exec_rng.choice([s for s in SURFACES if s != self._where[obj]])
        self.move(obj, to)

    # ---- scripted disturbances (tests, benchmarks) ---------------------------------------------
    def move(self, obj: str, where: str) -> None:
        """A person puts `obj` at `where` (a location or a drawer); taken from the hand if held."""
        if obj not in self._where:
            raise KeyError(f"unknown object {obj!r}; known: {sorted(self._where)}")
        if where not in self.locations:
            raise ValueError(f"unknown place {where!r}; known: {self.locations}")
        self._where[obj] = where
        self.events.append(f"a person moved the {obj} to the {where}")

    def drop(self) -> str | None:
        """The held object falls at the robot's place; returns its name (None if the hand was empty)."""
        held = self.holding
        if held is not None:
            self._where[held] = self._robot
            self.events.append(f"the {held} was dropped at the {self._robot}")
        return held


__all__ = ["DEFAULT_PLACEMENTS", "DRAWERS", "DRAWERS_LOCATION", "LOCATIONS", "NAV_TARGETS", "OBJECTS", "START",
           "USER", "KitchenNoise", "KitchenWorld", "default_state", "make_state", "parse_placements"]
