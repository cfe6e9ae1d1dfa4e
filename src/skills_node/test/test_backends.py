"""Skills backend plug-ins: found by the name the robot table gives, settings built once from the
parameter files (no defaults in code), every problem reported at once, each backend reading its block."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from monologue_domain.robots import load_robots
from skills_node.core.types import Affordance, SkillError, SkillOutcome
from skills_node.plugin import (
    ROBOTS,
    BackendHandle,
    BackendPlugin,
    SkillsSettings,
    load_plugin,
    settings_from_parameters,
)
from skills_node.robots.kinematic.plugin import KinematicSettings
from skills_node.robots.mujoco.plugin import SimArmSettings
from skills_node.robots.ur5e.plugin import Ur5eSettings
from skills_node.testing.host import FakeHost
from skills_node.testing.host import skills_params as host_params

CONFIG = Path(__file__).resolve().parents[3] / "config"


def skills_params(robot: str) -> dict[str, object]:
    """The skills node's parameters for `robot`: monologue.yaml, robots/<robot>.yaml, the table's backend."""
    return host_params(CONFIG, robot)


@pytest.mark.parametrize("robot", ["sim", "sim_kinematic", "ur5e"])
def test_every_robot_builds_its_settings_from_the_yaml_alone(robot: str) -> None:
    settings, unused = settings_from_parameters(skills_params(robot))
    assert settings.plugin.name == settings.backend == load_robots(CONFIG)[robot].skills_backend
    assert unused == []  # every parameter the files set is read by the node or its backend


def test_yaml_values_are_the_only_defaults() -> None:
    """The values that used to disagree with code defaults come from the YAML files."""
    ur5e, _ = settings_from_parameters(skills_params("ur5e"))
    assert isinstance(ur5e.backend_settings, Ur5eSettings)
    assert ur5e.backend_settings.arm.limits.min_height == 0.01  # m (code said 0.005)
    assert ur5e.backend_settings.rtde.host == "192.168.1.102" and ur5e.backend_settings.rtde_factory == ""
    assert ur5e.backend_settings.arm.pick.home_joints and not ur5e.backend_settings.arm.pick.return_home
    sim, _ = settings_from_parameters(skills_params("sim"))
    assert isinstance(sim.backend_settings, SimArmSettings)
    assert sim.backend_settings.command_timeout == 15.0  # s (code said 5)
    assert sim.backend_settings.arm.limits.min_height == 0.0 and not sim.backend_settings.arm.use_place_points
    kin, _ = settings_from_parameters({**skills_params("sim_kinematic"), "sim.seed": 4})
    assert isinstance(kin.backend_settings, KinematicSettings)
    assert kin.backend_settings.seed == 4 and len(kin.backend_settings.spec.block_colors) == 3


def test_a_missing_parameter_is_an_error_not_a_default() -> None:
    params = skills_params("ur5e")
    del params["safety.min_height"], params["ur5e.command_timeout"]
    with pytest.raises(ValueError) as e:
        settings_from_parameters(params)
    assert "safety.min_height: missing" in str(e.value) and "ur5e.command_timeout: missing" in str(e.value)


def test_every_problem_is_reported_at_once() -> None:
    params = {**skills_params("sim"), "arm.speed": -1.0, "approval.mode": "sometimes", "status_rate": 0.0,
              "safety.skills": ["pick_place", "dance"], "ground_truth_rate": "fast"}
    with pytest.raises(ValueError) as e:
        settings_from_parameters(params)
    text = str(e.value)
    for what in ("arm.speed", "approval.mode", "status_rate", "unknown skills ['dance']", "ground_truth_rate"):
        assert what in text, what


def test_another_robots_block_is_reported_unused() -> None:
    """A backend reads only its own block: the kinematic world ignores (and reports) `ur5e.*`."""
    _, unused = settings_from_parameters({**skills_params("sim_kinematic"), "ur5e.host": "10.0.0.1"})
    assert unused == ["ur5e.host"]


def test_unknown_backend_names_the_available_ones() -> None:
    assert {"kinematic", "mujoco", "ur5e", "spot", "kitchen", "household"} <= set(ROBOTS.names())
    with pytest.raises(ValueError, match=r"unknown skills_backends 'no_such_backend'; known: .*kinematic"):
        settings_from_parameters({**skills_params("sim_kinematic"), "backend": "no_such_backend"})
    with pytest.raises(ValueError, match="backend: missing"):
        settings_from_parameters({k: v for k, v in skills_params("sim_kinematic").items() if k != "backend"})


class _EchoBackend:
    """A one-skill backend: `wave(hand)`."""

    def __init__(self, hands: tuple[str, ...]) -> None:
        self.hands = hands

    def skill_names(self) -> list[str]:
        return ["wave"]

    def affordances(self, include_unaffordable: bool = False) -> list[Affordance]:
        return [Affordance("wave", (h,), 1.0) for h in self.hands]

    def objects(self) -> list[str]:
        return []

    def locations(self) -> list[str]:
        return []

    def execute(self, skill: str, args: Any, feedback: Any, cancel: threading.Event) -> SkillOutcome:
        return SkillOutcome(SkillError.NONE, f"waved the {args[0]} hand")

    def ground_truth(self) -> None:
        return None


def test_a_registered_plugin_is_found_by_name() -> None:
    """ROBOTS.add() adds a backend at run time, with its own block (`wave.*`), without editing this package."""
    from monologue_common.core.settings import ParamReader

    def read(r: ParamReader) -> tuple[str, ...]:
        return r.strings("wave.hands")

    def create(_host: Any, hands: tuple[str, ...]) -> BackendHandle:
        return BackendHandle(_EchoBackend(hands))

    ROBOTS.add("waver", BackendPlugin("waver", read, create))
    settings, unused = settings_from_parameters({"backend": "waver", "frame_id": "base_link",
                                                 "ground_truth_rate": 5.0, "expert_truth_dir": "", "wave.hands": ["left", "right"]})
    assert isinstance(settings, SkillsSettings) and unused == []
    backend = settings.plugin.create(FakeHost(), settings.backend_settings).backend
    assert [a.description for a in backend.affordances()] == ["wave(left)", "wave(right)"]
    assert load_plugin("waver") is settings.plugin
    ROBOTS.unregister("waver")


TOY_ROBOT = '''
"""A robot of another package: adding it touches no file of skills_node."""
from dataclasses import dataclass

from monologue_common.core.settings import ParamReader
from skills_node.core.types import Affordance, SkillError, SkillOutcome
from skills_node.plugin import BackendHandle, BackendHost, BackendPlugin


@dataclass(frozen=True)
class ToySettings:
    hands: tuple[str, ...]


class ToyBackend:
    def __init__(self, s: ToySettings) -> None:
        self.s = s

    def skill_names(self):
        return ("wave",)

    def affordances(self, include_unaffordable=False):
        return [Affordance("wave", (h,), 1.0) for h in self.s.hands]

    def objects(self):
        return []

    def locations(self):
        return []

    def execute(self, skill, args, feedback, cancel):
        return SkillOutcome(SkillError.NONE, f"waved the {args[0]} hand")

    def ground_truth(self):
        return None


def read(r: ParamReader) -> ToySettings:
    return ToySettings(r.strings("toy.hands"))


def create(host: BackendHost, s: ToySettings) -> BackendHandle:
    return BackendHandle(ToyBackend(s))


PLUGIN = BackendPlugin("toy", read, create, "a toy robot that waves")
'''


def test_a_robot_in_another_package_is_selected_by_its_dotted_module_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A backend plug-in in a folder of its own (on PYTHONPATH) is found by its dotted module path, reads its
    block and builds with a fake host, ROS-free: adding a robot edits no existing Python file."""
    pkg = tmp_path / "toy_robots" / "toy"
    pkg.mkdir(parents=True)
    (tmp_path / "toy_robots" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text(TOY_ROBOT)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        settings, unused = settings_from_parameters({"backend": "toy_robots.toy", "frame_id": "base_link",
                                                     "ground_truth_rate": 5.0, "expert_truth_dir": "",
                                                     "toy.hands": ["left"]})
        assert unused == [] and settings.plugin.name == "toy" and settings.backend == "toy_robots.toy"
        backend = settings.plugin.create(FakeHost(), settings.backend_settings).backend
        assert [a.description for a in backend.affordances()] == ["wave(left)"]
        assert backend.execute("wave", ["left"], lambda *_: None, threading.Event()).message == "waved the left hand"
        with pytest.raises(ValueError, match=r"toy_robots\.nope"):
            settings_from_parameters({"backend": "toy_robots.nope", "frame_id": "base_link",
                                      "ground_truth_rate": 5.0})
    finally:
        ROBOTS.unregister("toy_robots.toy")


def test_kinematic_backend_runs_without_ros() -> None:
    settings, _ = settings_from_parameters({**skills_params("sim_kinematic"), "sim.seed": 3,
                                            "sim.phase_duration": 0.0})
    host = FakeHost()
    backend = settings.plugin.create(host, settings.backend_settings).backend
    states = backend.ground_truth()
    assert states is not None
    assert sorted(o.category for o in states if o.category != "location") == ["block"] * 3 + ["bowl"] * 3
    aff = next(a for a in backend.affordances() if a.affordance > 0)
    outcome = backend.execute(aff.skill, list(aff.args), lambda *_: None, threading.Event())
    assert outcome.ok and host.changed


def test_kinematic_statler_scenes_hide_covered_blocks_and_publish_their_truth() -> None:
    """sim.scene (monologue_domain.statler_domains): a covered block is not in the ground truth; the hidden
    truth goes to sim/statler_truth after every change; bad domain parameters are refused at start-up."""
    import json

    published: list[tuple[str, str]] = []

    class Node:
        def create_publisher(self, _type: Any, topic: str, _qos: Any) -> Any:
            class Pub:
                def publish(self, msg: Any) -> None:
                    published.append((topic, msg.data))
            return Pub()

    params = {**skills_params("sim_kinematic"), "sim.seed": 3, "sim.phase_duration": 0.0, "sim.scene": "covers",
              "sim.block_colors": ["red", "blue"], "sim.bowl_colors": ["green"], "sim.cup_colors": ["orange"]}
    settings, _ = settings_from_parameters(params)
    backend = settings.plugin.create(FakeHost(Node()), settings.backend_settings).backend
    states = backend.ground_truth()
    assert states is not None and "red block" not in [o.name for o in states] and "orange cup" in [o.name for o in states]
    assert published and published[-1][0] == "sim/statler_truth"
    assert json.loads(published[-1][1])["covered"] == {"red block": "orange cup"}
    outcome = backend.execute("pick_place", ["orange cup", "middle"], lambda *_: None, threading.Event())
    assert outcome.ok and json.loads(published[-1][1])["covered"] == {}
    assert "red block" in [o.name for o in backend.ground_truth() or []]
    with pytest.raises(ValueError, match="not blocks of the scene"):
        settings_from_parameters({**params, "sim.scene": "disinfection", "sim.dirty_blocks": ["cyan"]})


def test_the_ur5e_publishes_its_flange_and_the_hand_eye_calibration() -> None:
    """base -> tool0 from the TCP pose and offset (flange = TCP moved back along the tool axis)."""
    import math

    from skills_node.core.arm import TcpPose
    from skills_node.core.arm_settings import flange_in_base
    from skills_node.core.kinematics import forward_kinematics
    from skills_node.robots.ur5e.testing.fake_rtde import HOME_Q

    ur5e, _ = settings_from_parameters(skills_params("ur5e"))
    assert isinstance(ur5e.backend_settings, Ur5eSettings)
    tf = ur5e.backend_settings.tf
    assert (tf.camera_link_frame, tf.camera_frame, tf.rate) == ("camera_link", "camera_color_optical_frame", 30.0)
    assert tf.camera_in_tool0 == ((0.0, -0.075, 0.035), (0.0, 0.0, 0.0, 1.0))
    offset = TcpPose(0.0, 0.0, 0.16, 0.0, 0.0, 0.0)
    (x, y, z), q = flange_in_base(TcpPose(0.4, 0.0, 0.3, 0.0, math.pi, 0.0), offset)  # tool down
    assert (x, y, z) == pytest.approx((0.4, 0.0, 0.46)) and abs(q[1]) == pytest.approx(1.0)
    flange = forward_kinematics(HOME_Q)  # the same flange with the TCP from forward kinematics
    pos, _ = flange_in_base(forward_kinematics(HOME_Q, TcpPose(0.01, -0.02, 0.16, 0.1, 0.0, 0.2)),
                            TcpPose(0.01, -0.02, 0.16, 0.1, 0.0, 0.2))
    assert pos == pytest.approx(flange.position, abs=1e-9)
    with pytest.raises(ValueError, match="unit quaternion"):
        settings_from_parameters({**skills_params("ur5e"), "ur5e.hand_eye.rotation": [0.0, 0.0, 0.0, 2.0]})
