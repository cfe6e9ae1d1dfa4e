"""The perception node's and the RealSense publisher's parameters: the YAML holds every one (no
defaults in code), and every problem is reported at once."""
from __future__ import annotations

from pathlib import Path

import pytest

from monologue_domain.robots import node_parameters
from perception_node.core.settings import realsense_settings_from_parameters, settings_from_parameters

CONFIG = Path(__file__).resolve().parents[3] / "config"


def params(node: str, *files: str) -> dict[str, object]:
    """{dotted name: value} the node gets from these config files (in override order), `/**` included."""
    return node_parameters(CONFIG, node, files)


def test_the_yaml_sets_every_perception_parameter() -> None:
    s = settings_from_parameters(params("perception", "monologue.yaml", "robots/sim.yaml", "llm/embedded.yaml"))
    assert s.source == "oracle" and s.refresh_timeout == 2.0 and s.unused == ()
    assert s.camera.static_camera_pose == () and s.camera.candidates == ()
    assert s.camera.detector.kind == "oracle" and s.camera.detector.score_threshold == 0.1
    assert s.camera.miss_updates_to_occlude == 1 and s.camera.view_margin == 10.0


def test_missing_and_bad_parameters_are_reported_together() -> None:
    p = params("perception", "monologue.yaml")
    del p["tf_cache"]
    p.update({"source": "lidar", "process_rate": 0.0, "static_camera_pose": [1.0, 2.0],
              "models.num_threads": -1, "use_open3d": "yes", "typo": 1})
    with pytest.raises(ValueError) as e:
        settings_from_parameters(p)
    for name in ("tf_cache: missing", "source: must be one of", "process_rate", "static_camera_pose",
                 "models.num_threads", "use_open3d"):
        assert name in str(e.value)


def test_a_static_camera_pose_and_unused_parameters() -> None:
    p = params("perception", "monologue.yaml", "robots/sim.yaml")
    p.update({"static_camera_pose": [0.5, 0.0, 0.6, 1.0, 0.0, 0.0, 0.0], "typo": 1, "llm.backend": "openai"})
    s = settings_from_parameters(p)
    assert s.camera.static_camera_pose == (0.5, 0.0, 0.6, 1.0, 0.0, 0.0, 0.0)
    assert s.unused == ("typo",)   # the shared llm block is not the perception node's business
    p["static_camera_pose"] = [0.5, 0.0, 0.6, 1.0, 1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="unit length"):
        settings_from_parameters(p)


def test_realsense_parameters() -> None:
    """The UR5e's camera node (config/robots.yaml) is the RealSense publisher."""
    base = params("camera", "monologue.yaml", "robots/ur5e.yaml", "llm/embedded.yaml")
    s = realsense_settings_from_parameters(base)
    assert s.serial == "" and (s.width, s.height) == (640, 480) and s.unused == ()
    s = realsense_settings_from_parameters({**base, "serial": 1622070408})  # `-p serial:=001622070408`
    assert s.serial == "1622070408"
    with pytest.raises(ValueError) as e:
        realsense_settings_from_parameters({**base, "width": 0, "wait_timeout": 0.0, "frame_id": ""})
    assert all(n in str(e.value) for n in ("width", "wait_timeout", "frame_id"))


def test_the_camera_driver_picks_the_topics_and_their_qos() -> None:
    """ur5e: our publisher on camera/...; realsense_ros: the official node's topics, read best effort."""
    ours = settings_from_parameters(params("perception", "monologue.yaml", "robots/ur5e.yaml")).camera
    assert (ours.camera_driver, ours.color_topic, ours.best_effort) == ("pyrealsense2", "camera/color/image_raw", False)
    assert ours.base_frame == "base"  # ur_rtde's frame: the skills send scene positions as they are
    p = params("perception", "monologue.yaml", "robots/ur5e.yaml")
    official = settings_from_parameters({**p, "camera_driver": "realsense_ros"}).camera
    assert (official.color_topic, official.depth_topic, official.info_topic) == (
        "/camera/camera/color/image_raw", "/camera/camera/aligned_depth_to_color/image_raw",
        "/camera/camera/color/camera_info")
    assert official.best_effort
    renamed = settings_from_parameters({**p, "camera_driver": "realsense_ros", "realsense_ros_prefix": "/wrist/d435/"})
    assert renamed.camera.info_topic == "/wrist/d435/color/camera_info"
    with pytest.raises(ValueError) as e:
        settings_from_parameters({**p, "camera_driver": "librealsense", "realsense_ros_prefix": "camera"})
    assert "camera_driver: must be one of" in str(e.value) and "realsense_ros_prefix: an absolute" in str(e.value)


def test_the_realsense_publisher_names_camera_link_as_realsense_ros_does() -> None:
    s = realsense_settings_from_parameters(params("camera", "robots/ur5e.yaml"))
    assert (s.link_frame, s.frame_id) == ("camera_link", "camera_color_optical_frame")
    with pytest.raises(ValueError, match="link_frame: must differ"):
        realsense_settings_from_parameters({**params("camera", "robots/ur5e.yaml"),
                                            "link_frame": "camera_color_optical_frame"})
