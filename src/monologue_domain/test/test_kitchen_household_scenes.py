"""CAPE's Spot scenes (lab, kitchen): each of CAPE's six Spot tasks is executable in both; the ground
truth encoding, the success rules, the oracle affordances (perfect and noisy) and the `household`
prompt profile of the household model."""
from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from monologue_domain.kitchen.household import (
    HOUSEHOLD_SKILLS,
    SCENES,
    HouseholdWorld,
    household_text,
    judge_household,
    spot_home,
)
from monologue_domain.kitchen.judge import judge
from monologue_domain.kitchen.scene import state_from_scene
from monologue_domain.kitchen.skills import parse_precondition
from monologue_domain.kitchen.state import HELD, KitchenState
from monologue_domain.skills import SkillError

REPO = Path(__file__).resolve().parents[3]
Step = tuple[str, ...]
OPEN_STORAGE = [("stand_up",), ("walk_to", "storage room door"), ("open", "storage room door")]
OPEN_KITCHEN = [("stand_up",), ("walk_to", "kitchen door"), ("open", "kitchen door")]

# CAPE's six Spot tasks (C l.140-141): per scene a plan, and what the final state must show.
TASKS: dict[str, tuple[Callable[[KitchenState], bool], dict[str, list[Step]]]] = {
    "prepare for a run on a warm day": (
        lambda s: s.location_of("water bottle") == HELD and s.location_of("shoes") not in ("storage room", "living room"),
        {"lab": OPEN_STORAGE + [("walk_to", "shoes"), ("pick_up", "shoes"), ("walk_to", "desk"),
                                ("put", "shoes", "desk"), ("pick_up", "water bottle")],
         "kitchen": [("stand_up",), ("walk_to", "shoes"), ("pick_up", "shoes"), ("walk_to", "couch"),
                     ("put", "shoes", "couch"), ("walk_to", "kitchen door"), ("open", "kitchen door"),
                     ("walk_to", "fridge"), ("open", "fridge"), ("pick_up", "water bottle")]}),
    "put the phone on the nightstand": (
        lambda s: s.location_of("phone") == "nightstand",
        {"lab": [("stand_up",), ("walk_to", "desk"), ("pick_up", "phone"), ("walk_to", "nightstand"),
                 ("put", "phone", "nightstand")],
         "kitchen": [("stand_up",), ("walk_to", "couch"), ("pick_up", "phone"), ("walk_to", "nightstand"),
                     ("put", "phone", "nightstand")]}),
    "iron a shirt": (
        lambda s: s.location_of("shirt") == s.location_of("iron") == "ironing board" and "on" in s.states["iron"],
        {"lab": OPEN_STORAGE + [("walk_to", "shelf"), ("pick_up", "shirt"), ("walk_to", "ironing board"),
                                ("put", "shirt", "ironing board"), ("walk_to", "shelf"), ("pick_up", "iron"),
                                ("walk_to", "ironing board"), ("put", "iron", "ironing board"), ("turn_on", "iron")],
         "kitchen": [("stand_up",), ("walk_to", "couch"), ("pick_up", "shirt"), ("walk_to", "ironing board"),
                     ("put", "shirt", "ironing board"), ("walk_to", "kitchen door"), ("open", "kitchen door"),
                     ("walk_to", "pantry"), ("open", "pantry"), ("pick_up", "iron"), ("walk_to", "ironing board"),
                     ("put", "iron", "ironing board"), ("turn_on", "iron")]}),
    "put mail in storage": (
        lambda s: s.location_of("mail") == "storage box",
        {"lab": OPEN_STORAGE + [("walk_to", "storage box"), ("open", "storage box"), ("walk_to", "desk"),
                                ("pick_up", "mail"), ("walk_to", "storage box"), ("put_in", "mail", "storage box")],
         "kitchen": [("stand_up",), ("walk_to", "storage box"), ("open", "storage box"), ("walk_to", "mail"),
                     ("pick_up", "mail"), ("walk_to", "storage box"), ("put_in", "mail", "storage box")]}),
    "organize pantry": (
        lambda s: s.location_of("cereal") == "pantry",
        {"lab": OPEN_STORAGE + [("walk_to", "pantry"), ("open", "pantry"), ("walk_to", "shelf"),
                                ("pick_up", "cereal"), ("walk_to", "pantry"), ("put_in", "cereal", "pantry")],
         "kitchen": OPEN_KITCHEN + [("walk_to", "pantry"), ("open", "pantry"), ("walk_to", "counter"),
                                    ("pick_up", "cereal"), ("walk_to", "pantry"), ("put_in", "cereal", "pantry")]}),
    "put away groceries": (
        lambda s: s.location_of("milk") == "fridge",
        {"lab": [("stand_up",), ("walk_to", "fridge"), ("open", "fridge"), ("walk_to", "desk"), ("pick_up", "milk"),
                 ("walk_to", "fridge"), ("put_in", "milk", "fridge")],
         "kitchen": OPEN_KITCHEN + [("walk_to", "fridge"), ("open", "fridge"), ("walk_to", "counter"),
                                    ("pick_up", "milk"), ("walk_to", "fridge"), ("put_in", "milk", "fridge")]}),
}


def make(scene: str, **kw: float) -> HouseholdWorld:
    s, start = SCENES[scene]()
    return HouseholdWorld(s, start, 1, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("scene", ["lab", "kitchen"])
@pytest.mark.parametrize("task", list(TASKS))
def test_cape_spot_tasks_run_in_both_scenes_and_every_step_is_judged_a_success(scene: str, task: str) -> None:
    goal, plans = TASKS[task]
    w = make(scene)
    assert not goal(w.state())
    for skill, *args in plans[scene]:
        assert w.check(skill, args) is None, (skill, args, w.check(skill, args))
        assert w.execute(skill, args).ok
        after = state_from_scene(w.scene_objects())  # the ground truth, as the success detector reads it
        assert after == w.state()
        ok, why = judge(skill, args, after)
        assert ok, why
    assert goal(w.state())


@pytest.mark.parametrize("scene", ["lab", "kitchen"])
def test_cape_fig_1_errors_in_the_spot_scenes(scene: str) -> None:
    """Spot starts sitting (stand up before walking, D1) and has one arm (D4)."""
    w = make(scene)
    out = w.execute("walk_to", ["phone"])
    assert out.error == SkillError.PRECONDITION_FAILED
    assert parse_precondition(out.failed_precondition)[:2] == ("sitting", 1)
    assert out.message == f"I cannot {household_text('walk_to', ['phone'])} because I am sitting"
    for skill, *args in TASKS["put the phone on the nightstand"][1][scene][:3]:
        assert w.execute(skill, args).ok
    other = "mail" if scene == "lab" else "shirt"
    w.execute("walk_to", [w.state().location_of(other)])
    pre = w.check("pick_up", [other])
    assert pre is not None and (pre.proposition, pre.difficulty) == ("hand_full", 4)
    assert pre.skill == "pick_up" and pre.args == (other,)


def test_ground_truth_encodes_posture_hands_doors_switches_and_visibility() -> None:
    scene, start = spot_home()
    w = HouseholdWorld(scene, start, hands=2)
    for skill, *args in [("stand_up",), ("walk_to", "kitchen door"), ("open", "kitchen door"), ("walk_to", "counter"),
                         ("pick_up", "mug"), ("pick_up", "cereal"), ("walk_to", "coffee maker"),
                         ("turn_on", "coffee maker")]:
        assert w.execute(skill, args).ok, (skill, args)
    objs = w.scene_objects()
    s = state_from_scene(objs)
    assert s == w.state()
    assert s.states["robot"] == {"standing"} and s.states["coffee maker"] == {"on"}
    assert s.open_containers == {"kitchen door"} and s.holding == "mug" and s.location_of("cereal") == HELD
    by = {o.name: o for o in objs}
    assert by["milk"].visible is False  # in the closed fridge
    assert by["counter"].visible and not by["bed"].visible  # another room
    assert by["mug"].category == "grabbable+movable@robot" and by["fridge"].category == "openable+receptacle@kitchen"
    assert by["robot"].position == by["coffee maker"].position and by["robot@coffee maker"].category == "location"
    assert all(o.category == "location" for o in objs if "@" in o.name)  # markers: never objects in feedback


def test_household_success_rules_fail_when_the_effect_is_missing() -> None:
    w = make("lab")
    s = w.state()
    assert not judge("stand_up", [], s)[0] and judge("sit_down", [], s)[0]
    assert not judge("walk_to", ["desk"], s)[0] and not judge("pick_up", ["phone"], s)[0]
    assert not judge("open", ["fridge"], s)[0] and judge("close", ["fridge"], s)[0]
    assert not judge("turn_on", ["iron"], s)[0] and judge("turn_off", ["iron"], s)[0]
    assert not judge("put", ["phone", "nightstand"], s)[0] and judge("put", ["phone", "desk"], s)[0]
    assert judge_household("pick_up", ["unicorn"], s) == (False, "pick up the unicorn: there is no unicorn in the scene")
    assert not judge("fly", [], s)[0]


def test_affordances_perfect_and_noisy() -> None:
    w = make("lab")
    perfect = {(a.skill, a.args) for a in w.affordance_list()}
    assert perfect == {("stand_up", ())}  # Spot sits: only standing up is possible (CAPE D1 "X is sitting")
    w.execute("stand_up", [])
    full = w.affordance_list(include_unaffordable=True)
    assert all((a.affordance == 1.0) == (w.check(a.skill, a.args) is None) for a in full)
    noisy_a, noisy_b = make("lab", affordance_flip=0.06), make("lab", affordance_flip=0.06)
    for n in (noisy_a, noisy_b):
        n.execute("stand_up", [])
    values = [[a.affordance for a in noisy_a.affordance_list(include_unaffordable=True)] for _ in range(20)]
    truth = [a.affordance for a in full]
    flips = sum(v != t for vs in values for v, t in zip(vs, truth))
    rate = flips / (len(truth) * len(values))
    assert 0.045 < rate < 0.075, rate  # CAPE's 6% (C l.102)
    again = [[a.affordance for a in noisy_b.affordance_list(include_unaffordable=True)] for _ in range(20)]
    assert again == values  # seeded
    with pytest.raises(ValueError, match="affordance_flip"):
        make("lab", affordance_flip=1.5)


def test_the_household_profile_has_the_14_skill_texts_and_its_examples_execute() -> None:
    spec = yaml.safe_load((REPO / "config" / "prompts" / "household.yaml").read_text())
    assert {k: v["template"] for k, v in spec["skills"].items()} == {k: t for k, (_, t) in HOUSEHOLD_SKILLS.items()}
    preamble = (REPO / "config" / "prompts" / spec["preamble_file"]).read_text()
    scene, start = spot_home()
    texts = {household_text(i[0], i[1]): i for i in HouseholdWorld(scene, start).instances()}
    examples = re.split(r"^Task: ", preamble, flags=re.M)[1:]
    assert len(examples) == 4
    for ex in examples:
        w = HouseholdWorld(scene, start)
        steps = re.findall(r"^Step (\d+): (.+)$", ex, flags=re.M)
        assert [int(n) for n, _ in steps] == list(range(1, len(steps) + 1)) and steps[-1][1] == "done."
        for _, text in steps[:-1]:
            skill, args = texts[text]
            out = w.execute(skill, args)
            assert out.ok, (ex.splitlines()[0], text, out.message)
