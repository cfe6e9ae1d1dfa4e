"""CAPE benchmark reports (no rclpy): CAPE Tables I-II's layout with the paper's numbers beside ours, the
precondition errors by difficulty and resolution (CAPE Fig. 5's layout), results JSON and a chart.

Rates carry 95% Wilson intervals: %Exec and Goal over episodes, %Aff over the plan steps of the plans
that are not entirely executable (pooled), %GS over the compared state attributes (pooled). LCS, Steps
and Corrections are means. CAPE's %Correct (human judges) and Fleiss' kappa are not reproducible here:
the paper's values are shown, ours are "n/r"; Goal (the task's goal atoms hold on the final state) is
our automatic stand-in for %Correct.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .benchmark import wilson
from .cape_bench import CAPE_VARIANTS, PAPER_TABLE_NAMES, PAPER_TABLES, TASK_SETS, CapeEpisode

SET_TITLES = {"paper": "CAPE's six Spot tasks x 2 scenes (CAPE Table II)",
              "generated": "Generated household tasks (CAPE Table I's layout)"}


def _rate(k: int, n: int) -> dict[str, Any]:
    lo, hi = wilson(k, n)
    return {"successes": k, "n": n, "rate": None if n == 0 else k / n, "wilson95": None if n == 0 else [lo, hi]}


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def summary(episodes: Sequence[CapeEpisode]) -> dict[str, Any]:
    """The metrics of a group of episodes (one variant on one task set)."""
    non_exec = [e for e in episodes if not e.executable]
    return {
        "episodes": len(episodes),
        "exec": _rate(sum(e.executable for e in episodes), len(episodes)),
        "aff": _rate(sum(e.afforded_steps for e in non_exec), sum(e.plan_steps for e in non_exec)),
        "aff_mean_non_exec": _mean([100 * e.aff for e in non_exec]),
        "aff_mean_all": _mean([100 * e.aff for e in episodes]),
        "gs": _rate(sum(e.gs_match for e in episodes), sum(e.gs_total for e in episodes)),
        "goal": _rate(sum(e.goal for e in episodes), len(episodes)),
        "lcs": _mean([e.lcs for e in episodes]),
        "steps": _mean([float(e.plan_steps) for e in episodes]),
        "corrections": _mean([float(e.corrections) for e in episodes]),
        "errors": sum(len(e.errors) for e in episodes),
    }


def _rate_text(r: Mapping[str, Any]) -> str:
    if not r["n"]:
        return "–"
    lo, hi = r["wilson95"]
    return f"{100 * r['rate']:.1f} [{100 * lo:.0f}–{100 * hi:.0f}] {r['successes']}/{r['n']}"


def _num(x: float | None, digits: int = 2) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _paper(v: float | None) -> str:
    return "N/A" if v is None else f"{v:.2f}"


def metrics_table(episodes: Sequence[CapeEpisode], variants: Sequence[str], task_set: str) -> str:
    """CAPE Table I / II layout: a row per method grouped as the paper's; per metric ours, then (paper)."""
    paper = PAPER_TABLES[task_set]
    head = ["Method", "n", "% Correct (paper)", "Goal % (ours)", "% Exec. (ours)", "(paper)", "% Aff. (ours)",
            "(paper)", "% GS (ours)", "(paper)", "LCS (ours)", "(paper)", "Fleiss' Kappa (paper)", "Steps (ours)",
            "(paper)", "Corrections (ours)", "(paper)"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    group = ""
    for v in [v for v in CAPE_VARIANTS if v in variants]:
        var = CAPE_VARIANTS[v]
        if var.group != group:
            group = var.group
            lines.append(f"| *{group}* |" + " |" * (len(head) - 1))
        mine = [e for e in episodes if e.variant == v and e.source == task_set]
        s, p = summary(mine), paper.get(v, {})
        corr = "N/A" if var.strategy == "saycan" or v == "huang" else _num(s["corrections"])
        row = [var.label, str(len(mine)), _paper(p.get("correct")), _rate_text(s["goal"]), _rate_text(s["exec"]),
               _paper(p.get("exec")), _rate_text(s["aff"]), _paper(p.get("aff")), _rate_text(s["gs"]),
               _paper(p.get("gs")), _num(s["lcs"]), _paper(p.get("lcs")), _paper(p.get("kappa")),
               _num(s["steps"]), _paper(p.get("steps")), corr, _paper(p.get("corrections"))]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def error_rows(episodes: Sequence[CapeEpisode], variant: str) -> dict[bool, dict[int, tuple[int, set[str]]]]:
    """resolved -> difficulty -> (count, distinct propositions) of a variant's precondition errors."""
    out: dict[bool, dict[int, tuple[int, set[str]]]] = {True: {}, False: {}}
    for e in episodes:
        if e.variant != variant:
            continue
        for err in e.errors:
            d = int(err["difficulty"])
            n, kinds = out[bool(err["resolved"])].get(d, (0, set()))
            out[bool(err["resolved"])][d] = (n + 1, kinds | {str(err["proposition"])})
    return out


def errors_table(episodes: Sequence[CapeEpisode], variants: Sequence[str]) -> str:
    """CAPE Fig. 5's layout: per method resolved / unresolved precondition errors by difficulty, the
    share of that row's errors in % with the number of distinct error types in brackets, and the total."""
    head = ["Method", "Row", "D1", "D2", "D3", "D4", "Total"]
    lines = ["| " + " | ".join(head) + " |", "|---|---|---:|---:|---:|---:|---:|"]
    for v in [v for v in CAPE_VARIANTS if v in variants]:
        rows = error_rows(episodes, v)
        for resolved in (True, False):
            by = rows[resolved]
            total = sum(n for n, _ in by.values())
            cells = []
            for d in (1, 2, 3, 4):
                n, kinds = by.get(d, (0, set()))
                cells.append(f"{100 * n / total:.0f}% ({len(kinds)})" if total else "–")
            lines.append(f"| {CAPE_VARIANTS[v].label} | {'resolved' if resolved else 'unresolved'} | "
                         + " | ".join(cells) + f" | {total} |")
    return "\n".join(lines) + "\n"


def report_markdown(episodes: Sequence[CapeEpisode], variants: Sequence[str], settings_line: str = "") -> str:
    """The suite's report: one metrics table per task set run, then the error table."""
    parts = ["## CAPE household benchmark (CAPE Tables I-II)\n\n", settings_line + "\n\n" if settings_line else ""]
    for task_set in TASK_SETS:
        if not any(e.source == task_set for e in episodes):
            continue
        parts.append(f"### {SET_TITLES[task_set]}\n\nPaper: {PAPER_TABLE_NAMES[task_set]}.\n\n"
                     + metrics_table(episodes, variants, task_set))
    parts.append(
        "\nOurs: rates in % with the 95% Wilson interval and successes/n (%Exec, Goal: episodes; %Aff: steps of "
        "the plans not entirely executable; %GS: state attributes), LCS in % of the longer program, Steps and "
        "Corrections means per episode. **% Correct and Fleiss' kappa are human judgements (5 Prolific raters "
        "per plan) and not reproducible here**: the paper's values are shown; Goal % (the task's goal atoms hold "
        "on the final state) is our automatic stand-in, not the same measure. Paper rows: CAPE's own numbers "
        "(davinci-instruct, Spot / VirtualHome), not re-measured.\n")
    parts.append("\n### Precondition errors by difficulty (CAPE Fig. 5's layout)\n\n" + errors_table(episodes, variants)
                 + "\nShare of the row's errors per CAPE difficulty level (1 no correction needed ... 4 long-term), "
                 "distinct error types in brackets. Resolved: the failed step then ran before the next error "
                 "(the plan reached step i+1 with step i executed).\n")
    return "".join(parts)


def results_json(episodes: Sequence[CapeEpisode], variants: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"suite": "cape", "summary": {}, "paper": PAPER_TABLES}
    for task_set in TASK_SETS:
        for v in variants:
            mine = [e for e in episodes if e.variant == v and e.source == task_set]
            if mine:
                s = summary(mine)
                rows = error_rows(mine, v)
                s["errors_by_difficulty"] = {("resolved" if r else "unresolved"): {
                    str(d): {"count": n, "types": sorted(k)} for d, (n, k) in sorted(rows[r].items())} for r in rows}
                out["summary"][f"{task_set}/{v}"] = s
    out["episodes"] = [e.to_json() for e in episodes]
    return out


def write_chart(path: Path, episodes: Sequence[CapeEpisode], variants: Sequence[str], title: str) -> None:
    """Grouped bars per metric (%Exec, %Aff, %GS, LCS, Goal) and task set, one bar per variant with its
    95% interval where it is a rate; the paper's value as a red tick."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = [s for s in TASK_SETS if any(e.source == s for e in episodes)] or ["paper"]
    metrics = [("exec", "% Exec."), ("aff", "% Aff."), ("gs", "% GS"), ("lcs", "LCS"), ("goal", "Goal % (ours)")]
    vs = [v for v in CAPE_VARIANTS if v in variants]
    fig, axes = plt.subplots(len(sets), 1, figsize=(max(7.0, 1.6 * len(metrics) + 0.3 * len(vs)), 4.2 * len(sets)),
                             squeeze=False)
    width = 0.8 / max(1, len(vs))
    for ax, task_set in zip(axes[:, 0], sets):
        for j, v in enumerate(vs):
            s = summary([e for e in episodes if e.variant == v and e.source == task_set])
            xs, ys, lo_e, hi_e, px, py = [], [], [], [], [], []
            for i, (m, _) in enumerate(metrics):
                x = i + (j - (len(vs) - 1) / 2) * width
                if m == "lcs":
                    y, lo, hi = s["lcs"] or 0.0, 0.0, 0.0
                else:
                    r = s[m]
                    y = 100 * r["rate"] if r["n"] else 0.0
                    lo = max(0.0, y - 100 * r["wilson95"][0]) if r["n"] else 0.0
                    hi = max(0.0, 100 * r["wilson95"][1] - y) if r["n"] else 0.0
                xs.append(x)
                ys.append(y)
                lo_e.append(lo)
                hi_e.append(hi)
                pv = PAPER_TABLES[task_set].get(v, {}).get(m)
                if pv is not None:
                    px.append(x)
                    py.append(pv)
            ax.bar(xs, ys, width * 0.95, yerr=[lo_e, hi_e], capsize=2, ecolor="0.6", label=CAPE_VARIANTS[v].label)
            ax.scatter(px, py, marker="_", s=120, color="crimson", linewidths=2.0, zorder=3,
                       label="paper" if j == 0 else None)
        ax.set_xticks(range(len(metrics)), [label for _, label in metrics], fontsize=8)
        ax.set_ylim(0, 105)
        ax.set_ylabel("%")
        ax.set_title(f"{SET_TITLES[task_set]}", fontsize=9)
        ax.legend(fontsize=6, loc="upper right", ncol=2)
    fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
