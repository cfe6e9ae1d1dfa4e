"""Print the reliability table (docs/reliability.md): every figure's target, what was measured, pass/fail.

    python -m monologue_eval.reliability            # the full runs (R1: 100,000 fuzzed outputs; R2: 10,000 targets)
    python -m monologue_eval.reliability --short    # the short runs (what `make test` runs as unit tests)
    python -m monologue_eval.reliability --only R2  # one figure

Figures are a registry (FIGURES): a module of this package and its row function `row(short) -> Row`
(or `rows(short) -> list[Row]`). A module that is not there (R3 faults_*.py, R4 estop_latency.py, R5
soak.py are written separately) shows as "not measured"; their row functions get the arguments of
RUN_ARGS. Exit status 1 if any measured figure fails.
"""
# ruff: noqa: E402
from __future__ import annotations

import argparse
import importlib
import inspect
import json
import logging
import pkgutil
import sys
import textwrap
import time
import traceback
import warnings
from dataclasses import asdict
from pathlib import Path

from ..core.reliability_figures import FIGURES as FIGURES
from ..core.reliability_figures import Figure
from .common import Row

# FIGURES (core/reliability_figures.py): listed outside this white-box package for the docs tables


def modules_for(pattern: str) -> list[str]:
    here = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]))
    if pattern.endswith("*"):
        return [n for n in names if n.startswith(pattern[:-1])]
    return [pattern] if pattern in names else []


# Keyword arguments of the R3-R5 modules' row functions for the short and the full run (a row function
# with a `short` parameter gets that instead; arguments it does not take are dropped).
RUN_ARGS: dict[str, tuple[dict[str, object], dict[str, object]]] = {
    "faults": ({"system": False}, {"system": True}),
    "estop_latency": ({"trials": 20}, {"trials": 200}),
    "soak": ({"episodes": 3, "warmup": 1}, {"episodes": 200, "warmup": 10}),
}


def call_rows(mod: object, name: str, short: bool) -> list[Row]:
    fn = getattr(mod, "rows", None) or mod.row  # type: ignore[attr-defined]
    params = inspect.signature(fn).parameters
    if "short" in params:
        kwargs: dict[str, object] = {"short": short}
    else:
        kwargs = {k: v for k, v in RUN_ARGS.get(name, ({}, {}))[0 if short else 1].items() if k in params}
    if "progress" in params:
        kwargs["progress"] = lambda text: print(f"   {text}", file=sys.stderr, flush=True)
    got = fn(**kwargs)
    return list(got) if isinstance(got, (list, tuple)) else [got]


def rows_of(fig: Figure, short: bool) -> list[Row]:
    mods = modules_for(fig.module)
    if not mods:
        return [Row(fig.figure, fig.what, fig.target, f"monologue_eval/reliability/{fig.module}.py is not there", None)]
    out: list[Row] = []
    for name in mods:
        t0 = time.monotonic()
        try:
            mod = importlib.import_module(f"{__package__}.{name}")
            if hasattr(mod, "rows") or hasattr(mod, "row"):
                got = call_rows(mod, name, short)
            else:
                got = [Row(fig.figure, fig.what, fig.target, f"{name}.py has no row() / rows()", None)]
        except Exception as e:  # noqa: BLE001 - a figure that cannot be measured is a failed row, not a crash
            traceback.print_exc()
            got = [Row(fig.figure, fig.what, fig.target, f"{name}: {type(e).__name__}: {e}", False,
                       time.monotonic() - t0)]
        out += [r if isinstance(r, Row) else Row(fig.figure, fig.what, fig.target, str(r), None) for r in got]
    return out


def table(rows: list[Row], width: int = 70) -> str:
    """figure | what (target) | verdict | wall time | measured, the long columns wrapped."""
    head = f"{'figure':<10} {'what (target)':<48} {'verdict':<13} {'wall s':>7}  measured"
    lines = [head, "-" * (len(head) + width - 8)]
    for r in rows:
        left = textwrap.wrap(f"{r.what} (target: {r.target})", 48) or [""]
        right = textwrap.wrap(r.measured, width) or [""]
        for i in range(max(len(left), len(right))):
            a = left[i] if i < len(left) else ""
            b = right[i] if i < len(right) else ""
            if i == 0:
                lines.append(f"{r.figure:<10} {a:<48} {r.verdict:<13} {r.wall_s:>7.1f}  {b}")
            else:
                lines.append(f"{'':<10} {a:<48} {'':<13} {'':>7}  {b}")
    return "\n".join(lines)


def write_rows(out: Path, rows: list[Row]) -> None:
    """OUT/episodes.jsonl: one row per line (the fields of common.Row); OUT is created."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "episodes.jsonl", "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(asdict(r), ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m monologue_eval.reliability", description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true", help="the short runs (seconds each)")
    ap.add_argument("--only", default="", help="figures to run, comma-separated (e.g. R1,R7)")
    ap.add_argument("--details", action="store_true", help="print each row's details under the table")
    ap.add_argument("--out", type=Path, default=None,
                    help="also write the rows to OUT/episodes.jsonl "
                         "(for `monologue-report import --suite reliability`)")
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.CRITICAL)  # the planner logs every step; the table is the output
    warnings.simplefilter("ignore", RuntimeWarning)  # numpy on fuzzed NaN embeddings
    wanted = {f.strip().lower() for f in a.only.split(",") if f.strip()}
    rows: list[Row] = []
    for fig in FIGURES:
        if wanted and fig.figure.lower() not in wanted:
            continue
        print(f"== {fig.figure}: {fig.what} ({'short' if a.short else 'full'} run)", file=sys.stderr, flush=True)
        rows += rows_of(fig, a.short)
    print(table(rows))
    if a.out is not None:
        write_rows(a.out, rows)
    if a.details:
        for r in rows:
            if r.details:
                print(f"\n{r.figure}: {r.details}")
    return 1 if any(r.ok is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
