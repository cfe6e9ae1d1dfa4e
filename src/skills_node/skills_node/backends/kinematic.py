"""Backend `kinematic`: the in-process kinematic tabletop (IM §4.1; fast, for the planner's mechanics).

Parameters (config/robots/sim_kinematic.yaml, block `sim.*`): the scene (seed, colours, heavy
blocks), place noise (m), the time per motion phase (s) and the affordance of an achieved pick_place.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from monologue_common.core.settings import ParamReader
from monologue_domain.kinematic_world import PlaceNoise, TabletopWorld
from monologue_domain.scene_spec import SceneSpec, make_spec

from ..core.backend import SimBackend
from . import BackendHandle, BackendHost, BackendPlugin


@dataclass(frozen=True)
class KinematicSettings:
    seed: int  # the scene seed used (a random one if the parameter was -1)
    spec: SceneSpec
    place_noise_std: float  # m, N(0, std) on x and y of a placed block
    phase_duration: float  # s per motion phase
    completed_affordance: float  # affordance of a pick_place that is already achieved, [0, 1]


def read(r: ParamReader) -> KinematicSettings:
    seed = r.integer("sim.seed", low=-1, high=2**31 - 1)
    if seed < 0:
        seed = random.SystemRandom().randrange(1_000_000)
    num_blocks = r.integer("sim.num_blocks", low=0, high=4)
    num_bowls = r.integer("sim.num_bowls", low=0, high=3)
    matching = r.boolean("sim.matching_bowls")
    blocks, bowls = r.strings("sim.block_colors"), r.strings("sim.bowl_colors")
    heavy = r.strings("sim.heavy_blocks")
    noise = r.number("sim.place_noise_std", low=0.0, high=0.2)
    phase = r.number("sim.phase_duration", low=0.0, high=10.0)
    completed = r.number("sim.completed_affordance", low=0.0, high=1.0)
    spec = SceneSpec(blocks, bowls, heavy)
    if not r.errors:
        try:  # the kinematic world's lenient check: any colour names, no count limits
            spec = make_spec(seed, num_blocks, num_bowls, matching, blocks, bowls, heavy, strict=False)
        except ValueError as e:
            r.check(False, f"sim: {e}")
    return KinematicSettings(seed, spec, noise, phase, completed)


def create(host: BackendHost, s: KinematicSettings) -> BackendHandle:
    world = TabletopWorld.from_spec(s.spec, s.seed, place_noise=PlaceNoise(s.place_noise_std),
                                    completed_affordance=s.completed_affordance,
                                    logger=host.logger("skills.tabletop"))
    host.logger("skills").info("sim scene (seed %d): %s", s.seed, ", ".join(o.name for o in world.objects))
    return BackendHandle(SimBackend(world, host.logger("skills.sim"), s.phase_duration,
                                    on_change=host.publish_ground_truth))


PLUGIN = BackendPlugin("kinematic", read, create, "kinematic tabletop inside the skills node")
