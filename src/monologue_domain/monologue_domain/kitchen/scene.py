"""The kitchen world as a scene description, and back (no rclpy).

SceneObject has no field for symbolic relations, so the kitchen's ground truth encodes them in
existing fields (lossless: `state_from_scene(to_scene_objects(s)) == s` apart from `states`; the household's encoding,
kitchen.household.HouseholdWorld.scene_objects, is lossless with `states`):

- an object: category "<kind>@<where>", e.g. "drink@far counter", "drink@robot" (held), "drink@top
  drawer"; its position is near its location's point (at the robot, 1 m up, when held);
- a drawer: name "top drawer", category "drawer@open" or "drawer@closed", at the drawers;
- every location: category "location" at its fixed point;
- the robot: name "robot", category "location", at the point of the location it is at (a location
  entry, so Object feedback does not list it);
- markers, also location entries (so no feedback lists them), named "<kind>@<value>" (MARKERS):
  "visited@table" for every place of KitchenState.visited (the robot's path during the episode, for
  `visited()` goals), and, written by the household world (kitchen.household), "robot@<place>" (the
  robot's place, a room or the thing it is near; it wins over the robot entry's position),
  "posture@sitting" / "posture@standing" (states["robot"]), "open@<thing>" (open_containers) and
  "on@<thing>" (states[thing] = {"on"}).

Positions are m in the kitchen's frame (a plausible office-kitchen layout; only the symbolic state
matters). `visible` is True for objects at the robot's place (held, or in an open drawer at the
drawers), which is what a robot would see there.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from ..scene import LOCATION, SceneObject, Vec3
from .layout import DRAWERS, DRAWERS_LOCATION, OBJECTS, object_type
from .state import HELD, KitchenState

ROBOT = "robot"  # name of the robot's scene entry
LAYOUT: dict[str, Vec3] = {  # m: x, y, height of the surface
    "initial position": (0.0, 0.0, 0.0),
    "close counter": (1.0, 0.5, 0.9),
    "far counter": (4.0, 0.5, 0.9),
    "table": (2.5, 3.0, 0.75),
    "trash": (0.0, 3.0, 0.5),
    "user": (-1.5, 1.5, 0.0),
    "drawers": (1.0, -1.5, 0.6),
}
OBJECT_SIZE: Vec3 = (0.07, 0.07, 0.12)  # m, a can
DRAWER_SIZE: Vec3 = (0.5, 0.4, 0.2)  # m


MARKERS = ("visited", "robot", "posture", "open", "on")  # kinds of marker entries


def _category(kind: str, where: str) -> str:
    return f"{kind}@{where}"


def marker(kind: str, value: str, position: Vec3) -> SceneObject:
    """A marker entry (a location entry named "<kind>@<value>", kind in MARKERS) at `position` (m)."""
    if kind not in MARKERS:
        raise ValueError(f"unknown marker kind {kind!r}; known: {list(MARKERS)}")
    return SceneObject(f"{kind}@{value}", LOCATION, position)


def to_scene_objects(state: KitchenState, drawers: Sequence[str] = DRAWERS) -> list[SceneObject]:
    robot_at = LAYOUT[state.robot_location]
    out = [SceneObject(name, LOCATION, pos) for name, pos in LAYOUT.items()]
    out.append(SceneObject(ROBOT, LOCATION, robot_at))
    for d in drawers:
        x, y, z = LAYOUT[DRAWERS_LOCATION]
        out.append(SceneObject(d, _category("drawer", "open" if d in state.open_containers else "closed"),
                               (x, y, z), DRAWER_SIZE, visible=state.robot_location == DRAWERS_LOCATION))
    slots: dict[str, int] = {}
    for name, where in state.object_locations.items():
        kind = OBJECTS.get(object_type(name), "object")
        if where == HELD:
            pos: Vec3 = (robot_at[0], robot_at[1], 1.0)
            visible = True
        else:
            place = DRAWERS_LOCATION if where in drawers else where
            i = slots[place] = slots.get(place, -1) + 1
            x, y, z = LAYOUT[place]
            pos = (x + 0.1 * (i % 5), y + 0.1 * (i // 5), z)
            visible = place == state.robot_location and (where not in drawers or where in state.open_containers)
        out.append(SceneObject(name, _category(kind, where), pos, OBJECT_SIZE, visible=visible))
    out += [marker("visited", p, LAYOUT.get(p, robot_at)) for p in sorted(state.visited)]
    return out


def state_from_scene(objects: Iterable[SceneObject]) -> KitchenState:
    """The KitchenState encoded in a scene description (ground truth or an oracle's copy of it);
    ValueError if it carries no robot entry."""
    robot: Vec3 | None = None
    robot_place: str | None = None
    where: dict[str, str] = {}
    open_drawers: set[str] = set()
    states: dict[str, set[str]] = {}
    visited: set[str] = set()
    for o in objects:
        if o.category == LOCATION:
            if o.name == ROBOT:
                robot = o.position
            kind, sep, value = o.name.partition("@")
            if not sep or kind not in MARKERS:
                continue
            if kind == "visited":
                visited.add(value)
            elif kind == "robot":
                robot_place = value
            elif kind == "open":
                open_drawers.add(value)
            elif kind == "posture":
                states.setdefault(ROBOT, set()).add(value)
            else:  # "on"
                states.setdefault(value, set()).add("on")
            continue
        kind, sep, place = o.category.partition("@")
        if not sep:
            continue
        if kind == "drawer":
            if place == "open":
                open_drawers.add(o.name)
        else:
            where[o.name] = place
    if robot is None and robot_place is None:
        raise ValueError("the scene has no 'robot' entry: not a kitchen scene")
    if robot_place is not None:
        at = robot_place
    else:
        assert robot is not None
        r = robot
        at = min(LAYOUT, key=lambda n: math.dist(LAYOUT[n], r))
    held = [o for o, w in where.items() if w == HELD]
    return KitchenState(at, held[0] if held else None, where, frozenset(open_drawers),
                        {k: frozenset(v) for k, v in states.items()}, frozenset(visited))


__all__ = ["LAYOUT", "MARKERS", "ROBOT", "marker", "state_from_scene", "to_scene_objects"]
