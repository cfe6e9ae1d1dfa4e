"""The symbolic SayCan kitchen: start states, preconditions, effects, affordances, disturbances,
the scene encoding and the success judge."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from monologue_domain.kitchen.judge import judge
from monologue_domain.kitchen.scene import state_from_scene, to_scene_objects
from monologue_domain.kitchen.skills import PROPOSITIONS, SKILLS, parse_precondition, skill_text
from monologue_domain.kitchen.state import HELD, KitchenState
from monologue_domain.kitchen.world import (
    DEFAULT_PLACEMENTS,
    LOCATIONS,
    OBJECTS,
    KitchenNoise,
    KitchenWorld,
    default_state,
    make_state,
    parse_placements,
)
from monologue_domain.skills import SkillError

REPO = Path(__file__).resolve().parents[3]


def world(placements: dict[str, str] | None = None, robot: str = "initial position",
          open_drawers: tuple[str, ...] = (), **noise: float) -> KitchenWorld:
    start = make_state(placements or {"coke": "far counter", "apple": "table"}, robot, open_drawers)
    return KitchenWorld.from_state(start, seed=3, noise=KitchenNoise(**noise))  # type: ignore[arg-type]


def test_default_kitchen_has_saycans_15_objects_and_locations() -> None:
    s = default_state()
    assert set(s.object_locations) == set(OBJECTS) and len(OBJECTS) == 15
    assert {"close counter", "far counter", "table", "trash", "user", "initial position"} <= set(LOCATIONS)
    assert s.robot_location == "initial position" and s.holding is None and not s.open_containers
    assert s.location_of("coke") == DEFAULT_PLACEMENTS["coke"]


def test_start_state_from_placements_and_its_errors() -> None:
    p = parse_placements(["coke@robot", "7up@top drawer", "apple@ table"])
    s = make_state(p, "table", ["top drawer"])
    assert s.holding == "coke" and s.location_of("7up") == "top drawer" and s.open_containers == {"top drawer"}
    with pytest.raises(ValueError, match="object@location"):
        parse_placements(["coke far counter"])
    with pytest.raises(ValueError, match="placed twice"):
        parse_placements(["coke@table", "coke@trash"])
    with pytest.raises(ValueError, match="unknown place 'roof'"):
        make_state({"coke": "roof"})
    with pytest.raises(ValueError, match="one hand"):
        make_state({"coke": HELD, "pepsi": HELD})
    with pytest.raises(ValueError, match="unknown robot location"):
        make_state({}, "garden")


def test_bring_me_a_coke_episode() -> None:
    w = world()
    for skill, args in [("find", ["coke"]), ("pick_up", ["coke"]), ("bring_to_user", []), ("put_down", ["coke"])]:
        out = w.execute(skill, args)
        assert out.ok, out
        assert judge(skill, args, w.state())[0]
    s = w.state()
    assert s.location_of("coke") == "user" and s.robot_location == "user" and s.holding is None


def test_failed_preconditions_change_nothing_and_say_why() -> None:
    w = world()
    before = w.state()
    out = w.execute("pick_up", ["coke"])
    assert out.error == SkillError.PRECONDITION_FAILED and w.state() == before
    assert out.failed_precondition == "not_near: I cannot pick up the coke because I am not near the coke"
    assert parse_precondition(out.failed_precondition) == (
        "not_near", 3, "I cannot pick up the coke because I am not near the coke")
    w.execute("find", ["coke"])
    w.execute("pick_up", ["coke"])
    w.execute("go_to", ["table"])
    out = w.execute("pick_up", ["apple"])
    assert out.failed_precondition == "hand_full: I cannot pick up the apple because I am already holding the coke"
    err = w.check("pick_up", ["apple"])
    assert err is not None and err.difficulty == 4 and err.implicit == "I cannot pick up the apple"
    assert w.check("pick_up", ["coke"]).proposition == "already_holding"  # type: ignore[union-attr]
    assert w.check("put_down", ["apple"]).proposition == "not_holding"  # type: ignore[union-attr]
    w.execute("put_down", ["coke"])
    assert w.check("bring_to_user", []).proposition == "hand_empty"  # type: ignore[union-attr]


def test_invalid_calls() -> None:
    w = world()
    assert w.execute("fly", []).error == SkillError.UNKNOWN_SKILL
    assert w.execute("pick_up", []).error == SkillError.INVALID_ARGUMENTS
    assert "unknown object 'banana'" in w.execute("pick_up", ["banana"]).message
    assert w.execute("go_to", ["roof"]).error == SkillError.INVALID_ARGUMENTS


def test_drawer_case_study() -> None:
    w = world({"coke": "close counter", "7up": "top drawer"}, "close counter")
    assert w.check("find", ["7up"]).proposition == "inside_closed"  # type: ignore[union-attr]
    w.execute("pick_up", ["coke"])
    assert w.check("open_drawer", ["top drawer"]).proposition == "not_near"  # type: ignore[union-attr]
    w.execute("go_to", ["drawers"])
    assert w.check("open_drawer", ["top drawer"]).proposition == "hand_full"  # type: ignore[union-attr]
    assert w.check("put_in_drawer", ["coke", "top drawer"]).proposition == "not_open"  # type: ignore[union-attr]
    assert w.check("close_drawer", ["top drawer"]).proposition == "already_closed"  # type: ignore[union-attr]
    w.execute("put_down", ["coke"])
    assert w.execute("open_drawer", ["top drawer"]).ok
    assert w.check("open_drawer", ["top drawer"]).proposition == "already_open"  # type: ignore[union-attr]
    assert w.execute("pick_up", ["7up"]).ok  # from the open drawer
    w.execute("put_in_drawer", ["7up", "top drawer"])  # hand full? no: put it back
    assert w.state().location_of("7up") == "top drawer"
    w.execute("pick_up", ["coke"])
    assert w.execute("put_in_drawer", ["coke", "top drawer"]).ok
    assert w.execute("close_drawer", ["top drawer"]).ok
    s = w.state()
    assert s.location_of("coke") == "top drawer" and not s.open_containers
    assert judge("put_in_drawer", ["coke", "top drawer"], s)[0] and judge("close_drawer", ["top drawer"], s)[0]


def test_affordances_are_the_preconditions() -> None:
    w = world()
    affs = {(a.skill, a.args): a.affordance for a in w.affordances(include_unaffordable=True)}
    assert affs[("find", ("coke",))] == 1.0 and affs[("pick_up", ("coke",))] == 0.0
    assert affs[("bring_to_user", ())] == 0.0 and affs[("go_to", ("table",))] == 1.0
    assert all(w.check(s, a) is None for (s, a), v in affs.items() if v == 1.0)
    assert all(a.affordance > 0 for a in w.affordances())
    w.execute("find", ["coke"])  # SayCan's completed-skill cap: no going where the robot already is
    affs = {(a.skill, a.args): a.affordance for a in w.affordances(include_unaffordable=True)}
    assert affs[("go_to", ("far counter",))] == 0.0 == affs[("find", ("coke",))]
    assert affs[("pick_up", ("coke",))] == 1.0 and affs[("go_to", ("table",))] == 1.0
    capped = KitchenWorld(make_state({"coke": "table"}, "table"), completed_affordance=0.2)
    assert {a.affordance for a in capped.affordances() if a.skill == "go_to" and a.args == ("table",)} == {0.2}


def test_noisy_affordances_flip_at_the_configured_rate_and_are_seeded() -> None:
    oracle = {(a.skill, a.args): a.affordance for a in world().affordances(True)}
    flips = total = 0
    w = world(affordance_flip=0.06)
    for _ in range(200):
        for a in w.affordances(True):
            flips += a.affordance != oracle[(a.skill, a.args)]
            total += 1
    assert 0.04 < flips / total < 0.08
    assert world(affordance_flip=0.5).affordances(True) == world(affordance_flip=0.5).affordances(True)


def test_random_failure_is_silent_or_reported() -> None:
    w = world(failure_rate=1.0)
    out = w.execute("find", ["coke"])
    assert out.ok and w.state().robot_location == "initial position" and w.events
    assert not judge("find", ["coke"], w.state())[0]
    w = world(failure_rate=1.0, report_failures=True)
    assert w.execute("find", ["coke"]).error == SkillError.EXECUTION_FAILED


def test_drop_and_move_disturbances() -> None:
    w = world({"coke": "far counter"}, "far counter", drop_rate=1.0)
    assert w.execute("pick_up", ["coke"]).ok
    assert w.state().holding is None and w.state().location_of("coke") == "far counter"
    assert not judge("pick_up", ["coke"], w.state())[0]
    w = world({"coke": "far counter"}, "initial position", move_rate=1.0)
    w.execute("find", ["coke"])
    assert w.state().location_of("coke") != "far counter" and "moved the coke" in w.events[-1]
    assert w.check("pick_up", ["coke"]).proposition == "not_near"  # type: ignore[union-attr]
    w.move("coke", "trash")
    assert w.state().location_of("coke") == "trash"


def test_disturbances_are_seeded() -> None:
    def run() -> KitchenState:
        w = world(dict(DEFAULT_PLACEMENTS), failure_rate=0.3, drop_rate=0.3, move_rate=0.3)
        for _ in range(5):
            w.execute("find", ["coke"])
            w.execute("pick_up", ["coke"])
            w.execute("bring_to_user", [])
            w.execute("put_down", ["coke"])
        return w.state()

    assert run() == run()


def test_instances_of_one_object() -> None:
    """Several cokes ("coke#1", "coke#2"): skills name the type and act on an instance."""
    w = world({"coke#1": "trash", "coke#2": "table", "coke#3": "far counter"}, "far counter")
    assert w.types == ["coke"] and {a.args for a in w.affordances() if a.skill == "pick_up"} == {("coke",)}
    assert w.execute("pick_up", ["coke"]).ok and w.state().holding == "coke#3"
    assert w.check("pick_up", ["coke"]).proposition == "already_holding"  # type: ignore[union-attr]
    w.execute("go_to", ["trash"])
    w.execute("put_down", ["coke"])
    assert judge("put_down", ["coke"], w.state())[0]
    w.execute("go_to", ["close counter"])
    assert w.execute("find", ["coke"]).ok  # not the ones in the trash
    assert w.state().robot_location == "table" and judge("find", ["coke"], w.state())[0]
    assert w.execute("pick_up", ["coke#2"]).ok and w.state().holding == "coke#2"


def test_scene_encoding_round_trips() -> None:
    w = world({"coke": "far counter", "7up": "top drawer", "apple": "table"}, "far counter", ("top drawer",))
    w.execute("pick_up", ["coke"])
    s = w.state()
    objs = to_scene_objects(s)
    assert state_from_scene(objs) == s
    by = {o.name: o for o in objs}
    assert by["coke"].category == "drink@robot" and by["top drawer"].category == "drawer@open"
    assert by["robot"].category == "location" and by["apple"].visible is False
    with pytest.raises(ValueError, match="no 'robot'"):
        state_from_scene([o for o in objs if o.name != "robot"])


@pytest.mark.parametrize("profile", ["saycan", "im_kitchen"])
def test_skill_texts_match_the_prompt_profiles(profile: str) -> None:
    spec = yaml.safe_load((REPO / "config" / "prompts" / f"{profile}.yaml").read_text())
    for name, tpl in spec["skills"].items():
        assert name in SKILLS, name
        assert SKILLS[name][1].replace("the {0}", "{0}") == tpl["template"].replace("the {0}", "{0}")
    assert skill_text("find", ["apple"]) == "find an apple"
    assert set(PROPOSITIONS) >= {"hand_full", "not_near", "inside_closed"}
