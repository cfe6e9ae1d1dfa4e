"""Rendering: intrinsics, depth and segmentation agree with the ground truth; pixel noise switch."""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from monologue_domain.tabletop import BLOCK_SIZE, BOWL_FLOOR
from tabletop_sim.core.arm import ArmController
from tabletop_sim.core.camera import CameraRenderer, intrinsics
from tabletop_sim.core.geometry import invert, transform_point
from tabletop_sim.core.kinematics import PARK_Q
from tabletop_sim.core.world import SimWorld

MakeWorld = Callable[..., tuple[SimWorld, ArmController]]


def test_intrinsics_follow_the_vertical_field_of_view() -> None:
    k = intrinsics(640, 480, 45.0)
    assert k.fx == k.fy == pytest.approx(240.0 / math.tan(math.radians(22.5)))
    assert (k.cx, k.cy) == (319.5, 239.5)
    assert k.project(np.array([0.0, 0.0, 1.0])) == (319.5, 239.5)
    u, v = k.project(np.array([0.1, -0.05, 0.5]))
    assert u == pytest.approx(319.5 + k.fx * 0.2) and v == pytest.approx(239.5 - k.fy * 0.1)


def visible_top(category: str, position: tuple[float, float, float]) -> np.ndarray:
    """The surface point a camera looking down sees at an object's centre: block top, bowl floor."""
    x, y, z = position
    return np.array([x, y, z + BLOCK_SIZE / 2 if category == "block" else z + BOWL_FLOOR])


@pytest.mark.parametrize("camera", ["wrist", "overhead"])
def test_depth_and_segmentation_match_the_ground_truth(make_world: MakeWorld, camera: str) -> None:
    kwargs = {"home_q": PARK_Q} if camera == "overhead" else {}
    world, _ = make_world(("red", "blue", "green", "yellow"), ("pink", "cyan", "gray"), seed=7, **kwargs)
    renderer = CameraRenderer(world, camera, 320, 240, pixel_noise_std=0.0, seed=0)
    try:
        frame = renderer.render(segmentation=True)
    finally:
        renderer.close()
    assert frame.rgb.shape == (240, 320, 3) and frame.rgb.dtype == np.uint8
    assert frame.depth.shape == (240, 320) and frame.depth.dtype == np.float32
    assert frame.segmentation is not None and frame.segmentation.shape == (240, 320)
    to_camera = invert(frame.pose)
    for obj in world.objects():
        p = transform_point(to_camera, visible_top(obj.category, obj.position))
        u, v = frame.intrinsics.project(p)
        col, row = int(round(u)), int(round(v))
        assert 0 <= col < 320 and 0 <= row < 240, f"{obj.name} is out of view"
        assert abs(float(frame.depth[row, col]) - p[2]) < 0.01, obj.name
        assert frame.segmentation[row, col] == obj.segmentation_id, obj.name
        if obj.category == "block":  # the top face's size in pixels follows the intrinsics (plus visible sides)
            top_face = (frame.intrinsics.fx * BLOCK_SIZE / p[2]) ** 2
            area = int(np.count_nonzero(frame.segmentation == obj.segmentation_id))
            assert 0.9 * top_face < area < 2.0 * top_face, obj.name
        color = frame.rgb[row, col].astype(float)
        assert np.argmax(color) == np.argmax(np.array(_rgb(obj.color))) or obj.color in ("gray",), obj.name


def _rgb(color: str) -> tuple[float, float, float]:
    from monologue_domain.tabletop import COLOR_RGB

    return COLOR_RGB[color]


def test_pixel_noise_switch(make_world: MakeWorld) -> None:
    world, _ = make_world(("red",))
    clean = CameraRenderer(world, "wrist", 160, 120, pixel_noise_std=0.0, seed=0)
    try:
        a, b = clean.render().rgb, clean.render().rgb
    finally:
        clean.close()
    assert np.array_equal(a, b)
    noisy = CameraRenderer(world, "wrist", 160, 120, pixel_noise_std=8.0, seed=1)
    try:
        c, d = noisy.render(), noisy.render()  # the second reuses the clean image, with new noise
    finally:
        noisy.close()
    diff = c.rgb.astype(float) - a.astype(float)
    assert 6.0 < diff.std() < 9.0 and abs(diff.mean()) < 1.0
    assert not np.array_equal(c.rgb, d.rgb) and np.array_equal(c.depth, d.depth)
    assert np.isfinite(c.depth).all()  # depth is not affected by the colour noise


def test_renderer_follows_a_scene_reset(make_world: MakeWorld) -> None:
    from monologue_domain.scene_spec import SceneSpec, layout_scene

    world, _ = make_world(("red",))
    renderer = CameraRenderer(world, "wrist", 160, 120, pixel_noise_std=0.0, seed=0)
    try:
        ids_before = set(np.unique(renderer.render(segmentation=True).segmentation))
        world.reset(layout_scene(SceneSpec(("red", "blue", "green"), ("pink",)), 4))
        ids_after = set(np.unique(renderer.render(segmentation=True).segmentation))
        before_move = renderer.render(segmentation=True).segmentation
        world.move_object("red block", 0.5, 0.1)  # the images follow a change of the world
        after_move = renderer.render(segmentation=True).segmentation
    finally:
        renderer.close()
    assert ids_before == {0, 1} and ids_after == {0, 1, 2, 3, 4}
    assert before_move is not None and after_move is not None
    assert not np.array_equal(before_move == 1, after_move == 1)
