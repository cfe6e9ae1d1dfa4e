"""The `sim_kitchen` backend: settings from config/robots/sim_kitchen.yaml alone, a start state from
parameters, skills with preconditions, ground truth that encodes the symbolic state."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from monologue_domain.kitchen.scene import state_from_scene
from skills_node.core.types import SkillError, SkillOutcome, SkillState
from skills_node.plugin import settings_from_parameters
from skills_node.robots.kitchen.core import KitchenBackend
from skills_node.robots.kitchen.plugin import KitchenSettings
from skills_node.testing.host import FakeHost, create_backend, skills_params

CONFIG = Path(__file__).resolve().parents[3] / "config"


def params(**extra: object) -> dict[str, object]:
    return {**skills_params(CONFIG, "sim_kitchen"), **{f"kitchen.{k}": v for k, v in extra.items()}}


def backend(**extra: object) -> tuple[KitchenBackend, FakeHost]:
    return create_backend(params(skill_duration=0.0, **extra), KitchenBackend)


def test_settings_from_the_yaml_alone() -> None:
    settings, unused = settings_from_parameters(params())
    assert unused == [] and settings.plugin.name == "kitchen"
    s = settings.backend_settings
    assert isinstance(s, KitchenSettings) and len(s.start.object_locations) == 15
    assert s.drawers == ("top drawer",) and s.noise.affordance_flip == 0.0


def test_bad_start_state_is_reported() -> None:
    with pytest.raises(ValueError, match="unknown place 'roof'"):
        settings_from_parameters(params(objects=["coke@roof"]))
    with pytest.raises(ValueError, match="affordance_flip"):
        settings_from_parameters(params(affordance_flip=1.5))


def test_pick_up_the_coke_through_the_backend() -> None:
    b, host = backend(objects=["coke@far counter", "apple@table"], robot_location="table")
    states: list[SkillState] = []

    def run(skill: str, args: list[str]) -> SkillOutcome:
        return b.execute(skill, args, lambda st, _t: states.append(st), threading.Event())

    out = run("pick_up", ["coke"])
    assert out.error == SkillError.PRECONDITION_FAILED
    assert out.failed_precondition == "not_near: I cannot pick up the coke because I am not near the coke"
    assert host.changed == 0 and not states
    affs = {(a.skill, a.args) for a in b.affordances()}
    assert ("find", ("coke",)) in affs and ("pick_up", ("coke",)) not in affs and ("pick_up", ("apple",)) in affs
    assert run("find", ["coke"]).ok and run("pick_up", ["coke"]).ok
    assert states[-1] == SkillState.DONE and host.changed == 2
    gt = b.ground_truth()
    s = state_from_scene(gt)
    assert s.holding == "coke" and s.robot_location == "far counter" and s == b.state()
    assert b.objects() == ["coke", "apple"] and "user" in b.locations()
    assert run("fly", []).error == SkillError.UNKNOWN_SKILL


def test_cancel_changes_nothing() -> None:
    settings, _ = settings_from_parameters(params(skill_duration=5.0, objects=["coke@table"]))
    b = settings.plugin.create(FakeHost(frame_id="map"), settings.backend_settings).backend
    cancel = threading.Event()
    cancel.set()
    out = b.execute("go_to", ["table"], lambda *_: None, cancel)
    assert out.error == SkillError.CANCELED
    assert state_from_scene(b.ground_truth() or []).robot_location == "initial position"
