"""`monologue-bench --suite saycan | im_kitchen`: variants as goal options, the skills node's start-state
parameters, the episode plan, scoring from a recorded transcript, the resumable store and the report."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from monologue_domain.kitchen.goals import run
from monologue_domain.kitchen.suites import Suite, example_plans
from monologue_domain.kitchen.world import KitchenWorld, make_state, parse_placements
from monologue_eval.bench import parse_args
from monologue_eval.core import kitchen_bench as kb
from monologue_eval.core.benchmark import SettingsMismatch
from monologue_eval.core.kitchen_bench import (
    DISTURBANCE_RATES,
    IM_SUITE_VARIANTS,
    SAYCAN_SUITE_VARIANTS,
    KitchenKey,
    KitchenRecord,
    KitchenSettings,
    KitchenStore,
    goal_options,
    skills_parameters,
    suite_conditions,
    transcript_events,
)
from monologue_eval.core.kitchen_report import IM_VARIANTS, SAYCAN_VARIANTS, score_episode
from monologue_eval.suites._kitchen import write_kitchen_report

CONFIG = Path(__file__).resolve().parents[3] / "config"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
ON, OFF = 1, 2  # ExecuteInstruction.Goal.OPTION_ON / OPTION_OFF


def test_variants_are_the_report_columns_and_map_to_planner_settings() -> None:
    assert list(SAYCAN_SUITE_VARIANTS) == list(SAYCAN_VARIANTS)
    assert list(IM_SUITE_VARIANTS) == list(IM_VARIANTS)
    saycan = goal_options(SAYCAN_SUITE_VARIANTS["saycan"], 15)
    assert saycan == {"strategy": "saycan", "prompt_profile": "saycan", "object_feedback": OFF,
                      "success_feedback": OFF, "scene_feedback": OFF, "human_feedback": OFF,
                      "use_affordances": ON, "max_steps": 15}
    no_vf = goal_options(SAYCAN_SUITE_VARIANTS["no_vf"], 15)
    assert no_vf == {**saycan, "use_affordances": OFF}
    gen = goal_options(SAYCAN_SUITE_VARIANTS["generative"], 15)
    assert gen["strategy"] == "inner_monologue_generative" and gen["prompt_profile"] == "saycan"
    assert goal_options(IM_SUITE_VARIANTS["saycan"], 15) == saycan
    im_s = goal_options(IM_SUITE_VARIANTS["im_success"], 8)
    assert (im_s["strategy"], im_s["prompt_profile"], im_s["success_feedback"], im_s["object_feedback"],
            im_s["max_steps"]) == ("inner_monologue", "im_kitchen", ON, OFF, 8)
    im_os = goal_options(IM_SUITE_VARIANTS["im_object_success"], 8)
    assert (im_os["success_feedback"], im_os["object_feedback"], im_os["scene_feedback"]) == (ON, ON, OFF)


def test_start_parameters_rebuild_every_start_state_in_the_world(saycan: Suite, im_kitchen: Suite) -> None:
    for instr in saycan.instructions + im_kitchen.instructions:
        p = skills_parameters(instr, "none", 5)
        placements = parse_placements(yaml.safe_load(p["kitchen.objects"]))
        opened = [d for d in yaml.safe_load(p["kitchen.open_drawers"]) if d]
        start = make_state(placements, p["kitchen.robot_location"], opened)
        assert start == instr.start, instr.key
        world = KitchenWorld.from_state(start, seed=int(p["kitchen.seed"]))
        assert world.state() == instr.start, instr.key
        assert all(float(p[f"kitchen.{k}"]) == 0.0 for k in DISTURBANCE_RATES)
    held = next(i for i in saycan.instructions if i.start.holding is not None)  # Embodiment: intermediate
    assert f"'{held.start.holding}@robot'" in skills_parameters(held, "none", 0)["kitchen.objects"]


def test_disturbances_set_the_documented_rates(im_kitchen: Suite) -> None:
    instr = im_kitchen.instructions[0]
    p = skills_parameters(instr, "disturbances", 3)
    assert {k: float(p[f"kitchen.{k}"]) for k in DISTURBANCE_RATES} == DISTURBANCE_RATES
    assert any(v > 0 for v in DISTURBANCE_RATES.values())
    with pytest.raises(ValueError, match="unknown condition"):
        skills_parameters(instr, "windy", 3)


def test_instruction_subsets_and_the_episode_plan(saycan: Suite) -> None:
    two = kb.select_instructions(saycan, None, 2)
    assert len(two) == 2 * len(saycan.families)
    assert [i.key for i in two[:2]] == ["nl_single_01", "nl_single_02"]
    assert [i.family for i in kb.select_instructions(saycan, ["long_horizon", "nl_verbs"], None)] == (
        ["nl_verbs"] * 15 + ["long_horizon"] * 15)  # suite order
    assert len(kb.select_instructions(saycan)) == 101
    with pytest.raises(ValueError, match="unknown families"):
        kb.select_instructions(saycan, ["cooking"], None)
    plan = kb.plan_kitchen(two[:2], ["saycan", "no_vf"], suite_conditions("saycan"), 2)
    assert len(plan) == 8 and len(set(plan)) == 8
    assert plan[0] == KitchenKey("nl_single_01", "saycan", "none", 0)
    assert suite_conditions("im_kitchen") == ("none", "disturbances")
    # the world's seed: the same for every variant, different per repetition and instruction
    a, b = KitchenKey("x", "saycan", "none", 0), KitchenKey("x", "no_vf", "none", 0)
    assert kb.kitchen_seed(0, a) == kb.kitchen_seed(0, b) != kb.kitchen_seed(0, KitchenKey("x", "saycan", "none", 1))
    assert kb.kitchen_seed(0, a) != kb.kitchen_seed(1, a)


def test_scoring_from_a_recorded_transcript(saycan: Suite) -> None:
    """A SayCan episode recorded with the embedded model (step cap 4): it never chose done."""
    instr = saycan.by_key()["nl_single_01"]
    events = transcript_events(FIXTURES / "kitchen_saycan_transcript.jsonl")
    skills = kb.chosen_skills(events)
    assert skills == ["pick up the coke", "put down the coke", "go to the trash", "go to the table"]
    final = run(skills, instr.start)[-1]
    ep = score_episode("saycan", instr, "saycan", "none", 0, skills, final)
    assert (ep.plan_success, ep.execution_success) == (False, False)
    assert ep.plan_reason == "the plan does not end with done" and ep.failure_cause == "planning"


def test_an_acceptable_plan_that_ends_with_done_scores_as_success(saycan: Suite) -> None:
    instr = saycan.by_key()["nl_single_01"]
    plan = example_plans(instr)[0]
    events: list[tuple[str, str, dict[str, object]]] = [("HUMAN_INSTRUCTION", f"Human: {instr.text}", {})]
    events += [("ROBOT_ACTION", s, {"skill": "x"}) for s in plan if s != "done"]
    events += [("ROBOT_THOUGHT", "done.", {"done": True}), ("ROBOT_THOUGHT", "STOP", {"marker": True})]
    skills = kb.chosen_skills(events)
    assert skills[-1] == "done" and skills.count("done") == 1
    final = run([s for s in skills if s != "done"], instr.start)[-1]
    ep = score_episode("saycan", instr, "saycan", "none", 0, skills, final)
    assert ep.plan_success and ep.execution_success and ep.failure_cause == ""


def _record(instr_key: str, family: str, ok: bool, index: int = 0) -> KitchenRecord:
    from monologue_eval.core.kitchen_report import KitchenEpisode

    ep = KitchenEpisode("saycan", instr_key, family, "saycan", "none", index, ok, ok, "" if ok else "planning",
                        "" if ok else "not one of the acceptable plans", ["pick up the coke", "done"])
    return KitchenRecord(ep, 7, "pick up the coke", 1, ok, "NONE", "", "t.jsonl", 3.0, 1.0,
                         {"robot": "table", "holding": "coke", "objects": {}, "open": []}, 1.0)


def test_store_resumes_and_refuses_other_settings(tmp_path: Path) -> None:
    settings = KitchenSettings("saycan", "embedded", 0, 15)
    store = KitchenStore(tmp_path)
    assert store.open(settings) is False
    store.append(_record("nl_single_01", "nl_single", False))
    store.append(_record("nl_single_02", "nl_single", True))
    store.append(_record("nl_single_01", "nl_single", True))  # a later line replaces the earlier one
    with open(tmp_path / "episodes.jsonl", "a", encoding="utf-8") as f:
        f.write('{"episode": {"suite": "sa')  # a line cut by a crash
    again = KitchenStore(tmp_path)
    assert again.open(settings) is True
    loaded = again.load()
    assert [(r.key.instruction, r.episode.execution_success) for r in loaded] == [
        ("nl_single_01", True), ("nl_single_02", True)]
    assert loaded[0].final_state["holding"] == "coke"
    with pytest.raises(SettingsMismatch, match="max_steps"):
        KitchenStore(tmp_path).open(KitchenSettings("saycan", "embedded", 0, 4))
    with pytest.raises(ValueError, match="suite"):
        KitchenSettings("table1", "embedded", 0, 4).validate()


def test_report_files(saycan: Suite, tmp_path: Path) -> None:
    records = [_record("nl_single_01", "nl_single", True), _record("nl_single_02", "nl_single", False)]
    settings = KitchenSettings("saycan", "embedded", 0, 15)
    write_kitchen_report(tmp_path, saycan, records, ["saycan"], settings)
    table = (tmp_path / "table.md").read_text()
    assert "| NL Single | 15 | 50% [9–91] 1/2 | 100.0% | 50% [9–91] 1/2 | 100.0% |" in table, table
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["settings"] == {"suite": "saycan", "llm": "embedded", "seed": 0, "max_steps": 15}
    assert len(data["records"]) == 2 and data["records"][0]["seed"] == 7
    assert (tmp_path / "chart.png").read_bytes()[:4] == b"\x89PNG"


def test_cli_suite_and_subset_arguments() -> None:
    ns = parse_args([])
    assert ns.suite == "table1" and ns.families == "all" and ns.instructions is None
    ns = parse_args(["--suite", "im_kitchen", "--instructions", "2", "--families", "drawers",
                     "--conditions", "disturbances", "--variants", "im_success"])
    assert (ns.suite, ns.instructions, ns.families, ns.conditions) == ("im_kitchen", 2, "drawers", "disturbances")
    with pytest.raises(SystemExit):
        parse_args(["--suite", "cooking"])


def test_planner_parameters_for_the_expert_error_rate() -> None:
    """`--param planner:llm.expert.error_rate=0.2` reaches the planner (p = 0.2 recovery runs); other nodes
    and the parameters the bench sets itself are refused."""
    from monologue_eval.core.kitchen_bench import KitchenSettings, planner_params

    assert planner_params("planner:llm.expert.error_rate=0.2") == {"llm.expert.error_rate": "0.2"}
    assert planner_params("") == {}
    with pytest.raises(ValueError, match="planner parameters only"):
        planner_params("skills:kitchen.seed=3")
    with pytest.raises(ValueError, match="bench sets it"):
        KitchenSettings("saycan", "expert", 0, 15, "planner:llm.expert.truth_dir=x").validate()
