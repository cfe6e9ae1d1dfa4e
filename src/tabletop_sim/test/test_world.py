"""Physics world through the arm API: pick and place, heavy blocks, stop, noise, disturbances."""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

import numpy as np
import pytest

from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.scene_spec import SceneSpec
from monologue_domain.tabletop import BLOCK_SIZE, BOWL_DIAMETER, BOWL_FLOOR, LOCATIONS
from tabletop_sim.core.arm import ArmController
from tabletop_sim.core.geometry import TOOL_DOWN_QUAT, Pose
from tabletop_sim.core.kinematics import HOME_Q
from tabletop_sim.core.motion import ArmError
from tabletop_sim.core.runner import SimRunner
from tabletop_sim.core.world import ObjectTruth, SimWorld

from .conftest import LOG

MakeWorld = Callable[..., tuple[SimWorld, ArmController]]
PickPlace = Callable[[ArmController, SimWorld, str, tuple[float, float]], list[str]]


def truth(world: SimWorld, name: str) -> ObjectTruth:
    return next(o for o in world.objects() if o.name == name)


def test_scene_starts_at_rest_where_it_was_sampled(make_world: MakeWorld) -> None:
    world, _ = make_world(("red", "blue"), ("green",))
    for placed, now in zip(world.layout.objects, world.objects()):
        assert math.hypot(placed.x - now.position[0], placed.y - now.position[1]) < 1e-3
        expected_z = BLOCK_SIZE / 2 if now.category == "block" else 0.0
        assert now.position[2] == pytest.approx(expected_z, abs=1e-3)


def test_physics_and_kinematic_worlds_start_from_the_same_scene(make_world: MakeWorld) -> None:
    world, _ = make_world(("red", "blue", "yellow"), ("green", "pink"), heavy=("blue",), seed=11)
    kinematic = TabletopWorld.from_spec(SceneSpec(("red", "blue", "yellow"), ("green", "pink"), ("blue",)), 11)
    for k, o in zip(kinematic.objects, world.objects(), strict=True):
        assert (k.name, k.seg_id, k.heavy) == (o.name, o.segmentation_id, o.heavy)
        assert math.dist((k.x, k.y, k.z), o.position) < 1e-3  # m, after settling


def test_ground_truth_scene_lists_objects_then_locations(make_world: MakeWorld) -> None:
    world, _ = make_world(("red", "blue"), ("green",), heavy=("blue",))
    scene = world.ground_truth(12.5)
    assert (scene.frame, scene.stamp_s, scene.source, scene.held_objects) == ("base_link", 12.5, "ground_truth", ())
    names = [o.name for o in scene.objects]
    assert names == ["red block", "blue block", "green bowl", *LOCATIONS]
    by_name = scene.by_name()
    for o in world.objects():
        s = by_name[o.name]
        assert (s.position, s.size, s.orientation, s.segmentation_id, s.color, s.heavy) == (
            o.position, o.size, o.orientation, o.segmentation_id, o.color, o.heavy)
        assert s.visible and s.confidence == 1.0 and s.place_point is None
    assert by_name["blue block"].heavy and not by_name["red block"].heavy
    corner = by_name["top left corner"]
    assert corner.is_location and corner.position == (*LOCATIONS["top left corner"], 0.0)
    assert corner.size == (0.0, 0.0, 0.0) and corner.segmentation_id == -1


def test_pick_and_place_puts_the_block_in_the_bowl(make_world: MakeWorld, pick_place: PickPlace) -> None:
    world, arm = make_world(("red", "blue"), ("green",))
    bowl = truth(world, "green bowl").position
    steps = pick_place(arm, world, "red block", (bowl[0], bowl[1]))
    assert "descend: NONE contact=True holding=False" in steps[1]
    assert "holding=True" in steps[3]  # lifted
    red = truth(world, "red block")
    assert math.hypot(red.position[0] - bowl[0], red.position[1] - bowl[1]) < BOWL_DIAMETER / 2 - BLOCK_SIZE / 2
    assert red.position[2] == pytest.approx(BOWL_FLOOR + BLOCK_SIZE / 2, abs=3e-3)  # resting on the floor
    assert not red.held and not arm.holding()
    blue = truth(world, "blue block")  # the other block did not move
    assert math.hypot(blue.position[0] - world.layout.objects[1].x, blue.position[1] - world.layout.objects[1].y) < 1e-3


def test_stacking_then_knocking_the_tower_over(make_world: MakeWorld, pick_place: PickPlace) -> None:
    world, arm = make_world(("red", "blue", "yellow"))
    with pytest.raises(ValueError, match="no tower"):
        world.knock_tower()
    base = truth(world, "blue block").position
    pick_place(arm, world, "red block", (base[0], base[1]))
    red = truth(world, "red block").position
    assert red[2] == pytest.approx(1.5 * BLOCK_SIZE, abs=3e-3), "red block is not on the blue block"
    assert math.hypot(red[0] - base[0], red[1] - base[1]) < BLOCK_SIZE / 2
    pushed = world.knock_tower()
    assert pushed == ["red block"]
    world.step(1000)  # 2 s
    red = truth(world, "red block").position
    assert red[2] == pytest.approx(BLOCK_SIZE / 2, abs=3e-3), "the red block still sits on the tower"
    assert world.settled()


def test_a_heavy_block_seals_but_does_not_lift(make_world: MakeWorld, pick_place: PickPlace) -> None:
    world, arm = make_world(("purple", "red"), ("purple",), heavy=("purple",))
    start = truth(world, "purple block").position
    bowl = truth(world, "purple bowl").position
    steps = pick_place(arm, world, "purple block", (bowl[0], bowl[1]))
    assert steps[2].endswith("holding=True"), steps  # the vacuum sensor sees the seal on contact
    assert steps[3].endswith("holding=False"), steps  # the seal breaks when lifting
    assert len(steps) == 5 and steps[4].startswith("suction off")  # gave up: nothing carried
    now = truth(world, "purple block").position
    assert math.dist(now, start) < 2e-3 and truth(world, "purple block").heavy


def test_suction_only_grips_a_block_the_cup_touches(make_world: MakeWorld) -> None:
    world, arm = make_world(("red",))
    red = truth(world, "red block").position
    arm.move_linear(Pose((red[0], red[1], 0.10), TOOL_DOWN_QUAT))  # 6 cm above the block's top
    assert not arm.set_suction(True).holding
    r = arm.move_until_contact((0, 0, -1), 0.05, 0.2)  # the vacuum grips on contact
    assert r.contact and r.holding and world.held_object() == "red block"


def test_stop_aborts_a_running_motion_at_once(make_world: MakeWorld) -> None:
    world, _ = make_world(("red",))
    runner = SimRunner(world, 1.0, LOG).start()  # real time, so there is time to stop
    try:
        arm = ArmController(world, runner, LOG)
        target = list(HOME_Q)
        target[0] -= 1.5
        results = []
        t = threading.Thread(target=lambda: results.append(arm.move_joints(target, 0.5, 1.0)))
        t.start()
        time.sleep(0.5)
        arm.stop()
        t.join(5.0)
        assert results and results[0].error == ArmError.CANCELED
        q_stop = np.array(results[0].joint_positions)
        assert 0.02 < HOME_Q[0] - q_stop[0] < 1.0  # moved, but stopped well before the target
        time.sleep(0.2)
        assert np.allclose(arm.joint_positions(), q_stop, atol=1e-9)  # and stays there
        assert arm.move_linear(arm.tcp_pose(), 0.1, 1.0).ok  # the next command runs
    finally:
        runner.close()


def test_one_motion_at_a_time(make_world: MakeWorld) -> None:
    world, _ = make_world(("red",))
    runner = SimRunner(world, 1.0, LOG).start()
    try:
        arm = ArmController(world, runner, LOG)
        target = list(HOME_Q)
        target[0] -= 0.5
        t = threading.Thread(target=lambda: arm.move_joints(target, 0.5, 1.0))
        t.start()
        time.sleep(0.2)
        second = arm.move_joints(HOME_Q)
        assert second.error == ArmError.INVALID and "another motion" in second.message
        assert arm.set_suction(True).ok  # I/O is allowed meanwhile
        arm.stop()
        t.join(5.0)
    finally:
        runner.close()


def test_unreachable_target_is_refused_before_anything_moves(make_world: MakeWorld) -> None:
    world, arm = make_world(("red",))
    before = arm.joint_positions()
    r = arm.move_linear(Pose((1.5, 0.0, 0.3), TOOL_DOWN_QUAT))
    assert r.error == ArmError.UNREACHABLE and "reach" in r.message
    assert arm.joint_positions() == before
    assert arm.move_linear(Pose((float("nan"), 0.0, 0.3))).error == ArmError.INVALID
    assert arm.move_joints([0.0] * 5).error == ArmError.INVALID


@pytest.mark.parametrize("std", [0.0, 0.02])
def test_place_noise_switch(make_world: MakeWorld, std: float) -> None:
    world, arm = make_world(("red",), place_noise_std=std, seed=11)
    red = truth(world, "red block").position
    arm.move_linear(Pose((red[0], red[1], 0.1), TOOL_DOWN_QUAT))
    arm.move_until_contact((0, 0, -1), 0.05, 0.2)
    arm.set_suction(True)
    arm.move_linear(Pose((0.5, 0.0, 0.1), TOOL_DOWN_QUAT))
    held = truth(world, "red block").position
    arm.set_suction(False)
    released = truth(world, "red block").position
    shift = math.hypot(released[0] - held[0], released[1] - held[1])
    if std == 0.0:
        assert shift < 1e-6
    else:
        assert 1e-3 < shift < 5 * std


def test_move_object_disturbance(make_world: MakeWorld) -> None:
    world, _ = make_world(("red",), ("blue",))
    world.move_object_to_location("red block", "top left corner")
    world.step(300)
    red = truth(world, "red block").position
    assert math.dist(red[:2], LOCATIONS["top left corner"]) < 5e-3 and red[2] == pytest.approx(0.02, abs=2e-3)
    bowl = truth(world, "blue bowl").position
    world.move_object("red block", bowl[0], bowl[1])  # into the bowl
    world.step(300)
    assert truth(world, "red block").position[2] == pytest.approx(BOWL_FLOOR + BLOCK_SIZE / 2, abs=3e-3)
    for bad in ((2.0, 0.0), (0.05, 0.0)):
        with pytest.raises(ValueError):
            world.move_object("red block", *bad)
    with pytest.raises(KeyError):
        world.move_object("green block", 0.5, 0.0)
