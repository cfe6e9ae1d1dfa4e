"""`monologue-report`: committed results (results/) and the docs tables made from them.

    monologue-report import runs/ceiling/table1-x results/table1-expert --command "monologue-bench ..."
    monologue-report build          # = make report: rewrite every <!-- report:<id> --> region of the docs
    monologue-report check          # exit 1 when a docs table differs from its regeneration
    monologue-report list           # the result runs and the table ids

Run it from the work tree (paths are relative to it; --root changes that).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .docs import DOCS, build, check
from .importer import import_run
from .store import COLUMNS, SUITES, ResultError, iter_sizes, load_runs
from .tables import TABLES


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="monologue-report", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, default=Path("."), help="the work tree (default: the current directory)")
    ap.add_argument("--results", type=Path, default=Path("results"), help="result runs, relative to --root")
    sub = ap.add_subparsers(dest="cmd", required=True)
    imp = sub.add_parser("import", help="make a result run from a finished monologue-bench --out directory")
    imp.add_argument("src", type=Path, help="the run directory (episodes.jsonl or trials.jsonl, run.json)")
    imp.add_argument("dst", type=Path, help="results/<name>")
    imp.add_argument("--command", required=True, help="the exact command that produced the run")
    imp.add_argument("--column", choices=list(COLUMNS), default=None,
                     help="the table column it fills (default: from --llm and llm.expert.error_rate in the command)")
    imp.add_argument("--suite", choices=list(SUITES), default=None, help="default: from the command or the records")
    imp.add_argument("--robot", default=None, help="default: the command's --robot or the suite's robot")
    imp.add_argument("--commit", default=None, help="the run's git commit (default: the work tree's HEAD now)")
    imp.add_argument("--legacy", action="store_true",
                     help="a run made before results/ existed: its command is reconstructed, commit unknown")
    imp.add_argument("--notes", default="", help="free text kept in run.json")
    imp.add_argument("--replace", action="store_true", help="overwrite an existing result run")
    sub.add_parser("build", help="rewrite the generated tables of " + ", ".join(DOCS))
    sub.add_parser("check", help="exit 1 when a generated table differs from its regeneration")
    sub.add_parser("list", help="the result runs and the table ids")
    return ap.parse_args(list(argv))


def main(argv: Sequence[str] | None = None) -> int:
    ns = parse_args(sys.argv[1:] if argv is None else argv)
    root = ns.root
    results = root / ns.results
    try:
        if ns.cmd == "import":
            info = import_run(ns.src, ns.dst if ns.dst.is_absolute() else root / ns.dst, ns.command,
                              column=ns.column, suite=ns.suite, robot=ns.robot, commit=ns.commit,
                              legacy=ns.legacy, notes=ns.notes, replace=ns.replace)
            size = sum(s for _, s in iter_sizes(root / ns.dst))
            print(f"{ns.dst}: suite {info.suite}, robot {info.robot or '-'}, llm {info.llm}, column {info.column}, "
                  f"{info.episodes} records, n per cell {info.n_per_cell}, {size / 1024:.0f} KiB")
            return 0
        runs = load_runs(results)
        if ns.cmd == "list":
            for r in runs:
                i = r.info
                print(f"{i.name}: {i.suite} {i.robot} llm {i.llm} column {i.column} ({len(r.records)} records, "
                      f"{i.date[:10]}, commit {i.commit[:12]}): {i.command}")
            print("tables: " + ", ".join(sorted(TABLES)))
            total = sum(s for _, s in iter_sizes(results)) if results.is_dir() else 0
            print(f"results/: {len(runs)} runs, {total / 1024:.0f} KiB")
            return 0
        if ns.cmd == "build":
            changed = build(root, runs)
            print("rewrote " + (", ".join(changed) if changed else "nothing (the tables were current)"))
            return 0
        stale = check(root, runs)
        for doc, ids in stale.items():
            print(f"{doc}: tables differ from their regeneration: {', '.join(ids)} (run `make report`)")
        return 1 if stale else 0
    except (ResultError, OSError) as e:
        print(f"monologue-report: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
