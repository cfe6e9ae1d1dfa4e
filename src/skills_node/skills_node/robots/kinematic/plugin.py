"""Backend `kinematic`: the in-process kinematic tabletop (IM §4.1; fast, for the planner's mechanics).

Parameters (config/robots/sim_kinematic.yaml, block `sim.*`): the scene (seed, colours, heavy
blocks), place noise (m), the time per motion phase (s) and the affordance of an achieved pick_place;
Statler's domains (`sim.scene`: covers | disinfection | weights, monologue_domain.statler_domains),
whose hidden ground truth goes to the latched JSON topic `sim/statler_truth` (scoring only).
"""
from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from monologue_common.core.settings import ParamReader
from monologue_domain.kinematic_world import PlaceNoise, TabletopWorld
from monologue_domain.scene_spec import SceneSpec, make_spec
from monologue_domain.statler_domains import SCENES, TRUTH_TOPIC, DomainSettings, DomainTruth, domain_spec
from skills_node.plugin import BackendHandle, BackendHost, BackendPlugin

from .core.backend import SimBackend


@dataclass(frozen=True)
class KinematicSettings:
    seed: int  # the scene seed used (a random one if the parameter was -1)
    spec: SceneSpec
    place_noise_std: float  # m, N(0, std) on x and y of a placed block
    phase_duration: float  # s per motion phase
    completed_affordance: float  # affordance of a pick_place that is already achieved, [0, 1]
    domain: DomainSettings  # Statler's domain of the scene (scene "tabletop": none)


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
    domain = read_domain_settings(r)
    spec = SceneSpec(blocks, bowls, heavy)
    if not r.errors:
        try:  # the kinematic world's lenient check: any colour names, no count limits
            spec = domain_spec(domain, make_spec(seed, num_blocks, num_bowls, matching, blocks, bowls, heavy,
                                                 strict=False))
            spec.validate(strict=False)
            DomainTruth.create(domain, spec, seed)  # checks dirty blocks and weights against the scene
        except ValueError as e:
            r.check(False, f"sim: {e}")
    return KinematicSettings(seed, spec, noise, phase, completed, domain)


def read_domain_settings(r: ParamReader) -> DomainSettings:
    """`sim.scene` and its domain's parameters (statler_domains.DomainSettings)."""
    return DomainSettings(
        scene=r.string("sim.scene", choices=SCENES), cup_colors=r.strings("sim.cup_colors"),
        covered_blocks=r.strings("sim.covered_blocks"), dirty_blocks=r.strings("sim.dirty_blocks"),
        block_weights=r.numbers("sim.block_weights"))


def create(host: BackendHost, s: KinematicSettings) -> BackendHandle:
    world = TabletopWorld.from_spec(s.spec, s.seed, place_noise=PlaceNoise(s.place_noise_std),
                                    completed_affordance=s.completed_affordance,
                                    logger=host.logger("skills.tabletop"))
    host.logger("skills").info("sim scene (seed %d, %s): %s", s.seed, s.domain.scene,
                               ", ".join(o.name for o in world.objects))
    on_change: Callable[[], None] = host.publish_ground_truth
    truth = DomainTruth.create(s.domain, s.spec, s.seed)
    if truth is not None:
        on_change = _truth_publisher(host, world, truth)
    backend = SimBackend(world, host.logger("skills.sim"), s.phase_duration, on_change=on_change)
    if truth is not None:
        add_expert_extra(backend, world, truth)
    return BackendHandle(backend)


def add_expert_extra(backend: SimBackend, world: TabletopWorld, truth: DomainTruth) -> None:
    """llm:=expert: the domain's hidden truth (DomainTruth.to_json, plus `order`: the objects in the scene's
    order, which world.json's sorted keys lose) as world.json's `extra["statler"]`
    (the skills node calls `expert_extra()` on every ground-truth publication), over any extra the backend
    already gives. Read under the backend's world lock: a skill's move and its settle are never half seen."""
    base = getattr(backend, "expert_extra", None)

    def extra() -> dict[str, Any]:
        out: dict[str, Any] = dict(base()) if callable(base) else {}
        with backend.world_lock:
            out["statler"] = {**truth.to_json(world), "order": [o.name for o in world.objects]}
        return out

    setattr(backend, "expert_extra", extra)  # noqa: B010 - an instance's optional hook (skills_node.node)


def _truth_publisher(host: BackendHost, world: TabletopWorld, truth: DomainTruth) -> Callable[[], None]:
    """Settle the domain's truth on every change and publish it (latched JSON) with the ground truth."""
    from std_msgs.msg import String

    from monologue_common.qos import LATCHED

    pub = host.node.create_publisher(String, TRUTH_TOPIC, LATCHED)
    world.observer = truth
    world.settle()

    def publish() -> None:
        host.publish_ground_truth()
        pub.publish(String(data=json.dumps(truth.to_json(world), ensure_ascii=False)))

    publish()
    return publish


PLUGIN = BackendPlugin("kinematic", read, create, "kinematic tabletop inside the skills node")
