"""Backend `household` (robot `sim_household`): CAPE's household state model (CAPE §2.3, C l.136-155) as a
symbolic world inside the skills node (monologue_domain.kitchen.household): rooms joined by doors, things with
properties (movable, openable, grabbable, receptacle, switchable) and states (location, grabbed, open,
turned on), a robot that sits or stands with one arm (Spot) or two, and CAPE's Spot scenes.

Skills (GetAffordances names; texts in config/prompts/household.yaml): the 14 of
kitchen.household.HOUSEHOLD_SKILLS, e.g. stand_up(), walk_to(room | thing), pick_up(thing),
put(thing, receptacle), open(thing). A failed precondition gives PRECONDITION_FAILED with
`failed_precondition` = "<proposition>: I cannot <skill> because <reason>"
(monologue_domain.kitchen.skills.parse_precondition gives the proposition and CAPE's difficulty level;
the skill and arguments are the goal's). Affordances come from the same preconditions: the perfect
oracle, or CAPE's noisy one that flips each value with probability `affordance_flip` (C l.102: 6%).
Skills execute perfectly when their preconditions hold (C l.234). Ground truth (sim/ground_truth)
encodes the symbolic state (kitchen.scene / HouseholdWorld.scene_objects), so oracle perception and
the success detector's `kitchen` strategy read it back with kitchen.scene.state_from_scene.

Parameters (config/robots/sim_household.yaml, block `household.*`): scene, hands, seed, start-state
overrides, affordance oracle, time per skill (s).
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

from monologue_common.core.settings import ParamReader
from monologue_domain.kitchen.household import SCENES, HouseholdScene, HouseholdWorld
from monologue_domain.kitchen.state import HELD, KitchenState
from monologue_domain.kitchen.world import parse_placements
from skills_node.plugin import BackendHandle, BackendHost, BackendPlugin

from .core import HouseholdBackend

ORACLES = ("perfect", "noisy")


@dataclass(frozen=True)
class HouseholdSettings:
    scene_name: str  # key of kitchen.household.SCENES
    scene: HouseholdScene
    start: KitchenState
    hands: int  # 1 (Spot's single arm) or 2
    seed: int  # the seed used (a random one if the parameter was -1)
    affordance_flip: float  # probability each affordance is flipped; 0.0 with the perfect oracle
    skill_duration: float  # s per skill


def start_state(scene: HouseholdScene, default: KitchenState, objects: Sequence[str], robot_location: str,
                open_things: Sequence[str], turned_on: Sequence[str], sitting: bool) -> KitchenState:
    """The scene's default start with the parameters' overrides ("thing@where" placements, the robot's
    place ("" = the scene's), the open and the switched-on things, the posture); ValueError naming
    every problem."""
    problems: list[str] = []
    where = dict(default.object_locations)
    try:
        placed = parse_placements(objects)
    except ValueError as e:
        placed, problems = {}, [str(e)]
    names = {t.name: t for t in scene.things}
    problems += [f"unknown thing {o!r} in household.objects" for o in placed if o not in names]
    places = set(names) | set(scene.rooms) | {HELD}
    problems += [f"the {o} is at unknown place {w!r} (a room, a thing or {HELD!r})"
                 for o, w in placed.items() if w not in places]
    where.update({o: w for o, w in placed.items() if o in names})
    for things, prop, label in ((open_things, "openable", "open"), (turned_on, "switchable", "turned_on")):
        for o in things:
            if o not in names:
                problems.append(f"unknown thing {o!r} in household.{label}")
            elif prop not in names[o].properties:
                problems.append(f"the {o} in household.{label} is not {prop}")
    if problems:
        raise ValueError("; ".join(problems))
    states = {o: frozenset({"on"}) for o in turned_on}
    states["robot"] = frozenset({"sitting" if sitting else "standing"})
    return replace(default, robot_location=robot_location or default.robot_location, object_locations=where,
                   open_containers=frozenset(open_things), states=states)


def read(r: ParamReader) -> HouseholdSettings | None:
    scene_name = r.string("household.scene", choices=sorted(SCENES))
    hands = r.integer("household.hands", low=1, high=2)
    seed = r.integer("household.seed", low=-1, high=2**31 - 1)
    if seed < 0:
        seed = random.SystemRandom().randrange(1_000_000)
    oracle = r.string("household.affordances", choices=ORACLES)
    flip = r.number("household.affordance_flip", low=0.0, high=1.0)
    objects = r.strings("household.objects")
    robot = r.string("household.robot_location")
    open_things = r.strings("household.open")
    turned_on = r.strings("household.turned_on")
    sitting = r.boolean("household.sitting")
    duration = r.number("household.skill_duration", low=0.0, high=60.0)
    if r.errors:  # the reader reported the bad values; build nothing from them
        return None
    scene, default = SCENES[scene_name]()
    try:
        start = start_state(scene, default, objects, robot.strip(), open_things, turned_on, sitting)
        HouseholdWorld(scene, start, hands)  # validates places, the robot's place and the hands
    except ValueError as e:
        r.check(False, f"household ({scene_name}): {e}")
        return None
    return HouseholdSettings(scene_name, scene, start, hands, seed, flip if oracle == "noisy" else 0.0, duration)


def create(host: BackendHost, s: HouseholdSettings) -> BackendHandle:
    world = HouseholdWorld(s.scene, s.start, s.hands, s.affordance_flip, s.seed)
    host.logger("skills").info(
        "household %r (seed %d, %d hand(s), affordance flip %.2f): robot at the %s, %s", s.scene_name, s.seed,
        s.hands, s.affordance_flip, s.start.robot_location, "/".join(sorted(s.start.states.get("robot", ()))))
    return BackendHandle(HouseholdBackend(world, host.logger("skills.household"), s.skill_duration,
                                          on_change=host.publish_ground_truth))


PLUGIN = BackendPlugin("household", read, create,
                       "symbolic CAPE household (rooms, doors, sitting, one arm) with preconditions")
