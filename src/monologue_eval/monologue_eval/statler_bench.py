"""`monologue-bench --suite statler`: S Tables I-II (../shared/papers/statler.txt §IV-B) through the real node
graph, for Statler, Statler-Unified, Statler-Auto, CaP and CaP+CoT.

Per (method, episode of config/benchmarks/statler.yaml) the graph is brought up on the kinematic tabletop
(sim_kinematic) with the episode's scene (`sim.scene` and its parameters) and the planner
strategy set to the method; the episode's queries are one instruction, one query per line. The transcript
is scored with core/statler_bench.score_episode and appended to `<out>/episodes.jsonl` (a rerun with the
same --out skips what is there); then `<out>/results.json` and `<out>/table.md` (S Tables I-II beside the
paper's numbers) are written. Options: --variants (all or a comma list of the methods), --families (all
or a comma list of the domains), --instructions N (the first N episodes of each domain), --llm, --seed,
--timeout. `--suite statler_cups`: the cup game (S Fig. 2, a(n) and r(n)), cups_main.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from monologue_bringup.graph import scene_node

from .client import stop_on_signals
from .core.statler_bench import (
    DOMAIN_SCENES,
    METHODS,
    Episode,
    EpisodeScore,
    QueryScore,
    failed_before,
    load_episodes,
    report_markdown,
    score_episode,
)

LOG = logging.getLogger("monologue_bench.statler")
SUITE_FILE = "statler.yaml"
ROBOT = "sim_kinematic"  # the kinematic tabletop (cups, disinfector, weights); --robot is not used


def _choose(text: str, known: Sequence[str], what: str) -> list[str]:
    if text == "all":
        return list(known)
    chosen = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [c for c in chosen if c not in known]
    if unknown or not chosen:
        raise ValueError(f"unknown {what} {unknown or text!r}; choose from {list(known)} or all")
    return chosen


def _kind_names() -> dict[int, str]:
    from monologue_interfaces.msg import TranscriptEvent

    return {getattr(TranscriptEvent, n): n[5:] for n in dir(TranscriptEvent) if n.startswith("KIND_")}


def _data(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text) if text else {}
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


class _Decided(Exception):
    """A query failed: the episode's score is known (S Table II counts only up to the first failure)."""


def run_one(ep: Episode, method: str, robot: str, llm: str, seed: int, out: Path, timeout_s: float,
            to_the_end: bool = False, extra: dict[str, dict[str, str]] | None = None) -> EpisodeScore:
    """One episode of one method on its own graph (brought up and stopped here). Unless `to_the_end`, the
    episode is stopped as soon as a query has failed (its feedback events show the next query starting):
    the score is the same and the 270M model's long failures cost no further LLM calls."""
    from monologue_bringup.up import Supervisor

    from .bench import LineSink
    from .client import run_episode

    kinds = _kind_names()
    seen: list[tuple[str, dict[str, Any]]] = []

    def on_event(e: Any) -> None:
        seen.append((kinds.get(e.kind, str(e.kind)), _data(e.data_json)))
        if not to_the_end and failed_before(ep, method, seen):
            raise _Decided()

    sink = LineSink(out / "graph.log")
    params = {scene_node(robot): ep.scene_parameters(seed),
              "planner": {"strategy": method, "transcript_dir": str(out / "transcripts"),
                          "statler.domain": DOMAIN_SCENES[ep.domain]}}  # the domain's prompt files
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
    events = [(kinds.get(e.kind, str(e.kind)), _data(e.data_json)) for e in result.transcript]
    return score_episode(ep, method, events, "" if result.success else str(result.reason))


def _from_json(d: dict[str, Any]) -> EpisodeScore:
    return EpisodeScore(str(d["episode"]), str(d["domain"]), str(d["method"]), tuple(
        QueryScore(int(q["index"]), bool(q["temporal"]), bool(q["success"]),
                   tuple((str(a), str(b)) for a, b in q["moves"]), tuple(q["said"]), str(q.get("why", "")))
        for q in d["queries"]), int(d["total_queries"]), str(d.get("planner_error", "")))


def main(ns: argparse.Namespace) -> int:
    from monologue_bringup.graph import default_config_dir
    from monologue_bringup.up import parse_node_params

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        episodes = load_episodes(default_config_dir() / "benchmarks" / SUITE_FILE)
        methods = _choose(ns.variants, METHODS, "method")
        domains = _choose(ns.families, list(DOMAIN_SCENES), "domain")
        robot = ROBOT
        extra = parse_node_params(list(getattr(ns, "param", None) or []))
    except ValueError as e:
        print(f"monologue-bench: {e}", file=sys.stderr)
        return 2
    chosen = [e for d in domains for e in [x for x in episodes if x.domain == d][: ns.instructions or None]]
    out = (ns.out or Path("runs") / "bench" / f"statler-{ns.llm}-seed{ns.seed}").resolve()
    out.mkdir(parents=True, exist_ok=True)
    store = out / "episodes.jsonl"
    done = [_from_json(json.loads(line)) for line in store.read_text().splitlines() if line.strip()] \
        if store.is_file() else []
    have = {(s.method, s.episode) for s in done}
    plan = [(m, e) for m in methods for e in chosen if (m, e.id) not in have]
    print(f"== Statler benchmark (S Tables I-II): {len(methods)} method(s) x {len(chosen)} episode(s) on {robot}, "
          f"llm {ns.llm}; {len(plan)} to run; output {out}", flush=True)
    stop_on_signals()
    for n, (method, ep) in enumerate(plan, 1):
        t0 = time.monotonic()
        try:
            score = run_one(ep, method, robot, ns.llm, ns.seed, out, ns.timeout, extra=extra)
        except KeyboardInterrupt:
            print("\n== interrupted; rerun the same command to continue", file=sys.stderr)
            return 130
        except (TimeoutError, RuntimeError) as e:
            if isinstance(e.__context__, KeyboardInterrupt):  # a signal, masked by the graph's shutdown error
                print("\n== interrupted; rerun the same command to continue", file=sys.stderr)
                return 130
            print(f"== [{n}/{len(plan)}] {method} {ep.id}: not scored ({e})", file=sys.stderr)
            continue
        done.append(score)
        with store.open("a", encoding="utf-8") as f:
            f.write(json.dumps(score.to_json(), ensure_ascii=False) + "\n")
        ok, counted = score.counts()
        print(f"== [{n}/{len(plan)}] {method} {ep.id}: {'success' if score.success else 'failure'} "
              f"({ok}/{counted} of {score.total_queries} queries) in {time.monotonic() - t0:.0f} s", flush=True)
    scores = [s for s in done if s.method in methods and s.episode in {e.id for e in chosen}]
    table = report_markdown(scores, ns.llm)
    (out / "table.md").write_text(table, encoding="utf-8")
    (out / "results.json").write_text(json.dumps([s.to_json() for s in scores], indent=1), encoding="utf-8")
    print(table)
    return 0


def apply_llm_overrides(llm: dict[str, Any], items: list[str]) -> None:
    """--param `<node>:llm.<key>=<value>` (e.g. `planner:llm.n_threads=1`) onto the cup game's `llm` block,
    the value read as YAML; any other --param is an error (the cup game runs no node)."""
    for item in items:
        node_key, sep, value = item.partition("=")
        _, _, key = node_key.partition(":")
        if not sep or not key.startswith("llm."):
            raise ValueError(f"--param {item!r}: the cup game takes only <node>:llm.<key>=<value>")
        parts = key.split(".")[1:]
        target = llm
        for part in parts[:-1]:
            target = target.setdefault(part, {})
        target[parts[-1]] = yaml.safe_load(value)


def cups_main(ns: argparse.Namespace) -> int:
    """`monologue-bench --suite statler_cups`: S Fig. 2's cup game (core/statler_cups.py) through the LLM
    backend of config/llm/<--llm>.yaml directly (no graph). --families: the styles (all or a comma list
    of plain, cot, state); --instructions N: n = 1..N swaps (default 10); --episodes: trials per n (the
    same games for every style; --full: the paper's 100); --seed: the games. `<out>/trials.jsonl`
    (resumable), `<out>/table.md`, `<out>/results.json`."""
    from monologue_bringup.graph import default_config_dir
    from monologue_llm.factory import make_backend_from_params

    from .core import statler_cups as cups

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        styles = _choose(ns.families, cups.STYLES, "style")
    except ValueError as e:
        print(f"monologue-bench: {e}", file=sys.stderr)
        return 2
    max_n = ns.instructions or cups.MAX_SWAPS
    trials = 100 if ns.full else ns.episodes
    out = (ns.out or Path("runs") / "bench" / f"statler_cups-{ns.llm}-seed{ns.seed}").resolve()
    out.mkdir(parents=True, exist_ok=True)
    store = out / "trials.jsonl"
    done = [cups.Trial.from_json(json.loads(line)) for line in store.read_text().splitlines() if line.strip()] \
        if store.is_file() else []
    todo = len(styles) * max_n * trials - sum(1 for t in done if t.style in styles and t.n <= max_n
                                              and t.trial < trials)
    print(f"== Statler cup game (S Fig. 2): styles {styles}, n = 1..{max_n}, {trials} trial(s) each, llm {ns.llm}; "
          f"{todo} to run; output {out}", flush=True)
    cfg = yaml.safe_load((default_config_dir() / "llm" / f"{ns.llm}.yaml").read_text(encoding="utf-8"))
    llm_params = cfg["/**"]["ros__parameters"]["llm"]
    try:
        apply_llm_overrides(llm_params, ns.param)
    except ValueError as e:
        print(f"monologue-bench: {e}", file=sys.stderr)
        return 2
    llm = make_backend_from_params(llm_params, LOG)
    t0 = time.monotonic()

    def store_one(t: Any) -> None:
        with store.open("a", encoding="utf-8") as f:
            f.write(json.dumps(t.to_json()) + "\n")
        print(f"== {t.style} n={t.n} trial {t.trial}: {'correct' if t.correct else 'wrong'} "
              f"({time.monotonic() - t0:.0f} s)", flush=True)

    try:
        results = cups.run_trials(llm, styles, range(1, max_n + 1), trials, ns.seed, done, store_one)
    finally:
        llm.close()
    chosen = [t for t in results if t.style in styles and t.n <= max_n and t.trial < trials]
    table = cups.report_markdown(chosen, ns.llm)
    (out / "table.md").write_text(table, encoding="utf-8")
    (out / "results.json").write_text(json.dumps([t.to_json() for t in chosen], indent=1), encoding="utf-8")
    print(table)
    return 0
