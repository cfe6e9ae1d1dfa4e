"""`monologue-bench --suite statler`: S Tables I-II (../shared/papers/statler.txt §IV-B) through the real node
graph, for Statler, Statler-Unified, Statler-Auto, CaP and CaP+CoT.

Per (method, episode of config/benchmarks/statler.yaml) the graph is brought up on the kinematic tabletop
(sim_kinematic) with the episode's scene (`sim.scene` and its parameters) and the planner
strategy set to the method; the episode's queries are one instruction, one query per line. The transcript
is scored with core/statler_bench.score_episode and appended to `<out>/episodes.jsonl` (a rerun with the
same --out skips what is there); then `<out>/results.json` and `<out>/table.md` (S Tables I-II beside the
paper's numbers) are written. Options: --variants (all or a comma list of the methods), --families (all
or a comma list of the domains), --instructions N (the first N episodes of each domain), --llm, --seed,
--timeout. `--suite statler_cups` (statler_cups.py): the cup game (S Fig. 2, a(n) and r(n)).

`--llm expert` (the expert stand-in, issue 29): each episode gets its own side channel,
`<out>/expert_truth/<method>-<episode>/`, so no truth of another scene is ever read. No task goal is
written: a Statler query says what it wants, and the hidden state it depends on (covered blocks, dirt,
weights) is in the kinematic backend's world.json (`extra["statler"]`, monologue_domain.expert.statler).
"""
from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Any

from monologue_bringup.graph import EXPERT, scene_node

from ..core.statler_bench import (
    DOMAIN_SCENES,
    METHODS,
    Episode,
    EpisodeScore,
    QueryScore,
    decided_early,
    load_episodes,
    report_markdown,
    score_episode,
)
from ..harness import (
    LineSink,
    Suite,
    append_jsonl,
    choose,
    event_data,
    out_dir,
    read_jsonl,
    run_each,
    setup_logging,
    transcript_kinds,
    usage_error,
)

LOG = logging.getLogger("monologue_bench.statler")
SUITE_FILE = "statler.yaml"
ROBOT = "sim_kinematic"  # the kinematic tabletop (cups, disinfector, weights); --robot is not used


class _Decided(Exception):
    """A query failed: the episode's score is known (S Table II counts only up to the first failure)."""


def run_one(ep: Episode, method: str, robot: str, llm: str, seed: int, out: Path, timeout_s: float,
            to_the_end: bool = False, extra: dict[str, dict[str, str]] | None = None) -> EpisodeScore:
    """One episode of one method on its own graph (brought up and stopped here). Unless `to_the_end`, the
    episode is stopped as soon as a query has failed (its feedback events show the next query starting):
    the score is the same and the 270M model's long failures cost no further LLM calls."""
    from monologue_bringup.up import Supervisor

    from ..client import run_episode

    kinds = transcript_kinds()
    seen: list[tuple[str, dict[str, Any]]] = []
    indices: list[int] = []

    def on_event(e: Any) -> None:
        seen.append((kinds.get(e.kind, str(e.kind)), event_data(e.data_json)))
        indices.append(int(e.index))
        if not to_the_end and decided_early(ep, method, seen, indices):
            raise _Decided()

    sink = LineSink(out / "graph.log")
    params = {scene_node(robot): ep.scene_parameters(seed),
              "planner": {"strategy": method, "transcript_dir": str(out / "transcripts"),
                          "statler.domain": DOMAIN_SCENES[ep.domain]}}  # the domain's prompt files
    if llm == EXPERT:  # the stand-in's side channel: one per episode, so no truth of another scene is ever read
        params["planner"]["llm.expert.truth_dir"] = str(out / "expert_truth" / f"{method}-{ep.id}")
    for node, p in (extra or {}).items():  # --param node:name=value (e.g. planner:statler.constrained=true)
        params.setdefault(node, {}).update(p)
    sup = Supervisor(robot, llm, node_params=params, sink=sink, log_level="warn")
    try:
        sup.start()
        try:
            result, _objects = run_episode(ep.instruction, timeout_s, print_event=on_event)
        except _Decided:
            return score_episode(ep, method, seen)
    finally:
        sup.stop()
        sink.close()
    events = [(kinds.get(e.kind, str(e.kind)), event_data(e.data_json)) for e in result.transcript]
    return score_episode(ep, method, events, "" if result.success else str(result.reason))


def _from_json(d: dict[str, Any]) -> EpisodeScore:
    return EpisodeScore(str(d["episode"]), str(d["domain"]), str(d["method"]), tuple(
        QueryScore(int(q["index"]), bool(q["temporal"]), bool(q["success"]),
                   tuple((str(a), str(b)) for a, b in q["moves"]), tuple(q["said"]), str(q.get("why", "")))
        for q in d["queries"]), int(d["total_queries"]), str(d.get("planner_error", "")))


def run(ns: argparse.Namespace) -> int:
    """`monologue-bench --suite statler` (arguments parsed by bench.parse_args)."""
    from monologue_bringup.graph import default_config_dir
    from monologue_bringup.up import parse_node_params

    setup_logging()
    try:
        episodes = load_episodes(default_config_dir() / "benchmarks" / SUITE_FILE)
        methods = choose(ns.variants, METHODS, "method")
        domains = choose(ns.families, list(DOMAIN_SCENES), "domain")
        robot = ROBOT
        extra = parse_node_params(list(getattr(ns, "param", None) or []))
    except ValueError as e:
        return usage_error(e)
    chosen = [e for d in domains for e in [x for x in episodes if x.domain == d][: ns.instructions or None]]
    out = out_dir(ns, f"statler-{ns.llm}-seed{ns.seed}")
    out.mkdir(parents=True, exist_ok=True)
    store = out / "episodes.jsonl"
    done = read_jsonl(store, _from_json)
    have = {(s.method, s.episode) for s in done}
    plan = [(m, e) for m in methods for e in chosen if (m, e.id) not in have]
    print(f"== Statler benchmark (S Tables I-II): {len(methods)} method(s) x {len(chosen)} episode(s) on {robot}, "
          f"llm {ns.llm}; {len(plan)} to run; output {out}", flush=True)

    def one(item: tuple[str, Episode]) -> EpisodeScore:
        return run_one(item[1], item[0], robot, ns.llm, ns.seed, out, ns.timeout, extra=extra)

    def scored(n: int, item: tuple[str, Episode], score: EpisodeScore, seconds: float) -> None:
        done.append(score)
        append_jsonl(store, score.to_json(), ensure_ascii=False)
        ok, counted = score.counts()
        print(f"== [{n}/{len(plan)}] {item[0]} {item[1].id}: {'success' if score.success else 'failure'} "
              f"({ok}/{counted} of {score.total_queries} queries) in {seconds:.0f} s", flush=True)

    rc = run_each(plan, one, lambda item: f"{item[0]} {item[1].id}", scored)
    if rc:
        return rc
    scores = [s for s in done if s.method in methods and s.episode in {e.id for e in chosen}]
    table = report_markdown(scores, ns.llm)
    (out / "table.md").write_text(table, encoding="utf-8")
    (out / "results.json").write_text(json.dumps([s.to_json() for s in scores], indent=1), encoding="utf-8")
    print(table)
    return 0


SUITE = Suite("statler", "S Tables I-II on sim_kinematic", run, variants=tuple(METHODS),
              arguments="--variants: methods, --families: domains, --instructions: episodes per domain")
