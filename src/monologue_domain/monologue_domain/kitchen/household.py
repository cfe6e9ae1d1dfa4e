"""CAPE's household state model (CAPE §2.3, requirements_statler_cape_multitalk.md): objects with
properties and states, rooms joined by doors, an agent with one or two hands that stands or sits,
and a 14-skill vocabulary whose preconditions produce CAPE's error types (no rclpy).

Properties: movable, openable, grabbable, receptacle, switchable. States: location (a room, a
receptacle, or HELD), open, turned on; the agent's room, what it is near, sitting, its hands.
Skills: CAPE names eight for Spot (stand up, walk to, pick up, put, touch, look at, open, close);
the other six are not stated, so this module adds sit down, find, put in, drop, turn on, turn off.
Errors use kitchen.skills' `PreconditionError` line ("<proposition>: I cannot ... because ...")
with CAPE's difficulty levels (kitchen.skills.PROPOSITIONS). The robot's state sits in
KitchenState.states["robot"] ({"sitting"} or {"standing"}); held objects are at HELD.
"""
from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..scene import LOCATION, SceneObject, Vec3
from ..skills import Affordance, SkillError, SkillOutcome
from .scene import ROBOT, marker
from .skills import PreconditionError
from .state import HELD, KitchenState

PROPERTIES = frozenset({"movable", "openable", "grabbable", "receptacle", "switchable"})

# skill -> (argument count, text)
HOUSEHOLD_SKILLS: dict[str, tuple[int, str]] = {
    "stand_up": (0, "stand up"), "sit_down": (0, "sit down"), "walk_to": (1, "walk to the {0}"),
    "find": (1, "find the {0}"), "pick_up": (1, "pick up the {0}"), "put": (2, "put the {0} on the {1}"),
    "put_in": (2, "put the {0} in the {1}"), "drop": (1, "drop the {0}"), "touch": (1, "touch the {0}"),
    "look_at": (1, "look at the {0}"), "open": (1, "open the {0}"), "close": (1, "close the {0}"),
    "turn_on": (1, "turn on the {0}"), "turn_off": (1, "turn off the {0}"),
}


@dataclass(frozen=True)
class Thing:
    """An object of the scene and its fixed properties (a subset of PROPERTIES)."""

    name: str
    properties: frozenset[str]
    capacity: int = 0  # receptacles: most objects on/in it (0 = unlimited)


@dataclass(frozen=True)
class Door:
    name: str
    rooms: tuple[str, str]


@dataclass(frozen=True)
class HouseholdScene:
    """The fixed part of a household: rooms, doors and things."""

    rooms: tuple[str, ...]
    doors: tuple[Door, ...]
    things: tuple[Thing, ...]

    def thing(self, name: str) -> Thing:
        for t in self.things:
            if t.name == name:
                return t
        raise KeyError(f"unknown object {name!r}; known: {sorted(t.name for t in self.things)}")


def _thing(name: str, *props: str, capacity: int = 0) -> Thing:
    bad = set(props) - PROPERTIES
    if bad:
        raise ValueError(f"{name}: unknown properties {sorted(bad)}; known: {sorted(PROPERTIES)}")
    return Thing(name, frozenset(props), capacity)


def spot_home() -> tuple[HouseholdScene, KitchenState]:
    """A Spot scene in CAPE's style (a kitchen and a bedroom joined by a hallway; ~9 household
    objects per room, as CAPE's two scenes) and its start state: Spot sits in the hallway."""
    scene = HouseholdScene(
        rooms=("hallway", "kitchen", "bedroom"),
        doors=(Door("kitchen door", ("hallway", "kitchen")), Door("bedroom door", ("hallway", "bedroom"))),
        things=(
            _thing("kitchen door", "openable"), _thing("bedroom door", "openable"),
            _thing("counter", "receptacle"), _thing("fridge", "openable", "receptacle"),
            _thing("pantry", "openable", "receptacle", capacity=3), _thing("coffee maker", "switchable"),
            _thing("mug", "movable", "grabbable"), _thing("cereal", "movable", "grabbable"),
            _thing("milk", "movable", "grabbable"), _thing("groceries bag", "movable", "grabbable"),
            _thing("nightstand", "receptacle", capacity=2), _thing("bed", "receptacle"),
            _thing("closet", "openable", "receptacle"), _thing("lamp", "switchable"),
            _thing("phone", "movable", "grabbable"), _thing("shirt", "movable", "grabbable"),
            _thing("iron", "movable", "grabbable", "switchable"), _thing("shoes", "movable", "grabbable"),
            _thing("mail", "movable", "grabbable"), _thing("storage box", "openable", "receptacle"),
        ),
    )
    where = {
        "kitchen door": "hallway", "bedroom door": "hallway", "counter": "kitchen", "fridge": "kitchen",
        "pantry": "kitchen", "coffee maker": "kitchen", "mug": "counter", "cereal": "counter", "milk": "fridge",
        "groceries bag": "counter", "nightstand": "bedroom", "bed": "bedroom", "closet": "bedroom",
        "lamp": "bedroom", "phone": "bed", "shirt": "closet", "iron": "closet", "shoes": "hallway",
        "mail": "hallway", "storage box": "hallway",
    }
    return scene, KitchenState("hallway", None, where, frozenset(), {"robot": frozenset({"sitting"})})


def spot_lab() -> tuple[HouseholdScene, KitchenState]:
    """CAPE's first Spot scene, "a lab environment" (C l.140): the lab and a storage room behind a door,
    with the objects of CAPE's six Spot tasks (prepare for a run on a warm day, put the phone on the
    nightstand, iron a shirt, put mail in storage, organize the pantry, put away groceries). The real
    scene's objects are not published; these are in its style. Spot sits in the lab."""
    scene = HouseholdScene(
        rooms=("lab", "storage room"),
        doors=(Door("storage room door", ("lab", "storage room")),),
        things=(
            _thing("storage room door", "openable"), _thing("desk", "receptacle"),
            _thing("nightstand", "receptacle", capacity=2), _thing("ironing board", "receptacle"),
            _thing("fridge", "openable", "receptacle"), _thing("phone", "movable", "grabbable"),
            _thing("water bottle", "movable", "grabbable"), _thing("mail", "movable", "grabbable"),
            _thing("groceries bag", "movable", "grabbable"), _thing("milk", "movable", "grabbable"),
            _thing("shoes", "movable", "grabbable"), _thing("shelf", "receptacle"),
            _thing("shirt", "movable", "grabbable"), _thing("iron", "movable", "grabbable", "switchable"),
            _thing("storage box", "openable", "receptacle"), _thing("pantry", "openable", "receptacle", capacity=3),
            _thing("cereal", "movable", "grabbable"),
        ),
    )
    where = {
        "storage room door": "lab", "desk": "lab", "nightstand": "lab", "ironing board": "lab", "fridge": "lab",
        "phone": "desk", "water bottle": "desk", "mail": "desk", "groceries bag": "lab", "milk": "desk",
        "shoes": "storage room", "shelf": "storage room", "shirt": "shelf", "iron": "shelf",
        "storage box": "storage room", "pantry": "storage room", "cereal": "shelf",
    }
    return scene, KitchenState("lab", None, where, frozenset(), {"robot": frozenset({"sitting"})})


def spot_kitchen() -> tuple[HouseholdScene, KitchenState]:
    """CAPE's second Spot scene, "a kitchen" (C l.140), with a living room behind the kitchen door and
    the objects of the same six tasks; a bottle of water waits in the closed fridge (CAPE's D4 "inside
    another closed object"). Spot sits in the living room."""
    scene = HouseholdScene(
        rooms=("kitchen", "living room"),
        doors=(Door("kitchen door", ("kitchen", "living room")),),
        things=(
            _thing("kitchen door", "openable"), _thing("counter", "receptacle"),
            _thing("fridge", "openable", "receptacle"), _thing("pantry", "openable", "receptacle", capacity=3),
            _thing("groceries bag", "movable", "grabbable"), _thing("milk", "movable", "grabbable"),
            _thing("cereal", "movable", "grabbable"), _thing("water bottle", "movable", "grabbable"),
            _thing("couch", "receptacle"), _thing("nightstand", "receptacle", capacity=2),
            _thing("phone", "movable", "grabbable"), _thing("shoes", "movable", "grabbable"),
            _thing("mail", "movable", "grabbable"), _thing("storage box", "openable", "receptacle"),
            _thing("ironing board", "receptacle"), _thing("iron", "movable", "grabbable", "switchable"),
            _thing("shirt", "movable", "grabbable"),
        ),
    )
    where = {
        "kitchen door": "living room", "counter": "kitchen", "fridge": "kitchen", "pantry": "kitchen",
        "groceries bag": "counter", "milk": "counter", "cereal": "counter", "water bottle": "fridge",
        "couch": "living room", "nightstand": "living room", "phone": "couch", "shoes": "living room",
        "mail": "living room", "storage box": "living room", "ironing board": "living room", "iron": "pantry",
        "shirt": "couch",
    }
    return scene, KitchenState("living room", None, where, frozenset(), {"robot": frozenset({"sitting"})})


# The household scenes by name (sim_household's `household.scene`): CAPE's two Spot scenes and a
# three-room home.
SCENES: dict[str, Callable[[], tuple[HouseholdScene, KitchenState]]] = {
    "lab": spot_lab, "kitchen": spot_kitchen, "home": spot_home,
}


def household_text(skill: str, args: Sequence[str]) -> str:
    """The household's words for a skill instance: ("put", ["mug", "counter"]) -> "put the mug on the
    counter" (the texts of config/prompts/household.yaml, checked by a test)."""
    return HOUSEHOLD_SKILLS[skill][1].format(*args)


class HouseholdWorld:
    """The mutable household. Built from a scene and a start state: `object_locations` gives each
    thing's room, receptacle or HELD; `open_containers` the open things (doors too); `states`
    {"robot": {"sitting"}} and {thing: {"on"}}; `robot_location` a room or the thing it is near."""

    def __init__(self, scene: HouseholdScene, start: KitchenState, hands: int = 1,
                 affordance_flip: float = 0.0, seed: int = 0) -> None:
        """affordance_flip: probability each affordance value is flipped (CAPE's noisy SayCan oracle:
        0.06, C l.102); seed: its draws."""
        if hands not in (1, 2):
            raise ValueError(f"hands must be 1 or 2, got {hands}")
        if not 0.0 <= affordance_flip <= 1.0:
            raise ValueError(f"affordance_flip must be in [0, 1], got {affordance_flip}")
        self.affordance_flip = affordance_flip
        self._aff_rng = random.Random(f"{seed}:affordance")
        names = {t.name for t in scene.things}
        places = names | set(scene.rooms) | {HELD}
        problems = [f"the {o} is at unknown place {w!r}" for o, w in start.object_locations.items() if w not in places]
        problems += [f"{o!r} is not an object of the scene" for o in start.object_locations if o not in names]
        problems += [f"{t.name!r} has no location" for t in scene.things if t.name not in start.object_locations]
        if start.robot_location not in places - {HELD}:
            problems.append(f"unknown robot location {start.robot_location!r}")
        if problems:
            raise ValueError("; ".join(problems))
        self.scene, self.hands = scene, hands
        self._where = dict(start.object_locations)
        self._open = set(start.open_containers)
        self._on = {o for o, s in start.states.items() if "on" in s and o != "robot"}
        self._sitting = "sitting" in start.states.get("robot", frozenset())
        self._near: str | None = None if start.robot_location in scene.rooms else start.robot_location
        self._room = start.robot_location if self._near is None else self.room_of(start.robot_location)
        if len(self.held) > hands:
            raise ValueError(f"{hands} hand(s) cannot hold {self.held}")
        # the places (rooms and the things it went to) the robot has been at since it first moved
        self._visited = set(start.visited)

    # ---- reading ------------------------------------------------------------------------------
    @property
    def held(self) -> list[str]:
        return [o for o, w in self._where.items() if w == HELD]

    def room_of(self, name: str) -> str:
        """The room a thing is in (through receptacles; the robot's room when held)."""
        seen: set[str] = set()
        while name not in self.scene.rooms:
            if name in seen:
                raise ValueError(f"the location of {name!r} is circular")
            seen.add(name)
            where = self._where[name]
            if where == HELD:
                return self._room
            name = where
        return name

    def state(self) -> KitchenState:
        held = self.held
        states: dict[str, frozenset[str]] = {o: frozenset({"on"}) for o in self._on}
        states["robot"] = frozenset({"sitting" if self._sitting else "standing"})
        return KitchenState(self._near or self._room, held[0] if held else None, dict(self._where),
                            frozenset(self._open), states, frozenset(self._visited))

    @property
    def objects(self) -> list[str]:
        """The things of the scene (doors and furniture too), in the scene's order."""
        return [t.name for t in self.scene.things]

    @property
    def rooms(self) -> list[str]:
        return list(self.scene.rooms)

    # Layout of the ground truth (m): room i's point at (ROOM_SPACING * i, 0, 0); the things of a
    # room in a row beside it, things on / in a receptacle above its point.
    ROOM_SPACING = 6.0
    THING_SIZE: Vec3 = (0.3, 0.3, 0.3)

    def _points(self) -> dict[str, Vec3]:
        pts: dict[str, Vec3] = {r: (self.ROOM_SPACING * i, 0.0, 0.0) for i, r in enumerate(self.scene.rooms)}
        slots: dict[str, int] = {}
        pending = [t.name for t in self.scene.things]
        while pending:  # parents first (a receptacle's contents sit on it)
            rest = []
            for name in pending:
                where = self._where[name]
                if where == HELD:
                    continue
                if where not in pts:
                    rest.append(name)
                    continue
                i = slots[where] = slots.get(where, -1) + 1
                x, y, z = pts[where]
                if where in self.scene.rooms:
                    pts[name] = (x + 0.8 * (i % 4), y + 1.0 + 0.8 * (i // 4), 0.0)
                else:
                    pts[name] = (x + 0.1 * i, y, z + 0.4)
            if len(rest) == len(pending):  # only circular placements are left: put them at their room
                for name in rest:
                    pts[name] = pts[self.scene.rooms[0]]
                break
            pending = rest
        robot = pts[self._near] if self._near is not None and self._near in pts else pts[self._room]
        for name in self.held:
            pts[name] = (robot[0], robot[1], 1.0)
        pts[ROBOT] = robot
        return pts

    def scene_objects(self) -> list[SceneObject]:
        """Ground truth as scene objects (kitchen.scene's encoding; `state_from_scene` reads it back
        losslessly): rooms as location entries, the robot entry and markers (robot@, posture@, open@,
        on@, visited@), and every thing with category "<properties joined by +>@<where>". A thing is
        visible in the robot's room unless it is inside a closed thing."""
        pts = self._points()
        out = [SceneObject(r, LOCATION, pts[r]) for r in self.scene.rooms]
        out.append(SceneObject(ROBOT, LOCATION, pts[ROBOT]))
        out.append(marker("robot", self._near or self._room, pts[ROBOT]))
        out.append(marker("posture", "sitting" if self._sitting else "standing", pts[ROBOT]))
        for t in self.scene.things:
            where = self._where[t.name]
            kind = "+".join(sorted(t.properties)) or "thing"
            visible = where == HELD or (self.room_of(t.name) == self._room and self._inside_closed(t.name) is None)
            out.append(SceneObject(t.name, f"{kind}@{where}", pts[t.name], self.THING_SIZE, visible=visible))
        out += [marker("open", o, pts.get(o, pts[ROBOT])) for o in sorted(self._open)]
        out += [marker("on", o, pts.get(o, pts[ROBOT])) for o in sorted(self._on)]
        out += [marker("visited", v, pts.get(v, pts[ROBOT])) for v in sorted(self._visited)]
        return out

    # ---- preconditions ------------------------------------------------------------------------
    def _path_blocked(self, room: str) -> tuple[str, str] | None:
        """None if `room` is reachable through open doors, else the closed door's rooms next to
        the robot's side of the shortest path."""
        if room == self._room:
            return None
        queue, prev = deque([self._room]), {self._room: ""}
        while queue:  # BFS over open doors
            r = queue.popleft()
            for d in self.scene.doors:
                if r in d.rooms and d.name in self._open:
                    nxt = d.rooms[1] if d.rooms[0] == r else d.rooms[0]
                    if nxt not in prev:
                        prev[nxt] = r
                        queue.append(nxt)
        if room in prev:
            return None
        for d in self.scene.doors:  # the first closed door on the way, from any reached room
            if any(r in prev for r in d.rooms) and d.name not in self._open:
                return d.rooms
        return (self._room, room)

    def _inside_closed(self, obj: str) -> str | None:
        where = self._where[obj]
        if where in self._open or where in self.scene.rooms or where == HELD:
            return None
        return where if "openable" in self.scene.thing(where).properties else None

    def check(self, skill: str, args: Sequence[str]) -> PreconditionError | None:
        a = tuple(args)

        def err(prop: str, reason: str) -> PreconditionError:
            return PreconditionError(skill, a, prop, reason)

        if skill == "stand_up":
            return None if self._sitting else err("already_standing", "I am already standing")
        if self._sitting:
            return err("already_sitting" if skill == "sit_down" else "sitting", "I am sitting")
        if skill == "sit_down":
            return None
        target = a[0]
        props = self.scene.thing(target).properties if target not in self.scene.rooms else frozenset()
        if skill in ("walk_to", "find"):
            if target in self.scene.rooms:
                room = target
            elif self._where[target] == HELD:
                return err("already_holding", f"I am already holding the {target}")
            else:
                room = self.room_of(target)
            door = next((d for d in self.scene.doors if d.name == target and self._room in d.rooms), None)
            blocked = None if door is not None else self._path_blocked(room)
            if blocked is not None:
                return err("door_closed", f"the door between the {blocked[0]} and the {blocked[1]} is closed")
            closed = self._inside_closed(target) if skill == "find" and target not in self.scene.rooms else None
            if closed is not None:
                return err("inside_closed", f"the {target} is inside the closed {closed}")
            return None
        if skill == "drop":
            return None if self._where.get(target) == HELD else err("not_holding", f"I am not holding the {target}")
        if skill in ("put", "put_in"):
            obj, rec = a
            if self._where[obj] != HELD:
                return err("not_holding", f"I am not holding the {obj}")
            rprops = self.scene.thing(rec).properties
            if "receptacle" not in rprops or (skill == "put_in" and "openable" not in rprops):
                return err("not_receptacle", f"the {rec} is not a receptacle I can put things "
                                             f"{'in' if skill == 'put_in' else 'on'}")
            if self._near != rec:
                return err("not_near", f"I am not near the {rec}")
            if "openable" in rprops and rec not in self._open:
                return err("not_open", f"the {rec} is closed")
            cap = self.scene.thing(rec).capacity
            if cap and sum(1 for w in self._where.values() if w == rec) >= cap:
                return err("too_many", f"there are too many things on the {rec}")
            return None
        if skill == "pick_up":
            if self._where[target] == HELD:
                return err("already_holding", f"I am already holding the {target}")
            if "grabbable" not in props:
                return err("not_grabbable", f"the {target} cannot be picked up")
            closed = self._inside_closed(target)
            if closed is not None:
                return err("inside_closed", f"the {target} is inside the closed {closed}")
            if self._near not in (target, self._where[target]):
                return err("not_near", f"I am not near the {target}")
            if len(self.held) >= self.hands:
                return err("hand_full", f"I am already holding the {' and the '.join(self.held)}")
            return None
        if skill == "look_at":
            seen = self.room_of(target) == self._room
            return None if seen else err("not_near", f"I cannot see the {target} from here")
        if skill in ("open", "close"):
            if "openable" not in props:
                return err("not_openable", f"the {target} cannot be opened")
            is_open = target in self._open
            if skill == "open" and is_open:
                return err("already_open", f"the {target} is already open")
            if skill == "close" and not is_open:
                return err("already_closed", f"the {target} is already closed")
        if skill in ("turn_on", "turn_off"):
            if "switchable" not in props:
                return err("not_switchable", f"the {target} cannot be switched on or off")
            is_on = target in self._on
            if skill == "turn_on" and is_on:
                return err("already_on", f"the {target} is already on")
            if skill == "turn_off" and not is_on:
                return err("already_off", f"the {target} is already off")
        if self._near not in (target, self._where.get(target)) and self._where.get(target) != HELD:
            return err("not_near", f"I am not near the {target}")  # touch, open, close, turn on/off
        if skill in ("open", "close") and len(self.held) >= self.hands:
            return err("hand_full", f"I have no free hand: I am holding the {' and the '.join(self.held)}")
        return None

    def invalid(self, skill: str, args: Sequence[str]) -> SkillOutcome | None:
        if skill not in HOUSEHOLD_SKILLS:
            return SkillOutcome(SkillError.UNKNOWN_SKILL, f"unknown skill {skill!r}; known: {sorted(HOUSEHOLD_SKILLS)}")
        if len(args) != HOUSEHOLD_SKILLS[skill][0]:
            return SkillOutcome(SkillError.INVALID_ARGUMENTS,
                                f"{skill} takes {HOUSEHOLD_SKILLS[skill][0]} arguments, got {list(args)}")
        rooms_ok = skill in ("walk_to", "find")
        for i, x in enumerate(args):
            if x not in self._where and not (rooms_ok and i == 0 and x in self.scene.rooms):
                return SkillOutcome(SkillError.INVALID_ARGUMENTS, f"{skill}: unknown object {x!r}")
        return None

    # ---- acting -------------------------------------------------------------------------------
    def execute(self, skill: str, args: Sequence[str]) -> SkillOutcome:
        """Invalid calls and failed preconditions change nothing (PRECONDITION_FAILED carries the
        PreconditionError line); otherwise the effect is applied (skills execute perfectly, C l.234)."""
        bad = self.invalid(skill, args)
        if bad is not None:
            return bad
        pre = self.check(skill, args)
        if pre is not None:
            return SkillOutcome(SkillError.PRECONDITION_FAILED, pre.explicit, pre.text)
        a = tuple(args)
        if skill == "stand_up":
            self._sitting = False
        elif skill == "sit_down":
            self._sitting = True
        elif skill in ("walk_to", "find"):
            self._visited |= {self._room} | ({self._near} if self._near else set())
            if a[0] in self.scene.rooms:
                self._room, self._near = a[0], None
            else:
                if not any(d.name == a[0] for d in self.scene.doors):  # at a door: still in its room
                    self._room = self.room_of(a[0])
                self._near = a[0]
            self._visited |= {self._room} | ({self._near} if self._near else set())
        elif skill == "pick_up":
            self._where[a[0]] = HELD
        elif skill in ("put", "put_in"):
            self._where[a[0]] = a[1]
        elif skill == "drop":
            near = self._near
            onto = near is not None and near in self._receptacles() and (
                near in self._open or "openable" not in self.scene.thing(near).properties)
            self._where[a[0]] = near if onto and near is not None else self._room  # falls on the floor
        elif skill == "open":
            self._open.add(a[0])
        elif skill == "close":
            self._open.discard(a[0])
        elif skill == "turn_on":
            self._on.add(a[0])
        elif skill == "turn_off":
            self._on.discard(a[0])
        return SkillOutcome(SkillError.NONE, f"{skill}({', '.join(a)}): done")

    def _receptacles(self) -> set[str]:
        return {t.name for t in self.scene.things if "receptacle" in t.properties}

    def instances(self) -> Iterable[tuple[str, tuple[str, ...]]]:
        """Every skill instance (for affordances and CAPE's admissible-action list)."""
        things = [t.name for t in self.scene.things]
        yield ("stand_up", ())
        yield ("sit_down", ())
        for r in self.scene.rooms:
            yield ("walk_to", (r,))
        for t in things:
            for s in ("walk_to", "find", "pick_up", "drop", "touch", "look_at", "open", "close", "turn_on", "turn_off"):
                yield (s, (t,))
        for t in things:
            for rec in self._receptacles():
                yield ("put", (t, rec))
                yield ("put_in", (t, rec))

    def affordances(self) -> Mapping[tuple[str, tuple[str, ...]], float]:
        """The perfect oracle: 1.0 where the preconditions hold."""
        return {i: 1.0 if self.check(*i) is None else 0.0 for i in self.instances()}

    def affordance_list(self, include_unaffordable: bool = False) -> list[Affordance]:
        """SayCan's oracle affordances (C l.100-102): `affordances()`, each value flipped with
        probability `affordance_flip` (0: the perfect oracle; 0.06: CAPE's noisy one), in the order of
        `instances()`. Without include_unaffordable only values > 0 are returned."""
        out = []
        for (skill, args), value in self.affordances().items():
            if self.affordance_flip > 0.0 and self._aff_rng.random() < self.affordance_flip:
                value = 1.0 - value
            if value > 0.0 or include_unaffordable:
                out.append(Affordance(skill, args, value))
        return out


def judge_household(skill: str, args: Sequence[str], after: KitchenState) -> tuple[bool, str]:
    """(success, explanation) of a household skill from the state after it (kitchen.judge calls it
    for household states, those with states["robot"])."""
    if skill not in HOUSEHOLD_SKILLS or len(args) != HOUSEHOLD_SKILLS[skill][0]:
        return False, f"no household rule for {skill}({', '.join(args)})"
    a = tuple(args)
    text = household_text(skill, a)
    posture = after.states.get(ROBOT, frozenset())
    where = after.object_locations
    missing = [x for x in (a if skill not in ("walk_to", "find") else ()) if x not in where]
    if missing:
        return False, f"{text}: there is no {' and no '.join(missing)} in the scene"
    if skill in ("stand_up", "sit_down"):
        want = "standing" if skill == "stand_up" else "sitting"
        return want in posture, f"{text}: the robot is {'/'.join(sorted(posture)) or 'in an unknown posture'}"
    if skill in ("walk_to", "find"):
        ok = after.robot_location == a[0]
        return ok, f"{text}: the robot is at the {after.robot_location}"
    if skill == "pick_up":
        return where[a[0]] == HELD, f"{text}: the {a[0]} is {'held' if where[a[0]] == HELD else 'at ' + where[a[0]]}"
    if skill in ("put", "put_in", "drop"):
        ok = where[a[0]] == a[1] if skill != "drop" else where[a[0]] != HELD
        return ok, f"{text}: the {a[0]} is {'held' if where[a[0]] == HELD else 'at the ' + where[a[0]]}"
    if skill in ("open", "close"):
        is_open = a[0] in after.open_containers
        return is_open == (skill == "open"), f"{text}: the {a[0]} is {'open' if is_open else 'closed'}"
    if skill in ("turn_on", "turn_off"):
        on = "on" in after.states.get(a[0], frozenset())
        return on == (skill == "turn_on"), f"{text}: the {a[0]} is {'on' if on else 'off'}"
    # touch, look_at: no lasting effect; touching needs the robot next to the thing
    if skill == "touch":
        near = after.robot_location in (a[0], where[a[0]]) or where[a[0]] == HELD
        return near, f"{text}: the robot is at the {after.robot_location}"
    return True, f"{text}: nothing to check"


__all__ = ["HOUSEHOLD_SKILLS", "PROPERTIES", "SCENES", "Door", "HouseholdScene", "HouseholdWorld", "Thing",
           "household_text", "judge_household", "spot_home", "spot_kitchen", "spot_lab"]
