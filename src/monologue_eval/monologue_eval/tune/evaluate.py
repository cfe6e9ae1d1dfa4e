"""Paired check of a tuned adapter on examples it never trained on (issue 30).

    python -m monologue_eval.tune evaluate --data runs/tune/data-X --lora <adapter.gguf | ''> --out result.json

Only examples of split `heldout` are used (tune/heldout.py: families, scenes and domains no training example
comes from), a stratified sample of `--per-stratum` per (world, strategy, format, kind), the same sample for
every adapter (seeded), so runs of the frozen (`--lora ''`) and the tuned model pair up example by example:

- score examples: top-1 — does the model give the expert's candidate the highest total log-prob (the
  backend's `score`, as the planners rank) among the example's candidates;
- generate/sample examples: exact — does the greedy answer, cut at the call's stop strings (the example's
  `stop`, else the strategy's: train.DEFAULT_STOPS), equal the expert's (whitespace-stripped); and stopped —
  did the model end the answer itself (a stop string or EOS) within `--max-tokens`.

Runs on the llama.cpp backend, the one `llm:=embedded_tuned` serves. Writes per-example outcomes and the rates
with Wilson 95% intervals to `--out` (JSON); `compare` pairs two such files.
"""
from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.benchmark import wilson
from .examples import Example, read_examples
from .train import DEFAULT_STOPS


def stratum(ex: Example) -> str:
    return f"{ex.world}/{ex.strategy}/{ex.format}/{ex.kind}"


def sample_heldout(examples: Sequence[Example], per_stratum: int, seed: int) -> list[Example]:
    """Up to `per_stratum` held-out examples of every stratum, seeded; training examples are refused."""
    by: dict[str, list[Example]] = {}
    for ex in examples:
        if ex.split != "heldout":
            raise ValueError(f"example {ex.id} is a training example: evaluation uses held-out examples only")
        by.setdefault(stratum(ex), []).append(ex)
    rng = random.Random(seed)
    picked = []
    for key in sorted(by):
        group = sorted(by[key], key=lambda e: e.id)
        picked.append(rng.sample(group, min(per_stratum, len(group))))
    # round-robin over the strata: a run stopped early has still seen every stratum
    return [g[i] for i in range(max((len(g) for g in picked), default=0)) for g in picked if i < len(g)]


def stops_of(ex: Example) -> tuple[str, ...]:
    return ex.stop or DEFAULT_STOPS.get(ex.strategy, ())


def judge(llm: Any, ex: Example, max_tokens: int) -> dict[str, Any]:
    """One example's outcome under backend `llm`."""
    t0 = time.perf_counter()
    if ex.kind == "score":
        res = llm.score(ex.prompt, list(ex.candidates))
        best = max(res.scores, key=lambda s: s.logprob)
        return {"id": ex.id, "stratum": stratum(ex), "kind": ex.kind, "ok": best.text == ex.completion,
                "answer": best.text, "n_candidates": len(ex.candidates), "s": round(time.perf_counter() - t0, 2)}
    gen = llm.generate(ex.prompt, stop=list(stops_of(ex)), max_tokens=max_tokens)
    return {"id": ex.id, "stratum": stratum(ex), "kind": ex.kind, "ok": gen.text.strip() == ex.completion.strip(),
            "stopped": gen.finish_reason == "stop", "answer": gen.text, "s": round(time.perf_counter() - t0, 2)}


def rates(rows: Sequence[dict[str, Any]], key: str = "ok") -> dict[str, Any]:
    """{stratum and "all": {k, n, rate, wilson95}} of `key` over the rows that have it."""
    out: dict[str, Any] = {}
    groups: dict[str, list[bool]] = {}
    for r in rows:
        if key in r:
            groups.setdefault(r["stratum"], []).append(bool(r[key]))
            groups.setdefault("all", []).append(bool(r[key]))
    for g, vals in sorted(groups.items()):
        k, n = sum(vals), len(vals)
        lo, hi = wilson(k, n)
        out[g] = {"k": k, "n": n, "rate": round(k / n, 3), "wilson95": [round(lo, 3), round(hi, 3)]}
    return out


def evaluate(data: Path, lora: str, out: Path, per_stratum: int = 20, seed: int = 0, threads: int = 1,
             max_tokens: int = 64, log: Any = print) -> dict[str, Any]:
    from monologue_llm.llama_cpp_backend import LlamaCppBackend
    from monologue_llm.model_files import embedded_model_path
    from monologue_llm.plugin import adapter_file

    exs = sample_heldout(list(read_examples(data, split="heldout")), per_stratum, seed)
    lora_path = adapter_file(lora) if lora else None
    llm = LlamaCppBackend(embedded_model_path(), n_ctx=4096, n_threads=threads, seed=seed, lora_path=lora_path)
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(".rows.jsonl")  # one line per example as it is judged (a run stopped early)
    partial.write_text("")
    try:
        for i, ex in enumerate(exs):
            rows.append(judge(llm, ex, 256 if ex.strategy == "multitalk" else max_tokens))
            with partial.open("a", encoding="utf-8") as f:
                f.write(json.dumps(rows[-1], ensure_ascii=False) + "\n")
            if log is not None and (i + 1) % 10 == 0:
                log(f"{i + 1}/{len(exs)} examples, {time.perf_counter() - t0:.0f} s")
    finally:
        llm.close()
    result = {"data": str(data), "lora": str(lora_path or ""), "label": "tuned" if lora else "frozen",
              "per_stratum": per_stratum, "seed": seed, "wall_s": round(time.perf_counter() - t0, 1),
              "top1_or_exact": rates(rows), "stopped": rates(rows, "stopped"), "rows": rows}
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    return result


def compare(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Paired outcomes of two runs over their common examples: per stratum and overall, both rates and the
    discordant pairs (b right where a is wrong, and the reverse)."""
    ra = {r["id"]: r for r in a["rows"]}
    out: dict[str, Any] = {}
    for r in b["rows"]:
        if r["id"] not in ra:
            continue
        for g in (r["stratum"], "all"):
            c = out.setdefault(g, {"n": 0, "a": 0, "b": 0, "b_only": 0, "a_only": 0})
            x, y = bool(ra[r["id"]]["ok"]), bool(r["ok"])
            c["n"] += 1
            c["a"] += x
            c["b"] += y
            c["b_only"] += y and not x
            c["a_only"] += x and not y
    return out


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--data", type=Path, required=True, help="data set directory (its heldout split is used)")
    ap.add_argument("--lora", default="", help="GGUF LoRA adapter (a bare name is one of monologue_llm/adapters/); "
                                               "'' = the frozen model")
    ap.add_argument("--out", type=Path, required=True, help="result JSON")
    ap.add_argument("--per-stratum", type=int, default=20, help="held-out examples per world/strategy/format/kind")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="llama.cpp threads")
    ap.add_argument("--max-tokens", type=int, default=64, help="generate: new tokens (multitalk: 256)")
    ap.add_argument("--compare", type=Path, default=None, help="another result JSON to pair with (printed)")


def main(ns: argparse.Namespace) -> int:
    res = evaluate(ns.data, ns.lora, ns.out, ns.per_stratum, ns.seed, ns.threads, ns.max_tokens)
    print(json.dumps({k: res[k] for k in ("label", "lora", "wall_s", "top1_or_exact", "stopped")}, indent=1))
    if ns.compare is not None:
        print(json.dumps(compare(json.loads(ns.compare.read_text()), res), indent=1))
    return 0
