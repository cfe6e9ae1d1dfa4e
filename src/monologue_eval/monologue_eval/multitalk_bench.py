"""The MultiTalk benchmark through the real node graph: MultiTalk (full pipeline), its Planner + Simulator
ablation and Inner Monologue on the same matching-bowls scenes of the kinematic tabletop.

    python -m monologue_eval.multitalk_bench [--scenes 2] [--seed 1] [--blocks 2]
        [--variants all|full,no_analyzer,im] [--llm embedded|openai] [--timeout 600] [--out DIR]
        [--param planner:multitalk.max_rounds=3 ...]

Per (variant, scene seed) a graph is brought up on robot sim_kinematic with the scene, the planner's
strategy (and ablation) set for the variant, and "Put the blocks in their matching bowls." is run; the
final world is judged by the task's reward; the MultiTalk counts come from the transcript's summary
event (core/multitalk_bench.py). Rows are appended to `<out>/episodes.jsonl` (a rerun with the same
--out skips what is there); `<out>/table.md` gets the table. `main(ns)` also takes monologue-bench's
namespace (variants, instructions = scenes, seed, llm, timeout, out) for a `--suite multitalk`.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from monologue_bringup.up import parse_node_params

from .client import stop_on_signals
from .core.multitalk_bench import VARIANTS, Row, planner_params, summary_counts, table

TASK = "Put the blocks in their matching bowls."
ROBOT = "sim_kinematic"


def run_one(variant: str, seed: int, blocks: int, llm: str, out: Path, timeout_s: float,
            extra: dict[str, dict[str, str]]) -> Row:
    """One episode on its own graph (brought up and stopped here)."""
    from monologue_bringup.up import Supervisor
    from monologue_domain.tasks import matching_bowls_done

    from .bench import LineSink
    from .client import run_episode, world_states

    sink = LineSink(out / "graph.log")
    params: dict[str, dict[str, str]] = {
        "skills": {"sim.seed": str(seed), "sim.num_blocks": str(blocks), "sim.num_bowls": str(max(blocks, 3)),
                   "sim.matching_bowls": "true"},
        "planner": {**planner_params(variant), "transcript_dir": str(out / "transcripts")}}
    for node, p in extra.items():
        params.setdefault(node, {}).update(p)
    sup = Supervisor(ROBOT, llm, node_params=params, sink=sink, log_level="warn")
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
    from monologue_interfaces.action import ExecuteInstruction

    names = {getattr(ExecuteInstruction.Result, n): n for n in dir(ExecuteInstruction.Result)
             if n.isupper() and isinstance(getattr(ExecuteInstruction.Result, n), int)}
    success = bool(objects) and matching_bowls_done(world_states(objects))
    return Row(variant, seed, success, names.get(int(result.error_code), str(result.error_code)),
               int(result.steps_taken), summary_counts(events), time.monotonic() - t0)


def _variants(text: str) -> list[str]:
    if text == "all":
        return list(VARIANTS)
    chosen = [t.strip() for t in text.split(",") if t.strip()]
    if not chosen or any(c not in VARIANTS for c in chosen):
        raise ValueError(f"variants: choose from {list(VARIANTS)} or all, got {text!r}")
    return chosen


def main(ns: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        variants = _variants(ns.variants)
        extra = parse_node_params(list(getattr(ns, "param", None) or []))
    except ValueError as e:
        print(f"multitalk bench: {e}", file=sys.stderr)
        return 2
    scenes = [ns.seed + i for i in range(ns.instructions or 2)]
    blocks = int(getattr(ns, "blocks", 2) or 2)
    out = (ns.out or Path("runs") / "bench" / f"multitalk-{ns.llm}-seed{ns.seed}").resolve()
    out.mkdir(parents=True, exist_ok=True)
    store = out / "episodes.jsonl"
    rows = [Row.from_json(json.loads(line)) for line in store.read_text().splitlines() if line.strip()] \
        if store.is_file() else []
    have = {(r.variant, r.seed) for r in rows}
    todo = [(v, s) for s in scenes for v in variants if (v, s) not in have]
    print(f"== MultiTalk benchmark: {len(variants)} variant(s) x {len(scenes)} scene(s) on {ROBOT}, llm {ns.llm}; "
          f"{len(todo)} to run; output {out}", flush=True)
    stop_on_signals()
    for n, (variant, seed) in enumerate(todo, 1):
        try:
            row = run_one(variant, seed, blocks, ns.llm, out, ns.timeout, extra)
        except KeyboardInterrupt:
            print("\n== interrupted; rerun the same command to continue", file=sys.stderr)
            return 130
        except (TimeoutError, RuntimeError) as e:
            if isinstance(e.__context__, KeyboardInterrupt):  # a signal, masked by the graph's shutdown error
                print("\n== interrupted; rerun the same command to continue", file=sys.stderr)
                return 130
            print(f"== [{n}/{len(todo)}] {variant} seed {seed}: not scored ({e})", file=sys.stderr)
            continue
        rows.append(row)
        with store.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row.to_json()) + "\n")
        print(f"== [{n}/{len(todo)}] {variant} seed {seed}: {'success' if row.success else 'failure'} "
              f"({row.planner_error}, {row.skills} skills, {dict(row.counts)}) in {row.seconds:.0f} s", flush=True)
    chosen = [r for r in rows if r.variant in variants and r.seed in scenes]
    text = table(chosen, ns.llm)
    (out / "table.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m monologue_eval.multitalk_bench", description=__doc__.split("\n")[0])
    ap.add_argument("--variants", default="all", help="all, or a comma list of " + ", ".join(VARIANTS))
    ap.add_argument("--scenes", dest="instructions", type=int, default=2, help="scenes (seeds seed, seed+1, ...)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--blocks", type=int, default=2, choices=(1, 2, 3))
    ap.add_argument("--llm", choices=("embedded", "openai"), default="embedded")
    ap.add_argument("--timeout", type=float, default=600.0, help="s per episode")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--param", action="append", default=[],
                    help="node:name=value (e.g. planner:multitalk.max_rounds=3)")
    return ap.parse_args(list(argv))


if __name__ == "__main__":
    sys.exit(main(parse_args(sys.argv[1:])))
