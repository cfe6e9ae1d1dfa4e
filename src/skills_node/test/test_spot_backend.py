"""The `spot` skills backend (backends/spot.py): settings from config/robots/spot.yaml (every problem reported),
and its skills on the real bosdyn-client against FakeSpot (a gRPC robot over TLS on localhost): go_to's
body-frame trajectory, refusals before anything moves (unknown location, geofence, e-stop latched),
affordances from the robot's state, cancel -> stop, a lease taken by the tablet mid-skill -> ROBOT_FAULT."""
from __future__ import annotations

import logging
import math
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from monologue_common.core.settings import ParamReader, flatten
from monologue_domain.robots import load_robots
from monologue_domain.skills import SkillError, SkillState
from skills_node.backends import settings_from_parameters
from skills_node.backends.spot import SpotBackendSettings, SpotSkillBackend, read, relative
from skills_node.core.spot import PASSWORD_ENV, USERNAME_ENV, SpotCredentials, SpotRobot, SpotSettings
from skills_node.testing.fake_spot import FakeSpot

LOG = logging.getLogger("test.spot_backend")
CONFIG = Path(__file__).resolve().parents[3] / "config"
PASSWORD = "s3cret-backend-pw"


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
    assert s.skills.skills == ("go_to", "stand", "sit")
    assert s.skills.locations["table"] == pytest.approx((2.5, -1.0, -1.5708))
    assert s.skills.start_location == "initial position"


def test_the_robot_files_alone_configure_the_node() -> None:
    """config/monologue.yaml + config/robots/spot.yaml: every skills parameter they set is read."""
    params: dict[str, object] = {}
    for f in (CONFIG / "monologue.yaml", CONFIG / "robots" / "spot.yaml"):
        params.update(flatten((yaml.safe_load(f.read_text()).get("skills") or {}).get("ros__parameters", {})))
    params["backend"] = load_robots(CONFIG)["spot"].skills_backend
    settings, unused = settings_from_parameters(params)
    assert settings.backend == "spot" and isinstance(settings.backend_settings, SpotBackendSettings)
    assert unused == []


def test_every_problem_is_reported() -> None:
    s, errors = read_params(yaml_params(**{
        "spot.hostname": None, "spot.rpc_timeout": 0.0, "spot.skills": ["go_to", "fly"],
        "spot.location_poses": [0.0, 0.0, 0.0], "spot.start_location": "moon", "spot.stand_at_start": True,
        "spot.power_on_at_start": False}))
    assert s is None
    text = "\n".join(errors)
    for needle in ("spot.hostname", "spot.rpc_timeout", "fly", "spot.location_poses", "moon", "stand_at_start"):
        assert needle in text


def test_location_outside_the_geofence_is_a_configuration_error() -> None:
    s, errors = read_params(yaml_params(**{"spot.geofence_max": [3.0, 2.0]}))
    assert s is None and any("far counter" in e and "geofence" in e for e in errors)


def test_relative_pose_in_the_body_frame() -> None:
    x, y, yaw = relative((1.0, 1.0, math.pi / 2), (1.0, 3.0, math.pi))
    assert (x, y, yaw) == pytest.approx((2.0, 0.0, math.pi / 2))
    x, y, yaw = relative((0.0, 0.0, 0.0), (0.5, -1.2, 3.1416))
    assert (x, y, yaw) == pytest.approx((0.5, -1.2, 3.1416 - 2 * math.pi), abs=1e-9)


# ---- the skills on the fake Spot ------------------------------------------------------------------

@pytest.fixture
def fake() -> Iterator[FakeSpot]:
    with FakeSpot(username="operator", password=PASSWORD, motion_duration_s=0.2) as spot:
        yield spot


@pytest.fixture
def settings(fake: FakeSpot) -> SpotBackendSettings:
    s, errors = read_params(yaml_params(**{
        "spot.hostname": "127.0.0.1", "spot.port": fake.port, "spot.ca_cert_path": str(fake.ca_cert_path),
        "spot.rpc_timeout": 1.0, "spot.feedback_period": 0.05, "spot.lease_check_period": 0.2,
        "spot.command_timeout": 5.0, "spot.go_to_time_margin": 2.0}))
    assert s is not None, errors
    return s


@pytest.fixture
def robot(settings: SpotBackendSettings) -> Iterator[SpotRobot]:
    assert isinstance(settings.robot, SpotSettings)
    creds = SpotCredentials.from_env({USERNAME_ENV: "operator", PASSWORD_ENV: PASSWORD})
    with SpotRobot(settings.robot, creds, LOG) as r:
        yield r


def make_backend(robot: SpotRobot, settings: SpotBackendSettings) -> SpotSkillBackend:
    return SpotSkillBackend(robot, settings.skills, LOG)


Feedback = list[tuple[SkillState, str]]


def run(backend: SpotSkillBackend, skill: str, *args: str, cancel: threading.Event | None = None) -> Any:
    fb: Feedback = []
    outcome = backend.execute(skill, list(args), lambda s, t: fb.append((s, t)), cancel or threading.Event())
    return outcome, fb


def trajectory_goal(request: Any) -> tuple[float, float, float]:
    traj = request.command.synchronized_command.mobility_command.se2_trajectory_request.trajectory
    pose = traj.points[-1].pose
    return pose.position.x, pose.position.y, pose.angle


def affordance_map(backend: SpotSkillBackend) -> dict[str, float]:
    return {a.description: a.affordance for a in backend.affordances(include_unaffordable=True)}


def test_go_to_stands_up_and_walks_the_body_frame_difference(
        robot: SpotRobot, settings: SpotBackendSettings, fake: FakeSpot) -> None:
    backend = make_backend(robot, settings)
    aff = affordance_map(backend)
    assert aff["go_to(initial position)"] == pytest.approx(0.1)  # already there
    assert aff["go_to(table)"] == pytest.approx(1.0)
    assert (aff["stand()"], aff["sit()"]) == pytest.approx((1.0, 0.1))  # sitting, motors off

    outcome, fb = run(backend, "go_to", "table")
    assert outcome.error == SkillError.NONE, outcome.message
    assert [kind for kind, _ in fake.commands()] == ["stand", "trajectory"]
    assert fake.motors_on and fake.standing
    assert trajectory_goal(fake.commands()[-1][1]) == pytest.approx((2.5, -1.0, -1.5708), abs=1e-6)
    assert fb[-1] == (SkillState.DONE, "at the table")
    assert backend.location == "table"

    outcome, _ = run(backend, "go_to", "far counter")  # from the table, heading -pi/2
    assert outcome.ok
    # far counter (4.0, 1.0, pi/2) seen from the table (2.5, -1.0, -pi/2): 2 m behind, 1.5 m to the left
    x, y, yaw = trajectory_goal(fake.commands()[-1][1])
    assert (x, y) == pytest.approx((-2.0, 1.5), abs=1e-3) and abs(abs(yaw) - math.pi) < 1e-3
    aff = affordance_map(backend)
    assert aff["go_to(far counter)"] == pytest.approx(0.1) and aff["go_to(table)"] == pytest.approx(1.0)
    assert (aff["stand()"], aff["sit()"]) == pytest.approx((0.1, 1.0))

    assert run(backend, "sit")[0].ok and not fake.standing
    assert affordance_map(backend)["sit()"] == pytest.approx(0.1)


def test_refused_before_anything_moves(robot: SpotRobot, settings: SpotBackendSettings, fake: FakeSpot) -> None:
    backend = make_backend(robot, settings)
    assert run(backend, "go_to", "moon")[0].error == SkillError.INVALID_ARGUMENTS
    assert run(backend, "fly")[0].error == SkillError.UNKNOWN_SKILL
    assert run(backend, "stand", "up")[0].error == SkillError.INVALID_ARGUMENTS
    outside = replace(settings.skills, locations={**settings.skills.locations, "street": (20.0, 0.0, 0.0)})
    fenced = SpotSkillBackend(robot, outside, LOG)
    outcome, _ = run(fenced, "go_to", "street")
    assert outcome.error == SkillError.OUT_OF_LIMITS and "geofence" in outcome.message
    no_sit = SpotSkillBackend(robot, replace(settings.skills, skills=("go_to",)), LOG)
    assert run(no_sit, "sit")[0].error == SkillError.UNKNOWN_SKILL
    assert list(no_sit.skill_names()) == ["go_to"]
    backend.estop_latched, backend.estop_reason = True, "estop topic"
    outcome, _ = run(backend, "go_to", "table")
    assert outcome.error == SkillError.ESTOP_ACTIVE and "estop topic" in outcome.message
    assert all(a.affordance == 0.0 for a in backend.affordances(include_unaffordable=True))
    assert backend.affordances() == []
    assert fake.commands() == [] and "PowerCommand" not in fake.calls


def test_cancel_stops_and_leaves_the_position_unknown(
        robot: SpotRobot, settings: SpotBackendSettings, fake: FakeSpot) -> None:
    backend = make_backend(robot, settings)
    assert run(backend, "stand")[0].ok
    fake.motion_duration_s = 5.0  # a long walk
    cancel = threading.Event()
    fake.when("RobotCommandFeedback", cancel.set, after=2)
    outcome, _ = run(backend, "go_to", "trash", cancel=cancel)
    assert outcome.error == SkillError.CANCELED
    assert [kind for kind, _ in fake.commands()][-2:] == ["trajectory", "stop"]
    assert backend.location is None
    outcome, _ = run(backend, "go_to", "table")
    assert outcome.error == SkillError.PRECONDITION_FAILED and "position unknown" in outcome.failed_precondition
    assert affordance_map(backend)["go_to(table)"] == 0.0


def test_lease_taken_by_the_tablet_mid_skill_is_a_robot_fault(
        robot: SpotRobot, settings: SpotBackendSettings, fake: FakeSpot) -> None:
    backend = make_backend(robot, settings)
    assert run(backend, "stand")[0].ok
    fake.motion_duration_s = 5.0
    fake.when("RobotCommandFeedback", lambda: fake.take_lease_as("tablet"), after=2)
    outcome, _ = run(backend, "go_to", "table")
    assert outcome.error == SkillError.ROBOT_FAULT and "lease" in outcome.message
    assert not robot.status().ok and not robot.status().lease_held
    assert backend.affordances() == []
    assert fake.lease_owner == "tablet"


def test_estop_cut_mid_skill_is_estop_active(robot: SpotRobot, settings: SpotBackendSettings, fake: FakeSpot) -> None:
    backend = make_backend(robot, settings)
    assert run(backend, "stand")[0].ok
    fake.motion_duration_s = 5.0

    def estop_topic() -> None:  # what the ROS bridge does on `estop`: latch, then cut Spot's e-stop
        backend.estop_latched, backend.estop_reason = True, "estop topic"
        threading.Thread(target=robot.estop_cut, daemon=True).start()  # not in the fake's server thread

    fake.when("RobotCommandFeedback", estop_topic, after=2)
    outcome, _ = run(backend, "go_to", "table")
    assert outcome.error == SkillError.ESTOP_ACTIVE and "estop topic" in outcome.message
    assert not fake.motors_on and fake.estopped


def test_command_feedback_failure_is_a_robot_fault(
        robot: SpotRobot, settings: SpotBackendSettings, fake: FakeSpot) -> None:
    backend = make_backend(robot, settings)
    assert run(backend, "stand")[0].ok
    fake.fail_next_command()
    outcome, _ = run(backend, "go_to", "trash")
    assert outcome.error == SkillError.ROBOT_FAULT and "CAUSE_COMMAND_FAILURE" in outcome.message
    assert backend.affordances() == []  # a behaviour fault: nothing is admissible until it is cleared
