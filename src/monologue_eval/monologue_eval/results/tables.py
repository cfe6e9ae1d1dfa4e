"""The tables `make report` writes into the docs, each a function of the committed result runs (no rclpy).

One table per suite puts side by side: the paper, the embedded model with the defaults, the embedded
model with the best documented settings, the expert, and the expert at error rate p = 0.2 (the
columns of store.COLUMNS). A cell is the rate of its row's metric over the episodes of the newest run
of that column holding the row: "40% [12–77] 2/5" (rate, 95% Wilson interval in %, successes/n).
A column without such a run prints "not run": never a number without a committed result. Each table
ends with the runs it read (name, command, commit, date).

Tables are registered by id in `TABLES`; docs.py fills `<!-- report:<id> -->` regions with them.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.benchmark import PAPER_TABLE1, VARIANTS, wilson
from .store import COLUMNS, Run

NOT_RUN = "not run"
RowKey = tuple[str, ...]


@dataclass(frozen=True)
class Row:
    key: RowKey
    label: str
    paper: str  # the paper's value as text ("–": none to compare)


@dataclass(frozen=True)
class SuiteTable:
    """A suite's rows and how an episode record counts in them."""

    suite: str
    title: str
    rows: Callable[[], list[Row]]
    counts: Callable[[Mapping[str, Any]], list[tuple[RowKey, bool]]]  # (row, success) of one record
    robot: str = ""  # only runs on this robot ("" any)
    metric: str = ""  # what a cell's rate is


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:g}%"


def _whole(x: float) -> str:
    """A share as whole percents; one decimal where that would round a share that is not 0 or 1 to 0 or 100."""
    text = f"{100 * x:.0f}"
    exact = abs(x) < 1e-9 or abs(x - 1.0) < 1e-9
    return f"{100 * x:.1f}" if text in ("0", "100") and not exact else text


def rate_text(successes: int, n: int) -> str:
    """'40% [12–77] 2/5': rate, 95% Wilson interval (%), successes/n."""
    lo, hi = wilson(successes, n)
    return f"{_whole(successes / n)}% [{_whole(lo)}–{_whole(hi)}] {successes}/{n}"


# ----- per suite: rows and counting ----------------------------------------------------------------------
def _table1_rows() -> list[Row]:
    from monologue_domain.tasks import FAMILIES

    return [Row((v, t), f"{VARIANTS[v].label}: {f.title}", _pct(PAPER_TABLE1.get(t, {}).get(v)))
            for v in VARIANTS for t, f in FAMILIES.items()]


def _table1_counts(r: Mapping[str, Any]) -> list[tuple[RowKey, bool]]:
    return [((str(r["variant"]), str(r["task"])), bool(r["reward"]))]


def _saycan_rows() -> list[Row]:
    from ..core.kitchen_report import PAPER_SC_TABLE2, SAYCAN_VARIANTS

    rows = []
    for v, label in SAYCAN_VARIANTS.items():
        for metric in (("plan", "execute") if v == "saycan" else ("plan",)):
            for fam, paper in PAPER_SC_TABLE2.items():
                rows.append(Row((v, metric, fam), f"{label} {metric}: {fam.replace('_', ' ')}",
                                _pct(paper.get(f"{v}/{metric}"))))
    return rows


def _saycan_counts(r: Mapping[str, Any]) -> list[tuple[RowKey, bool]]:
    e = r["episode"]
    out: list[tuple[RowKey, bool]] = []
    for fam in (str(e["family"]), "total"):
        out.append(((str(e["variant"]), "plan", fam), bool(e["plan_success"])))
        if e["variant"] == "saycan":
            out.append(((str(e["variant"]), "execute", fam), bool(e["execution_success"])))
    return out


def _im_kitchen_rows() -> list[Row]:
    from ..core.kitchen_report import IM_VARIANTS, PAPER_IM_TABLE3

    return [Row((v, cond, fam), f"{label}: {fam.replace('_', ' ')}" + ("" if cond == "all" else f" ({cond})"),
                _pct(paper.get(v)))
            for v, label in IM_VARIANTS.items() for (cond, fam), paper in PAPER_IM_TABLE3.items()]


def _im_kitchen_counts(r: Mapping[str, Any]) -> list[tuple[RowKey, bool]]:
    e = r["episode"]
    ok = bool(e["execution_success"])
    return [((str(e["variant"]), str(e["condition"]), str(e["family"])), ok),
            ((str(e["variant"]), "all", "total"), ok)]


def _cape_rows() -> list[Row]:
    from ..core.cape_bench import CAPE_VARIANTS, PAPER_TABLES

    rows = []
    for source in ("paper", "generated"):
        for v, var in CAPE_VARIANTS.items():
            paper = PAPER_TABLES[source].get(v, {})
            rows.append(Row((source, v, "exec"), f"{source} tasks, {var.label}: % Exec", _pct(paper.get("exec"))))
            rows.append(Row((source, v, "goal"), f"{source} tasks, {var.label}: Goal % (paper: human % Correct)",
                            _pct(paper.get("correct"))))
    return rows


def _cape_counts(r: Mapping[str, Any]) -> list[tuple[RowKey, bool]]:
    e = r["episode"]
    return [((str(e["source"]), str(e["variant"]), "exec"), bool(e["executable"])),
            ((str(e["source"]), str(e["variant"]), "goal"), bool(e["goal"]))]


def _statler_rows() -> list[Row]:
    from ..core.statler_bench import DOMAIN_LABELS, METHOD_LABELS
    from ..core.statler_bench import PAPER_TABLE1 as S_TABLE1

    return [Row((m, d), f"{ml}: {dl}",
                _pct(None if d not in S_TABLE1.get(m, {}) else round(100 * S_TABLE1[m][d][0], 1)))
            for m, ml in METHOD_LABELS.items() for d, dl in DOMAIN_LABELS.items()]


def _statler_counts(r: Mapping[str, Any]) -> list[tuple[RowKey, bool]]:
    return [((str(r["method"]), str(r["domain"])), bool(r["success"]))]


def _cups_rows() -> list[Row]:
    from ..core.statler_cups import STYLE_LABELS

    return [Row((s,), f"{label}, n = 1..10 pooled", "–") for s, label in STYLE_LABELS.items()]


def _cups_counts(r: Mapping[str, Any]) -> list[tuple[RowKey, bool]]:
    return [((str(r["style"]),), bool(r["correct"]))]


def _multitalk_rows() -> list[Row]:
    from ..core.multitalk_bench import LABELS

    return [Row((v,), label, "–") for v, label in LABELS.items()]


def _multitalk_counts(r: Mapping[str, Any]) -> list[tuple[RowKey, bool]]:
    return [((str(r["variant"]),), bool(r["success"]))]


SUITE_TABLES: dict[str, SuiteTable] = {t.suite + (f"_{t.robot}" if t.robot else ""): t for t in (
    SuiteTable("table1", "IM Table 1 on MuJoCo (`--robot sim`)", _table1_rows, _table1_counts, robot="sim",
               metric="episode success (ground-truth reward)"),
    SuiteTable("table1", "IM Table 1 on the kinematic tabletop (`--robot sim_kinematic`)", _table1_rows,
               _table1_counts, robot="sim_kinematic", metric="episode success (ground-truth reward)"),
    SuiteTable("saycan", "SC Table 2 (`--suite saycan`)", _saycan_rows, _saycan_counts,
               metric="plan success / execution success per family"),
    SuiteTable("im_kitchen", "IM Table 3 (`--suite im_kitchen`)", _im_kitchen_rows, _im_kitchen_counts,
               metric="execution success"),
    SuiteTable("cape", "CAPE Tables I-II (`--suite cape`)", _cape_rows, _cape_counts,
               metric="% Exec. and Goal % (ours; the paper's % Correct is rated by people)"),
    SuiteTable("statler", "S Table I (`--suite statler`)", _statler_rows, _statler_counts,
               metric="episode success"),
    SuiteTable("statler_cups", "The cup game (`--suite statler_cups`)", _cups_rows, _cups_counts,
               metric="trial correct"),
    SuiteTable("multitalk", "MultiTalk (`--suite multitalk`)", _multitalk_rows, _multitalk_counts,
               metric="task success"),
)}
COUNTERS = {t.suite: t.counts for t in SUITE_TABLES.values()}


def cell_keys(suite: str, record: Mapping[str, Any]) -> list[RowKey]:
    """The rows one record of `suite` counts in ([] for a suite without rows, or an unreadable record)."""
    counter = COUNTERS.get(suite)
    if counter is None:
        return []
    try:
        return [k for k, _ in counter(record)]
    except (KeyError, TypeError):
        return []


# an episode's identity per suite: a later record of the same episode replaces the earlier one (as the
# bench's own store does on resuming)
EPISODE_KEYS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "table1": lambda r: (r["task"], r["variant"], r["index"]),
    "saycan": lambda r: (r["episode"]["instruction"], r["episode"]["variant"], r["episode"]["condition"],
                         r["episode"]["index"]),
    "cape": lambda r: (r["episode"]["variant"], r["episode"]["task"], r["episode"]["index"]),
    "statler": lambda r: (r["method"], r["episode"]),
    "statler_cups": lambda r: (r["style"], r["n"], r["trial"]),
    "multitalk": lambda r: (r["variant"], r["seed"]),
}
EPISODE_KEYS["im_kitchen"] = EPISODE_KEYS["saycan"]


def latest(suite: str, records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The records, the last one of each episode only (file order otherwise)."""
    key = EPISODE_KEYS.get(suite)
    if key is None:
        return list(records)
    by: dict[Any, Mapping[str, Any]] = {}
    for i, r in enumerate(records):
        try:
            k = key(r)
        except (KeyError, TypeError):
            k = ("unreadable", i)
        by.pop(k, None)
        by[k] = r
    return list(by.values())


def tally(table: SuiteTable, run: Run) -> dict[RowKey, tuple[int, int]]:
    """(successes, n) per row of one run; a later record of the same episode replaces the earlier one."""
    out: dict[RowKey, list[int]] = {}
    for r in latest(table.suite, run.records):
        try:
            counted = table.counts(r)
        except (KeyError, TypeError):
            continue
        for key, ok in counted:
            c = out.setdefault(key, [0, 0])
            c[0] += int(ok)
            c[1] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}


def runs_of(table: SuiteTable, runs: Sequence[Run]) -> list[Run]:
    return [r for r in runs if r.info.suite == table.suite and (not table.robot or r.info.robot == table.robot)]


def suite_table(table: SuiteTable, runs: Sequence[Run]) -> str:
    """The suite's Markdown table: one row per row of the suite, the paper and the four columns."""
    mine = sorted(runs_of(table, runs), key=lambda r: (r.info.date, r.info.name), reverse=True)  # newest first
    tallies = {r.info.name: tally(table, r) for r in mine}
    used: dict[str, list[Run]] = {c: [] for c in COLUMNS}
    head = ["", "paper", *COLUMNS.values()]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for row in table.rows():
        cells = [row.label, row.paper]
        for col in COLUMNS:
            text = NOT_RUN
            for run in (r for r in mine if r.info.column == col):
                k, n = tallies[run.info.name].get(row.key, (0, 0))
                if n:
                    text = rate_text(k, n)
                    if run not in used[col]:
                        used[col].append(run)
                    break
            cells.append(text)
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"Rate: {table.metric}; 95% Wilson interval in %, successes/episodes. "
                 f"\"{NOT_RUN}\": no committed result in results/ for that column.")
    lines += sources(used)
    return "\n".join(lines)


def sources(used: Mapping[str, Sequence[Run]]) -> list[str]:
    """The runs a table read, per column."""
    out = []
    for col, rs in used.items():
        for r in rs:
            i = r.info
            legacy = " (legacy: command reconstructed)" if i.legacy else ""
            out.append(f"- {COLUMNS[col]}: `results/{i.name}`{legacy}: `{i.command}`, commit `{i.commit[:12]}`, "
                       f"{i.date[:10]}, {i.episodes} episodes, n per cell {i.n_per_cell}")
    return [""] + out if out else []


# ----- goal_check: directed: how much the rule decided ------------------------------------------------------------
def is_directed(run: Run) -> bool:
    params = [str(p) for p in run.info.non_default.get("param", []) or []]
    return (any(p.replace(" ", "").endswith("scoring.goal_check=directed") for p in params)
            or "scoring.goal_check=directed" in str(run.info.settings.get("params", "")))


def directed_table(runs: Sequence[Run]) -> str:
    """Per family (IM Table 1 runs with `scoring.goal_check: directed`): the share of the planner's step
    decisions that the rule made alone (one candidate left, or done because the goal held), from the
    records' `decisions` / `single_candidate` counts (the planner's EPISODE_END event)."""
    from monologue_domain.tasks import FAMILIES

    mine = [r for r in runs if r.info.suite == "table1" and is_directed(r)]
    head = "| family | " + " | ".join(f"`{r.info.name}`" for r in mine) + " |" if mine else "| family | runs |"
    lines = [head, "|---|" + "---:|" * max(1, len(mine))]
    for fam, f in FAMILIES.items():
        cells = []
        for run in mine:
            recs = [r for r in run.records if r.get("task") == fam]
            if not recs:
                cells.append(NOT_RUN)
            elif not all(int(r.get("decisions", -1)) >= 0 for r in recs):
                cells.append("not recorded")
            else:
                k = sum(int(r.get("single_candidate", 0)) for r in recs)
                n = sum(int(r.get("decisions", 0)) for r in recs)
                cells.append(rate_text(k, n) + " decisions" if n else "no decisions")
        lines.append(f"| {f.title} | " + (" | ".join(cells) if mine else NOT_RUN) + " |")
    lines += ["", "Share of step decisions made by the rule alone (one candidate left, or `done` because the "
              "goal held), 95% Wilson interval in %, rule decisions/decisions. \"not recorded\": the run's records "
              "predate the count."]
    lines += sources({c: [r for r in mine if r.info.column == c] for c in COLUMNS})
    return "\n".join(lines)


# ----- recovery at error rate p = 0.2 ------------------------------------------------------------------------------
# (table, label, closed-loop or open-loop, pooled rows: a row matches when its key starts with the prefix)
RECOVERY: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("table1_sim_kinematic", "IM Table 1 (kinematic): LLM + Object", "open loop", ("llm_object",)),
    ("table1_sim_kinematic", "IM Table 1 (kinematic): IM: Object + Success", "Success feedback",
     ("im_object_success",)),
    ("table1_sim_kinematic", "IM Table 1 (kinematic): IM: Object + Scene", "Scene feedback", ("im_object_scene",)),
    ("table1_sim", "IM Table 1 (MuJoCo): LLM + Object", "open loop", ("llm_object",)),
    ("table1_sim", "IM Table 1 (MuJoCo): IM: Object + Success", "Success feedback", ("im_object_success",)),
    ("table1_sim", "IM Table 1 (MuJoCo): IM: Object + Scene", "Scene feedback", ("im_object_scene",)),
    ("cape", "CAPE paper tasks: Huang et al. (Goal %)", "open loop", ("paper", "huang", "goal")),
    ("cape", "CAPE paper tasks: Re-sampling (Goal %)", "re-sampling", ("paper", "resampling", "goal")),
    ("cape", "CAPE paper tasks: Z_E (Goal %)", "corrections", ("paper", "Z_E", "goal")),
    ("cape", "CAPE paper tasks: F_E (Goal %)", "corrections", ("paper", "F_E", "goal")),
    ("multitalk", "MultiTalk: Planner + Simulator", "no Analyzer", ("no_analyzer",)),
    ("multitalk", "MultiTalk (full)", "Analyzer", ("full",)),
)


def pooled(table: SuiteTable, runs: Sequence[Run], column: str, prefix: RowKey) -> tuple[int, int, Run | None]:
    """(successes, n, run) over the rows starting with `prefix` in the newest run of `column` that has any."""
    for run in sorted((r for r in runs_of(table, runs) if r.info.column == column),
                      key=lambda r: (r.info.date, r.info.name), reverse=True):
        counts = [v for k, v in tally(table, run).items() if k[:len(prefix)] == prefix]
        if counts:
            return sum(k for k, _ in counts), sum(n for _, n in counts), run
    return 0, 0, None


def recovery_table(runs: Sequence[Run]) -> str:
    """The closed-loop methods against their open-loop baselines with the expert at p = 0 and p = 0.2,
    pooled over the suite's tasks (the papers' central claim: feedback recovers from wrong steps)."""
    cols = ("expert", "expert_p02")
    lines = ["| method | loop | " + " | ".join(COLUMNS[c] for c in cols) + " |", "|---|---|---:|---:|"]
    used: dict[str, list[Run]] = {c: [] for c in COLUMNS}
    for tid, label, loop, prefix in RECOVERY:
        cells = []
        for c in cols:
            k, n, run = pooled(SUITE_TABLES[tid], runs, c, prefix)
            cells.append(rate_text(k, n) if n else NOT_RUN)
            if run is not None and run not in used[c]:
                used[c].append(run)
        lines.append(f"| {label} | {loop} | " + " | ".join(cells) + " |")
    lines += ["", "Pooled over the suite's tasks (CAPE: the paper tasks' Goal %); 95% Wilson interval in %, "
              "successes/episodes; p: `llm.expert.error_rate`, the share of the expert's answers that are wrong "
              "lines or format slips."]
    lines += sources(used)
    return "\n".join(lines)


# ----- docs/reliability.md --------------------------------------------------------------------------------------------
def reliability_table(runs: Sequence[Run]) -> str:
    """Every figure of the reliability driver with the newest committed run's row ("not run" without one)."""
    from ..core.reliability_figures import FIGURES

    mine = sorted((r for r in runs if r.info.suite == "reliability"), key=lambda r: (r.info.date, r.info.name),
                  reverse=True)
    lines = ["| figure | target | measured | verdict | wall | run |", "|---|---|---|---|---|---|"]
    used: list[Run] = []
    for fig in FIGURES:
        found = None
        for run in mine:
            rows = [r for r in run.records if str(r.get("figure")) == fig.figure]
            if rows:
                found = (run, rows)
                break
        if found is None:
            lines.append(f"| {fig.figure} {fig.what} | {fig.target} | {NOT_RUN} | {NOT_RUN} | – | – |")
            continue
        run, rows = found
        if run not in used:
            used.append(run)
        for r in rows:
            ok = r.get("ok")
            verdict = "not measured" if ok is None else "pass" if ok else "FAIL"
            measured = str(r.get("measured", "")).replace("|", "/").replace("\n", " ")
            # a figure measured on several backends names each row's own (R4: "e-stop latency, ur5e (fake RTDE): ...")
            what = str(r.get("what") or fig.what) if len(rows) > 1 else fig.what
            lines.append(f"| {fig.figure} {what} | {fig.target} | {measured} | {verdict} | "
                         f"{float(r.get('wall_s', 0.0)):.0f} s | `{run.info.name}` |")
    lines += sources({"embedded": used}) if used else []
    return "\n".join(lines).replace("- embedded model (defaults): ", "- ")


# ----- the registry --------------------------------------------------------------------------------------------------
TableFn = Callable[[Sequence[Run]], str]


def _suite_fn(t: SuiteTable) -> TableFn:
    return lambda runs: suite_table(t, runs)


TABLES: dict[str, TableFn] = {
    **{key: _suite_fn(t) for key, t in SUITE_TABLES.items()},
    "table1_directed": directed_table,
    "recovery": recovery_table,
    "reliability": reliability_table,
}
