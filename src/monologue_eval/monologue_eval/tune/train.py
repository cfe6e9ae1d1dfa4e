"""LoRA training of the embedded planner on CPU (issue 30): peft LoRA on Gemma 3 270M, float32, fixed seed,
loss on the completion tokens only.

    python -m monologue_eval.tune train --data runs/tune/data-X --out runs/tune/train-X [--time-budget-min 80]

The base model is the embedded GGUF (the one the product serves), dequantised to float32 by transformers
(monologue_llm.transformers_backend.convert_gguf, cached). Examples of split `train` only are used; each is
`prompt + completion` tokenized as the backends do (BOS + text), and the loss runs over the completion's tokens
(the suffix after the common prefix of tokenize(prompt) and tokenize(prompt + completion), as the backends score).

Long prompts: only the last `--grad-context` prompt tokens and the completion are evaluated with gradients; the
prompt before them runs without gradients through the current adapter (its keys and values are exact, only the
adapter's effect on them gets no gradient). This is what makes a 1,500-token few-shot prompt affordable on 2 cores.

Shared preambles (`--share-prefix`, default on): the examples are sorted by their token ids and cut into batches
of `--batch` neighbours, so a batch shares a long prefix (the strategy's few-shot preamble, often the episode's
transcript too); the batches' order is shuffled by the seed. The batch's common prefix runs ONCE per step,
without gradients, through the current adapter, and every example continues from a copy of its keys and values.
The forward values are exactly those of a full pass; as above, only the adapter's effect on the prefix's keys
and values gets no gradient (the same approximation as `--grad-context`, now shared across the batch). So an
example's prompt tokens with gradients are those after the batch's common prefix, at most `--grad-context`
of them and at least its last one: for neighbours from one episode the common prefix is nearly the whole
shorter prompt, and the LoRA weights then learn from the answer positions (q, o, MLP, and the answer's own
keys and values) rather than from the prompt's keys and values.

Stop: generate/sample completions end with the call's first stop string (the example's `stop`, or for older
data sets the strategy's, `terminator`), so the tuned model learns to end its answer where the planner cuts it.

`--subset N` trains on N examples drawn from the train split, stratified by (world, strategy, format, kind):
every stratum present keeps at least min(its size, `--stratum-min`) examples, the rest is proportional.

Writes into `--out`: `checkpoint/` (adapter, optimizer, schedule, data order, loss log; `--resume` continues
from it), `adapter/` (the final peft adapter: adapter_config.json + adapter_model.safetensors), `loss.csv`,
`loss.png` (matplotlib, Agg) and `summary.json` (hyper-parameters, data counts, tokens/s, examples/s).
"""
from __future__ import annotations

import argparse
import csv
import json
import logging
import math
import os
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .examples import Example, read_examples

_LOG = logging.getLogger(__name__)
ATTN_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")
MLP_TARGETS = ("gate_proj", "up_proj", "down_proj")
CHECKPOINT = "checkpoint"
ADAPTER = "adapter"
IGNORE = -100  # label of a token without loss


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of one training run (written to summary.json and the model card)."""

    rank: int = 16
    alpha: float = 32.0
    dropout: float = 0.0  # 0: a step is a pure function of the seed and the data
    mlp: bool = False  # LoRA on the MLP projections too (not only attention)
    lr: float = 2e-4
    warmup_steps: int = 10
    weight_decay: float = 0.0
    batch: int = 4  # examples per optimizer step (gradient accumulation; one example per forward pass)
    epochs: float = 1.0
    max_steps: int = 0  # 0 = epochs decide
    grad_context: int = 128  # prompt tokens before the completion evaluated with gradients
    max_tokens: int = 4096  # examples longer than this (prompt + completion) are skipped
    seed: int = 0
    threads: int = 0  # torch threads; 0 = torch's default
    save_every: int = 50  # steps between checkpoints
    time_budget_min: float = 0.0  # stop (after a checkpoint) when this much wall time is used; 0 = none
    share_prefix: bool = True  # batches of token-sorted neighbours sharing one no-grad prefix pass
    subset: int = 0  # train on this many stratified examples of the train split; 0 = all
    stratum_min: int = 24  # examples each (world, strategy, format, kind) keeps in a subset (if it has them)

    @property
    def targets(self) -> tuple[str, ...]:
        return ATTN_TARGETS + (MLP_TARGETS if self.mlp else ())


@dataclass(frozen=True)
class Encoded:
    """One example as token ids: `ids[:start]` is context, `ids[start:]` the completion (loss)."""

    id: str
    ids: tuple[int, ...]
    start: int


# Where each strategy's generate/sample answers end, for data sets recorded before examples carried `stop`
# (the planners' calls: inner_monologue/generation.py, cape/loop.py STOP, multitalk/prompts.py Conversation.stop).
DEFAULT_STOPS: dict[str, tuple[str, ...]] = {
    "inner_monologue": ("\n",),
    "saycan": ("\n",),
    "cape": ("\n",),
    "multitalk": ("\n\nUser:",),  # the prompt's turn separator; contains the planner's stop "\nUser:"
}


def terminator(ex: Example) -> str:
    """The text the tuned model must write after a generate/sample answer so the planner's stop string (or
    nothing, for score examples) ends it: the example's first stop string, else its strategy's; "" for score
    examples and for generate examples without a known stop (the model then ends with EOS, see `encode`)."""
    if ex.kind == "score":
        return ""
    stops = ex.stop or DEFAULT_STOPS.get(ex.strategy, ())
    return stops[0] if stops else ""


def encode(tokenize: Any, ex: Example, eos: int | None = None) -> Encoded | None:
    """The example's tokens (completion + `terminator`; EOS `eos` for a generate/sample example without a stop
    string); None when its completion adds no token."""
    ptoks = tokenize(ex.prompt)
    end = terminator(ex)
    full = tokenize(ex.prompt + ex.completion + end)
    if ex.kind != "score" and not end and eos is not None:
        full = [*full, int(eos)]
    start = 0
    for a, b in zip(ptoks, full, strict=False):
        if a != b:
            break
        start += 1
    if start >= len(full):
        return None
    return Encoded(ex.id, tuple(full), start)


def hf_tokenize(tok: Any) -> Any:
    """`text -> [BOS] + ids`, as monologue_llm's backends tokenize (special-token syntax not parsed)."""
    bos = tok.bos_token_id

    def run(text: str) -> list[int]:
        ids = [int(t) for t in tok(text, add_special_tokens=False, split_special_tokens=True)["input_ids"]]
        return ([int(bos)] if bos is not None else []) + ids

    return run


def base_model_dir(base: str) -> Path:
    """The Hugging Face directory of the base model: `base` if it is one, else the (cached) float32 conversion
    of the GGUF `base` ("" = the embedded Gemma 3 270M)."""
    from monologue_llm.model_files import default_cache_dir, embedded_model_path
    from monologue_llm.transformers_backend import convert_gguf

    path = Path(base) if base else embedded_model_path()
    if path.is_dir():
        return path
    return convert_gguf(path, default_cache_dir() / "transformers", _LOG)


def load_model(model_dir: Path, cfg: TrainConfig) -> tuple[Any, Any]:
    """(tokenizer, peft model with fresh LoRA weights from `cfg.seed`), float32 on the CPU."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, local_files_only=True)
    torch.manual_seed(cfg.seed)
    # peft annotates lora_alpha as int but scales by the float alpha / r
    lcfg = LoraConfig(r=cfg.rank, lora_alpha=cfg.alpha, lora_dropout=cfg.dropout,  # type: ignore[arg-type]
                      bias="none", target_modules=list(cfg.targets), task_type="CAUSAL_LM")
    peft_model = get_peft_model(model, lcfg)
    return tok, peft_model


def example_loss(model: Any, ex: Encoded, grad_context: int) -> tuple[Any, int]:
    """(mean completion-token cross-entropy in nats, tokens with gradients) of one example.

    The context before the last `grad_context` prompt tokens runs without gradients; logits are computed
    only at the positions that predict completion tokens (the LM head over 262k tokens is the costliest
    layer)."""
    import torch

    ids = torch.tensor([ex.ids], dtype=torch.long)
    cut = max(0, ex.start - grad_context)
    past = None
    if cut > 0:
        with torch.no_grad():
            past = model(input_ids=ids[:, :cut], use_cache=True, logits_to_keep=1).past_key_values
    tail = ids[:, cut:]
    # positions (relative to the tail) whose logits predict a completion token
    first = ex.start - 1 - cut
    n = len(ex.ids) - ex.start
    out = model(input_ids=tail, past_key_values=past, use_cache=past is not None,
                logits_to_keep=torch.arange(first, first + n))
    logits = out.logits[0, :n].float()
    target = ids[0, ex.start:]
    loss = torch.nn.functional.cross_entropy(logits, target)
    return loss, tail.shape[1]


def common_prefix(seqs: Sequence[Sequence[int]]) -> int:
    """The number of leading tokens all `seqs` share."""
    if not seqs:
        return 0
    n = min(len(q) for q in seqs)
    first = seqs[0]
    for q in seqs[1:]:
        i = 0
        while i < n and q[i] == first[i]:
            i += 1
        n = i
    return n


def group_loss(model: Any, group: Sequence[Encoded], grad_context: int) -> tuple[float, int, int]:
    """Back-propagate the mean completion loss of `group` (one optimizer step's examples); returns (mean loss
    in nats, tokens with gradients, tokens of the shared prefix).

    The examples' common prefix (never past any example's last prompt token) runs once without gradients
    through the current adapter; each example then runs from a copy of its cache as `example_loss` does. The
    forward values equal separate full passes; the prefix's keys and values get no gradient."""
    import copy

    import torch

    shared = min(common_prefix([e.ids for e in group]), *(e.start - 1 for e in group))
    shared = max(0, shared)
    prefix = None
    if shared > 0:
        with torch.no_grad():
            ids = torch.tensor([group[0].ids[:shared]], dtype=torch.long)
            prefix = model(input_ids=ids, use_cache=True, logits_to_keep=1).past_key_values
    total = 0.0
    grad_tokens = 0
    for ex in group:
        past = copy.deepcopy(prefix) if prefix is not None else None
        loss, n_grad = _suffix_loss(model, ex, grad_context, shared, past)
        (loss / len(group)).backward()
        total += float(loss.detach()) / len(group)
        grad_tokens += n_grad
    return total, grad_tokens, shared


def _suffix_loss(model: Any, ex: Encoded, grad_context: int, done: int, past: Any) -> tuple[Any, int]:
    """`example_loss` for an example whose first `done` tokens are already in the cache `past`."""
    import torch

    ids = torch.tensor([ex.ids], dtype=torch.long)
    cut = max(done, ex.start - grad_context)
    if cut > done:
        with torch.no_grad():
            past = model(input_ids=ids[:, done:cut], past_key_values=past, use_cache=True,
                         logits_to_keep=1).past_key_values
    tail = ids[:, cut:]
    first = ex.start - 1 - cut
    n = len(ex.ids) - ex.start
    out = model(input_ids=tail, past_key_values=past, use_cache=past is not None,
                logits_to_keep=torch.arange(first, first + n))
    logits = out.logits[0, :n].float()
    loss = torch.nn.functional.cross_entropy(logits, ids[0, ex.start:])
    return loss, tail.shape[1]


def batch_plan(encoded: Sequence[Encoded], batch: int, epochs: float, seed: int, share_prefix: bool) -> list[list[int]]:
    """The examples of each optimizer step. share_prefix: batches are runs of `batch` neighbours in token order
    (long shared prefixes), in a seeded random order per epoch; else `order`'s permutation cut into batches."""
    n = len(encoded)
    if not share_prefix:
        seq = order(n, epochs, seed)
        return [seq[i: i + batch] for i in range(0, len(seq), batch)]
    ranked = sorted(range(n), key=lambda i: encoded[i].ids)
    chunks = [ranked[i: i + batch] for i in range(0, n, batch)]
    rng = random.Random(seed)
    plan: list[list[int]] = []
    for _ in range(max(1, math.ceil(epochs))):
        perm = list(chunks)
        rng.shuffle(perm)
        plan.extend(perm)
    return plan[: max(1, round(epochs * len(chunks)))]


def stratified_subset(examples: Sequence[Example], n: int, seed: int, floor: int) -> list[Example]:
    """`n` examples (all if n <= 0 or n >= len): every (world, strategy, format, kind) stratum keeps
    min(its size, `floor`) examples, the remaining places are shared in proportion to the strata's sizes."""
    if n <= 0 or n >= len(examples):
        return list(examples)
    strata: dict[tuple[str, str, str, str], list[Example]] = {}
    for ex in examples:
        strata.setdefault((ex.world, ex.strategy, ex.format, ex.kind), []).append(ex)
    keys = sorted(strata)
    take = {k: min(len(strata[k]), floor) for k in keys}
    left = n - sum(take.values())
    if left > 0:
        spare = {k: len(strata[k]) - take[k] for k in keys}
        pool = sum(spare.values())
        for k in keys:
            take[k] += min(spare[k], (left * spare[k]) // max(1, pool))
    rng = random.Random(seed)
    out: list[Example] = []
    for k in keys:
        out.extend(rng.sample(strata[k], take[k]))
    return sorted(out, key=lambda e: e.id)


def lr_at(step: int, cfg: TrainConfig, total: int) -> float:
    """Linear warm-up, then cosine decay to 10% of `cfg.lr` at `total` steps."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    frac = min(1.0, (step - cfg.warmup_steps) / max(1, total - cfg.warmup_steps))
    return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))


def order(n: int, epochs: float, seed: int) -> list[int]:
    """The example order: one seeded permutation per (started) epoch, cut to `epochs` * n."""
    rng = random.Random(seed)
    out: list[int] = []
    for _ in range(max(1, math.ceil(epochs))):
        perm = list(range(n))
        rng.shuffle(perm)
        out.extend(perm)
    return out[: max(1, round(epochs * n))]


def plot_loss(rows: Sequence[dict[str, float]], path: Path) -> bool:
    """Loss per step and its running mean as a PNG; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    steps = [r["step"] for r in rows]
    losses = [r["loss"] for r in rows]
    smooth: list[float] = []
    for i in range(len(losses)):
        window = losses[max(0, i - 19): i + 1]
        smooth.append(sum(window) / len(window))
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, losses, alpha=0.35, label="step loss")
    ax.plot(steps, smooth, label="mean of last 20 steps")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("completion-token cross-entropy (nats)")
    ax.set_title("LoRA training of Gemma 3 270M")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def _schedule(config: dict[str, Any]) -> dict[str, Any]:
    """The settings a resumed run must share with its checkpoint (all but when to stop and save)."""
    return {k: v for k, v in config.items() if k not in ("time_budget_min", "save_every", "threads")}


def _save_checkpoint(out: Path, model: Any, opt: Any, state: dict[str, Any]) -> None:
    import torch

    ck = out / CHECKPOINT
    tmp = out / (CHECKPOINT + ".tmp")
    model.save_pretrained(tmp)
    torch.save({"optimizer": opt.state_dict(), "torch_rng": torch.get_rng_state(), **state}, tmp / "state.pt")
    if ck.exists():
        old = out / (CHECKPOINT + ".old")
        os.replace(ck, old)
        os.replace(tmp, ck)
        import shutil

        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, ck)


def train(data: Path, out: Path, cfg: TrainConfig, base: str = "", resume: bool = False, limit: int = 0,
          progress: bool = True) -> dict[str, Any]:
    """Train (or resume) a LoRA adapter on `data`'s train split into `out`; returns the summary."""
    import torch
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file
    from tqdm import tqdm  # type: ignore[import-untyped]

    if cfg.threads > 0:
        torch.set_num_threads(cfg.threads)
    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    out.mkdir(parents=True, exist_ok=True)
    t_load = time.perf_counter()
    model_dir = base_model_dir(base)
    tok, model = load_model(model_dir, cfg)
    tokenize = hf_tokenize(tok)
    examples = list(read_examples(data, split="train"))
    if limit > 0:
        examples = examples[:limit]
    examples = stratified_subset(examples, cfg.subset, cfg.seed, cfg.stratum_min)
    strata: dict[str, int] = {}
    for ex in examples:
        key = f"{ex.world}/{ex.strategy}/{ex.format}/{ex.kind}"
        strata[key] = strata.get(key, 0) + 1
    encoded: list[Encoded] = []
    skipped = 0
    for ex in examples:
        e = encode(tokenize, ex, tok.eos_token_id)
        if e is None or len(e.ids) > cfg.max_tokens:
            skipped += 1
        else:
            encoded.append(e)
    if not encoded:
        raise ValueError(f"{data}: no usable training example (split 'train')")
    plan = batch_plan(encoded, cfg.batch, cfg.epochs, cfg.seed, cfg.share_prefix)
    total = len(plan)
    if cfg.max_steps > 0:
        total = min(total, cfg.max_steps)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    step = 0
    log: list[dict[str, float]] = []
    spent_s = 0.0  # training seconds of earlier (resumed) runs
    ck = out / CHECKPOINT
    if resume and (ck / "state.pt").is_file():
        state = torch.load(ck / "state.pt", weights_only=False)
        if _schedule(state["config"]) != _schedule(asdict(cfg)) or state["n_examples"] != len(encoded):
            raise ValueError(f"{ck}: the checkpoint was made with other settings or data; train into a fresh --out")
        set_peft_model_state_dict(model, load_file(ck / "adapter_model.safetensors"))
        opt.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["torch_rng"])
        step, log, spent_s = int(state["step"]), list(state["log"]), float(state["spent_s"])
        _LOG.info("resumed from %s at step %d", ck, step)
    load_s = time.perf_counter() - t_load
    model.train()
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    tokens = grad_tokens = shared_tokens = done_examples = 0
    stopped = "done"
    bar = tqdm(total=total, initial=step, desc="train", unit="step", disable=not progress, dynamic_ncols=True)
    try:
        while step < total:
            for group in opt.param_groups:
                group["lr"] = lr_at(step, cfg, total)
            batch = [encoded[i] for i in plan[step]]
            opt.zero_grad(set_to_none=True)
            step_loss = 0.0
            if cfg.share_prefix:
                step_loss, n_grad, n_shared = group_loss(model, batch, cfg.grad_context)
                grad_tokens += n_grad
                shared_tokens += n_shared
            else:
                for enc in batch:
                    loss, n_grad = example_loss(model, enc, cfg.grad_context)
                    (loss / len(batch)).backward()
                    step_loss += float(loss.detach()) / len(batch)
                    grad_tokens += n_grad
            tokens += sum(len(enc.ids) for enc in batch)
            done_examples += len(batch)
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            step += 1
            elapsed = time.perf_counter() - t0
            log.append({"step": step, "loss": step_loss, "lr": opt.param_groups[0]["lr"],
                        "elapsed_s": spent_s + elapsed})
            bar.set_postfix(loss=f"{step_loss:.3f}", tok_s=f"{tokens / max(elapsed, 1e-9):.0f}")
            bar.update(1)
            over = cfg.time_budget_min > 0 and spent_s + elapsed + load_s >= cfg.time_budget_min * 60
            if step % cfg.save_every == 0 or step == total or over:
                _save_checkpoint(out, model, opt, {"step": step, "log": log, "spent_s": spent_s + elapsed,
                                                   "config": asdict(cfg), "n_examples": len(encoded)})
            if over and step < total:
                stopped = "time budget"
                break
    finally:
        bar.close()
    elapsed = time.perf_counter() - t0
    cpu_s = time.process_time() - cpu0  # all threads: on a shared machine, what the training actually got
    model.save_pretrained(out / ADAPTER)
    with (out / "loss.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["step", "loss", "lr", "elapsed_s"])
        w.writeheader()
        w.writerows(log)
    plotted = plot_loss(log, out / "loss.png")
    window = max(1, min(20, len(log) // 4))  # steps averaged at each end of the curve
    first, last = log[:window], log[-window:]
    summary = {
        "data": str(data), "base_model_dir": model_dir.name, "config": asdict(cfg), "targets": list(cfg.targets),
        "train_examples": len(encoded), "skipped_examples": skipped, "strata": strata,
        "shared_prefix_tokens_this_run": shared_tokens, "steps": step, "total_steps": total,
        "stopped": stopped, "load_s": round(load_s, 1), "train_s_this_run": round(elapsed, 1),
        "examples_this_run": done_examples, "tokens_this_run": tokens, "grad_tokens_this_run": grad_tokens,
        "tokens_per_s": round(tokens / max(elapsed, 1e-9), 1),
        "examples_per_s": round(done_examples / max(elapsed, 1e-9), 3),
        "cpu_s_this_run": round(cpu_s, 1), "tokens_per_cpu_s": round(tokens / max(cpu_s, 1e-9), 1),
        "examples_per_cpu_s": round(done_examples / max(cpu_s, 1e-9), 4),
        "loss_window": window, "loss_first": round(sum(r["loss"] for r in first) / max(1, len(first)), 4),
        "loss_last": round(sum(r["loss"] for r in last) / max(1, len(last)), 4),
        "loss_png": plotted, "torch_threads": torch.get_num_threads(),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def add_arguments(ap: argparse.ArgumentParser) -> None:
    d = TrainConfig()
    ap.add_argument("--data", type=Path, required=True, help="data set directory (examples.jsonl) or JSONL file")
    ap.add_argument("--out", type=Path, required=True, help="output directory (checkpoint/, adapter/, loss.png)")
    ap.add_argument("--base", default="", help="base model: GGUF file or HF directory ('' = embedded Gemma 3 270M)")
    ap.add_argument("--resume", action="store_true", help="continue from <out>/checkpoint")
    ap.add_argument("--limit", type=int, default=0, help="use only the first N train examples (0 = all)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    ap.add_argument("--rank", type=int, default=d.rank)
    ap.add_argument("--alpha", type=float, default=d.alpha)
    ap.add_argument("--dropout", type=float, default=d.dropout)
    ap.add_argument("--mlp", action="store_true", help="LoRA on the MLP projections too")
    ap.add_argument("--lr", type=float, default=d.lr)
    ap.add_argument("--warmup-steps", type=int, default=d.warmup_steps)
    ap.add_argument("--batch", type=int, default=d.batch, help="examples per optimizer step")
    ap.add_argument("--epochs", type=float, default=d.epochs)
    ap.add_argument("--max-steps", type=int, default=d.max_steps, help="0 = epochs decide")
    ap.add_argument("--grad-context", type=int, default=d.grad_context,
                    help="prompt tokens before the completion that get gradients (tokens)")
    ap.add_argument("--max-tokens", type=int, default=d.max_tokens, help="skip longer examples (tokens)")
    ap.add_argument("--seed", type=int, default=d.seed)
    ap.add_argument("--threads", type=int, default=d.threads, help="torch threads (0 = default)")
    ap.add_argument("--save-every", type=int, default=d.save_every, help="steps between checkpoints")
    ap.add_argument("--no-share-prefix", action="store_true",
                    help="one example per forward pass in a random order (no shared preamble pass)")
    ap.add_argument("--subset", type=int, default=d.subset,
                    help="train on this many examples, stratified by world/strategy/format/kind (0 = all)")
    ap.add_argument("--stratum-min", type=int, default=d.stratum_min,
                    help="examples every stratum keeps in a subset (if it has them)")
    ap.add_argument("--time-budget-min", type=float, default=d.time_budget_min,
                    help="stop after this many minutes (model loading included), checkpoint kept; 0 = none")


def config_from(ns: argparse.Namespace) -> TrainConfig:
    return TrainConfig(rank=ns.rank, alpha=ns.alpha, dropout=ns.dropout, mlp=ns.mlp, lr=ns.lr,
                       warmup_steps=ns.warmup_steps, batch=ns.batch, epochs=ns.epochs, max_steps=ns.max_steps,
                       grad_context=ns.grad_context, max_tokens=ns.max_tokens, seed=ns.seed, threads=ns.threads,
                       save_every=ns.save_every, time_budget_min=ns.time_budget_min,
                       share_prefix=not ns.no_share_prefix, subset=ns.subset, stratum_min=ns.stratum_min)


def main(ns: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    summary = train(ns.data, ns.out, config_from(ns), base=ns.base, resume=ns.resume, limit=ns.limit,
                    progress=not ns.no_progress)
    print(json.dumps(summary, indent=2))
    return 0
