"""Kitchen benchmark scoring and the SC Table 2 / IM Table 3 reports."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from monologue_domain.kitchen.goals import run
from monologue_domain.kitchen.suites import Instruction, Suite, example_plans, load_suite, suite_path
from monologue_eval.core import kitchen_report as report
from monologue_eval.core.benchmark import wilson
from monologue_eval.core.kitchen_report import (
    IM_VARIANTS,
    PAPER_IM_TABLE3,
    PAPER_SC_TABLE2,
    SAYCAN_VARIANTS,
    KitchenEpisode,
    chart_layout,
    failure_cause,
    score_episode,
)

CONFIG = Path(__file__).resolve().parents[3] / "config"


def perfect(suite: str, instr: Instruction, variant: str, condition: str = "none") -> KitchenEpisode:
    plan = example_plans(instr)[0]
    states = run(plan, instr.start)
    return score_episode(suite, instr, variant, condition, 0, plan, states[-1], states[:-1])


def stopped_early(suite: str, instr: Instruction, variant: str, condition: str = "none") -> KitchenEpisode:
    """The planner says done at once: a planning failure, nothing achieved."""
    return score_episode(suite, instr, variant, condition, 0, ["done"], instr.start)


def test_scoring_an_episode(saycan: Suite) -> None:
    instr = saycan.by_key()["nl_verbs_01"]  # throw away the apple
    ok = perfect("saycan", instr, "saycan")
    assert (ok.plan_success, ok.execution_success, ok.failure_cause) == (True, True, "")
    bad = stopped_early("saycan", instr, "saycan")
    assert (bad.plan_success, bad.execution_success, bad.failure_cause) == (False, False, "planning")
    assert "not one of the acceptable plans" in bad.plan_reason
    # The right plan, but the apple slipped out of the gripper: a control failure.
    plan = example_plans(instr)[0]
    dropped = score_episode("saycan", instr, "saycan", "none", 0, plan, instr.start)
    assert (dropped.plan_success, dropped.failure_cause) == (True, "control")
    assert failure_cause(True, False, detector_errors=1) == "success_detection"
    assert json.loads(json.dumps(ok.to_json()))["instruction"] == "nl_verbs_01"


def test_saycan_table_2_layout(saycan: Suite) -> None:
    # SayCan solves everything but the Long-Horizon family; No VF solves nothing.
    eps = [perfect("saycan", i, "saycan") if i.family != "long_horizon" else stopped_early("saycan", i, "saycan")
           for i in saycan.instructions]
    eps += [stopped_early("saycan", i, "no_vf") for i in saycan.instructions]
    variants = ["saycan", "no_vf"]
    cells = {(c.task, c.variant): c for c in report.saycan_cells(saycan, eps, variants)}
    assert (cells[("nl_single", "saycan/plan")].n, cells[("nl_single", "saycan/plan")].successes) == (15, 15)
    assert cells[("long_horizon", "saycan/execute")].successes == 0
    total = cells[("total", "saycan/plan")]
    assert (total.n, total.successes, total.paper) == (101, 86, 84)
    assert total.interval == wilson(86, 101)
    assert cells[("embodiment", "no_vf/plan")].paper == 18 and cells[("embodiment", "no_vf/execute")].paper is None
    md = report.report_markdown(saycan, eps, variants)
    lines = md.splitlines()
    header = next(line for line in lines if line.startswith("| Family"))
    assert "SayCan Plan (ours)" in header and "No VF Plan (ours)" in header
    row = next(line for line in lines if line.startswith("| Embodiment | 11 |"))
    assert "100% [74–100] 11/11" in row and "64.0%" in row and "18.0%" in row
    assert next(line for line in lines if line.startswith("| Total | 101 |"))
    assert set(PAPER_SC_TABLE2) == {f.key for f in saycan.families} | {"total"}
    data = report.results_json(saycan, eps, variants)
    assert len(data["cells"]) == 8 * 2 * 2 and len(data["episodes"]) == 202


def test_im_table_3_layout_with_failure_causes(im_kitchen: Suite) -> None:
    eps = []
    for cond in ("none", "disturbances"):
        for i in im_kitchen.instructions:
            eps.append(perfect("im_kitchen", i, "im_object_success", cond))
            # SayCan: the right plan, but a disturbance undid it (control failure) under disturbances.
            sc = perfect("im_kitchen", i, "saycan", cond)
            if cond == "disturbances":
                sc = replace(sc, execution_success=False, failure_cause="control")
            eps.append(sc)
    variants = ["saycan", "im_object_success"]
    cells = {(c.task, c.variant): c for c in report.im_cells(im_kitchen, eps, variants)}
    c = cells[("disturbances/manipulation", "saycan")]
    assert (c.n, c.successes, c.paper) == (4, 0, 12.5)
    c = cells[("all/total", "im_object_success")]
    assert (c.n, c.successes, c.paper) == (16, 16, 60.4)
    md = report.report_markdown(im_kitchen, eps, variants)
    row = next(line for line in md.splitlines() if line.startswith("| With Disturbances: Drawers"))
    assert "0% [0–66] 0/2" in row and "control 2" in row and "44.4%" in row
    fig4 = md.split("### Failure causes")[1]
    assert "| SayCan | With Disturbances | 8 | 0 | 0 | 8 | 0 |" in fig4
    assert set(IM_VARIANTS) == set(next(iter(PAPER_IM_TABLE3.values())))
    assert set(SAYCAN_VARIANTS) == {"saycan", "no_vf", "generative"}
    assert len(report.results_json(im_kitchen, eps, variants)["cells"]) == 7 * 2


@pytest.mark.parametrize("name,variants", [("saycan", ["saycan", "no_vf", "generative"]),
                                           ("im_kitchen", ["saycan", "im_success", "im_object_success"])])
def test_chart_is_written(tmp_path: Path, name: str, variants: list[str]) -> None:
    suite = load_suite(suite_path(CONFIG, name))
    eps = [perfect(name, i, variants[0]) for i in suite.instructions]
    cells = (report.saycan_cells(suite, eps, variants) if name == "saycan" else report.im_cells(suite, eps, variants))
    rows, cols = chart_layout(suite, variants)
    assert {c.task for c in cells} == {r for r, _ in rows} and {c.variant for c in cells} == {c for c, _ in cols}
    path = tmp_path / "chart.png"
    report.write_chart(path, cells, rows, cols, f"{name} test")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_visit_goals_are_scored_from_the_final_ground_truth(saycan: Suite) -> None:
    """SC crowd-sourced "visit all the locations": the planner's episode ends at the last place; the world's
    record of the visits travels in its ground truth and decides the goal without any history (scored on
    the final robot_location alone, as before, the episode failed)."""
    from monologue_domain.kitchen.scene import state_from_scene, to_scene_objects
    from monologue_domain.kitchen.world import KitchenWorld

    instr = saycan.by_key()["crowd_sourced_06"]
    plan = ["go to the close counter", "go to the far counter", "go to the table", "done"]
    world = KitchenWorld(instr.start)
    for step in plan[:-1]:
        assert world.execute("go_to", [step.removeprefix("go to the ")]).ok
    final = state_from_scene(to_scene_objects(world.state()))  # what monologue-bench reads after the episode
    ep = score_episode("saycan", instr, "saycan", "none", 0, plan, final)
    assert (ep.plan_success, ep.execution_success, ep.failure_cause) == (True, True, "")
    assert ep.visited == ["close counter", "far counter", "initial position", "table"]
    assert json.loads(json.dumps(ep.to_json()))["visited"] == ep.visited
    # the same final place without the record: only robot_at(table) holds, the goal does not
    old = score_episode("saycan", instr, "saycan", "none", 0, plan, replace(final, visited=frozenset()))
    assert (old.execution_success, old.failure_cause) == (False, "control")
    # a planner that went to two of the three places fails, wherever it ends
    world = KitchenWorld(instr.start)
    world.execute("go_to", ["close counter"])
    world.execute("go_to", ["table"])
    short = score_episode("saycan", instr, "saycan", "none", 0, ["go to the close counter", "go to the table",
                                                                  "done"], world.state())
    assert not short.execution_success and not short.plan_success
