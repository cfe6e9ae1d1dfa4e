"""The fake Spot's kitchen (testing/fake_spot_world.py) on its own: layout from monologue_domain.kitchen, exact
ray-cast images an oracle detector can use, grasp / release / drawer effects and the symbolic state."""
from __future__ import annotations

import math

import numpy as np
import pytest
from bosdyn.client.math_helpers import Quat, SE3Pose  # type: ignore[import-untyped, unused-ignore]

from monologue_domain.kitchen.state import HELD
from monologue_domain.kitchen.world import DEFAULT_PLACEMENTS, make_state
from skills_node.robots.spot.testing.fake_spot import HAND_T_SENSOR, LOOK_HAND
from skills_node.robots.spot.testing.fake_spot_world import BODY_HEIGHT, STAND_POSES, FakeKitchen, color_of

W, H, F = 320, 240, 276.0  # px: the hand camera at half resolution (same field of view)


def look_camera(pose: tuple[float, float, float]) -> np.ndarray:
    """odom_T_hand_color_image_sensor (4x4) with the body at `pose` and the arm stowed."""
    x, y, z, pitch = LOOK_HAND
    body = SE3Pose(pose[0], pose[1], BODY_HEIGHT, Quat.from_yaw(pose[2]))
    return np.asarray((body * SE3Pose(x, y, z, Quat.from_pitch(pitch)) * HAND_T_SENSOR).to_matrix())


def deproject(cam: np.ndarray, u: int, v: int, depth_m: float) -> np.ndarray:
    p = np.array([(u - W / 2) / F * depth_m, (v - H / 2) / F * depth_m, depth_m])
    return np.asarray(cam[:3, :3] @ p + cam[:3, 3])


def pixel_of(cam: np.ndarray, point: tuple[float, float, float]) -> tuple[int, int] | None:
    p = cam[:3, :3].T @ (np.asarray(point) - cam[:3, 3])
    if p[2] <= 0:
        return None
    u, v = F * p[0] / p[2] + W / 2, F * p[1] / p[2] + H / 2
    return (int(round(u)), int(round(v))) if 0 <= u < W and 0 <= v < H else None


def test_default_layout_matches_the_kitchen_state() -> None:
    world = FakeKitchen()
    state = world.state()
    assert state.robot_location == "initial position" and state.holding is None
    assert dict(state.object_locations) == DEFAULT_PLACEMENTS
    assert state.open_containers == frozenset()
    assert world.body == STAND_POSES["initial position"]
    for name, where in DEFAULT_PLACEMENTS.items():
        x, y, z = world.position_of(name)
        assert z == pytest.approx(world.surface_height(where) + 0.06)  # a can standing on the surface
        sx, sy, _ = STAND_POSES[where]
        assert 0.6 < math.dist((x, y), (sx, sy)) < 1.1  # on the surface in front of the stand pose
    names = [o.name for o in world.ground_truth()]
    assert "top drawer handle" in names and "far counter" in names and "coke" in names


@pytest.mark.parametrize("location", ["far counter", "close counter", "table"])
def test_every_object_on_a_surface_is_seen_where_the_ground_truth_says(location: str) -> None:
    """The oracle's criterion: inside the projected box, the depth deprojects into the object's 3D box."""
    world = FakeKitchen()
    cam = look_camera(STAND_POSES[location])
    rgb, depth = world.render(cam, W, H, F, F, W / 2, H / 2)
    assert rgb.shape == (H, W, 3) and depth.shape == (H, W)
    truth = {o.name: o for o in world.ground_truth()}
    objects = world.objects_at(location)
    assert objects
    for name in objects:
        o = truth[name]
        px = pixel_of(cam, o.position)
        assert px is not None, f"the {name} is outside the image"
        u, v = px
        assert tuple(rgb[v, u]) == color_of(name), name
        p = deproject(cam, u, v, float(depth[v, u]))
        lo = np.asarray(o.position) - np.asarray(o.size) / 2 - 0.01
        hi = np.asarray(o.position) + np.asarray(o.size) / 2 + 0.01
        assert np.all(p >= lo) and np.all(p <= hi), (name, p, o.position)


def test_closed_drawer_hides_its_objects_open_drawer_shows_them() -> None:
    state = make_state({**DEFAULT_PLACEMENTS, "sponge": "top drawer"})
    world = FakeKitchen(state)
    hidden = {o.name: o for o in world.ground_truth()}["sponge"]
    assert not hidden.visible
    assert "sponge" not in [b.name for b in world.boxes()]
    opened = FakeKitchen(make_state({**DEFAULT_PLACEMENTS, "sponge": "top drawer"}, open_drawers=["top drawer"]))
    assert "sponge" in [b.name for b in opened.boxes()]
    assert {o.name: o for o in opened.ground_truth()}["sponge"].visible
    # the handle moves out with the drawer (m, odom): the drawers face -y
    assert opened.handle_box("top drawer").center[1] == pytest.approx(world.handle_box("top drawer").center[1] + 0.3)


def test_grasp_carry_release_on_a_surface_and_the_floor() -> None:
    world = FakeKitchen()
    world.set_hand(world.position_of("coke"))
    world.grasp_at("coke")
    assert world.state().holding == "coke" and world.state().object_locations["coke"] == HELD
    assert "coke" not in [b.name for b in world.boxes()]  # a held object is not drawn
    world.set_body(STAND_POSES["table"])
    world.set_hand((2.5, -1.75, 0.85))  # above the table top (0.75 m)
    assert world.release_at() == "coke"
    assert world.state().object_locations["coke"] == "table"
    assert world.position_of("coke") == pytest.approx((2.5, -1.75, 0.81))
    # picked again and dropped in front of the user: on the floor, belongs to the user
    world.set_hand(world.position_of("coke"))
    world.grasp_at("coke")
    world.set_body(STAND_POSES["user"])
    world.set_hand((1.55, 0.0, 0.3))
    world.release_at()
    assert world.state().object_locations["coke"] == "user"
    assert world.position_of("coke")[2] == pytest.approx(0.06)
    assert {"initial position", "table", "user"} <= world.state().visited


def test_pulling_the_handle_opens_pushing_closes_and_drop_into_the_drawer() -> None:
    world = FakeKitchen()
    world.set_body(STAND_POSES["drawers"])
    handle = world.handle_box("top drawer").center
    world.set_hand(handle)
    world.grasp_at("top drawer handle")
    assert world.state().holding is None  # a handle is not an object
    world.set_hand((handle[0], handle[1] + 0.1, handle[2]))  # 0.1 m: not far enough
    world.move_handle()
    assert not world.is_open("top drawer")
    world.set_hand((handle[0], handle[1] + 0.3, handle[2]))
    world.move_handle()
    assert world.is_open("top drawer") and world.state().open_containers == {"top drawer"}
    world.release_at()
    # put a held object in: the hand above the tray
    world.set_hand(world.position_of("apple"))
    world.grasp_at("apple")
    h = world.handle_box("top drawer").center
    world.set_hand((h[0], h[1] - 0.15, h[2] + 0.15))
    world.release_at()
    assert world.state().object_locations["apple"] == "top drawer"
    # close it: grasp the handle, push it in
    h = world.handle_box("top drawer").center
    world.set_hand(h)
    world.grasp_at("top drawer handle")
    world.set_hand((h[0], h[1] - 0.3, h[2]))
    world.move_handle()
    assert not world.is_open("top drawer")
    assert not {o.name: o for o in world.ground_truth()}["apple"].visible


def test_rays_hit_the_first_box_or_the_floor() -> None:
    world = FakeKitchen()
    coke = world.position_of("coke")
    origin = np.array([[coke[0], coke[1] - 1.0, coke[2]]])  # 1 m in front of the coke (far counter faces +y)
    boxes = world.boxes()
    t, which = world.cast(origin, np.array([[0.0, 1.0, 0.0]]), boxes)
    assert boxes[int(which[0])].name == "coke" and t[0] == pytest.approx(1.0 - 0.035)
    t, which = world.cast(np.array([[0.0, 0.0, 1.0]]), np.array([[0.0, 0.0, -1.0]]), boxes)
    assert which[0] == -1 and t[0] == pytest.approx(1.0)  # the floor
    t, _ = world.cast(np.array([[0.0, 0.0, 1.0]]), np.array([[0.0, 0.0, 1.0]]), boxes)
    assert not np.isfinite(t[0])  # the sky
