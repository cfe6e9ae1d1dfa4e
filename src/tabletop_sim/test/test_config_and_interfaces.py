"""Parameter validation, and the core's codes against the built interfaces (ArmCommand, TFMessage)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tabletop_sim.core.config import settings_from_parameters
from tabletop_sim.core.motion import ArmError

DEFAULTS: dict[str, object] = {
    "sim.seed": 4, "sim.num_blocks": 3, "sim.num_bowls": 3, "sim.matching_bowls": True,
    "sim.block_colors": [""], "sim.bowl_colors": [""], "sim.heavy_blocks": [""],
    "sim.place_noise_std": 0.0, "sim.pixel_noise_std": 0.0, "camera.mode": "wrist", "camera.width": 640,
    "camera.height": 480, "camera.rate": 2.0, "camera.fovy": 45.0, "real_time_factor": 5.0,
    "physics.timestep": 0.002, "physics.contact_force": 5.0, "physics.protective_stop_force": 150.0,
    "ground_truth_rate": 5.0, "joint_state_rate": 20.0, "expert_truth_dir": "", "realtime_priority": 0,
    "sim.scene": "tabletop", "sim.cup_colors": [""], "sim.covered_blocks": [""], "sim.dirty_blocks": [""],
    "sim.block_weights": [0.0], "sim.calibration_board": False, "camera.mount_offset": [0.0] * 6,
}


def test_the_yaml_sets_every_parameter() -> None:
    """config/robots/sim.yaml holds every parameter of the node (the node has no defaults in code)."""
    import yaml

    config = Path(__file__).resolve().parents[3] / "config" / "robots" / "sim.yaml"
    section = yaml.safe_load(config.read_text())["tabletop_sim"]["ros__parameters"]
    params = {f"{k}.{sub}" if isinstance(v, dict) else k: sv
              for k, v in section.items() for sub, sv in (v.items() if isinstance(v, dict) else [(None, v)])}
    assert set(params) == set(DEFAULTS)
    s = settings_from_parameters({**params, "sim.seed": 4})
    assert s.seed == 4 and len(s.spec.block_colors) == 3 and set(s.spec.block_colors) <= set(s.spec.bowl_colors)
    assert settings_from_parameters({**DEFAULTS, "sim.seed": -1}).seed >= 0  # a random seed is drawn


def test_explicit_colours_and_heavy_blocks() -> None:
    s = settings_from_parameters({**DEFAULTS, "sim.block_colors": ["purple", "red"], "sim.bowl_colors": ["red"],
                                  "sim.heavy_blocks": ["purple"]})
    assert s.spec.block_colors == ("purple", "red") and s.spec.bowl_colors == ("red",)
    assert s.spec.is_heavy("purple") and not s.spec.is_heavy("red")


def test_every_bad_parameter_is_reported_at_once() -> None:
    bad = {**DEFAULTS, "camera.mode": "fisheye", "camera.rate": 0.0, "physics.timestep": 0.05,
           "real_time_factor": -1.0, "sim.place_noise_std": "a lot"}
    with pytest.raises(ValueError) as e:
        settings_from_parameters(bad)
    text = str(e.value)
    for name in ("camera.mode", "camera.rate", "physics.timestep", "real_time_factor", "sim.place_noise_std"):
        assert name in text
    with pytest.raises(ValueError, match="heavy block"):
        settings_from_parameters({**DEFAULTS, "sim.block_colors": ["red"], "sim.heavy_blocks": ["blue"]})
    with pytest.raises(ValueError, match=r"sim.num_blocks: must be in \[0, 4\]"):
        settings_from_parameters({**DEFAULTS, "sim.num_blocks": 5})
    with pytest.raises(ValueError, match="at most 4 blocks"):
        settings_from_parameters({**DEFAULTS, "sim.block_colors": ["red", "blue", "green", "pink", "cyan"]})


def test_arm_errors_match_the_action() -> None:
    from monologue_interfaces.action import ArmCommand

    for e in ArmError:
        assert getattr(ArmCommand.Result, f"ERROR_{e.name}") == e.value


# TFMessage's type hash in ROS 2 Jazzy (tf2_msgs 0.36): the stand-in must produce the same one.
TF_MESSAGE_HASH = "RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087"


def test_tf2_msgs_provides_tfmessage_with_the_real_type_hash() -> None:
    from ament_index_python.packages import get_package_share_directory
    from geometry_msgs.msg import TransformStamped
    from tf2_msgs.msg import TFMessage

    msg = TFMessage(transforms=[TransformStamped(child_frame_id="tool0")])
    assert msg.transforms[0].child_frame_id == "tool0"
    description = Path(get_package_share_directory("tf2_msgs")) / "msg" / "TFMessage.json"
    data = json.loads(description.read_text())
    hashes = {h["type_name"]: h["hash_string"] for h in data["type_hashes"]}
    assert hashes["tf2_msgs/msg/TFMessage"] == TF_MESSAGE_HASH


def test_calibration_board_and_camera_mount_offset() -> None:
    s = settings_from_parameters({**DEFAULTS, "sim.calibration_board": True,
                                  "camera.mount_offset": [0.004, 0.0, 0.0, 0.0, 0.0, 0.02]})
    config = s.world_config()
    assert config.calibration_board and config.camera_mount_offset == (0.004, 0.0, 0.0, 0.0, 0.0, 0.02)
    with pytest.raises(ValueError, match="camera.mount_offset: at most 0.05 m and 0.2 rad"):
        settings_from_parameters({**DEFAULTS, "camera.mount_offset": [0.1, 0.0, 0.0, 0.0, 0.0, 0.0]})
