"""The `sim_household` backend: settings from config/robots/sim_household.yaml alone (every problem
reported), start-state overrides, skills with structured precondition errors, perfect and noisy oracle
affordances, ground truth that encodes the symbolic state."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from monologue_domain.kitchen.scene import state_from_scene
from monologue_domain.kitchen.skills import parse_precondition
from skills_node.core.types import SkillError, SkillOutcome, SkillState
from skills_node.plugin import settings_from_parameters
from skills_node.robots.household.core import HouseholdBackend
from skills_node.robots.household.plugin import HouseholdSettings
from skills_node.testing.host import FakeHost, create_backend, skills_params

CONFIG = Path(__file__).resolve().parents[3] / "config"


def params(**extra: object) -> dict[str, object]:
    return {**skills_params(CONFIG, "sim_household"), **{f"household.{k}": v for k, v in extra.items()}}


def backend(**extra: object) -> tuple[HouseholdBackend, FakeHost]:
    return create_backend(params(**{"skill_duration": 0.0, **extra}), HouseholdBackend)


def test_settings_from_the_yaml_alone() -> None:
    settings, unused = settings_from_parameters(params())
    assert unused == [] and settings.plugin.name == "household"
    s = settings.backend_settings
    assert isinstance(s, HouseholdSettings)
    assert (s.scene_name, s.hands, s.affordance_flip, s.seed) == ("lab", 1, 0.0, 0)  # perfect oracle, Spot's arm
    assert s.start.robot_location == "lab" and s.start.states["robot"] == {"sitting"}
    noisy = settings_from_parameters(params(affordances="noisy"))[0].backend_settings
    assert isinstance(noisy, HouseholdSettings) and noisy.affordance_flip == 0.06  # CAPE's noisy SayCan


def test_every_bad_parameter_is_reported_at_once() -> None:
    with pytest.raises(ValueError) as e:
        settings_from_parameters(params(scene="garage", hands=3, affordances="magic", affordance_flip=1.5))
    text = str(e.value)
    for name in ("household.scene", "household.hands", "household.affordances", "household.affordance_flip"):
        assert name in text, text
    with pytest.raises(ValueError) as e:
        settings_from_parameters(params(objects=["phone@roof", "unicorn@lab"], open=["phone"], turned_on=["desk"]))
    text = str(e.value)
    assert "unknown place 'roof'" in text and "unknown thing 'unicorn'" in text
    assert "the phone in household.open is not openable" in text and "household.turned_on is not switchable" in text
    with pytest.raises(ValueError, match="cannot hold"):
        settings_from_parameters(params(objects=["phone@robot", "mail@robot"]))
    with pytest.raises(ValueError, match="household.skill_duration"):
        p = params()
        del p["household.skill_duration"]
        settings_from_parameters(p)


def test_start_state_overrides() -> None:
    b, _ = backend(scene="kitchen", objects=["phone@robot"], robot_location="counter", open=["kitchen door"],
                   turned_on=["iron"], sitting=False, hands=2)
    s = b.state()
    assert s.holding == "phone" and s.robot_location == "counter" and s.open_containers == {"kitchen door"}
    assert s.states["iron"] == {"on"} and s.states["robot"] == {"standing"}
    assert b.locations() == ["kitchen", "living room"] and "fridge" in b.objects()


def test_skills_preconditions_and_ground_truth_through_the_backend() -> None:
    b, host = backend()
    states: list[SkillState] = []

    def run(skill: str, *args: str) -> SkillOutcome:
        return b.execute(skill, list(args), lambda st, _t: states.append(st), threading.Event())

    out = run("walk_to", "desk")
    assert out.error == SkillError.PRECONDITION_FAILED and host.changed == 0 and not states
    assert out.failed_precondition == "sitting: I cannot walk to the desk because I am sitting"
    assert parse_precondition(out.failed_precondition) == ("sitting", 1, out.message)
    assert {(a.skill, a.args) for a in b.affordances()} == {("stand_up", ())}
    for step in (("stand_up",), ("walk_to", "desk"), ("pick_up", "phone")):
        assert run(*step).ok, step
    assert states[-1] == SkillState.DONE and host.changed == 3
    out = run("pick_up", "mail")  # one arm
    assert out.error == SkillError.PRECONDITION_FAILED
    prop, level, message = parse_precondition(out.failed_precondition)
    assert (prop, level) == ("hand_full", 4) and message == "I cannot pick up the mail because I am already holding the phone"
    out = run("walk_to", "shelf")
    assert parse_precondition(out.failed_precondition)[:2] == ("door_closed", 4)
    affs = {(a.skill, a.args): a.affordance for a in b.affordances(include_unaffordable=True)}
    assert affs[("put", ("phone", "desk"))] == 1.0 and affs[("pick_up", ("mail",))] == 0.0
    assert affs[("walk_to", ("shelf",))] == 0.0 and affs[("walk_to", ("storage room door",))] == 1.0
    s = state_from_scene(b.ground_truth())
    assert s == b.state() and s.holding == "phone" and s.robot_location == "desk" and "lab" in s.visited
    assert run("fly").error == SkillError.UNKNOWN_SKILL
    assert run("pick_up", "unicorn").error == SkillError.INVALID_ARGUMENTS
    assert run("put", "phone").error == SkillError.INVALID_ARGUMENTS


def test_noisy_oracle_flips_about_six_percent() -> None:
    perfect, _ = backend(sitting=False)
    noisy, _ = backend(sitting=False, affordances="noisy", seed=7)
    truth = [a.affordance for a in perfect.affordances(include_unaffordable=True)]
    draws = [[a.affordance for a in noisy.affordances(include_unaffordable=True)] for _ in range(25)]
    flips = sum(v != t for d in draws for v, t in zip(d, truth)) / (len(truth) * len(draws))
    assert 0.045 < flips < 0.075, flips
    assert all(a.affordance == 1.0 for a in noisy.affordances())  # only afforded ones without include_unaffordable


def test_cancel_changes_nothing_and_busy_is_refused() -> None:
    settings, _ = settings_from_parameters(params(skill_duration=5.0))
    b = settings.plugin.create(FakeHost(frame_id="map"), settings.backend_settings).backend
    cancel = threading.Event()
    cancel.set()
    out = b.execute("stand_up", [], lambda *_: None, cancel)
    assert out.error == SkillError.CANCELED
    assert state_from_scene(b.ground_truth() or []).states["robot"] == {"sitting"}
    started = threading.Event()
    slow = threading.Event()
    t = threading.Thread(target=lambda: b.execute("stand_up", [], lambda *_: started.set(), slow))
    t.start()
    assert started.wait(5.0)
    assert b.execute("stand_up", [], lambda *_: None, threading.Event()).error == SkillError.BUSY
    slow.set()
    t.join(5.0)
    assert not t.is_alive()
