"""The `spot` skills backend's settings (robots/spot/settings.py, from config/robots/spot.yaml; every problem reported at
once) and the ROS-free geometry of its skills (robots/spot/core/skills.py): poses in the kitchen frame, projecting an
odom point into a camera image, 3D pose algebra for the TF. The skills themselves run against the fake Spot
in test_spot_skills.py."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from monologue_common.core.settings import ParamReader, flatten
from monologue_domain.kitchen.vocabulary import OBJECTS
from skills_node.plugin import settings_from_parameters
from skills_node.robots.spot.core.robot import SpotSettings
from skills_node.robots.spot.core.skills import SKILLS, compose, compose3, inverse, invert3, point_in, project, relative
from skills_node.robots.spot.settings import SpotBackendSettings, read
from skills_node.testing.host import skills_params

CONFIG = Path(__file__).resolve().parents[3] / "config"


def yaml_params(**overrides: object) -> dict[str, object]:
    tree = yaml.safe_load((CONFIG / "robots" / "spot.yaml").read_text())["skills"]["ros__parameters"]
    params = flatten(tree)
    params.update(overrides)
    return {k: v for k, v in params.items() if v is not None}


def read_params(params: dict[str, object]) -> tuple[SpotBackendSettings | None, list[str]]:
    r = ParamReader(params, "skills")
    return read(r), r.errors


def test_spot_yaml_reads() -> None:
    s, errors = read_params(yaml_params())
    assert errors == [] and s is not None
    assert isinstance(s.robot, SpotSettings) and s.robot.port == 443 and s.robot.max_linear_velocity == 0.5
    k = s.skills
    assert set(k.skills) == set(SKILLS)  # every kitchen skill plus stand and sit
    assert k.locations["table"] == pytest.approx((2.5, -1.0, -1.5708))
    assert k.start_location == "initial position" and k.waypoints == {}
    assert k.objects == OBJECTS and k.drawers == ("top drawer",) and k.open_drawers == ()
    assert k.drawer_handles["top drawer"] == pytest.approx((3.5, -2.2, 0.55))
    assert k.place_points["far counter"] == pytest.approx((0.75, 0.0, 0.48))
    assert s.camera.rate == 3.0 and s.camera.color_source == "hand_color_image"
    assert s.camera.depth_source == "hand_depth_in_hand_color_frame" and s.scene_topic == "scene/description"
    assert s.approval_mode == "off"
    assert s.robot.estop_mode == "settle" and not s.robot.estop_force_setup  # issue 31: sit first, keep the tablet's


def test_estop_settings_are_validated_at_start_up() -> None:
    s, errors = read_params(yaml_params(**{"spot.estop_mode": "drop", "spot.estop_force_setup": "yes"}))
    assert s is None
    assert any("spot.estop_mode" in e and "settle" in e and "cut" in e for e in errors), errors
    assert any("spot.estop_force_setup" in e for e in errors), errors
    s, errors = read_params(yaml_params(**{"spot.estop_mode": "cut", "spot.estop_force_setup": True}))
    assert s is not None and isinstance(s.robot, SpotSettings), errors
    assert s.robot.estop_mode == "cut" and s.robot.estop_force_setup


def test_the_robot_files_alone_configure_the_node() -> None:
    """config/monologue.yaml + config/robots/spot.yaml: every skills parameter they set is read."""
    settings, unused = settings_from_parameters(skills_params(CONFIG, "spot"))
    assert settings.backend == "spot" and isinstance(settings.backend_settings, SpotBackendSettings)
    assert unused == []


def test_every_problem_is_reported() -> None:
    s, errors = read_params(yaml_params(**{
        "spot.hostname": None, "spot.rpc_timeout": 0.0, "spot.skills": ["go_to", "fly"],
        "spot.location_poses": [0.0, 0.0, 0.0], "spot.stand_at_start": True,
        "spot.power_on_at_start": False, "spot.waypoints": ["table"], "approval.mode": "sometimes",
        "spot.drawer_handles": [1.0], "spot.camera.rate": -1.0}))
    assert s is None
    text = "\n".join(errors)
    for needle in ("spot.hostname", "spot.rpc_timeout", "fly", "spot.location_poses", "stand_at_start",
                   "spot.waypoints", "approval.mode", "spot.drawer_handles", "spot.camera.rate"):
        assert needle in text, (needle, text)


@pytest.mark.parametrize(("overrides", "needle"), [
    ({"spot.geofence_max": [3.0, 2.0]}, "outside the geofence"),
    ({"spot.start_location": "moon"}, "'moon' is not one of"),
    ({"spot.location_names": ["initial position", "close counter", "far counter", "table", "trash", "drawers",
                              "garage"]}, "not kitchen locations"),
    ({"spot.waypoints": ["moon=wp-1"]}, "waypoints: ['moon']"),
    ({"spot.search_locations": ["moon"]}, "search_locations: ['moon']"),
    ({"spot.open_drawers": ["bottom drawer"]}, "unknown drawers ['bottom drawer']"),
])
def test_inconsistent_kitchens_are_configuration_errors(overrides: dict[str, object], needle: str) -> None:
    s, errors = read_params(yaml_params(**overrides))
    assert s is None and any(needle in e for e in errors), errors


def test_graph_nav_waypoints_per_location() -> None:
    s, errors = read_params(yaml_params(**{"spot.waypoints": ["table=wp-table", "far counter=wp-far"]}))
    assert s is not None, errors
    assert s.skills.waypoints == {"table": "wp-table", "far counter": "wp-far"}


# ---- geometry ---------------------------------------------------------------------------------------

def test_relative_pose_in_the_body_frame() -> None:
    x, y, yaw = relative((1.0, 1.0, math.pi / 2), (1.0, 3.0, math.pi))
    assert (x, y, yaw) == pytest.approx((2.0, 0.0, math.pi / 2))
    x, y, yaw = relative((0.0, 0.0, 0.0), (0.5, -1.2, 3.1416))
    assert (x, y, yaw) == pytest.approx((0.5, -1.2, 3.1416 - 2 * math.pi), abs=1e-9)


def test_kitchen_frame_round_trip() -> None:
    """odom_T_kitchen from Spot's odom pose at the start location; a location maps to odom and back."""
    start_k, body_odom = (1.0, 0.5, 0.3), (10.0, -2.0, 2.0)
    odom_t_kitchen = compose(body_odom, inverse(start_k))
    assert compose(odom_t_kitchen, start_k) == pytest.approx(body_odom)
    table_k = (2.5, -1.0, -1.5708)
    table_odom = compose(odom_t_kitchen, table_k)
    assert compose(inverse(odom_t_kitchen), table_odom) == pytest.approx(table_k)


class _Image:
    """The intrinsics and pose fields of a SpotImage: 640x480, f = 500 px, looking along odom +x from 1 m up."""

    source, encoding, width, height = "hand_color_image", "rgb8", 640, 480
    fx = fy = 500.0
    cx, cy = 320.0, 240.0
    # optical frame: z forward = odom +x, x right = odom -y, y down = odom -z
    s = math.sqrt(0.5)
    odom_from_sensor = ((0.0, 0.0, 1.0), (-0.5, 0.5, -0.5, 0.5))
    odom_from_body = ((0.0, 0.0, 0.5), (0.0, 0.0, 0.0, 1.0))


def test_project_an_odom_point_into_the_image() -> None:
    img = _Image()
    assert project(img, (2.0, 0.0, 1.0)) == pytest.approx((320.0, 240.0))  # straight ahead: the centre
    u, v = project(img, (2.0, 0.2, 0.8)) or (0.0, 0.0)  # left and below
    assert (u, v) == pytest.approx((320.0 - 500.0 * 0.1, 240.0 + 500.0 * 0.1))
    assert project(img, (-1.0, 0.0, 1.0)) is None  # behind the camera
    assert project(img, (1.0, 5.0, 1.0)) is None  # outside the image


def test_pose3_algebra() -> None:
    a = ((1.0, 2.0, 3.0), (0.0, 0.0, math.sin(0.4), math.cos(0.4)))
    b = ((0.5, -0.2, 0.1), (math.sin(0.1), 0.0, 0.0, math.cos(0.1)))
    ab = compose3(a, b)
    back = compose3(invert3(a), ab)
    assert back[0] == pytest.approx(b[0]) and back[1] == pytest.approx(b[1])
    p = (0.3, 0.4, 0.5)
    world = compose3(a, (p, (0.0, 0.0, 0.0, 1.0)))[0]
    assert point_in(a, world) == pytest.approx(p)
