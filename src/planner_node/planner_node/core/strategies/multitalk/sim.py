"""MultiTalk's simulator stage (no rclpy): an accepted plan runs first in the kinematic tabletop
(monologue_domain.kinematic_world) built from the perceived scene; the first execution error,
collision or out-of-bounds coordinate is returned for the "Simulator Feedback" prompt, and an
error-free plan becomes the robot's skill calls.

The plan's coordinates are mapped onto the robot's pick-and-place skill: `grasp(c)` names the object
whose centre is nearest c (x-y, within its footprint or `match_tolerance`), `move(c)` the object (a
bowl, a block to stack on) or named table location nearest c; each grasp + move pair is one
`pick_place(object, target)`. z is not used to choose (the supplement executes at table height,
M Fig. 3); it is checked against the bounds, and a move onto an object other than a bowl must aim at
its top (stacking) or it is a collision, as is a move to a table location another object occupies.
The rules of the Actions block are enforced: one object at a time, grasp before move, nothing after
home(), nothing left in the gripper at the end.
Lengths in metres, base frame.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from monologue_domain.kinematic_world import KinematicObject, TabletopWorld
from monologue_domain.skills import SkillRejected
from monologue_domain.tabletop import LOCATIONS

from ...ports import Workspace
from .parsing import PlanStep
from .scene import LOCATION, Box, out_of_bounds

PICK_PLACE = "pick_place"
STACK_Z_TOLERANCE = 0.005  # m: a move onto an object (not a bowl) must aim at least this close to its top
_PROBE_TARGET = next(iter(LOCATIONS))  # any location: check_pick_place needs a target


@dataclass(frozen=True)
class SkillCall:
    """One robot skill of an approved plan and the plan steps it came from."""

    skill: str
    args: tuple[str, ...]
    steps: tuple[int, ...]


@dataclass(frozen=True)
class SimResult:
    """The simulator's verdict on a plan."""

    ok: bool
    error: str  # "" if ok, else "Step k: <action>: <what went wrong>"
    calls: tuple[SkillCall, ...]  # the skills an approved plan runs (up to the error otherwise)
    homed: bool  # the plan ends with home()
    log: tuple[str, ...]  # what each step did in the simulation


def world_from_boxes(boxes: Sequence[Box]) -> TabletopWorld:
    """A kinematic tabletop holding the perceived objects (locations are the tabletop's own)."""
    objects: list[KinematicObject] = []
    for i, b in enumerate(x for x in boxes if x.category != LOCATION):
        color = b.name.rsplit(" ", 1)[0] if " " in b.name else b.name
        objects.append(KinematicObject(b.name, b.category, color, *b.center, seg_id=i + 1))
    return TabletopWorld(objects=objects)


def _footprint(o: KinematicObject) -> float:
    return max(o.size[0], o.size[1]) / 2


def _nearest(world: TabletopWorld, c: tuple[float, float, float], tolerance: float, grasp: bool,
             exclude: str = "", locations: Sequence[str] = ()) -> str | None:
    """The object (or location) nearest c in x-y (to 1 cm) whose footprint (or `tolerance`) contains
    c. At equal distance a grasp prefers what is not a bowl (the block in a bowl), a move the bowl
    (put it in); then the one nearest in z (a stack)."""
    best: tuple[int, float, int, float, str] | None = None
    for o in world.objects:
        if o.name == exclude:
            continue
        d = math.hypot(o.x - c[0], o.y - c[1])
        if d <= max(tolerance, _footprint(o)):
            bowl = int(o.category == "bowl")
            key = (bowl if grasp else 0, round(d, 2), 0 if grasp else 1 - bowl, abs(o.z - c[2]), o.name)
            best = key if best is None or key < best else best
    for name in locations:
        x, y, _ = world.position_of(name)
        d = math.hypot(x - c[0], y - c[1])
        if d <= tolerance:
            key = (0, round(d, 2), 2, 0.0, name)  # an object there comes first (stack on it, or put it in)
            best = key if best is None or key < best else best
    return best[-1] if best is not None else None


def _collision(world: TabletopWorld, held: KinematicObject, location: str) -> str:
    """The object a placed `held` would hit at a table location ("" if none)."""
    x, y, _ = world.position_of(location)
    for o in world.objects:
        if o is held:
            continue
        if math.hypot(o.x - x, o.y - y) < _footprint(o) + _footprint(held):
            return o.name
    return ""


def simulate(plan: Sequence[PlanStep], boxes: Sequence[Box], workspace: Workspace,
             match_tolerance: float) -> SimResult:
    """Run `plan` in a kinematic world built from `boxes` (see the module docstring)."""
    world = world_from_boxes(boxes)
    locations = [b.name for b in boxes if b.category == LOCATION and b.name in LOCATIONS]
    calls: list[SkillCall] = []
    log: list[str] = []
    held: KinematicObject | None = None
    grasp_step = 0
    homed = False

    def fail(step: PlanStep, what: str) -> SimResult:
        return SimResult(False, f"Step {step.index}: {step.action.text}: {what}", tuple(calls), homed, tuple(log))

    if not plan:
        return SimResult(False, "The plan has no steps.", (), False, ())
    for step in plan:
        a = step.action
        if homed:
            return fail(step, "the robot has returned to its home position; no action can be performed after home()")
        if a.verb == "home":
            if held is not None:
                return fail(step, f"the robot returns home still holding the {held.name}")
            homed = True
            log.append(f"{step.index}: home")
            continue
        assert a.coords is not None
        bad = out_of_bounds(workspace, a.coords)
        if bad:
            return fail(step, f"out of bounds: {bad}")
        if a.verb == "grasp":
            if held is not None:
                return fail(step, f"the robot already holds the {held.name}; only one object can be grasped at a time")
            hit = _nearest(world, a.coords, match_tolerance, grasp=True)
            if hit is None:
                return fail(step, "there is no object at these coordinates to grasp")
            try:
                world.check_pick_place(hit, _PROBE_TARGET)
            except SkillRejected as e:
                return fail(step, f"cannot grasp the {hit}: {e.failed_precondition or e.message}")
            held, grasp_step = world.get(hit), step.index
            log.append(f"{step.index}: grasp the {held.name}")
            continue
        # move
        if held is None:
            return fail(step, "no object is grasped; an object must be grasped before moving it")
        hit = _nearest(world, a.coords, match_tolerance, grasp=False, exclude=held.name, locations=locations)
        if hit is None:
            return fail(step, f"there is nothing to put the {held.name} on at these coordinates (the robot places "
                              "objects onto an object or a named location of the table)")
        target = hit
        if target in LOCATIONS:
            other = _collision(world, held, target)
            if other:
                return fail(step, f"collision: the {held.name} would hit the {other} at the {target}")
        else:
            below = world.get(target)
            top = below.z + below.size[2] / 2
            if below.category != "bowl" and a.coords[2] < top - STACK_Z_TOLERANCE:
                return fail(step, f"collision: the {held.name} would hit the {target} (z = {a.coords[2]:g} m is below "
                                  f"its top at {top:g} m)")
        try:
            moved, message = world.pick_place(held.name, target)
        except SkillRejected as e:
            return fail(step, f"cannot put the {held.name} on the {target}: {e.failed_precondition or e.message}")
        if not moved:
            return fail(step, message)
        calls.append(SkillCall(PICK_PLACE, (held.name, target), (grasp_step, step.index)))
        log.append(f"{step.index}: move the {held.name} to the {target}")
        held = None
    if held is not None:
        return SimResult(False, f"The plan ends with the {held.name} still grasped (step {grasp_step}).", tuple(calls),
                         homed, tuple(log))
    if not calls:
        return SimResult(False, "The plan moves no object.", (), homed, tuple(log))
    return SimResult(True, "", tuple(calls), homed, tuple(log))
