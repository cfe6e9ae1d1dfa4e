"""Statler's domains in the physics simulator: a block under an upside-down cup is neither in the ground
truth an oracle perceives nor in the rendered images until the arm moves the cup away; the disinfector
is a white container; the domain parameters are validated with the rest of the simulator's."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from monologue_domain.robots import node_parameters
from monologue_domain.scene_spec import SceneSpec, layout_scene
from monologue_domain.statler_domains import DomainSettings, DomainTruth, domain_spec
from monologue_domain.tabletop import CUP_HEIGHT, DISINFECTOR, LOCATIONS
from tabletop_sim.core.arm import ArmController
from tabletop_sim.core.camera import CameraRenderer
from tabletop_sim.core.config import settings_from_parameters
from tabletop_sim.core.kinematics import PARK_Q, ArmKinematics
from tabletop_sim.core.primitive import pick_and_place
from tabletop_sim.core.world import SimWorld, WorldConfig

from .conftest import CONFIG, LOG

COVERS = DomainSettings("covers", cup_colors=("orange",), covered_blocks=("red",))


def covers_world(world_config: WorldConfig, **config: object) -> SimWorld:
    spec = domain_spec(COVERS, SceneSpec(("red", "blue"), ("green",)))
    world = SimWorld(layout_scene(spec, 3), replace(world_config, seed=3, **config), LOG)  # type: ignore[arg-type]
    world.step(100)  # the cup settles over the block
    return world


def seen_ids(world: SimWorld) -> set[int]:
    renderer = CameraRenderer(world, "overhead", 320, 240, pixel_noise_std=0.0, seed=0)
    try:
        frame = renderer.render(segmentation=True)
    finally:
        renderer.close()
    assert frame.segmentation is not None
    return {int(i) for i in np.unique(frame.segmentation)}


def test_a_covered_block_is_hidden_until_the_arm_moves_its_cup(world_config: WorldConfig,
                                                                 kinematics: ArmKinematics) -> None:
    world = covers_world(world_config, home_q=PARK_Q)  # the overhead camera sees the whole table
    red = next(o for o in world.objects() if o.name == "red block")
    perceived = [o.name for o in world.ground_truth(0.0).objects]
    assert "red block" not in perceived and {"orange cup", "blue block", "green bowl"} <= set(perceived)
    assert world.covered() == {"red block": "orange cup"}
    assert red.segmentation_id not in seen_ids(world)  # under the cup: no pixel of it

    cup = next(o for o in world.objects() if o.name == "orange cup")
    arm = ArmController(world, None, LOG, kinematics)
    x, y = LOCATIONS["bottom left corner"]
    out = pick_and_place(arm, (cup.position[0], cup.position[1], CUP_HEIGHT), (x, y, 0.0))
    world.step(250)
    assert out.picked, [(n, r.error.name) for n, r in out.steps]
    moved = next(o for o in world.objects() if o.name == "orange cup")
    assert abs(moved.position[0] - x) < 0.03 and abs(moved.position[1] - y) < 0.03
    still = next(o for o in world.objects() if o.name == "red block")
    assert np.allclose(still.position, red.position, atol=0.01)  # the cup moved, the block stayed
    assert world.covered() == {}
    assert "red block" in [o.name for o in world.ground_truth(0.0).objects]
    arm.move_joints(list(PARK_Q), 0.0, 0.0)
    assert red.segmentation_id in seen_ids(world)


def test_disinfection_truth_settles_on_the_physical_poses(world_config: WorldConfig) -> None:
    settings = DomainSettings("disinfection", dirty_blocks=("red",))
    spec = domain_spec(settings, SceneSpec(("red", "blue"), ()))
    world = SimWorld(layout_scene(spec, 4), replace(world_config, seed=4), LOG)
    world.step(50)
    disinfector = next(o for o in world.objects() if o.name == DISINFECTOR)
    assert disinfector.category == "bowl" and disinfector.color == "white"
    truth = DomainTruth.create(settings, spec, 4)
    assert truth is not None
    world.move_object("blue block", *next(o.position[:2] for o in world.objects() if o.name == "red block"))
    world.step(300)  # dropped onto the red block
    truth.settle(world.kinematic_view())
    assert truth.disinfection.dirty == {"red block", "blue block"}
    world.move_object("blue block", disinfector.position[0], disinfector.position[1])
    world.step(300)
    truth.settle(world.kinematic_view())
    assert truth.to_json(world.kinematic_view())["dirty"] == ["red block"]


def test_scene_parameters_are_validated() -> None:
    params = node_parameters(CONFIG, "tabletop_sim", ["monologue.yaml", "robots/sim.yaml"])
    s = settings_from_parameters({**params, "sim.scene": "covers", "sim.block_colors": ["red", "blue"],
                                  "sim.bowl_colors": ["green"]})
    assert s.domain.scene == "covers" and s.spec.cup_colors and s.spec.covered_blocks == ("red",)
    with pytest.raises(ValueError, match="sim.scene"):
        settings_from_parameters({**params, "sim.scene": "kitchen"})
    with pytest.raises(ValueError, match="not blocks of the scene"):
        settings_from_parameters({**params, "sim.scene": "disinfection", "sim.block_colors": ["red"],
                                  "sim.bowl_colors": [""], "sim.dirty_blocks": ["cyan"]})
