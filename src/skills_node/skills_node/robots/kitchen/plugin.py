"""Backend `kitchen` (robot `sim_kitchen`): SayCan's office kitchen as a symbolic world with preconditions (SC §3.4,
IM §4.3, CAPE §2), inside the skills node (monologue_domain.kitchen.world).

Skills (GetAffordances names; texts in config/prompts/saycan.yaml): find(object), go_to(location),
pick_up(object), put_down(object), bring_to_user(), open_drawer(drawer), close_drawer(drawer),
put_in_drawer(object, drawer). A failed precondition gives PRECONDITION_FAILED with
`failed_precondition` = "<proposition>: I cannot <skill> because <reason>"
(monologue_domain.kitchen.skills). Ground truth (sim/ground_truth) encodes the symbolic state in
SceneObject fields (monologue_domain.kitchen.scene).

Parameters (config/robots/sim_kitchen.yaml, block `kitchen.*`): seed, start state (object
placements, robot location, drawers, open drawers), affordance noise, disturbance rates, time per
skill (s).
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from monologue_common.core.settings import ParamReader
from monologue_domain.kitchen.state import KitchenState
from monologue_domain.kitchen.world import (
    DEFAULT_PLACEMENTS,
    KitchenNoise,
    KitchenWorld,
    make_state,
    parse_placements,
)
from skills_node.plugin import BackendHandle, BackendHost, BackendPlugin

from .core import KitchenBackend


@dataclass(frozen=True)
class KitchenSettings:
    seed: int  # the seed used (a random one if the parameter was -1)
    start: KitchenState
    drawers: tuple[str, ...]
    noise: KitchenNoise
    skill_duration: float  # s per skill
    completed_affordance: float  # affordance of a skill whose effect already holds, [0, 1]


def read(r: ParamReader) -> KitchenSettings:
    seed = r.integer("kitchen.seed", low=-1, high=2**31 - 1)
    if seed < 0:
        seed = random.SystemRandom().randrange(1_000_000)
    objects = r.strings("kitchen.objects")
    robot = r.string("kitchen.robot_location", nonempty=True)
    drawers = r.strings("kitchen.drawers")
    open_drawers = r.strings("kitchen.open_drawers")
    rates = {k: r.number(f"kitchen.{k}", low=0.0, high=1.0)
             for k in ("affordance_flip", "failure_rate", "drop_rate", "move_rate")}
    report = r.boolean("kitchen.report_failures")
    duration = r.number("kitchen.skill_duration", low=0.0, high=60.0)
    completed = r.number("kitchen.completed_affordance", low=0.0, high=1.0)
    start, noise = make_state(DEFAULT_PLACEMENTS), KitchenNoise()
    if not r.errors:  # the reader reported the bad values; build the world's parts from good ones only
        noise = KitchenNoise(report_failures=report, **rates)
        try:
            placements = parse_placements(objects) if objects else dict(DEFAULT_PLACEMENTS)
            start = make_state(placements, robot, open_drawers, drawers)
        except ValueError as e:
            r.check(False, f"kitchen: {e}")
    return KitchenSettings(seed, start, drawers, noise, duration, completed)


def create(host: BackendHost, s: KitchenSettings) -> BackendHandle:
    world = KitchenWorld.from_state(s.start, s.seed, s.noise, s.drawers, s.completed_affordance)
    host.logger("skills").info("kitchen (seed %d): robot at the %s; %s", s.seed, s.start.robot_location,
                               ", ".join(f"{o}@{w}" for o, w in s.start.object_locations.items()))
    return BackendHandle(KitchenBackend(world, host.logger("skills.kitchen"), s.skill_duration,
                                        on_change=host.publish_ground_truth))


PLUGIN = BackendPlugin("kitchen", read, create, "symbolic SayCan kitchen with preconditions (no arm)")
