"""3D grounding on exact synthetic RGB-D frames: oracle boxes -> base-frame positions, table plane
and clustering, the IM-R place point, occluded-object memory, transforms."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from monologue_domain.robots import node_parameters
from perception_node.core import geometry as g
from perception_node.core import synthetic as s
from perception_node.core.memory import ObjectMemory
from perception_node.core.object_detectors import Detection, GroundTruthObject, OracleDetector
from perception_node.core.pipeline import Frame, PerceptionPipeline
from perception_node.core.settings import settings_from_parameters

CONFIG = Path(__file__).resolve().parents[3] / "config"
# The camera pipeline's parameters in the shipped YAML (score threshold, open3d, cloud stride, memory).
CAMERA = settings_from_parameters(node_parameters(CONFIG, "perception", ["monologue.yaml", "robots/sim.yaml"])).camera

K = g.Intrinsics.from_fov(640, 480, math.radians(42))
# A wrist camera 55 cm above the table, behind and looking down at the workspace (about 60 deg).
OBLIQUE = g.look_at((0.25, 0.02, 0.55), (0.5, 0.0, 0.0))
# The IM real tabletop's top-down scan pose.
TOP_DOWN = g.look_at((0.5, 0.0, 0.6), (0.5, 0.001, 0.0))
RED, GREEN, BLUE, YELLOW, PINK = (200, 30, 30), (30, 190, 40), (30, 40, 200), (220, 200, 40), (230, 120, 200)


def gt(objs: list[s.SynthObject]) -> list[GroundTruthObject]:
    return [GroundTruthObject(o.name, o.category, o.center, o.size) for o in objs]


def frame_of(f: s.SynthFrame) -> Frame:
    return Frame(f.rgb, f.depth_m, f.intrinsics, f.base_from_camera, 0.0)


@pytest.fixture(scope="module")
def table_scene() -> s.SynthFrame:
    return s.render([
        s.block("red block", 0.42, -0.12, RED), s.block("blue block", 0.55, 0.10, BLUE),
        s.block("green block", 0.62, -0.02, GREEN),
        s.bowl("yellow bowl", 0.45, 0.12, YELLOW), s.bowl("pink bowl", 0.65, -0.17, PINK),
    ], K, OBLIQUE)


@pytest.fixture(scope="module")
def tower_frames() -> tuple[s.SynthFrame, s.SynthFrame]:
    """Before and after stacking the green block on the red one (top-down camera)."""
    before = [s.block("red block", 0.45, -0.08, RED), s.block("green block", 0.58, 0.09, GREEN),
              s.block("blue block", 0.55, -0.12, BLUE)]
    after = [before[0], s.block("green block", 0.45, -0.08, GREEN, z0=0.04), before[2]]
    return s.render(before, K, TOP_DOWN), s.render(after, K, TOP_DOWN)


def test_oracle_boxes_localise_every_object_within_1cm(table_scene: s.SynthFrame) -> None:
    pipe = PerceptionPipeline(OracleDetector(), CAMERA.pipeline_config())
    names = [o.name for o in table_scene.objects]
    res = pipe.process(frame_of(table_scene), names, ground_truth=gt(list(table_scene.objects)))
    assert sorted(o.name for o in res.objects) == sorted(names)
    for o in res.objects:
        truth = next(t for t in table_scene.objects if t.name == o.name)
        err = np.linalg.norm(np.subtract(o.position, truth.center))
        assert err < 0.01, f"{o.name}: {o.position} vs {truth.center} ({err * 100:.1f} cm)"
        assert o.category == truth.category and o.visible
    assert res.table is not None and abs(res.table.height_at(0.5, 0.0)) < 0.003
    assert set(res.latencies_s) == {"decode", "detect", "depth", "open3d"}


def test_plane_removal_and_clustering_find_each_block(table_scene: s.SynthFrame) -> None:
    f = table_scene
    pts_cam, pix = g.depth_to_points(f.depth_m, K, stride=2)
    pts = g.apply(f.base_from_camera, pts_cam)
    plane, inliers = g.segment_table_plane(pts)
    assert abs(plane.c) > 0.999 and abs(plane.d) < 0.003   # z = 0
    assert inliers.sum() > 0.6 * len(pts)
    colors = f.rgb[pix[:, 1], pix[:, 0]]
    for i, obj in enumerate(f.objects):
        if obj.category != "block":
            continue
        box = s.true_box(f, i)
        assert box is not None
        c = g.cluster_box(pts, pix, box, plane, colors=colors)
        assert c is not None, obj.name
        assert np.linalg.norm(np.subtract(c.center, obj.center)) < 0.01
        assert np.allclose(c.size, obj.size, atol=0.01), (obj.name, c.size)


def test_robust_depth_ignores_holes_and_flyers(table_scene: s.SynthFrame) -> None:
    f = table_scene
    idx = [o.name for o in f.objects].index("blue block")
    box = s.true_box(f, idx)
    assert box is not None
    clean = g.deproject_box_center(f.depth_m, box, K, f.base_from_camera)
    noisy = f.depth_m.copy()
    u0, v0, u1, v1 = g.clip_box(g.shrink_box(box, 0.5), 640, 480)
    rng = np.random.default_rng(1)
    patch = noisy[v0:v1, u0:u1]
    patch[rng.random(patch.shape) < 0.3] = 0.0        # dropouts
    patch[rng.random(patch.shape) < 0.1] = 2.5        # flying pixels far behind
    robust = g.deproject_box_center(noisy, box, K, f.base_from_camera)
    assert clean is not None and robust is not None
    assert np.linalg.norm(robust - clean) < 0.003
    assert g.robust_box_depth(np.zeros((480, 640), np.float32), box) is None


def test_place_point_is_inside_bowl_and_away_from_its_contents() -> None:
    objs = [s.bowl("yellow bowl", 0.5, 0.0, YELLOW, width_m=0.16),
            s.block("red block", 0.54, 0.04, RED, z0=0.006)]   # in the bowl's +x +y corner
    f = s.render(objs, K, TOP_DOWN)
    bowl_box, block_box = s.true_box(f, 0), s.true_box(f, 1)
    assert bowl_box is not None and block_box is not None
    p = g.place_point(f.depth_m, K, f.base_from_camera, bowl_box, [block_box])
    assert p is not None
    assert abs(p[0] - 0.5) < 0.08 and abs(p[1]) < 0.08       # on the bowl
    assert p[0] < 0.5 and p[1] < 0.0                          # the corner opposite the block
    assert g.place_pixel((0, 0, 100, 100), []) == (50.0, 50.0)
    assert g.boxes_overlap(bowl_box, block_box) and not g.boxes_overlap((0, 0, 10, 10), (10, 0, 20, 10))


def test_pipeline_place_point_ignores_boxes_that_do_not_overlap_the_bowl() -> None:
    """An empty bowl's place point is its centre even with a block beside it; a block in the bowl
    pushes the point to the far side (IM-R)."""
    beside = [s.bowl("yellow bowl", 0.5, 0.0, YELLOW, width_m=0.16), s.block("red block", 0.5, 0.16, RED)]
    inside = [beside[0], s.block("red block", 0.54, 0.04, RED, z0=0.05)]
    places = {}
    for name, objs in (("beside", beside), ("inside", inside)):
        f = s.render(objs, K, TOP_DOWN)
        res = PerceptionPipeline(OracleDetector(), CAMERA.pipeline_config()).process(frame_of(f), ["yellow bowl", "red block"], gt(objs))
        places[name] = {o.name: o.place_point for o in res.objects}["yellow bowl"]
    assert places["beside"] is not None and places["inside"] is not None
    assert math.hypot(places["beside"][0] - 0.5, places["beside"][1]) < 0.01
    assert places["inside"][0] < 0.49 and places["inside"][1] < -0.01


def test_bottom_block_of_tower_becomes_occluded(tower_frames: tuple[s.SynthFrame, s.SynthFrame]) -> None:
    """IM Listing 2: after stacking, the covered block moves from Visible to Occluded."""
    before, after = tower_frames
    pipe = PerceptionPipeline(OracleDetector(), CAMERA.pipeline_config())
    memory = ObjectMemory(CAMERA.miss_updates_to_occlude)
    names = ["red block", "green block", "blue block"]
    r1 = pipe.process(frame_of(before), names, ground_truth=gt(list(before.objects)))
    memory.update(r1.objects, 1.0)
    assert memory.visible() == names and memory.occluded() == []
    r2 = pipe.process(frame_of(after), names, ground_truth=gt(list(after.objects)))
    objs = memory.update(r2.objects, 2.0)
    assert memory.visible() == ["green block", "blue block"]
    assert memory.occluded() == ["red block"]
    red = next(o for o in objs if o.name == "red block")
    assert not red.visible and np.linalg.norm(np.subtract(red.position, (0.45, -0.08, 0.02))) < 0.01
    green = next(o for o in r2.objects if o.name == "green block")
    assert np.linalg.norm(np.subtract(green.position, (0.45, -0.08, 0.06))) < 0.01
    # Unstacking makes it visible again.
    memory.update(r1.objects, 3.0)
    assert memory.occluded() == []


def test_memory_hysteresis_and_forgetting() -> None:
    from perception_node.core.scene import SceneObject

    a, b = SceneObject("a", "block", (0.5, 0, 0.02)), SceneObject("b", "block", (0.6, 0, 0.02))
    m = ObjectMemory(miss_updates_to_occlude=2, forget_after_s=10.0)
    m.update([a, b], 0.0)
    m.update([a], 1.0)
    assert m.occluded() == []                  # one miss tolerated
    m.update([a], 2.0)
    assert m.occluded() == ["b"]
    m.note_moved("b", (0.4, 0.1, 0.06))
    assert m.objects()[1].position == (0.4, 0.1, 0.06)
    m.update([a], 20.0)
    assert [o.name for o in m.objects()] == ["a"]   # forgotten after 10 s unseen
    with pytest.raises(ValueError):
        m.update([a, a], 21.0)


def test_oracle_skips_objects_out_of_view_and_hidden(tower_frames: tuple[s.SynthFrame, s.SynthFrame]) -> None:
    _, after = tower_frames
    det = OracleDetector()
    far = GroundTruthObject("far block", "block", (3.0, 3.0, 0.02), (0.04, 0.04, 0.04))
    det.update([*gt(list(after.objects)), far], K, TOP_DOWN, after.depth_m)
    labels = {d.label for d in det.detect_frame(["red block", "green block", "blue block", "far block"])}
    assert labels == {"green block", "blue block"}


def test_transforms_and_hand_eye() -> None:
    q = (0.1, -0.3, 0.2, 0.9)
    t = g.transform_from_quaternion((0.1, 0.2, 0.3), q)
    n = math.sqrt(sum(v * v for v in q))
    back = g.quaternion_from_matrix(t)
    assert np.allclose(back, [v / n for v in q]) or np.allclose(back, [-v / n for v in q])
    assert np.allclose(g.invert(t) @ t, np.eye(4))
    base_tool = g.transform_from_rpy((0.4, 0.0, 0.5), (math.pi, 0.0, 0.0))     # tool0 pointing down
    tool_cam = g.transform_from_rpy((0.0, 0.05, 0.03), (0.0, 0.0, math.pi / 2))
    base_cam = g.camera_to_base_from_hand_eye(base_tool, tool_cam)
    p_cam = np.array([0.01, 0.02, 0.3])
    assert np.allclose(g.apply(base_cam, p_cam), g.apply(base_tool, g.apply(tool_cam, p_cam)))
    with pytest.raises(ValueError, match="rigid"):
        g.check_transform(np.diag([2.0, 1.0, 1.0, 1.0]))
    # look_at points the optical axis at the target.
    cam = g.look_at((0.2, 0.1, 0.5), (0.5, 0.0, 0.0))
    d = np.array([0.3, -0.1, -0.5])
    assert np.allclose(cam[:3, 2], d / np.linalg.norm(d))


def test_frame_checks_alignment() -> None:
    f = Frame(np.zeros((480, 640, 3), np.uint8), np.zeros((240, 320), np.float32), K, np.eye(4), 0.0)
    with pytest.raises(ValueError, match="aligned"):
        PerceptionPipeline(OracleDetector(), CAMERA.pipeline_config()).process(f, ["red block"])
    assert Detection("a", 1.0, (0, 0, 1, 1)).label == "a"
