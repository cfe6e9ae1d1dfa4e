"""`monologue-bench --suite statler_cups`: S Fig. 2's cup game (core/statler_cups.py) through the LLM
directly, without a graph (a(n) and r(n) per prompting style)."""
from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path
from typing import Any

import yaml

from ..core import statler_cups as cups
from ..harness import Suite, append_jsonl, choose, out_dir, read_jsonl, setup_logging, usage_error

LOG = logging.getLogger("monologue_bench.statler")


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


def expert_channel(llm: dict[str, Any], out: Path) -> None:
    """llm:=expert: the stand-in's side channel, `<out>/expert_truth` unless given. The cup game needs no
    world: the game is in the prompt, and the stand-in answers from it (expert/formats/statler_cups.py)."""
    if llm.get("backend") == "expert" and not (llm.get("expert") or {}).get("truth_dir"):
        channel = out / "expert_truth"
        channel.mkdir(parents=True, exist_ok=True)
        llm.setdefault("expert", {})["truth_dir"] = str(channel)


def run(ns: argparse.Namespace) -> int:
    """`monologue-bench --suite statler_cups`: S Fig. 2's cup game (core/statler_cups.py) through the LLM
    backend of config/llm/<--llm>.yaml directly (no graph). --families: the styles (all or a comma list
    of plain, cot, state); --instructions N: n = 1..N swaps (default 10); --episodes: trials per n (the
    same games for every style; --full: the paper's 100); --seed: the games. `<out>/trials.jsonl`
    (resumable), `<out>/table.md`, `<out>/results.json`."""
    from monologue_bringup.graph import default_config_dir
    from monologue_llm.factory import make_backend_from_params

    setup_logging()
    try:
        styles = choose(ns.families, cups.STYLES, "style")
    except ValueError as e:
        return usage_error(e)
    max_n = ns.instructions or cups.MAX_SWAPS
    trials = 100 if ns.full else ns.episodes
    out = out_dir(ns, f"statler_cups-{ns.llm}-seed{ns.seed}")
    out.mkdir(parents=True, exist_ok=True)
    store = out / "trials.jsonl"
    done = read_jsonl(store, cups.Trial.from_json)
    todo = len(styles) * max_n * trials - sum(1 for t in done if t.style in styles and t.n <= max_n
                                              and t.trial < trials)
    print(f"== Statler cup game (S Fig. 2): styles {styles}, n = 1..{max_n}, {trials} trial(s) each, llm {ns.llm}; "
          f"{todo} to run; output {out}", flush=True)
    cfg = yaml.safe_load((default_config_dir() / "llm" / f"{ns.llm}.yaml").read_text(encoding="utf-8"))
    llm_params = cfg["/**"]["ros__parameters"]["llm"]
    try:
        apply_llm_overrides(llm_params, ns.param)
    except ValueError as e:
        return usage_error(e)
    expert_channel(llm_params, out)
    llm = make_backend_from_params(llm_params, LOG)
    t0 = time.monotonic()

    def store_one(t: Any) -> None:
        append_jsonl(store, t.to_json())
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


SUITE = Suite("statler_cups", "S Fig. 2's cup game through the LLM directly (no graph)", run, variants=(),
              arguments="--families: styles plain,cot,state, --instructions: max swaps, --episodes: trials per n")
