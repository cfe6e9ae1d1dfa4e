"""The `ur5e` graph as the robot table brings it up (monologue_bringup.up.Supervisor), with fakes at the
hardware boundaries only: the fake UR5e behind ur_rtde's API (skills_node.robots.ur5e.testing.fake_rtde) and the fake
pyrealsense2 SDK under the RealSense publisher (perception_node.testing.fake_pyrealsense2). Perception
runs its camera source with an open-vocabulary detector (a tiny random-weight OWL-ViT built here: no
download, no oracle) and must report objects where the wrist camera looks, its pose from the arm's /tf
(the skills node's base -> tool0 -> camera_link from the hand-eye calibration, the camera node's camera_link ->
camera_color_optical_frame), in ur_rtde's frame `base`; nothing publishes sim/ground_truth."""
from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from monologue_bringup.testing import wait_for

pytestmark = [pytest.mark.system, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[1]
NODES = ["camera", "skills", "perception", "success_detector"]  # the ur5e graph without the LLM planner and viz
FAKE_TCP = (0.40, 0.0, 0.30)  # m: where skills_node.robots.ur5e.testing.fake_rtde's arm starts, tool pointing down


def wrist_camera_position() -> tuple[float, float, float]:
    """Where config/robots/ur5e.yaml puts the wrist camera with the tool pointing down (a rotation of pi
    about y: flange x and z flip): the TCP, up the TCP offset to the flange, then the hand-eye offset (m)."""
    import yaml

    ur5e = yaml.safe_load((REPO / "config" / "robots" / "ur5e.yaml").read_text())["skills"]["ros__parameters"]["ur5e"]
    tcp_z, (hx, hy, hz) = ur5e["tcp_offset"][2], ur5e["hand_eye"]["translation"]
    return FAKE_TCP[0] - hx, FAKE_TCP[1] + hy, FAKE_TCP[2] + tcp_z - hz


def tiny_owlvit(d: Path) -> Path:
    """A 1-layer random OWL-ViT with its processor in `d` (as perception_node's test fixtures build it): its
    box head is zeroed so that every image patch proposes its prior box, a real box to ground in depth."""
    import torch
    import transformers as tf

    from monologue_vision.tiny_models import clip_configs, clip_tokenizer

    torch.manual_seed(0)
    tok, v = clip_tokenizer(tf, d)
    text, vision = clip_configs(v)
    model = tf.OwlViTForObjectDetection(tf.OwlViTConfig(text_config=text, vision_config=vision, projection_dim=32))
    with torch.no_grad():
        model.box_head.dense2.weight.zero_()
        model.box_head.dense2.bias.zero_()
    model.save_pretrained(d)
    size = {"height": 64, "width": 64}
    tf.OwlViTProcessor(image_processor=tf.OwlViTImageProcessorPil(size=size, crop_size=size),
                       tokenizer=tok).save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def ur5e_graph(ros_domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, list[str]]]:
    from monologue_bringup.graph import graph_for
    from monologue_bringup.up import Supervisor
    from perception_node.testing.fake_pyrealsense2 import SCENARIO_ENV, write_shim

    assert [s.name for s in graph_for("ur5e")][:2] == ["camera", "skills"]  # the table starts the camera
    tmp = tmp_path_factory.mktemp("ur5e_graph")
    model = tiny_owlvit(tmp / "owlvit")
    # the fake camera sees a flat table: every pixel at the camera's height (m)
    (tmp / "camera.json").write_text(json.dumps({"plane": {"z0": wrist_camera_position()[2], "slope_x": 0.0,
                                                                "slope_y": 0.0}}))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(write_shim(tmp / "sdk")), env.get("PYTHONPATH", "")])
    env[SCENARIO_ENV] = str(tmp / "camera.json")
    env["MONOLOGUE_FAKE_RTDE"] = json.dumps({"time_scale": 5.0, "objects": []})
    env["HF_HUB_OFFLINE"] = "1"
    lines: list[str] = []
    sup = Supervisor("ur5e", "embedded", config_dir=REPO / "config", sink=lines.append, env=env, nodes=NODES,
                     node_params={
                         "camera": {"width": "320", "height": "240", "fps": "6"},
                         "skills": {"ur5e.rtde_factory": "skills_node.robots.ur5e.testing.fake_rtde:factories_from_env",
                                    "ur5e.probe": "false"},
                         # the detector of a real robot, with a test model; the camera pose from /tf
                         "perception": {"models.model_path": str(model), "score_threshold": "0.0",
                                        "use_open3d": "false"},
                     })
    sup.start()
    try:
        yield sup, lines
    finally:
        codes = sup.stop()
        assert all(c in (0, -2, -15, 130) for c in codes.values()), (codes, "\n".join(lines[-80:]))


def test_ur5e_graph_perceives_objects_from_the_camera(ur5e_graph: tuple[Any, list[str]]) -> None:
    from monologue_common.qos import LATCHED
    from monologue_common.runtime import probe_node
    from monologue_interfaces.msg import SceneDescription
    from monologue_interfaces.srv import DescribeScene, GetAffordances

    sup, lines = ur5e_graph
    candidates = ["red block", "green block", "blue block", "yellow block", "red bowl", "green bowl", "blue bowl",
                  "yellow bowl"]  # config/robots/ur5e.yaml perception.candidates
    with probe_node("ur5e_graph_probe") as (node, ex):
        scenes: list[SceneDescription] = []
        node.create_subscription(SceneDescription, "scene/description", scenes.append, LATCHED)
        describe = node.create_client(DescribeScene, "describe_scene")
        affordances = node.create_client(GetAffordances, "get_affordances")

        def spin_until(what: str, cond: Callable[[], bool], timeout_s: float) -> None:
            def step() -> bool:
                ex.spin_once(timeout_sec=0.05)
                return cond()
            wait_for(what, step, timeout_s, sup, lines, poll_s=0.2)

        def call(client: Any, request: Any) -> Any:
            spin_until(f"service {client.srv_name}", client.service_is_ready, 60.0)
            future = client.call_async(request)
            spin_until(f"{client.srv_name} answer", future.done, 30.0)
            return future.result()

        # torch and the model load in the perception process: the first description may take a while
        spin_until("a scene description with objects", lambda: any(s.objects for s in scenes), 180.0)
        # the latest description (refreshing, i.e. waiting for a newer frame, is covered by the camera tests)
        res = call(describe, DescribeScene.Request(refresh=False))
        assert res.success, res.message
        scene = res.scene
        assert scene.source == "owlvit" and scene.header.frame_id == "base"  # not the oracle; ur_rtde's frame
        names = [o.name for o in scene.objects]
        assert names and set(names) <= set(candidates) and all(o.visible for o in scene.objects)
        cx, cy, cz = wrist_camera_position()
        for o in scene.objects:  # on the table, below the wrist camera (its pose from the arm's /tf), m
            p = o.pose.pose.position
            assert abs(p.z) < 0.005 and math.hypot(p.x - cx, p.y - cy) < 0.5 * cz, (o.name, p, (cx, cy, cz))
        # oracle-free: no simulator in this graph, nobody publishes ground truth
        assert node.count_publishers("/sim/ground_truth") == 0
        # the skills node picks from what perception reports (its scene_topic)
        req = GetAffordances.Request(include_unaffordable=True)
        spin_until("skills seeing the perceived scene", lambda: bool(call(affordances, req).objects), 30.0)
        assert set(call(affordances, req).objects) | set(call(affordances, req).locations) <= set(candidates)
    log = "\n".join(lines)
    assert "[camera]" in log and "publishing device on camera/" in log
    assert not sup.dead(), sup.dead()
