"""`monologue-bench --suite cape` without a graph: the household's reference planner and task generator,
the suite file, the CAPE household demonstration file, the metrics (LCS, %GS, %Aff, %Exec, corrections,
resolved errors) from transcript events, the store and the report."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from monologue_domain.kitchen import household as hh
from monologue_domain.kitchen.household import (
    HOUSEHOLD_SKILLS,
    SCENES,
    HouseholdWorld,
    NoReferencePlan,
    generate_tasks,
    goal_holds,
    household_text,
    parse_atom,
    start_with,
)
from monologue_domain.kitchen.state import HELD
from monologue_eval.core import cape_bench as cb
from monologue_eval.core.cape_bench import (
    CAPE_VARIANTS,
    PAPER_TABLES,
    AttemptRec,
    CapeEpisode,
    CapeKey,
    CapeRecord,
    CapeSettings,
    CapeStore,
    attempts_from_events,
    corrections_of,
    errors_of,
    goal_options,
    gs_counts,
    lcs_length,
    lcs_percent,
    load_cape_suite,
    plan_cape,
    plan_of,
    planner_parameters,
    score_episode,
    skills_parameters,
    state_json,
)
from monologue_eval.core.cape_report import errors_table, report_markdown, results_json, summary, write_chart


@pytest.fixture(scope="module")
def suite(config_dir: Path) -> Any:
    return load_cape_suite(config_dir)


def household_prompt(config_dir: Path) -> Any:
    """config/prompts/cape_household.yaml, parsed."""
    return yaml.safe_load((config_dir / "prompts" / "cape_household.yaml").read_text())


# ---- reference planner and generator ---------------------------------------------------------------
def test_reference_program_reaches_the_goal_without_a_precondition_error() -> None:
    scene, start = SCENES["kitchen"]()
    goal = [parse_atom("at(shoes, couch)"), parse_atom("held(water bottle)")]
    prog = hh.reference_program(scene, start, goal)
    assert [household_text(s, a) for s, a in prog] == [
        "stand up", "walk to the shoes", "pick up the shoes", "walk to the couch", "put the shoes on the couch",
        "walk to the kitchen door", "open the kitchen door", "walk to the fridge", "open the fridge",
        "pick up the water bottle"]
    w = HouseholdWorld(scene, start)
    for skill, args in prog:
        assert w.check(skill, args) is None, (skill, args)
        w.execute(skill, args)
    assert goal_holds(w.state(), goal) and not goal_holds(start, goal)


def test_reference_program_frees_the_hand_and_fails_loudly_when_impossible() -> None:
    scene, start = SCENES["lab"]()
    begin = start_with(start, held="mail", standing=True)
    prog = hh.reference_program(scene, begin, [("at", "milk", "fridge")])
    assert prog[0] == ("drop", ("mail",))  # the one arm must be free to open the fridge
    assert goal_holds(hh.run_program(scene, begin, prog), [("at", "milk", "fridge")])
    with pytest.raises(NoReferencePlan):
        hh.reference_program(scene, start, [("at", "phone", "desk"), ("held", "phone"), ("at", "mail", "shelf")])
    with pytest.raises(ValueError, match="goal atom"):
        parse_atom("at(phone)")


def test_generated_tasks_are_deterministic_unique_executable_and_exclude_given_texts() -> None:
    a = generate_tasks(["lab", "kitchen"], 12, seed=4)
    assert a == generate_tasks(["lab", "kitchen"], 12, seed=4) != generate_tasks(["lab", "kitchen"], 12, seed=5)
    assert len(a) == 24 and len({t.text.lower() for t in a if t.scene == "lab"}) == 12
    kinds = {t.text.split(" the ")[0] for t in a}
    assert {"Bring me", "Put", "Turn on"} <= kinds
    assert any(t.held for t in a) and all(t.standing == bool(t.held) for t in a)
    for t in a:
        scene, start = SCENES[t.scene]()
        begin = start_with(start, t.held, t.standing)
        assert not goal_holds(begin, t.goal)
        assert goal_holds(hh.run_program(scene, begin, hh.reference_program(scene, begin, t.goal)), t.goal), t
    banned = generate_tasks(["lab"], 12, seed=4, exclude=[a[0].text])
    assert a[0].text not in {t.text for t in banned}


# ---- the suite and the demonstration file ---------------------------------------------------------
def test_suite_has_the_papers_12_plans_and_generated_tasks_disjoint_from_the_demonstrations(
        suite: Any, config_dir: Path) -> None:
    paper = suite.of_source("paper")
    assert len(paper) == 12 and {t.scene for t in paper} == {"lab", "kitchen"}
    assert {t.text for t in paper} == {"Prepare for a run on a warm day", "Put the phone on the nightstand",
                                       "Iron a shirt", "Put mail in storage", "Organize pantry", "Put away groceries"}
    gen = suite.of_source("generated")
    assert len(gen) == 40
    raw = household_prompt(config_dir)
    demo_tasks = {d["task"].lower() for d in raw["demonstrations"] + raw["corrections"]}
    assert not demo_tasks & {t.text.lower() for t in suite.tasks}
    for t in suite.tasks:  # every ground-truth program reaches its goal
        assert t.reference and goal_holds(t.reference_final(), t.goal), t.key
    assert [t.key for t in cb.select_tasks(suite, ["paper"], 2)] == ["paper_run_lab", "paper_run_kitchen"]
    with pytest.raises(ValueError, match="task sets"):
        cb.select_tasks(suite, ["nope"])


def test_cape_household_demonstrations_execute_and_corrections_fail_as_stated(config_dir: Path) -> None:
    raw = household_prompt(config_dir)
    assert raw["skills"] == {k: t for k, (_, t) in HOUSEHOLD_SKILLS.items()}
    scene, start = SCENES["home"]()
    texts = {household_text(s, a): (s, a) for s, a in HouseholdWorld(scene, start).instances()}
    for demo in raw["demonstrations"]:
        w = HouseholdWorld(scene, start)
        assert demo["steps"][-1] == raw["done"]
        for step in demo["steps"][:-1]:
            out = w.execute(*texts[step])
            assert out.ok, (demo["task"], step, out.message)
    assert len(raw["corrections"]) >= 3
    for ex in raw["corrections"]:
        w = HouseholdWorld(scene, start)
        for step in ex["steps"]:
            assert w.execute(*texts[step]).ok, (ex["task"], step)
        err = w.check(*texts[ex["failed"]])
        assert err is not None and err.reason == ex["reason"], (ex["task"], err)
        assert ex["correction"] in texts or ex["correction"] == raw["done"]


# ---- variants and parameters ----------------------------------------------------------------------
def test_variants_map_to_planner_parameters_goal_options_and_world_parameters(suite: Any) -> None:
    assert set(PAPER_TABLES["paper"]) == set(CAPE_VARIANTS) == set(PAPER_TABLES["generated"])
    assert planner_parameters(CAPE_VARIANTS["F_E+S_g"], "cape_household") == {
        "strategy": "cape", "cape.method": "F_E+S_g", "cape.demonstrations": "cape_household"}
    assert planner_parameters(CAPE_VARIANTS["saycan_noisy"], "x") == {"strategy": "saycan"}
    assert goal_options(CAPE_VARIANTS["saycan_perfect"], "household", 9)["use_affordances"] == 1
    assert goal_options(CAPE_VARIANTS["Z_E"], "household", 9)["use_affordances"] == 2
    task = next(t for t in suite.tasks if t.held)
    p = skills_parameters(task, CAPE_VARIANTS["saycan_noisy"], 5, 0.06)
    assert p["household.objects"] == f"['{task.held}@{HELD}']" and p["household.sitting"] == "false"
    assert (p["household.affordances"], p["household.affordance_flip"], p["household.scene"]) == (
        "noisy", "0.06", task.scene)
    plan = plan_cape(cb.select_tasks(suite, ["paper"], 2), ["Z_E", "huang"], 1)
    assert [k.variant for k in plan] == ["Z_E", "Z_E", "huang", "huang"]  # one planner start per variant
    with pytest.raises(ValueError, match="unknown variants"):
        plan_cape([], ["Z_X"], 1)


# ---- metrics --------------------------------------------------------------------------------------
def test_lcs() -> None:
    assert lcs_length(list("ABCBDAB"), list("BDCABA")) == 4
    assert lcs_length([], ["a"]) == 0
    assert lcs_percent(["a", "b", "c"], ["a", "c"]) == pytest.approx(100 * 2 / 3)
    assert lcs_percent([], []) == 0.0


def _ev(kind: str, text: str = "", **data: Any) -> tuple[str, str, dict[str, Any]]:
    return (kind, text, data)


def _act(step: int, skill: str, *args: str, **extra: Any) -> tuple[str, str, dict[str, Any]]:
    return _ev("ROBOT_ACTION", f"Step {step}: {household_text(skill, args)}", skill=skill, args=list(args), step=step,
               **extra)


def _err(prop: str, reason: str) -> tuple[str, str, dict[str, Any]]:
    return _ev("ERROR", "Precondition error", error_name="PRECONDITION_FAILED", proposition=prop,
               failed_precondition=f"{prop}: I cannot x because {reason}")


# A CAPE transcript: step 1 fails (sitting, D1) and is corrected; step 2 fails twice (hand_full D4, then
# not_near D3) and the plan ends unresolved.
CAPE_EVENTS = [
    _ev("HUMAN_INSTRUCTION", "Task: Put the phone on the nightstand"),
    _act(1, "walk_to", "desk"), _err("sitting", "I am sitting"),
    _ev("ROBOT_THOUGHT", "Error: ... A correct step would be to", corrective_prompt=True),
    _act(1, "stand_up", correction=1),
    _act(2, "walk_to", "desk"),
    _act(3, "pick_up", "mail"),
    _act(4, "pick_up", "phone"), _err("hand_full", "I am already holding the mail"),
    _act(4, "walk_to", "phone", correction=1), _err("not_near", "..."),
    _ev("ERROR", "Gave up on step 4 after 1 corrections", step=4, corrections=1),
]


def test_attempts_plan_corrections_and_resolved_errors_from_a_cape_transcript() -> None:
    attempts = attempts_from_events(CAPE_EVENTS)
    assert [(a.step, a.skill, a.ok) for a in attempts] == [
        (1, "walk_to", False), (1, "stand_up", True), (2, "walk_to", True), (3, "pick_up", True),
        (4, "pick_up", False), (4, "walk_to", False)]
    assert attempts[0].proposition == "sitting" and attempts[0].difficulty == 1
    assert (attempts[4].proposition, attempts[4].difficulty) == ("hand_full", 4)
    assert [a.skill for a in plan_of(attempts)] == ["stand_up", "walk_to", "pick_up", "walk_to"]
    assert corrections_of(attempts) == 2
    errs = errors_of(attempts)
    assert [(e.proposition, e.difficulty, e.resolved) for e in errs] == [
        ("sitting", 1, True), ("hand_full", 4, False), ("not_near", 3, False)]


def test_open_loop_and_saycan_transcripts() -> None:
    # Huang: the failed step stays in the plan, the plan moves on: not resolved, not executable
    huang = [_act(1, "walk_to", "desk"), _err("sitting", "I am sitting"), _act(2, "stand_up")]
    a = attempts_from_events(huang)
    assert [x.ok for x in plan_of(a)] == [False, True] and corrections_of(a) == 0
    assert [e.resolved for e in errors_of(a)] == [False]
    # SayCan: actions carry `step`; a skill error (no proposition) fails the attempt but is no precondition error
    saycan = [_act(1, "stand_up"), _act(2, "walk_to", "desk"),
              _ev("ERROR", "Skill error EXECUTION_FAILED: x", error_name="EXECUTION_FAILED", failed_precondition=""),
              _ev("ROBOT_THOUGHT", "done.", done=True)]
    b = attempts_from_events(saycan)
    assert [x.ok for x in b] == [True, False] and errors_of(b) == []


def test_score_episode_exec_aff_lcs_gs_and_goal(suite: Any) -> None:
    task = suite.by_key()["paper_phone_lab"]
    ref = task.reference
    perfect = [AttemptRec(i + 1, s, a, household_text(s, a), True) for i, (s, a) in enumerate(ref)]
    ep = score_episode(task, "Z_E", 0, perfect, task.reference_final())
    assert ep.executable and ep.goal and ep.lcs == 100.0 and ep.gs_match == ep.gs_total and ep.aff == 1.0
    # the plan stops after walking to the desk; the second step failed once and was corrected
    partial = [perfect[0], AttemptRec(2, "pick_up", ("phone",), "", False, "not_near", 3), perfect[1]]
    start = task.start()
    final = hh.run_program(SCENES["lab"]()[0], start, [(a.skill, a.args) for a in partial if a.ok])
    ep2 = score_episode(task, "Z_E", 0, partial, final)
    assert ep2.executable and not ep2.goal and ep2.corrections == 1
    assert ep2.lcs == pytest.approx(100 * 2 / len(ref))
    m, n = gs_counts(final, task.reference_final())
    assert (ep2.gs_match, ep2.gs_total) == (m, n) and 0 < m < n
    assert n - m == 2  # where the phone is and where the robot is
    bad = [perfect[0], AttemptRec(2, "pick_up", ("phone",), "", False, "not_near", 3)]
    ep3 = score_episode(task, "huang", 0, bad, final)
    assert not ep3.executable and ep3.afforded_steps == 1 and ep3.plan_steps == 2


def _episode(variant: str, executable: bool, aff: tuple[int, int], goal: bool,
             errors: list[dict[str, Any]] | None = None, source: str = "paper") -> CapeEpisode:
    return CapeEpisode("t", source, "lab", variant, 0, executable, aff[1], aff[0], 1, 50.0, 9, 10, goal,
                       errors or [])


def test_summary_rates_and_report_layout() -> None:
    eps = [_episode("Z_E", True, (4, 4), True, [{"step": 1, "proposition": "sitting", "difficulty": 1,
                                                 "resolved": True}]),
           _episode("Z_E", False, (1, 4), False, [{"step": 2, "proposition": "hand_full", "difficulty": 4,
                                                   "resolved": False}]),
           _episode("huang", False, (3, 4), False),
           _episode("Z_E", True, (2, 2), True, source="generated")]
    s = summary([e for e in eps if e.variant == "Z_E" and e.source == "paper"])
    assert s["exec"]["successes"] == 1 and s["exec"]["n"] == 2
    assert (s["aff"]["successes"], s["aff"]["n"]) == (1, 4)  # steps of the non-executable plans only
    assert s["gs"]["n"] == 20 and s["steps"] == 4 and s["corrections"] == 1
    lo, hi = s["exec"]["wilson95"]
    assert lo < 0.5 < hi
    md = report_markdown(eps, ["huang", "Z_E"], "settings line")
    assert "CAPE Table II" in md and "CAPE Table I " in md and "not reproducible" in md
    row = next(line for line in md.splitlines() if line.startswith("| Explicit Cause (Z_E) | 2 |"))
    assert "| 31.67 |" in row and "50.0 [9–91] 1/2" in row and "| 100.00 |" in row
    assert "| Huang et al. [3] | 1 | 16.67 |" in md and "| *Baselines* |" in md
    table = errors_table(eps, ["Z_E"])
    assert "| Explicit Cause (Z_E) | resolved | 100% (1) | 0% (0) | 0% (0) | 0% (0) | 1 |" in table
    assert "| Explicit Cause (Z_E) | unresolved | 0% (0) | 0% (0) | 0% (0) | 100% (1) | 1 |" in table
    data = results_json(eps, ["huang", "Z_E"])
    assert data["summary"]["paper/Z_E"]["errors_by_difficulty"]["resolved"]["1"] == {"count": 1, "types": ["sitting"]}


def test_store_resumes_rescores_and_the_chart_is_written(suite: Any, tmp_path: Path) -> None:
    task = suite.by_key()["paper_phone_kitchen"]
    attempts = attempts_from_events(CAPE_EVENTS[:6])
    final = hh.run_program(SCENES["kitchen"]()[0], task.start(), [])
    ep = score_episode(task, "Z_E", 0, attempts, final)
    rec = CapeRecord(ep, task.text, [{**a.__dict__, "args": list(a.args)} for a in attempts], state_json(final), 3,
                     False, "NONE", "", "/tmp/t.jsonl", 1, 2.0, 1.0)
    store = CapeStore(tmp_path)
    settings = CapeSettings("cape", "embedded", 0, 15)
    assert store.open(settings) is False
    store.append(rec)
    with open(store.episodes_file, "a") as f:
        f.write('{"truncated": \n')
    assert store.open(settings) is True
    [back] = store.load()
    assert back.key == CapeKey("Z_E", task.key, 0) and back.episode == ep
    assert cb.rescore(back, task).episode == ep
    with pytest.raises(Exception, match="other settings"):
        store.open(CapeSettings("cape", "embedded", 1, 15))
    write_chart(tmp_path / "c.png", [ep], ["Z_E"], "t")
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads(json.dumps(results_json([ep], ["Z_E"])))["summary"]["paper/Z_E"]["episodes"] == 1
