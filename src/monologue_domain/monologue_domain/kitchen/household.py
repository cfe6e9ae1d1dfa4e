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
from .skills import HOUSEHOLD_SKILLS, PreconditionError
from .state import HELD, KitchenState

PROPERTIES = frozenset({"movable", "openable", "grabbable", "receptacle", "switchable"})



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
            if self._near == a[0]:  # next to what it stood by: a held thing is no place (the truth must reload)
                where = self._where[a[0]]
                self._near = None if where in self.scene.rooms else where
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

    def assume(self, skill: str, args: Sequence[str]) -> None:
        """Apply a skill's effect as if it had run, preconditions or not (what a planner that does not
        see the refusal believes, e.g. an open-loop plan; the expert stand-in's belief). Invalid calls
        (unknown skill or object) change nothing."""
        if self.invalid(skill, args) is not None:
            return
        if self.check(skill, args) is None:
            self.execute(skill, args)
            return
        a = tuple(args)
        if skill in ("stand_up", "sit_down"):
            self._sitting = skill == "sit_down"
        elif skill in ("walk_to", "find"):
            if a[0] in self.scene.rooms:
                self._room, self._near = a[0], None
            elif self._where.get(a[0]) != HELD:
                if not any(d.name == a[0] for d in self.scene.doors):
                    self._room = self.room_of(a[0])
                elif self._room not in next(d.rooms for d in self.scene.doors if d.name == a[0]):
                    self._room = next(d.rooms for d in self.scene.doors if d.name == a[0])[0]
                self._near = a[0]
        elif skill == "pick_up":
            self._where[a[0]] = HELD
        elif skill in ("put", "put_in"):
            self._where[a[0]] = a[1]
        elif skill == "drop":
            self._where[a[0]] = self._room
        elif skill == "open":
            self._open.add(a[0])
        elif skill == "close":
            self._open.discard(a[0])
        elif skill == "turn_on":
            self._on.add(a[0])
        elif skill == "turn_off":
            self._on.discard(a[0])

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


# ---- goals, reference programs and generated tasks (CAPE benchmark) -------------------------------
# A goal is a conjunction of atoms: ("at", thing, receptacle), ("held", thing), ("on", thing).
Atom = tuple[str, ...]
GOAL_KINDS = {"at": 2, "held": 1, "on": 1}


class NoReferencePlan(ValueError):
    """The reference planner found no program for a goal from a start state."""


def atom_holds(state: KitchenState, atom: Atom) -> bool:
    kind = atom[0]
    if kind == "at":
        return state.object_locations.get(atom[1]) == atom[2]
    if kind == "held":
        return state.object_locations.get(atom[1]) == HELD
    if kind == "on":
        return "on" in state.states.get(atom[1], frozenset())
    raise ValueError(f"unknown goal atom {atom!r}; kinds: {sorted(GOAL_KINDS)}")


def goal_holds(state: KitchenState, goal: Sequence[Atom]) -> bool:
    """Whether every atom of `goal` holds in `state`."""
    return all(atom_holds(state, a) for a in goal)


def parse_atom(text: str) -> Atom:
    """"at(phone, nightstand)" -> ("at", "phone", "nightstand"); ValueError on a malformed atom."""
    t = text.strip()
    if "(" not in t or not t.endswith(")"):
        raise ValueError(f"goal atom {text!r}: expected kind(arg, ...)")
    kind, rest = t[:-1].split("(", 1)
    args = tuple(a.strip() for a in rest.split(",") if a.strip())
    kind = kind.strip()
    if GOAL_KINDS.get(kind) != len(args):
        raise ValueError(f"goal atom {text!r}: kinds {GOAL_KINDS} (name: argument count)")
    return (kind, *args)


def atom_text(atom: Atom) -> str:
    return f"{atom[0]}({', '.join(atom[1:])})"


class _Planner:
    """A goal-directed reference planner over a HouseholdWorld: every step is checked against the
    preconditions and applied, so a program it returns executes without a precondition error."""

    def __init__(self, world: HouseholdWorld) -> None:
        self.w = world
        self.program: list[tuple[str, tuple[str, ...]]] = []

    def do(self, skill: str, *args: str) -> None:
        err = self.w.check(skill, args)
        if err is not None:
            raise NoReferencePlan(f"{household_text(skill, args)}: {err.text}")
        self.w.execute(skill, args)
        self.program.append((skill, tuple(args)))

    def goto(self, target: str) -> None:
        if self.w._near != target:
            self.open_path(target if target in self.w.scene.rooms else self.w.room_of(target))
            self.do("walk_to", target)

    def free_hand(self, keep: str = "") -> None:
        while len(self.w.held) >= self.w.hands:
            other = next((o for o in self.w.held if o != keep), None)
            if other is None:
                return
            self.do("drop", other)

    def open_path(self, room: str) -> None:
        """Open the closed doors between the robot's room and `room` (hands freed first)."""
        for _ in range(len(self.w.scene.doors) + 1):
            blocked = self.w._path_blocked(room)
            if blocked is None:
                return
            door = next((d for d in self.w.scene.doors if set(d.rooms) == set(blocked)), None)
            if door is None:
                raise NoReferencePlan(f"no door between the {blocked[0]} and the {blocked[1]}")
            self.free_hand()
            if self.w._near != door.name:  # already at the door (a plan from mid-episode): no walk
                self.do("walk_to", door.name)
            self.do("open", door.name)
        raise NoReferencePlan(f"cannot open the way to the {room}")

    def open_thing(self, thing: str) -> None:
        if thing in self.w._open:
            return
        self.free_hand()
        self.goto(thing)
        self.do("open", thing)

    def fetch(self, obj: str) -> None:
        if self.w._where[obj] == HELD:
            return
        self.free_hand()
        closed = self.w._inside_closed(obj)
        if closed is not None:
            self.open_thing(closed)
        where = self.w._where[obj]
        if self.w._near not in (obj, where):
            self.goto(where if where not in self.w.scene.rooms else obj)
        self.do("pick_up", obj)

    def achieve(self, atom: Atom) -> None:
        if atom_holds(self.w.state(), atom):
            return
        if atom[0] == "held":
            self.fetch(atom[1])
        elif atom[0] == "at":
            obj, rec = atom[1], atom[2]
            props = self.w.scene.thing(rec).properties
            self.open_path(self.w.room_of(rec))
            if "openable" in props and rec not in self.w._open:  # (open already: keep holding it)
                if self.w._where[obj] == HELD and len(self.w.held) >= self.w.hands:
                    self.do("drop", obj)
                self.open_thing(rec)
            self.fetch(obj)
            self.goto(rec)
            self.do("put_in" if "openable" in props else "put", obj, rec)
        elif atom[0] == "on":
            thing = atom[1]
            where = self.w._where[thing]
            if self.w._near not in (thing, where) and where != HELD:
                self.goto(thing if where in self.w.scene.rooms else where)
            self.do("turn_on", thing)
        else:
            raise ValueError(f"unknown goal atom {atom!r}")


def reference_program(scene: HouseholdScene, start: KitchenState, goal: Sequence[Atom],
                      hands: int = 1) -> list[tuple[str, tuple[str, ...]]]:
    """A ground-truth program (skill, args) that reaches `goal` from `start` without a precondition
    error: stand up, then each atom in turn ("on" after "at", "held" last), opening doors and
    containers while a hand is free. NoReferencePlan if it cannot, or if a later atom undid an
    earlier one."""
    p = _Planner(HouseholdWorld(scene, start, hands))
    if p.w._sitting:
        p.do("stand_up")
    order = {"at": 0, "on": 1, "held": 2}
    for atom in sorted(goal, key=lambda a: order.get(a[0], 3)):
        p.achieve(atom)
    if not goal_holds(p.w.state(), goal):
        raise NoReferencePlan(f"the program does not reach {[atom_text(a) for a in goal]}")
    return p.program


def run_program(scene: HouseholdScene, start: KitchenState, program: Sequence[tuple[str, Sequence[str]]],
                hands: int = 1) -> KitchenState:
    """The state after executing `program` from `start`, skipping steps whose preconditions fail."""
    w = HouseholdWorld(scene, start, hands)
    for skill, args in program:
        if w.invalid(skill, args) is None:
            w.execute(skill, args)
    return w.state()


@dataclass(frozen=True)
class GeneratedTask:
    """A generated household task: its text, scene, goal and start-state overrides."""

    key: str
    text: str
    scene: str  # key of SCENES
    goal: tuple[Atom, ...]
    held: str = ""  # a thing the robot holds at the start ("" = none)
    standing: bool = False  # the robot starts standing (else sitting, the scene's default)


def start_with(start: KitchenState, held: str = "", standing: bool = False) -> KitchenState:
    """`start` with a held thing and/or the robot standing."""
    where = dict(start.object_locations)
    if held:
        where[held] = HELD
    states = dict(start.states)
    if standing:
        states["robot"] = frozenset({"standing"})
    return KitchenState(start.robot_location, held or start.holding, where, start.open_containers, states,
                        start.visited)


def generate_tasks(scenes: Sequence[str], per_scene: int, seed: int = 0,
                   exclude: Iterable[str] = ()) -> list[GeneratedTask]:
    """`per_scene` tasks per scene drawn from templates over the scene's things: fetch ("Bring me
    the X": held(X)), put on ("Put the X on the Y": at(X, Y), Y a receptacle that does not open),
    put in ("Put the X in the Y": at(X, Y), Y opens), turn on ("Turn on the X": on(X)) and a put +
    turn-on pair; about a third start with the robot standing and holding another thing (CAPE's D4
    "no free hand"). Every task has a reference program (reference_program), none already holds at
    the start, texts are unique and none is in `exclude` (e.g. the demonstrations' tasks)."""
    rng = random.Random(f"cape-tasks:{seed}")
    banned = {" ".join(t.lower().split()).rstrip(".") for t in exclude}
    out: list[GeneratedTask] = []
    for scene_name in scenes:
        scene, start = SCENES[scene_name]()
        movable = sorted(t.name for t in scene.things if "grabbable" in t.properties)
        on_recs = sorted(t.name for t in scene.things
                         if "receptacle" in t.properties and "openable" not in t.properties)
        in_recs = sorted(t.name for t in scene.things if "receptacle" in t.properties and "openable" in t.properties)
        switches = sorted(t.name for t in scene.things if "switchable" in t.properties)
        seen: set[str] = set()
        n, tries = 0, 0
        while n < per_scene and tries < 200 * per_scene:
            tries += 1
            kind = rng.choice(("fetch", "put_on", "put_in", "turn_on", "put_turn_on"))
            x = rng.choice(movable)
            goal: tuple[Atom, ...]
            if kind == "fetch":
                text, goal = f"Bring me the {x}", (("held", x),)
            elif kind == "put_on" and on_recs:
                y = rng.choice(on_recs)
                text, goal = f"Put the {x} on the {y}", (("at", x, y),)
            elif kind == "put_in" and in_recs:
                y = rng.choice(in_recs)
                text, goal = f"Put the {x} in the {y}", (("at", x, y),)
            elif kind == "turn_on" and switches:
                y = rng.choice(switches)
                text, goal = f"Turn on the {y}", (("on", y),)
            elif kind == "put_turn_on" and switches and on_recs:
                y, z = rng.choice(on_recs), rng.choice(switches)
                if z == x:
                    continue
                text, goal = f"Put the {x} on the {y} and turn on the {z}", (("at", x, y), ("on", z))
            else:
                continue
            norm = text.lower()
            if norm in seen or norm in banned:
                continue
            held = ""
            if rng.random() < 1 / 3:
                others = [m for m in movable if all(m not in a for a in goal)
                          and start.object_locations.get(m) in scene.rooms + tuple(on_recs)]
                held = rng.choice(others) if others else ""
            begin = start_with(start, held, standing=bool(held))
            if goal_holds(begin, goal):
                continue
            try:
                reference_program(scene, begin, goal)
            except NoReferencePlan:
                continue
            seen.add(norm)
            n += 1
            out.append(GeneratedTask(f"gen_{scene_name}_{n:02d}", text, scene_name, goal, held, bool(held)))
    return out


__all__ = ["GOAL_KINDS", "HOUSEHOLD_SKILLS", "PROPERTIES", "SCENES", "Atom", "Door", "GeneratedTask", "HouseholdScene",
           "HouseholdWorld", "NoReferencePlan", "Thing", "atom_holds", "atom_text", "generate_tasks", "goal_holds",
           "household_text", "judge_household", "parse_atom", "reference_program", "run_program", "spot_home",
           "spot_kitchen", "spot_lab", "start_with"]
