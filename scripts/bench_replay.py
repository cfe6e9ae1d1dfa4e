"""Time `monologue-replay` on a bag, start-up included: the figure of the replay target (issue 28).

    . scripts/env.sh && python scripts/bench_replay.py [--runs 10] [--rate 100] [--bag test/fixtures/bags/sim_demo]
                                                       [-- extra monologue-replay arguments]

Runs the replay `--runs` times one after the other and prints, for each run, the wall time measured here
(from just before the process is started until it has exited), the figure the tool printed itself (wall
time since its process started), and the CPU time of the run (user + system, all threads); then the
median, minimum and maximum of each, and the load average of the machine before and after. Exits 1 if a
run fails (the transcript differs, or the tool exits non-zero). No timing is asserted: it prints numbers.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIGURE = re.compile(r"^== ([0-9.]+) s wall since the process started", re.MULTILINE)


def run_once(exe: str, args: list[str]) -> tuple[float, float | None, float, str, int]:
    """(wall s, printed s or None, CPU s, output, exit code) of one replay."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    out = subprocess.run([exe, *args], capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    m = FIGURE.search(out.stdout)
    return wall, float(m.group(1)) if m else None, cpu, out.stdout + out.stderr, out.returncode


def summary(name: str, values: list[float]) -> str:
    return (f"{name}: median {statistics.median(values):.2f} s, min {min(values):.2f} s, max {max(values):.2f} s "
            f"(n={len(values)})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--rate", type=float, default=100.0)
    ap.add_argument("--bag", type=Path, default=REPO / "test" / "fixtures" / "bags" / "sim_demo")
    ap.add_argument("extra", nargs="*", help="further monologue-replay arguments (after --)")
    ns = ap.parse_args()
    exe = shutil.which("monologue-replay")
    if exe is None:
        print("bench_replay: monologue-replay is not on PATH; run `. scripts/env.sh`", file=sys.stderr)
        return 2
    args = [str(ns.bag), f"rate:={ns.rate:g}", "--config-dir", str(REPO / "config"), *ns.extra]
    print(f"monologue-replay {' '.join(args)}  x{ns.runs}; load average before: {os.getloadavg()}", flush=True)
    walls: list[float] = []
    printed: list[float] = []
    cpus: list[float] = []
    for i in range(1, ns.runs + 1):
        wall, figure, cpu, text, rc = run_once(exe, args)
        ok = rc == 0 and "identical transcript" in text
        print(f"run {i}: wall {wall:.2f} s, printed {figure if figure is not None else '-'} s, cpu {cpu:.2f} s"
              f"{'' if ok else ' FAILED'}", flush=True)
        if not ok:
            print(text[-4000:], file=sys.stderr)
            return 1
        walls.append(wall)
        cpus.append(cpu)
        if figure is not None:
            printed.append(figure)
    print(summary("wall (measured outside)", walls))
    if printed:
        print(summary("printed by the tool", printed))
    print(summary("cpu (user + system)", cpus))
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
