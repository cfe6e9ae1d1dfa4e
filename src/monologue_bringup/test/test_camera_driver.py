"""perception's `camera_driver` decides whether the bring-up starts our RealSense publisher: not with
`realsense_ros` (the user runs the official realsense2_camera node), from the YAML or a -p override."""
from __future__ import annotations

import shutil
from pathlib import Path

from monologue_bringup.graph import LIVE, camera_driver, graph_for, select

CONFIG = Path(__file__).resolve().parents[3] / "config"


def test_the_yaml_driver_starts_our_publisher_and_realsense_ros_does_not() -> None:
    assert camera_driver("ur5e", CONFIG) == "pyrealsense2" and camera_driver("sim", CONFIG) == "topics"
    assert [s.name for s in graph_for("ur5e", config_dir=CONFIG)] == ["camera", *[s.name for s in select(LIVE)]]
    official = graph_for("ur5e", config_dir=CONFIG, node_params={"perception": {"camera_driver": "realsense_ros"}})
    assert [s.name for s in official] == [s.name for s in select(LIVE)]  # everything but our publisher
    spot = graph_for("spot_realsense", config_dir=CONFIG, node_params={"perception": {"camera_driver": "realsense_ros"}})
    assert "camera" not in {s.name for s in spot} and "skills" in {s.name for s in spot}
    # the simulator publishes its own camera: never dropped
    assert "tabletop_sim" in {s.name for s in graph_for("sim", config_dir=CONFIG,
                                                        node_params={"perception": {"camera_driver": "realsense_ros"}})}


def test_the_driver_set_in_the_robots_yaml_is_read(tmp_path: Path) -> None:
    config = tmp_path / "config"
    shutil.copytree(CONFIG, config, ignore=shutil.ignore_patterns("prompts", "*.bag", "*.mcap"))
    f = config / "robots" / "ur5e.yaml"
    f.write_text(f.read_text().replace("camera_driver: pyrealsense2", "camera_driver: realsense_ros"))
    assert camera_driver("ur5e", config) == "realsense_ros"
    assert "camera" not in {s.name for s in graph_for("ur5e", config_dir=config)}
