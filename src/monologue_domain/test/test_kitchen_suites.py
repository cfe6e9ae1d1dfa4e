"""Kitchen benchmark data (SC Appendix Table 5, IM Table 6), the predicate language, the reference
executor, and plan / execution success."""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from monologue_domain.kitchen import vocabulary as voc
from monologue_domain.kitchen.goals import PredicateError, SkillError, apply, evaluate, make_state, parse, run
from monologue_domain.kitchen.state import HELD, KitchenState
from monologue_domain.kitchen.suites import (
    Suite,
    SuiteError,
    example_plans,
    execution_success,
    judge_plan,
    load_suite,
    normalize,
    parse_suite,
    plan_success,
    suite_path,
    verify,
)

CONFIG = Path(__file__).resolve().parents[3] / "config"


@pytest.fixture(scope="module")
def saycan() -> Suite:
    return load_suite(suite_path(CONFIG, "saycan"))


@pytest.fixture(scope="module")
def im_kitchen() -> Suite:
    return load_suite(suite_path(CONFIG, "im_kitchen"))


def raw(name: str) -> dict[str, Any]:
    data = yaml.safe_load(suite_path(CONFIG, name).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def state(**kw: Any) -> KitchenState:
    places = {"coke": "table", "apple": "close counter", "sponge": "far counter"}
    places.update(kw.pop("places", {}))
    return make_state(kw.pop("robot", "initial position"), places, **kw)


# ----- data ----------------------------------------------------------------------------------------
def test_saycan_suite_has_the_101_instructions_in_sc_table_1_families(saycan: Suite) -> None:
    assert len(saycan.instructions) == 101
    assert [(f.key, f.count) for f in saycan.families] == [
        ("nl_single", 15), ("nl_nouns", 15), ("nl_verbs", 15), ("structured", 15), ("embodiment", 11),
        ("crowd_sourced", 15), ("long_horizon", 15)]
    for f in saycan.families:
        assert len(saycan.of_family(f.key)) == f.count
    texts = [i.text for i in saycan.instructions]
    # Verbatim, typos included (SC Appendix Table 5).
    assert "How would you pick up the jalepeno chips and move it to the trash" in texts
    assert "Please, move the ppsi(intentional typo) to the close cuonter" in texts
    assert "How would throw away all the items on the table?" in texts
    assert len(set(i.key for i in saycan.instructions)) == 101


def test_im_suite_has_the_8_table_6_instructions(im_kitchen: Suite) -> None:
    assert [(f.key, f.count) for f in im_kitchen.families] == [
        ("manipulation", 4), ("mobile_manipulation", 2), ("drawers", 2)]
    assert [i.text for i in im_kitchen.of_family("drawers")] == [
        "leave the top drawer open", "put a coke in the top drawer"]


@pytest.mark.parametrize("name", ["saycan", "im_kitchen"])
def test_every_acceptable_plan_reaches_its_goal(name: str) -> None:
    suite = load_suite(suite_path(CONFIG, name))
    problems = [p for i in suite.instructions for p in verify(i)]
    assert problems == []
    for instr in suite.instructions:
        assert not execution_success(instr, instr.start), instr.key  # no goal holds before acting
        plan = example_plans(instr)[0]
        states = run(plan, instr.start)
        assert execution_success(instr, states[-1], states[:-1]), instr.key


def test_embodiment_starts_from_intermediate_states(saycan: Suite) -> None:
    emb = saycan.of_family("embodiment")
    starts = {(i.start.robot_location, i.start.holding) for i in emb[:8]}
    assert starts == {("user", None), ("table", None), ("table", "coke"), ("far counter", "coke"),
                      ("far counter", None), ("far counter", "sponge"), ("close counter", "coke")}
    held = emb[3]
    assert held.start.object_locations["coke"] == HELD
    assert plan_success(held, ["put down the coke", "done"])
    assert not plan_success(emb[1], ["put down the coke", "done"])  # at the table, hand empty


# ----- one scripted perfect plan per family, and near misses ----------------------------------------
PERFECT = {
    "nl_single_01": ["pick up the coke", "done"],
    "nl_nouns_09": ["find an apple", "pick up the apple", "bring it to you", "put down the apple", "done"],
    "nl_verbs_01": ["find an apple", "pick up the apple", "go to the trash", "put down the apple", "done"],
    "structured_06": ["go to the table", "pick up the redbull", "go to the close counter",
                      "put down the redbull", "done"],
    "embodiment_08": ["put down the coke", "find a sponge", "pick up the sponge", "go to the close counter",
                      "put down the sponge", "done"],
    "crowd_sourced_06": ["go to the table", "go to the close counter", "go to the far counter", "done"],
    "long_horizon_11": ["find a pepsi", "pick up the pepsi", "bring it to you", "put down the pepsi",
                        "find a 7up", "pick up the 7up", "bring it to you", "done"],
}


@pytest.mark.parametrize("key", sorted(PERFECT))
def test_a_perfect_plan_per_family_succeeds(saycan: Suite, key: str) -> None:
    instr = saycan.by_key()[key]
    plan = PERFECT[key]
    assert judge_plan(instr, plan) == ""
    states = run(plan, instr.start)
    assert execution_success(instr, states[-1], states[:-1])


NEAR_MISSES = [
    ("nl_single_01", ["pick up the coke"], "does not end with done"),
    ("nl_single_01", ["pick up the pepsi", "done"], "not one of the acceptable plans"),
    ("nl_nouns_09", ["find an apple", "pick up the apple", "done"], "not one of the acceptable plans"),
    # Skipping the navigation is in the pattern but the robot is not at the apple: not executable.
    ("nl_nouns_09", ["pick up the apple", "bring it to you", "done"], "not executable"),
    ("nl_verbs_01", ["find an apple", "pick up the apple", "go to the table", "put down the apple", "done"],
     "not one of the acceptable plans"),
    ("embodiment_08", ["find a sponge", "pick up the sponge", "go to the close counter", "put down the sponge",
                       "done"], "not one of the acceptable plans"),
    ("crowd_sourced_06", ["go to the table", "go to the close counter", "done"], "not one of"),
    # Early termination after the first soda (SC's Long-Horizon failure mode).
    ("long_horizon_11", ["find a pepsi", "pick up the pepsi", "bring it to you", "done"], "not one of"),
    # SC Fig. 13a without handing the first can over: our robot has one hand.
    ("long_horizon_11", ["find a coke", "pick up the coke", "bring it to you", "find a pepsi",
                         "pick up the pepsi", "bring it to you", "done"], "not executable"),
    ("long_horizon_11", ["find a coke", "pick up the coke", "bring it to you", "put down the coke",
                         "find a coke", "pick up the coke", "bring it to you", "done"], "not one of"),
    ("nl_single_01", ["pick up the snickers", "done"], "unknown object"),
]


@pytest.mark.parametrize("key,plan,why", NEAR_MISSES)
def test_near_misses_fail(saycan: Suite, key: str, plan: list[str], why: str) -> None:
    instr = saycan.by_key()[key]
    assert why in judge_plan(instr, plan)
    assert not plan_success(instr, plan)


def test_execution_success_reads_the_final_state_only(saycan: Suite) -> None:
    instr = saycan.by_key()["nl_verbs_01"]  # throw away the apple
    start = instr.start
    done = KitchenState(start.robot_location, None, {**start.object_locations, "apple": "trash"})
    assert execution_success(instr, done)
    assert not execution_success(instr, start)
    # An unacceptable plan can still end in the goal state, and an acceptable one fail to execute.
    assert not plan_success(instr, ["done"]) and execution_success(instr, done)


def test_any_acceptable_object_and_order_is_accepted(saycan: Suite) -> None:
    snack = saycan.by_key()["nl_nouns_15"]  # bring me a snack
    for obj in voc.SNACKS:
        plan = [voc.skill_text(voc.FIND, obj), f"pick up the {obj}", "bring it to you", "done"]
        assert plan_success(snack, plan), obj
    assert not plan_success(snack, ["find a coke", "pick up the coke", "bring it to you", "done"])
    two = saycan.by_key()["long_horizon_01"]  # energy bar and water bottle on the table
    a = ["find an energy bar", "pick up the energy bar", "go to the table", "put down the energy bar"]
    b = ["go to the far counter", "pick up the water bottle", "go to the table", "put down the water bottle"]
    assert plan_success(two, a + b + ["done"]) and plan_success(two, b + a + ["done"])
    assert not plan_success(two, a[:2] + b + a[2:] + ["done"])  # interleaved: hand full


def test_drawer_plans(im_kitchen: Suite) -> None:
    put = im_kitchen.by_key()["drawers_02"]
    open_first = ["go to the drawers", "open the drawer", "find a coke", "pick up the coke",
                  "go to the drawers", "put coke in the drawer", "close the drawer", "done"]
    assert plan_success(put, open_first)
    states = run(open_first[:-1], put.start)
    assert execution_success(put, states[-1]) and "top drawer" not in states[-1].open_containers
    put_aside = ["find a coke", "pick up the coke", "go to the drawers", "put down the coke", "open the drawer",
                 "pick up the coke", "put coke in the drawer", "done"]
    assert plan_success(put, put_aside)
    # The drawer does not open with a full hand; a closed drawer takes nothing.
    assert "not one of" in judge_plan(put, ["find a coke", "pick up the coke", "go to the drawers",
                                            "open the drawer", "put coke in the drawer", "done"])
    assert "not one of" in judge_plan(put, ["find a coke", "pick up the coke", "go to the drawers",
                                            "put coke in the drawer", "done"])
    leave = im_kitchen.by_key()["drawers_01"]
    assert plan_success(leave, ["go to the drawers", "open the drawer", "done"])
    assert "not one of" in judge_plan(leave, ["open the drawer", "done"])  # not at the drawers


def test_collapse_repeats_accepts_im_retries(im_kitchen: Suite) -> None:
    instr = im_kitchen.by_key()["manipulation_01"]  # pick up a soda
    plan = ["find a coke", "pick up the coke", "pick up the coke", "done"]
    assert not plan_success(instr, plan)
    assert plan_success(instr, plan, collapse_repeats=True)


# ----- predicate language -------------------------------------------------------------------------
def test_predicates_evaluate_on_a_state() -> None:
    s = state(robot="user", holding="sponge", places={"coke#2": "trash", "pepsi": "user"},
              open_containers=["top drawer"])
    assert evaluate("at(coke, trash)", s) and evaluate("at(coke#2, trash)", s)
    assert not evaluate("at(coke#1, trash)", s)
    assert evaluate("holding(sponge)", s) and not evaluate("hand_empty()", s)
    assert evaluate("robot_at(user)", s) and evaluate("open(top drawer)", s)
    assert evaluate("delivered(sponge)", s) and evaluate("delivered(pepsi)", s)
    assert not evaluate("delivered(coke)", s)
    assert evaluate("not(at(apple, trash))", s)
    assert evaluate("all(at(coke, table), at(coke#2, trash))", s)
    assert not evaluate("in(coke, top drawer)", s)
    assert evaluate("any(at(apple, trash), holding(sponge))", s)
    assert evaluate("any_of_objects([@sodas], delivered(?))", s)
    assert evaluate("at_least(2, [pepsi, sponge, coke], delivered(?))", s)
    assert not evaluate("at_least(3, [pepsi, sponge, coke], delivered(?))", s)
    assert evaluate("n_at(1, coke, trash)", s) and not evaluate("n_at(2, coke, trash)", s)
    assert evaluate("visited(table)", s, [state(robot="table")]) and not evaluate("visited(table)", s)
    assert str(parse("at( grapefruit  soda ,far counter)")) == "at(grapefruit soda, far counter)"


@pytest.mark.parametrize("text,why", [
    ("at(snickers, table)", "unknown object"),
    ("at(coke, kitchen)", "unknown location"),
    ("holding(coke", "unclosed"),
    ("flying(coke)", "unknown predicate"),
    ("at(coke)", "takes 2"),
    ("holding(?)", "only inside"),
    ("any_of_objects([@drinks, @nope], holding(?))", "unknown category"),
    ("not(coke)", "not a predicate"),
    ("open(table)", "unknown container"),
    ("at_least(0, [coke], holding(?))", "positive count"),
    ("holding(coke) holding(apple)", "unexpected"),
])
def test_bad_predicates_are_rejected(text: str, why: str) -> None:
    with pytest.raises(PredicateError, match=why):
        parse(text)


# ----- reference executor -------------------------------------------------------------------------
def test_apply_follows_the_skill_preconditions() -> None:
    s = state()
    with pytest.raises(SkillError, match="no coke at the initial position"):
        apply("pick up the coke", s)
    s = apply("find a coke", s)
    assert s.robot_location == "table"
    s = apply("pick up the coke", s)
    assert s.holding == "coke" and s.object_locations["coke"] == HELD
    with pytest.raises(SkillError, match="not empty"):
        apply("pick up the coke", s)
    with pytest.raises(SkillError, match="does not hold"):
        apply("put down the apple", s)
    s = apply("bring it to you", s)
    assert (s.robot_location, s.holding) == ("user", "coke")
    s = apply("put down the coke", s)
    assert s.object_locations["coke"] == "user" and s.holding is None
    with pytest.raises(SkillError, match="not holding anything"):
        apply("bring it to you", s)
    with pytest.raises(SkillError, match="not at the drawers"):
        apply("open the drawer", s)
    s = apply("go to the drawers", s)
    with pytest.raises(SkillError, match="already closed"):
        apply("close the drawer", s)
    s = apply("open the drawer", s)
    assert s.open_containers == {"top drawer"}
    s = apply("pick up the sponge", apply("find a sponge", s))
    with pytest.raises(SkillError, match="not at the drawers"):
        apply("put sponge in the drawer", s)
    s = apply("put sponge in the drawer", apply("go to the drawers", s))
    assert s.object_locations["sponge"] == "top drawer" and s.holding is None
    s = apply("close the drawer", s)
    with pytest.raises(SkillError, match="inside a closed drawer"):
        apply("find a sponge", s)
    assert apply("done", s) == s
    with pytest.raises(ValueError, match="not in the vocabulary"):
        apply("dance", s)


def test_find_skips_instances_already_thrown_away() -> None:
    s = state(robot="trash", places={"coke": "trash", "coke#2": "far counter"})
    assert apply("find a coke", s).robot_location == "far counter"
    assert apply("find an apple", state(places={"apple": "trash"})).robot_location == "trash"  # the only one
    in_drawer = state(places={"apple": "top drawer"}, open_containers=["top drawer"])
    assert apply("find an apple", in_drawer).robot_location == "drawers"


def test_vocabulary_names_and_skills() -> None:
    assert len(voc.OBJECTS) == 15 and len(set(voc.OBJECTS)) == 15
    assert set(voc.PLACES) == {"close counter", "far counter", "table", "trash", "user", "initial position",
                               "drawers"}
    for cat in voc.CATEGORIES.values():
        assert set(cat) <= set(voc.OBJECTS)
    assert voc.skill_text(voc.FIND, "apple") == "find an apple"
    assert voc.skill_text(voc.GO_TO, "far counter") == "go to the far counter"
    assert normalize("Find a Apple.") == "find an apple"
    assert voc.object_type("coke#3") == "coke" and voc.is_object("coke#3") and not voc.is_object("snickers")


# ----- schema errors name the instruction -----------------------------------------------------------
def _broken(mutate: Any) -> dict[str, Any]:
    data = copy.deepcopy(raw("im_kitchen"))
    mutate(data["instructions"][5])  # "I spilled my coke, can you bring me something to clean it up"
    return data


@pytest.mark.parametrize("mutate,why", [
    (lambda e: e.update(goal="delivered(snickers)"), "unknown object 'snickers'"),
    (lambda e: e.update(goal="delivered(sponge"), "unclosed"),
    (lambda e: e.update(plans=[["find a sponge", "wave at the sponge"]]), "not in the vocabulary"),
    (lambda e: e.update(plans=[["go to the kitchen"]]), "unknown location 'kitchen'"),
    (lambda e: e.update(start={"robot": "garage"}), "unknown place 'garage'"),
    (lambda e: e.update(plans=[["go to the user"]]), "unknown location 'user'"),
    (lambda e: e.update(start={"place": {"snickers": "table"}}), "unknown object 'snickers'"),
    (lambda e: e.update(goal="at(sponge, close counter)"), "already holds"),
    (lambda e: e.update(plans=[[{"deliver": "{Y}"}]]), "unbound variable"),
    (lambda e: e.update(vars={"X": "@beers"}), "@category"),
    (lambda e: e.update(colour="red"), "unknown key"),
    (lambda e: e.update(plans=[[{"jump": "sponge"}]]), "unknown plan element"),
])
def test_bad_entries_name_the_instruction(mutate: Any, why: str) -> None:
    with pytest.raises(SuiteError) as err:
        parse_suite(_broken(mutate), "im_kitchen.yaml")
    msg = str(err.value)
    assert "I spilled my coke, can you bring me something to clean it up" in msg and why in msg


def test_family_counts_are_checked() -> None:
    data = raw("im_kitchen")
    data["instructions"].pop()
    with pytest.raises(SuiteError, match="family 'drawers' has 1 instructions, expected 2"):
        parse_suite(data, "im_kitchen.yaml")
    with pytest.raises(KeyError, match="unknown kitchen suite"):
        suite_path(CONFIG, "tabletop")


# ----- the reference executor agrees with the sim_kitchen world ----------------------------------------
WORLD_SKILLS = {voc.FIND: "find", voc.GO_TO: "go_to", voc.PICK: "pick_up", voc.PUT: "put_down",
                voc.BRING: "bring_to_user", voc.OPEN: "open_drawer", voc.CLOSE: "close_drawer",
                voc.PUT_IN: "put_in_drawer"}


def world_call(skill: str) -> tuple[str, tuple[str, ...]]:
    template, arg = voc.parse_skill(skill)
    args = {voc.BRING: (), voc.OPEN: ("top drawer",), voc.CLOSE: ("top drawer",),
            voc.PUT_IN: (arg, "top drawer")}.get(template, (arg,))
    return WORLD_SKILLS[template], args


@pytest.mark.parametrize("name", ["saycan", "im_kitchen"])
def test_example_plans_run_identically_in_the_kitchen_world(name: str) -> None:
    """Every example plan (single-instance objects) executes in kitchen.world.KitchenWorld without a
    precondition error and gives the same state as goals.apply after every skill."""
    from monologue_domain.kitchen.world import DRAWERS, LOCATIONS, NAV_TARGETS, OBJECTS, KitchenWorld

    assert set(OBJECTS) == set(voc.OBJECTS) and set(LOCATIONS) == set(voc.PLACES)
    assert set(NAV_TARGETS) == set(voc.NAV_TARGETS) and tuple(DRAWERS) == voc.CONTAINERS
    checked = 0
    for instr in load_suite(suite_path(CONFIG, name)).instructions:
        if any("#" in o for o in instr.start.object_locations):
            continue  # several cokes: the world names instances itself (see the report)
        for plan in example_plans(instr):
            world = KitchenWorld(instr.start)
            mine = instr.start
            for skill in plan[:-1]:  # without "done"
                outcome = world.execute(*world_call(skill))
                assert outcome.error.name == "NONE", (instr.key, plan, skill, outcome)
                mine = apply(skill, mine)
                got = world.state()
                assert (got.robot_location, got.holding, dict(got.object_locations), got.open_containers,
                        got.visited) == (mine.robot_location, mine.holding, dict(mine.object_locations),
                                         mine.open_containers, mine.visited), (instr.key, skill)
            checked += 1
    assert checked > 0
