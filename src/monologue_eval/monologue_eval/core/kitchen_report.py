"""Kitchen benchmark scoring and reports (no rclpy): plan and execution success and a failure cause per
episode, SC Table 2's layout for the `saycan` suite and IM Table 3's for `im_kitchen`, results JSON.

An episode is scored from what the bench records: the skills the planner chose (ending with "done" when it
terminated), the world's final KitchenState, and how often the success detector's report disagreed with the
ground truth. "visit" goals (`visited(L)`) are checked over the episode: the world records every place the
robot was at in the state it publishes (KitchenState.visited, kept through sim/ground_truth), so the final
state alone decides them; earlier states (`history`), if a caller has them, count too. The episode keeps
the places visited for the results JSON. The suites and their data live in
monologue_domain.kitchen.suites.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from monologue_domain.kitchen.state import KitchenState
from monologue_domain.kitchen.suites import Instruction, Suite, execution_success, judge_plan

from .benchmark import Cell
from .report import cell_text, paper_text

PLAN, EXECUTE = "plan", "execute"
CONDITIONS: dict[str, str] = {"none": "No Disturbances", "disturbances": "With Disturbances"}

# Planner variants of each suite: key -> column label (SC Table 2 / IM Table 3).
SAYCAN_VARIANTS: dict[str, str] = {"saycan": "SayCan", "no_vf": "No VF", "generative": "Gen."}
IM_VARIANTS: dict[str, str] = {"saycan": "SayCan", "im_success": "IM: Success",
                               "im_object_success": "IM: Object + Success"}

# Failure causes, IM §5 (the legend of IM Fig. 4 is not in the text): "(1) success detections, (2) LLM
# planning errors, and (3) control errors".
FAILURE_CAUSES: dict[str, str] = {"planning": "LLM planning", "control": "control",
                                  "success_detection": "success detection"}

# SC Table 2, verbatim (%). SayCan columns: the mock kitchen (the environment our world mirrors); the
# real kitchen's are kept as "kitchen_*". No VF and Gen. have plan rates only.
PAPER_SC_TABLE2: dict[str, dict[str, float]] = {
    "nl_single": {"saycan/plan": 100, "saycan/execute": 100, "kitchen/plan": 93, "kitchen/execute": 87,
                  "no_vf/plan": 73, "generative/plan": 87},
    "nl_nouns": {"saycan/plan": 67, "saycan/execute": 47, "kitchen/plan": 60, "kitchen/execute": 40,
                 "no_vf/plan": 53, "generative/plan": 53},
    "nl_verbs": {"saycan/plan": 100, "saycan/execute": 93, "kitchen/plan": 93, "kitchen/execute": 73,
                 "no_vf/plan": 87, "generative/plan": 93},
    "structured": {"saycan/plan": 93, "saycan/execute": 87, "kitchen/plan": 93, "kitchen/execute": 47,
                   "no_vf/plan": 93, "generative/plan": 100},
    "embodiment": {"saycan/plan": 64, "saycan/execute": 55, "kitchen/plan": 64, "kitchen/execute": 55,
                   "no_vf/plan": 18, "generative/plan": 36},
    "crowd_sourced": {"saycan/plan": 87, "saycan/execute": 87, "kitchen/plan": 73, "kitchen/execute": 60,
                      "no_vf/plan": 67, "generative/plan": 80},
    "long_horizon": {"saycan/plan": 73, "saycan/execute": 47, "kitchen/plan": 73, "kitchen/execute": 47,
                     "no_vf/plan": 67, "generative/plan": 60},
    "total": {"saycan/plan": 84, "saycan/execute": 74, "kitchen/plan": 81, "kitchen/execute": 60,
              "no_vf/plan": 67, "generative/plan": 74},
}

# IM Table 3, verbatim (success %): (condition, family) -> variant -> %; ("all", "total") is the Total row.
PAPER_IM_TABLE3: dict[tuple[str, str], dict[str, float]] = {
    ("none", "manipulation"): {"saycan": 50.0, "im_success": 62.5, "im_object_success": 75.0},
    ("none", "mobile_manipulation"): {"saycan": 50.0, "im_success": 50.0, "im_object_success": 75.0},
    ("none", "drawers"): {"saycan": 83.3, "im_success": 83.3, "im_object_success": 100.0},
    ("disturbances", "manipulation"): {"saycan": 12.5, "im_success": 25.0, "im_object_success": 33.3},
    ("disturbances", "mobile_manipulation"): {"saycan": 0.0, "im_success": 25.0, "im_object_success": 75.0},
    ("disturbances", "drawers"): {"saycan": 0.0, "im_success": 44.4, "im_object_success": 44.4},
    ("all", "total"): {"saycan": 30.8, "im_success": 48.7, "im_object_success": 60.4},
}


@dataclass
class KitchenEpisode:
    """One scored kitchen episode."""

    suite: str  # "saycan" | "im_kitchen"
    instruction: str  # Instruction.key, e.g. "nl_nouns_03"
    family: str
    variant: str  # key of SAYCAN_VARIANTS / IM_VARIANTS
    condition: str  # key of CONDITIONS ("none" for the saycan suite)
    index: int  # 0-based repetition
    plan_success: bool
    execution_success: bool
    failure_cause: str  # "" on success, else a key of FAILURE_CAUSES
    plan_reason: str = ""  # why the plan is not acceptable ("" if it is)
    skills: list[str] = field(default_factory=list)
    visited: list[str] = field(default_factory=list)  # the places the robot was at, sorted (visited() goals)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def failure_cause(plan_ok: bool, exec_ok: bool, detector_errors: int = 0) -> str:
    """IM §5's cause of a failed episode: a wrong success-detector report first (it misleads the
    planner), then an unacceptable plan, else control (the plan was right but the skills failed)."""
    if exec_ok:
        return ""
    if detector_errors > 0:
        return "success_detection"
    return "control" if plan_ok else "planning"


def score_episode(
    suite: str, instr: Instruction, variant: str, condition: str, index: int, skills: Sequence[str],
    final: KitchenState, history: Sequence[KitchenState] = (), detector_errors: int = 0,
    collapse_repeats: bool = False,
) -> KitchenEpisode:
    """Plan success, execution success and failure cause of one episode. `final` is the world's final
    state with its record of visited places (from the ground truth); `history` optional earlier states.
    collapse_repeats: treat an immediately repeated skill as one step (IM's retries after "[success: no]")."""
    reason = judge_plan(instr, skills, collapse_repeats)
    exec_ok = execution_success(instr, final, history)
    visited = set(final.places_visited).union(*(h.places_visited for h in history))
    return KitchenEpisode(suite, instr.key, instr.family, variant, condition, index, reason == "", exec_ok,
                          failure_cause(reason == "", exec_ok, detector_errors), reason, list(skills),
                          sorted(visited))


def _metric(e: KitchenEpisode, metric: str) -> bool:
    return e.plan_success if metric == PLAN else e.execution_success


def _cell(eps: Sequence[KitchenEpisode], row: str, column: str, metric: str, paper: float | None) -> Cell:
    return Cell(row, column, len(eps), sum(_metric(e, metric) for e in eps), paper)


# ----- SC Table 2 --------------------------------------------------------------------------------
def saycan_cells(suite: Suite, episodes: Iterable[KitchenEpisode], variants: Sequence[str]) -> list[Cell]:
    """Cells (task = family key or "total", variant = "<variant>/<plan|execute>"), in table order."""
    eps = [e for e in episodes if e.suite == suite.name]
    out = []
    for fam in [f.key for f in suite.families] + ["total"]:
        rows = [e for e in eps if fam in ("total", e.family)]
        for v in variants:
            for m in (PLAN, EXECUTE):
                col = f"{v}/{m}"
                out.append(_cell([e for e in rows if e.variant == v], fam, col, m,
                                 PAPER_SC_TABLE2.get(fam, {}).get(col)))
    return out


def saycan_table(suite: Suite, episodes: Iterable[KitchenEpisode], variants: Sequence[str]) -> str:
    """SC Table 2 layout: a row per family and Total; per variant, plan and execution success, ours
    (rate, 95% Wilson interval, successes/episodes) beside the paper's."""
    cells = {(c.task, c.variant): c for c in saycan_cells(suite, episodes, variants)}
    head, align = ["Family", "Num"], ["---", "---:"]
    for v in variants:
        for m in (PLAN, EXECUTE):
            head += [f"{SAYCAN_VARIANTS.get(v, v)} {m.capitalize()} (ours)", "(paper)"]
            align += ["---:", "---:"]
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(align) + " |"]
    for fam, label, num in [(f.key, f.label, f.count) for f in suite.families] + [
            ("total", "Total", len(suite.instructions))]:
        row = [label, str(num)]
        for v in variants:
            for m in (PLAN, EXECUTE):
                c = cells[(fam, f"{v}/{m}")]
                row += [cell_text(c), paper_text(c.paper)]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


# ----- IM Table 3 --------------------------------------------------------------------------------
def _causes_text(eps: Sequence[KitchenEpisode]) -> str:
    counts = {k: sum(e.failure_cause == k for e in eps) for k in FAILURE_CAUSES}
    return ", ".join(f"{FAILURE_CAUSES[k]} {n}" for k, n in counts.items() if n) or "–"


def im_rows(suite: Suite, conditions: Sequence[str]) -> list[tuple[str, str, str]]:
    """(condition, family, label) rows of IM Table 3, then ("all", "total", "Total")."""
    rows = [(c, f.key, f"{CONDITIONS[c]}: {f.label}") for c in conditions for f in suite.families]
    return rows + [("all", "total", "Total")]


def im_cells(suite: Suite, episodes: Iterable[KitchenEpisode], variants: Sequence[str],
             conditions: Sequence[str] = tuple(CONDITIONS)) -> list[Cell]:
    """Execution-success cells (task = "<condition>/<family>" or "all/total"), in table order."""
    eps = [e for e in episodes if e.suite == suite.name and e.condition in conditions]
    out = []
    for cond, fam, _ in im_rows(suite, conditions):
        rows = eps if fam == "total" else [e for e in eps if e.condition == cond and e.family == fam]
        for v in variants:
            out.append(_cell([e for e in rows if e.variant == v], f"{cond}/{fam}", v, EXECUTE,
                             PAPER_IM_TABLE3.get((cond, fam), {}).get(v)))
    return out


def im_table(suite: Suite, episodes: Iterable[KitchenEpisode], variants: Sequence[str],
             conditions: Sequence[str] = tuple(CONDITIONS)) -> str:
    """IM Table 3 layout: a row per condition x family and Total; per variant, our success rate beside the
    paper's and our failure causes (IM Fig. 4 categories, counts of failed episodes)."""
    eps = [e for e in episodes if e.suite == suite.name and e.condition in conditions]
    cells = {(c.task, c.variant): c for c in im_cells(suite, eps, variants, conditions)}
    head, align = ["Condition: Task Family"], ["---"]
    for v in variants:
        head += [f"{IM_VARIANTS.get(v, v)} (ours)", "(paper)", "failure causes"]
        align += ["---:", "---:", "---"]
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(align) + " |"]
    for cond, fam, label in im_rows(suite, conditions):
        row = [label]
        for v in variants:
            c = cells[(f"{cond}/{fam}", v)]
            mine = [e for e in eps if e.variant == v and (fam == "total" or (e.condition, e.family) == (cond, fam))]
            row += [cell_text(c), paper_text(c.paper), _causes_text(mine)]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def failure_table(episodes: Iterable[KitchenEpisode], variants: Sequence[str], labels: Mapping[str, str],
                  conditions: Sequence[str] = tuple(CONDITIONS)) -> str:
    """IM Fig. 4 as a table: per variant and condition, the episodes and the failures by cause."""
    eps = list(episodes)
    head = ["Variant", "Condition", "episodes", "successes"] + [FAILURE_CAUSES[k] for k in FAILURE_CAUSES]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]
    for v in variants:
        for cond in conditions:
            mine = [e for e in eps if e.variant == v and e.condition == cond]
            if not mine:
                continue
            row = [labels.get(v, v), CONDITIONS.get(cond, cond), str(len(mine)),
                   str(sum(e.execution_success for e in mine))]
            row += [str(sum(e.failure_cause == k for e in mine)) for k in FAILURE_CAUSES]
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def report_markdown(suite: Suite, episodes: Sequence[KitchenEpisode], variants: Sequence[str],
                    settings_line: str = "") -> str:
    """The suite's report: SC Table 2 for "saycan", IM Table 3 plus the failure causes otherwise."""
    intro = f"{settings_line}\n\n" if settings_line else ""
    legend = "Ours: success rate, 95% Wilson interval in %, successes/episodes."
    if suite.name == "saycan":
        return (f"## SayCan benchmark (SC Table 2)\n\n{intro}" + saycan_table(suite, episodes, variants)
                + f"\n{legend} Paper: SC Table 2, mock kitchen for SayCan (real kitchen: "
                "81% plan / 60% execute in total); No VF and Gen. have plan rates only. Plan success: the "
                "chosen skills are an acceptable plan that reaches the goal when executed ideally; execution "
                "success: the goal holds on the final world state.\n")
    return (f"## IM kitchen benchmark (IM Table 3)\n\n{intro}" + im_table(suite, episodes, variants)
            + f"\n{legend} Paper: IM Table 3 (120 real-robot evaluations). Failure causes as in IM Fig. 4 / "
            "IM §5: LLM planning (the chosen skills are no acceptable plan), control (an acceptable plan "
            "whose skills failed), success detection (the detector's report disagreed with the ground "
            "truth).\n\n### Failure causes (IM Fig. 4)\n\n" + failure_table(episodes, variants, IM_VARIANTS))


def write_chart(path: Path, cells: Sequence[Cell], rows: Sequence[tuple[str, str]],
                columns: Sequence[tuple[str, str]], title: str) -> None:
    """Grouped bars per row (rows: (cell task, label)); one bar per column ((cell variant, label)) with its
    95% interval; the paper's rate as a red tick. Cells from saycan_cells / im_cells."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by = {(c.task, c.variant): c for c in cells}
    width = 0.8 / max(1, len(columns))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(rows)), 4.8))
    for j, (col, col_label) in enumerate(columns):
        xs, ys, lo_err, hi_err, px, py = [], [], [], [], [], []
        for i, (row, _) in enumerate(rows):
            c = by.get((row, col))
            if c is None:
                continue
            x = i + (j - (len(columns) - 1) / 2) * width
            rate = 100 * c.rate if c.n else 0.0
            lo, hi = c.interval
            xs.append(x)
            ys.append(rate)
            lo_err.append(max(0.0, rate - 100 * lo) if c.n else 0.0)  # max: rounding at 0% / 100%
            hi_err.append(max(0.0, 100 * hi - rate) if c.n else 0.0)
            if c.paper is not None:
                px.append(x)
                py.append(c.paper)
        ax.bar(xs, ys, width * 0.95, yerr=[lo_err, hi_err], capsize=2, ecolor="0.6", label=f"{col_label} (ours)")
        ax.scatter(px, py, marker="_", s=160, color="crimson", linewidths=2.5, zorder=3,
                   label="paper" if j == 0 else None)
    ax.set_xticks(range(len(rows)), [label for _, label in rows], fontsize=7, rotation=20,
                  horizontalalignment="right")
    ax.set_ylim(0, 105)
    ax.set_ylabel("success rate (%), 95% Wilson interval")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def chart_layout(suite: Suite, variants: Sequence[str]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(rows, columns) of write_chart for the suite's cells."""
    if suite.name == "saycan":
        rows = [(f.key, f.label) for f in suite.families] + [("total", "Total")]
        cols = [(f"{v}/{m}", f"{SAYCAN_VARIANTS.get(v, v)} {m}") for v in variants for m in (PLAN, EXECUTE)]
        return rows, cols
    return ([(f"{c}/{f}", label) for c, f, label in im_rows(suite, tuple(CONDITIONS))],
            [(v, IM_VARIANTS.get(v, v)) for v in variants])


def results_json(suite: Suite, episodes: Sequence[KitchenEpisode], variants: Sequence[str]) -> dict[str, Any]:
    cells = (saycan_cells(suite, episodes, variants) if suite.name == "saycan"
             else im_cells(suite, episodes, variants))
    return {
        "suite": suite.name,
        "cells": [{"row": c.task, "column": c.variant, "episodes": c.n, "successes": c.successes,
                   "rate": None if c.n == 0 else c.rate, "wilson95": None if c.n == 0 else list(c.interval),
                   "paper_percent": c.paper} for c in cells],
        "episodes": [e.to_json() for e in episodes],
    }
