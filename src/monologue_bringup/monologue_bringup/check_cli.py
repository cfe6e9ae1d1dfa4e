"""`monologue-check` (the command line; checks in check.py and preflight.py): see check.py's docstring."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .check import CHECKS, fake_checks, report, run_checks
from .check import __doc__ as CHECK_DOC
from .graph import robot_entry
from .preflight import Finding
from .up import UP_ARGUMENTS, Supervisor, launch_values, parse_node_params


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="monologue-check", description=CHECK_DOC,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--param", action="append", default=[], help="node:name=value parameter override")
    ap.add_argument("--skip", default="", help=f"comma-separated checks to skip: {', '.join(CHECKS)}")
    ap.add_argument("--config-dir", type=Path, default=None)
    wanted = {"robot", "llm", "fake"}
    try:
        values, rest = launch_values(argv, [a for a in UP_ARGUMENTS if a.name in wanted])
        ns = ap.parse_args(rest)
        node_params = parse_node_params(ns.param)
        skip = [s for s in ns.skip.split(",") if s]
        unknown = sorted(set(skip) - set(CHECKS))
        if unknown:
            raise ValueError(f"--skip: unknown checks {unknown}; checks: {list(CHECKS)}")
        if robot_entry(values["robot"], ns.config_dir).simulated:
            raise ValueError(f"robot:={values['robot']} is simulated; monologue-check checks real robots "
                             "(ur5e, spot, spot_realsense)")
    except ValueError as e:
        print(f"monologue-check: {e}", file=sys.stderr)
        return 2
    if values["fake"] != "true":
        findings = run_checks(values["robot"], values["llm"], ns.config_dir, node_params, skip=skip)
        return report(findings)
    try:
        sup = Supervisor(values["robot"], values["llm"], ns.config_dir, node_params, nodes=[], fake=True)
    except ValueError as e:
        print(f"monologue-check: {e}", file=sys.stderr)
        return 2
    holder: list[Finding] = []

    def checks() -> list[str]:
        holder.extend(fake_checks(sup, skip))
        return []  # reported below, whatever the outcome

    sup.preflight = checks
    try:
        sup.start()
    except RuntimeError as e:
        print(f"monologue-check: {e}", file=sys.stderr)
        sup.stop()
        return 1
    sup.stop()
    return report(holder)




if __name__ == "__main__":
    sys.exit(main())
