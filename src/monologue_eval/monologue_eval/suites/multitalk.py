"""The MultiTalk benchmark through the real node graph: MultiTalk (full pipeline), its Planner + Simulator
ablation and Inner Monologue on the same matching-bowls scenes of the kinematic tabletop.

    python -m monologue_eval.suites.multitalk [--scenes 2] [--seed 1] [--blocks 2]
        [--variants all|full,no_analyzer,im] [--llm embedded|openai|expert] [--timeout 600] [--out DIR]
        [--param planner:multitalk.max_rounds=3 ...]

Per (variant, scene seed) a graph is brought up on robot sim_kinematic with the scene, the planner's
strategy (and ablation) set for the variant, and "Put the blocks in their matching bowls." is run; the
final world is judged by the task's reward; the MultiTalk counts come from the transcript's summary
event (core/multitalk_bench.py). With `--llm expert` the task's goal goes to the stand-in's side channel
(<out>/expert_truth/<variant>-seed<seed>/); `--param planner:multitalk.planner_decoding=generate` lets the
Planner write its answers (questions and perception reruns too), `--param planner:llm.expert.error_rate=0.2`
gives the stand-in its error rate. Rows are appended to `<out>/episodes.jsonl` (a rerun with the same
--out skips what is there); `<out>/table.md` gets the table. `main(ns)` also takes monologue-bench's
namespace (variants, instructions = scenes, seed, llm, timeout, out) for a `--suite multitalk` (`SUITE`).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from monologue_bringup.graph import EXPERT, LLMS
from monologue_bringup.up import parse_node_params

from ..core.multitalk_bench import VARIANTS, Row, planner_params, summary_counts, table
from ..harness import (
    LineSink,
    Suite,
    append_jsonl,
    error_name,
    out_dir,
    read_jsonl,
    record_expert_task,
    run_each,
    setup_logging,
)

TASK = "Put the blocks in their matching bowls."
GOAL = {"family": "matching_bowls"}  # the task's goal for the expert stand-in (monologue_domain.expert.tabletop)
WORLD = "tabletop"
ROBOT = "sim_kinematic"


def run_one(variant: str, seed: int, blocks: int, llm: str, out: Path, timeout_s: float,
            extra: dict[str, dict[str, str]]) -> Row:
    """One episode on its own graph (brought up and stopped here)."""
    from monologue_bringup.up import Supervisor
    from monologue_domain.tasks import matching_bowls_done

    from ..client import run_episode, world_states

    sink = LineSink(out / "graph.log")
    params: dict[str, dict[str, str]] = {
        "skills": {"sim.seed": str(seed), "sim.num_blocks": str(blocks), "sim.num_bowls": str(max(blocks, 3)),
                   "sim.matching_bowls": "true"},
        "planner": {**planner_params(variant), "transcript_dir": str(out / "transcripts")}}
    if llm == EXPERT:  # the stand-in's side channel, one per episode (kept with the results)
        params["planner"]["llm.expert.truth_dir"] = str(out / "expert_truth" / f"{variant}-seed{seed}")
    for node, p in extra.items():
        params.setdefault(node, {}).update(p)
    sup = Supervisor(ROBOT, llm, node_params=params, sink=sink, log_level="warn")
    record_expert_task(sup.expert_truth_dir, TASK, WORLD, GOAL)
    t0 = time.monotonic()
    try:
        sup.start()
        result, objects = run_episode(TASK, timeout_s, print_event=lambda _e: None)
    finally:
        sup.stop()
        sink.close()
    events = []
    for e in result.transcript:
        try:
            events.append(json.loads(e.data_json) if e.data_json else {})
        except json.JSONDecodeError:
            events.append({})
    success = bool(objects) and matching_bowls_done(world_states(objects))
    return Row(variant, seed, success, error_name(int(result.error_code)),
               int(result.steps_taken), summary_counts(events), time.monotonic() - t0)


def _variants(text: str) -> list[str]:
    if text == "all":
        return list(VARIANTS)
    chosen = [t.strip() for t in text.split(",") if t.strip()]
    if not chosen or any(c not in VARIANTS for c in chosen):
        raise ValueError(f"variants: choose from {list(VARIANTS)} or all, got {text!r}")
    return chosen


def main(ns: argparse.Namespace) -> int:
    setup_logging()
    try:
        variants = _variants(ns.variants)
        extra = parse_node_params(list(getattr(ns, "param", None) or []))
    except ValueError as e:
        print(f"multitalk bench: {e}", file=sys.stderr)
        return 2
    scenes = [ns.seed + i for i in range(ns.instructions or 2)]
    blocks = int(getattr(ns, "blocks", 2) or 2)
    out = out_dir(ns, f"multitalk-{ns.llm}-seed{ns.seed}")
    out.mkdir(parents=True, exist_ok=True)
    store = out / "episodes.jsonl"
    rows = read_jsonl(store, Row.from_json)
    have = {(r.variant, r.seed) for r in rows}
    todo = [(v, s) for s in scenes for v in variants if (v, s) not in have]
    print(f"== MultiTalk benchmark: {len(variants)} variant(s) x {len(scenes)} scene(s) on {ROBOT}, llm {ns.llm}; "
          f"{len(todo)} to run; output {out}", flush=True)

    def scored(n: int, item: tuple[str, int], row: Row, _seconds: float) -> None:
        rows.append(row)
        append_jsonl(store, row.to_json())
        print(f"== [{n}/{len(todo)}] {item[0]} seed {item[1]}: {'success' if row.success else 'failure'} "
              f"({row.planner_error}, {row.skills} skills, {dict(row.counts)}) in {row.seconds:.0f} s", flush=True)

    rc = run_each(todo, lambda item: run_one(item[0], item[1], blocks, ns.llm, out, ns.timeout, extra),
                  lambda item: f"{item[0]} seed {item[1]}", scored)
    if rc:
        return rc
    chosen = [r for r in rows if r.variant in variants and r.seed in scenes]
    text = table(chosen, ns.llm, list(getattr(ns, "param", None) or []))
    (out / "table.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m monologue_eval.suites.multitalk", description=__doc__.split("\n")[0])
    ap.add_argument("--variants", default="all", help="all, or a comma list of " + ", ".join(VARIANTS))
    ap.add_argument("--scenes", dest="instructions", type=int, default=2, help="scenes (seeds seed, seed+1, ...)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--blocks", type=int, default=2, choices=(1, 2, 3))
    ap.add_argument("--llm", choices=LLMS, default="embedded")
    ap.add_argument("--timeout", type=float, default=600.0, help="s per episode")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--param", action="append", default=[],
                    help="node:name=value (e.g. planner:multitalk.max_rounds=3)")
    return ap.parse_args(list(argv))


SUITE = Suite("multitalk", "MultiTalk's variants beside IM on tabletop scenes of sim_kinematic", main,
              variants=tuple(VARIANTS), arguments="--instructions: scenes, seeds --seed, --seed+1, ...")

if __name__ == "__main__":
    sys.exit(main(parse_args(sys.argv[1:])))
