"""MultiTalk's view of the scene (no rclpy): perceived bounding boxes, their serialisation
`{name: ((l, w, h), (cx, cy, cz))}`, semantic relations `((object_1, object_2), 'on'|'in'|'near')`
(object_2 is on/in/near object_1, M l.194-199) and the workspace bounds of the prompt.

Every length is in metres, in the robot base frame (x forward, y left, z up; table top z = 0).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from monologue_domain.tabletop import WORKSPACE_X, WORKSPACE_Y

from ...ports import SceneItem, Workspace

LOCATION = "location"
Vec3 = tuple[float, float, float]


@dataclass(frozen=True)
class Box:
    """One perceived thing: its axis-aligned box (m) and category (block, bowl, location, ...)."""

    name: str
    category: str
    size: Vec3  # (length x, width y, height z)
    center: Vec3  # base frame


def perceived_boxes(items: Sequence[SceneItem], include_locations: bool) -> tuple[list[Box], list[str]]:
    """The visible items with a position as boxes (locations too if asked), and the names of the
    items left out because perception gave no position."""
    boxes: list[Box] = []
    unplaced: list[str] = []
    for i in items:
        if not i.visible or (i.category == LOCATION and not include_locations):
            continue
        if i.position is None:
            unplaced.append(i.name)
            continue
        boxes.append(Box(i.name, i.category, i.size or (0.0, 0.0, 0.0), i.position))
    return boxes, unplaced


def fmt(v: float, digits: int) -> str:
    """A length for the prompt: rounded to `digits` decimals, trailing zeros dropped ("0.5", "0.0")."""
    s = f"{round(v, digits):.{digits}f}".rstrip("0")
    s = s + "0" if s.endswith(".") else s
    return "0.0" if s == "-0.0" else s


def _vec(v: Vec3, digits: int) -> str:
    return "(" + ", ".join(fmt(c, digits) for c in v) + ")"


def serialise_objects(boxes: Sequence[Box], digits: int) -> str:
    """The Planner's and Analyzer's <objects>: a Python dict literal (M l.96-106)."""
    return "{" + ", ".join(f"{b.name!r}: ({_vec(b.size, digits)}, {_vec(b.center, digits)})" for b in boxes) + "}"


def _xy(a: Box, b: Box) -> float:
    return math.hypot(a.center[0] - b.center[0], a.center[1] - b.center[1])


def relations(boxes: Sequence[Box], near_distance: float) -> list[tuple[str, str, str]]:
    """(object_1, object_2, relation) meaning "object_2 is <relation> object_1": `in` a bowl (x-y
    within its rim), `on` a lower object whose top it overlaps, else `near` within near_distance (x-y,
    once per pair). Locations take no part."""
    things = [b for b in boxes if b.category != LOCATION]
    out: list[tuple[str, str, str]] = []
    for i, a in enumerate(things):
        for j, b in enumerate(things):
            if a is b:
                continue
            d = _xy(a, b)
            if a.category == "bowl" and b.category != "bowl" and d < a.size[0] / 2:
                out.append((a.name, b.name, "in"))
            elif (a.category != "bowl" and b.center[2] > a.center[2] + 1e-3
                  and d < max(a.size[0], b.size[0]) / 2):
                out.append((a.name, b.name, "on"))
            elif i < j and d < near_distance and not any({x, y} == {a.name, b.name} for x, y, _ in out):
                out.append((a.name, b.name, "near"))
    return out


def serialise_relations(rels: Sequence[tuple[str, str, str]]) -> str:
    """The Analyzer's <semantic_relations>: `[((object_1, object_2), 'on'), ...]`."""
    return "[" + ", ".join(f"(({a!r}, {b!r}), {r!r})" for a, b, r in rels) + "]"


def table_workspace() -> Workspace:
    """The kinematic tabletop's workspace (monologue_domain.tabletop), for a robot without a safety
    workspace of its own (sim_kinematic): its objects and named locations lie inside it."""
    return Workspace((WORKSPACE_X[0], WORKSPACE_Y[0], 0.0), (WORKSPACE_X[1], WORKSPACE_Y[1], 1.0), 0.0)


def render_bounds(ws: Workspace, digits: int) -> str:
    """<bounds> of the Planner's Environment block, in the supplement's form (M l.97)."""
    (x0, y0, _), (x1, y1, _) = ws.minimum, ws.maximum
    return (f"{fmt(x0, digits)} < x < {fmt(x1, digits)}, {fmt(y0, digits)} < y < {fmt(y1, digits)}, "
            f"and z \u2265 {fmt(max(ws.min_height, ws.minimum[2]), digits)}")


def out_of_bounds(ws: Workspace, p: Vec3) -> str:
    """Why `p` lies outside the workspace ("" if inside; the bounds count as inside)."""
    eps = 1e-9
    for axis, lo, hi, v in zip("xy", ws.minimum, ws.maximum, p):
        if not lo - eps <= v <= hi + eps:
            return f"{axis} = {v:g} m is outside {lo:g} .. {hi:g} m"
    low = max(ws.min_height, ws.minimum[2])
    if p[2] < low - eps or p[2] > ws.maximum[2] + eps:
        return f"z = {p[2]:g} m is outside {low:g} .. {ws.maximum[2]:g} m"
    return ""
