"""The /tf history: lookups at an image's stamp interpolate the arm's motion, wait for the future,
refuse the forgotten past, and chain static and dynamic edges as tf2 does."""
from __future__ import annotations

import math

import numpy as np
import pytest

from perception_node.core import geometry as g
from perception_node.core.memory import ObjectMemory
from perception_node.core.scene import SceneObject
from perception_node.core.tf_tree import ExtrapolationError, TransformError, TransformTree

MOUNT = g.transform_from_rpy((0.05, 0.0, 0.04), (0.0, 0.0, math.pi / 2))  # tool0 <- camera, static


def tree() -> TransformTree:
    t = TransformTree(cache_s=5.0, tolerance_s=0.0)
    t.set("world", "base_link", np.eye(4), 0.0, static=True)
    t.set("tool0", "camera", MOUNT, 0.0, static=True)
    # base_link <- tool0: 0.4 m -> 0.6 m along x and a 90 deg yaw between t = 10 s and t = 11 s
    t.set("base_link", "tool0", g.transform_from_rpy((0.4, 0.0, 0.5), (0.0, 0.0, 0.0)), 10.0, static=False)
    t.set("base_link", "tool0", g.transform_from_rpy((0.6, 0.0, 0.5), (0.0, 0.0, math.pi / 2)), 11.0, static=False)
    return t


def test_lookup_interpolates_translation_and_rotation_at_the_stamp() -> None:
    t = tree()
    mid = t.lookup("base_link", "tool0", 10.25)
    np.testing.assert_allclose(mid[:3, 3], (0.45, 0.0, 0.5), atol=1e-9)
    assert math.atan2(mid[1, 0], mid[0, 0]) == pytest.approx(math.pi / 8, abs=1e-9)
    cam = t.lookup("base_link", "camera", 11.0)  # chained through the static mount
    np.testing.assert_allclose(cam, g.transform_from_rpy((0.6, 0.0, 0.5), (0, 0, math.pi / 2)) @ MOUNT, atol=1e-9)
    np.testing.assert_allclose(t.lookup("base_link", "tool0")[:3, 3], (0.6, 0.0, 0.5))  # newest


def test_future_and_past_stamps_raise_extrapolation_errors() -> None:
    t = tree()
    with pytest.raises(ExtrapolationError) as future:
        t.lookup("base_link", "camera", 11.2)
    assert future.value.future and "0.200 s in the future" in str(future.value)
    with pytest.raises(ExtrapolationError) as past:
        t.lookup("base_link", "camera", 9.0)
    assert not past.value.future
    assert t.newest_stamp("base_link", "camera") == 11.0
    tolerant = TransformTree(cache_s=10.0, tolerance_s=0.25)
    tolerant.set("base_link", "tool0", np.eye(4), 11.0, static=False)
    np.testing.assert_allclose(tolerant.lookup("base_link", "tool0", 11.2), np.eye(4))


def test_only_edges_below_the_common_ancestor_matter() -> None:
    t = tree()
    t.set("map", "world", np.eye(4), 1.0, static=False)  # old, far above base_link: never consulted
    np.testing.assert_allclose(t.lookup("base_link", "camera", 10.5),
                               t.lookup("base_link", "tool0", 10.5) @ MOUNT, atol=1e-12)
    with pytest.raises(TransformError):
        t.lookup("base_link", "elsewhere", 10.5)
    assert t.newest_stamp("base_link", "elsewhere") == -math.inf


def test_history_is_ordered_pruned_and_static_edges_win() -> None:
    t = TransformTree(cache_s=1.0, tolerance_s=0.0)
    for stamp in (3.0, 1.0, 2.0, 2.5):  # out of order, as /tf from several publishers arrives
        t.set("base_link", "tool0", g.transform_from_rpy((stamp, 0, 0), (0, 0, 0)), stamp, static=False)
    assert t.lookup("base_link", "tool0", 2.75)[0, 3] == pytest.approx(2.75)
    with pytest.raises(ExtrapolationError):
        t.lookup("base_link", "tool0", 1.5)  # older than the 1 s cache
    t.set("base_link", "tool0", np.eye(4), 0.0, static=True)
    t.set("base_link", "tool0", g.transform_from_rpy((9, 0, 0), (0, 0, 0)), 4.0, static=False)
    np.testing.assert_allclose(t.lookup("base_link", "tool0", 100.0), np.eye(4))


def test_out_of_view_objects_keep_their_state_in_memory() -> None:
    k = g.Intrinsics.from_fov(640, 480, math.radians(42))
    above = g.look_at((0.5, 0.0, 0.6), (0.5, 0.001, 0.0))
    aside = g.look_at((0.5, 0.6, 0.6), (0.5, 0.601, 0.0))  # the wrist camera turned away
    assert g.in_view((0.5, 0.0, 0.02), k, above) and not g.in_view((0.5, 0.0, 0.02), k, aside)
    assert not g.in_view((0.5, 0.0, 0.9), k, above)  # behind the camera
    a, b = SceneObject("red block", "block", (0.5, 0.0, 0.02)), SceneObject("blue bowl", "bowl", (0.55, 0.6, 0.0))
    m = ObjectMemory(miss_updates_to_occlude=1)  # occluded at the first miss, as in the paper
    m.update([a, b], 0.0, in_view=lambda o: True)
    m.update([b], 1.0, in_view=lambda o: g.in_view(o.position, k, aside))  # red block out of view
    assert m.visible() == ["red block", "blue bowl"] and m.occluded() == []
    m.update([b], 2.0, in_view=lambda o: g.in_view(o.position, k, above) or o.name == "blue bowl")
    assert m.occluded() == ["red block"]  # in view and not detected: occluded, as IM says
