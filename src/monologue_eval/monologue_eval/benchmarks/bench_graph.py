"""Planning time through the node graph (prints numbers; no assertions).

Run: `. scripts/env.sh && python -m monologue_eval.benchmarks.bench_graph [--episodes 3] [--param node:name=value]`

The demo's episode on the kinematic world, as `monologue-demo robot:=sim_kinematic blocks:=3 seed:=N`
runs it: "Put the blocks in their matching bowls." with 3 blocks and their 3 bowls, the embedded model,
one fresh graph per episode (seeds 0, 1, ...). The goal is sent once the planner has prefilled its
prompt preamble (it does so when it starts; `--no-wait-prefill` sends it as soon as the planner answers).
Per episode: the planner's LLM time of every step (its step log line), the episode's time from goal to
result (the transcript's first and last stamps), and whether the world satisfies the instruction.
Targets (issue 29): <= 2 s of LLM time for every step, the first included; the 3-block episode <= 15 s.
`--param planner:llm.tree_scoring=false` measures candidate-by-candidate scoring instead of the default.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from monologue_bringup.graph import scene_node
from monologue_bringup.up import Supervisor, parse_node_params

from ..client import run_episode, world_states

INSTRUCTION = "Put the blocks in their matching bowls."
STEP_TARGET_S = 2.0  # s of LLM time per step
EPISODE_TARGET_S = 15.0  # s from goal to result, 3-block episode on the kinematic world
PREFILL_WAIT_S = 300.0  # s the goal waits for the planner's prefill log line at most
# the planner's step line (planner_node.core.scoring) and its prefill line (planner_node.core.runner)
STEP_LINE = re.compile(r"step (\d+): chose .*; prompt (\d+) tokens, (\d+) new; LLM ([\d.]+) s, step ([\d.]+) s")
PREFILL_LINE = re.compile(r"prefilled the \S+ preamble: (\d+) tokens in ([\d.]+) s")


@dataclass
class Steps:
    """What the planner logged: per step (step, prompt tokens, new tokens, LLM s), and the prefill."""

    steps: list[tuple[int, int, int, float]] = field(default_factory=list)
    prefill: tuple[int, float] | None = None
    prefilled: threading.Event = field(default_factory=threading.Event)

    def __call__(self, line: str) -> None:
        if m := STEP_LINE.search(line):
            self.steps.append((int(m[1]), int(m[2]), int(m[3]), float(m[4])))
        elif m := PREFILL_LINE.search(line):
            self.prefill = (int(m[1]), float(m[2]))
            self.prefilled.set()


def episode_seconds(transcript: Path) -> float:
    """Seconds between the transcript's first and last records (goal accepted -> episode ended)."""
    stamps = [float(json.loads(line)["stamp"]) for line in transcript.read_text(encoding="utf-8").splitlines()
              if line.strip()]
    return max(stamps) - min(stamps) if stamps else float("nan")


def one(seed: int, params: dict[str, dict[str, str]], wait_prefill: bool,
        timeout_s: float) -> tuple[Steps, float, bool]:
    """One fresh graph and one episode: (the planner's steps, episode s, world satisfies the instruction)."""
    from monologue_domain.tasks import matching_bowls_done

    log = Steps()
    node_params: dict[str, dict[str, str]] = {
        scene_node("sim_kinematic"): {"sim.seed": str(seed), "sim.num_blocks": "3", "sim.num_bowls": "3",
                                      "sim.matching_bowls": "true"},
        "planner": {"transcript_dir": tempfile.mkdtemp(prefix="bench-graph-")},
    }
    for node, values in params.items():
        node_params.setdefault(node, {}).update(values)
    sup = Supervisor("sim_kinematic", "embedded", node_params=node_params, sink=log, log_level="info")
    sup.start()
    try:
        if wait_prefill and not log.prefilled.wait(PREFILL_WAIT_S):
            print(f"   seed {seed}: no prefill line within {PREFILL_WAIT_S:.0f} s; sending the goal anyway")
        result, objects = run_episode(INSTRUCTION, timeout_s, print_event=lambda _e: None)
    finally:
        sup.stop()
    done = bool(objects) and matching_bowls_done(world_states(objects))
    return log, episode_seconds(Path(result.transcript_path)), done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=3, help="episodes (seeds 0, 1, ...), one graph each")
    ap.add_argument("--seed", type=int, default=0, help="first scene seed")
    ap.add_argument("--param", action="append", default=[], metavar="NODE:NAME=VALUE",
                    help="a node parameter override (repeatable), e.g. planner:llm.tree_scoring=false")
    ap.add_argument("--no-wait-prefill", action="store_true",
                    help="send the goal as soon as the planner answers, not after its preamble prefill")
    ap.add_argument("--timeout", type=float, default=600.0, help="s per episode")
    ns = ap.parse_args()
    params = parse_node_params(ns.param)
    first: list[float] = []
    later: list[float] = []
    three: list[float] = []
    walls: list[float] = []
    for seed in range(ns.seed, ns.seed + ns.episodes):
        t0 = time.monotonic()
        log, wall, done = one(seed, params, not ns.no_wait_prefill, ns.timeout)
        llm = [s[3] for s in log.steps]
        first += [s[3] for s in log.steps if s[0] == 1]
        later += [s[3] for s in log.steps if s[0] > 1]
        walls.append(wall)
        if len(log.steps) == 4 and done:
            three.append(wall)
        prefill = f"prefill {log.prefill[0]} tokens in {log.prefill[1]:.1f} s" if log.prefill else "no prefill line"
        print(f"seed {seed}: {len(log.steps)} steps ({'goal reached' if done else 'goal not reached'}), episode "
              f"{wall:.1f} s, LLM {sum(llm):.1f} s; per step " + ", ".join(
                  f"{s[3]:.2f} s ({s[2]} new)" for s in log.steps)
              + f"; {prefill}; graph {time.monotonic() - t0:.0f} s in all", flush=True)
    steps = first + later
    if not steps:
        print("no steps logged")
        return
    print(f"LLM time per step: first steps median {statistics.median(first):.2f} s (max {max(first):.2f}, "
          f"n {len(first)}); later steps median {statistics.median(later) if later else float('nan'):.2f} s "
          f"(max {max(later) if later else float('nan'):.2f}, n {len(later)})")
    worst = max(steps)
    print(f"target: <= {STEP_TARGET_S:.0f} s of LLM time for every step: {sum(s <= STEP_TARGET_S for s in steps)}"
          f"/{len(steps)} steps, max {worst:.2f} s: {'met' if worst <= STEP_TARGET_S else 'NOT met'}")
    spread = f", mean {statistics.mean(three):.1f} s, max {max(three):.1f} s" if three else ""
    print(f"episodes: mean {statistics.mean(walls):.1f} s over {len(walls)}; 3 moves + done and goal reached: "
          f"{len(three)} episodes{spread}")
    if three:
        print(f"target: the 3-block episode <= {EPISODE_TARGET_S:.0f} s: max {max(three):.1f} s: "
              f"{'met' if max(three) <= EPISODE_TARGET_S else 'NOT met'}")


if __name__ == "__main__":
    main()
