"""`monologue-bench`: the benchmark suites through the real node graph, one `--suite` at a time.

    monologue-bench --list                   # the suites
    monologue-bench [--suite table1|saycan|im_kitchen|cape|statler|statler_cups|multitalk]
                    [--llm embedded|openai] [--seed N] [--episodes N | --full] [--tasks all|seen|unseen|a,b]
                    [--variants all|a,b] [--out DIR] [--strategy scoring|generative] [--affordances on|off]
                    [--place-noise M] [--max-steps K] [--timeout S] [--robot sim|sim_kinematic]
                    [--families all|a,b] [--instructions N] [--conditions all|none|disturbances]  (kitchen)

Each suite is a module of monologue_eval.suites (table1: IM Table 1 on the tabletop, the default;
saycan / im_kitchen: SC Table 2 / IM Table 3 on the symbolic kitchen; cape: CAPE Tables I-II on the
household; statler, statler_cups: S Tables I-II and Fig. 2; multitalk). A suite writes
`<out>/episodes.jsonl` (or trials.jsonl) as it goes (a rerun with the same --out continues where a run
stopped), then its report: `results.json`, `table.md` and, for the graph suites, `chart.png`.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from monologue_bringup.graph import LLMS, robot_entry, simulated_robots
from monologue_domain.tasks import FAMILIES

from .core.benchmark import K_STEPS, PAPER_EPISODES, STRATEGIES, WORDINGS
from .suites import SUITES

DEFAULT_SUITE = "table1"
DEFAULT_EPISODES = 1  # per cell; 8 tasks x 3 variants ~ 10 min with the embedded model on 2 cores


def tabletop_robots() -> tuple[str, ...]:
    """The simulated robots in a tabletop world: the IM Table 1 suite's choices."""
    return tuple(r for r in simulated_robots() if robot_entry(r).world == "tabletop")


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    suites = SUITES.items()
    ap = argparse.ArgumentParser(prog="monologue-bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="print the suites and exit")
    ap.add_argument("--suite", choices=SUITES.names(), default=DEFAULT_SUITE, metavar="SUITE",
                    help="; ".join(f"{n}: {s.description}" + (f" ({s.arguments})" if s.arguments else "")
                                   for n, s in suites.items()) + f" (default {DEFAULT_SUITE})")
    ap.add_argument("--llm", choices=LLMS, default="embedded")
    ap.add_argument("--robot", choices=tabletop_robots(), default="sim",
                    help="table1: sim (default: the MuJoCo simulator) or sim_kinematic (the in-process "
                         "kinematic tabletop)")
    ap.add_argument("--seed", type=int, default=0, help="base seed of the scenes (default 0)")
    ap.add_argument("--episodes", type=int, default=DEFAULT_EPISODES,
                    help=f"episodes per task and variant (default {DEFAULT_EPISODES})")
    ap.add_argument("--full", action="store_true", help=f"the paper's protocol: {PAPER_EPISODES} episodes per cell")
    ap.add_argument("--tasks", default="all", help=f"table1: all, seen, unseen, or a comma list of {list(FAMILIES)}")
    ap.add_argument("--variants", default="all",
                    help="all or a comma list of: " + "; ".join(f"{n} {list(s.variants)}" for n, s in suites.items()
                                                                if s.variants))
    ap.add_argument("--families", default="all",
                    help="kitchen suites: all or a comma list of the suite's families; cape: all, paper "
                         "(CAPE's 6 Spot tasks x 2 scenes) or generated")
    ap.add_argument("--instructions", type=int, default=None,
                    help="kitchen suites: only the first N instructions of each family (default: all)")
    ap.add_argument("--conditions", default="all",
                    help="im_kitchen: all, none or disturbances (IM §4.3; saycan: none only)")
    ap.add_argument("--out", type=Path, default=None,
                    help="output directory; rerunning with the same one resumes (default runs/bench/<llm>-<strategy>"
                         "-seed<seed>)")
    ap.add_argument("--strategy", choices=list(STRATEGIES), default="scoring",
                    help="scoring: the LLM ranks the admissible steps (default); generative: it writes each step "
                         "(IM's sim)")
    ap.add_argument("--affordances", choices=("on", "off"), default="off",
                    help="SayCan-style affordances in the planner (IM's sim has none: default off)")
    ap.add_argument("--place-noise", type=float, default=0.02,
                    help="std of the Gaussian noise on place positions, m (IM: 0.02)")
    ap.add_argument("--max-steps", type=int, default=K_STEPS, help=f"k, skills per episode (IM: {K_STEPS})")
    ap.add_argument("--wording", choices=WORDINGS, default="original",
                    help="table1: the instructions as IM Table 1 words them, or the fixed paraphrase list "
                         "config/benchmarks/wordings.yaml (paraphrased, misspelled, Chinese, German; same goals)")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"), default=None,
                    help="table1: no episodes; compare two finished runs (DIR, or DIR:VARIANT for one variant "
                         "of a run) episode by episode on the same scenes: flips and McNemar's exact p")
    ap.add_argument("--table", nargs="+", metavar="RUN", default=None,
                    help="table1: no episodes; finished runs (DIR or DIR:VARIANT) side by side, one row per "
                         "task: rate, 95%% Wilson interval, counts, and the mean over tasks (ablation tables)")
    ap.add_argument("--timeout", type=float, default=900.0, help="s per episode before it is cancelled")
    ap.add_argument("--param", action="append", default=[], metavar="NODE:NAME=VALUE",
                    help="table1: a node parameter override for the whole run (repeatable), e.g. "
                         "planner:scoring.normalization=mean; recorded in the settings (run.json, "
                         "results.json), so --compare shows what differed")
    return ap.parse_args(list(argv))


def paired(ns: argparse.Namespace) -> int:
    """--compare / --table: finished IM Table 1 format runs, without running episodes."""
    from .core.paired import Side, ablation_markdown, compare, comparison_markdown

    try:
        if ns.compare is not None:
            print(comparison_markdown(compare(Side.parse(ns.compare[0]), Side.parse(ns.compare[1])), list(FAMILIES)))
        else:
            print(ablation_markdown([Side.parse(t) for t in ns.table], list(FAMILIES),
                                    {k: f.title for k, f in FAMILIES.items()}))
    except (ValueError, OSError) as e:
        print(f"monologue-bench: {e}", file=sys.stderr)
        return 2
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ns = parse_args(sys.argv[1:] if argv is None else argv)
    if ns.list:
        print(SUITES.listing())
        return 0
    suite = SUITES.get(ns.suite)
    if suite.paired and (ns.compare is not None or ns.table is not None):
        return paired(ns)
    return suite.run(ns)


if __name__ == "__main__":
    sys.exit(main())
