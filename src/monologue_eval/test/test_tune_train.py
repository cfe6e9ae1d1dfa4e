"""LoRA training and GGUF export of the tuned planner (monologue_eval.tune.train/export, issue 30), fast: a tiny
random Gemma 3 stands in for Gemma 3 270M (test_tune_train_llm.py trains the real one)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")
gguf = pytest.importorskip("gguf")

from monologue_eval.tune.examples import Example, write_examples  # noqa: E402
from monologue_eval.tune.export import export, gguf_tensors  # noqa: E402
from monologue_eval.tune.train import (  # noqa: E402
    Encoded,
    TrainConfig,
    batch_plan,
    encode,
    example_loss,
    group_loss,
    hf_tokenize,
    load_model,
    lr_at,
    order,
    stratified_subset,
    terminator,
    train,
)

COLOURS = ("red", "blue", "green", "yellow")
TEXT = [f"Robot action: Pick the {a} block and place it in the {b} bowl.\nSuccess: True\n"
        for a in COLOURS for b in COLOURS] + ["Human: Put the blocks in their matching bowls.\n"]


def example(i: int, prompt: str, completion: str, split: str = "train") -> Example:
    return Example(id=f"kinematic/inner_monologue/{i}/0", world="kinematic", strategy="inner_monologue", format="im",
                   kind="generate", prompt=prompt, completion=completion, family="matching",
                   instruction="Put the blocks in their matching bowls.", split=split)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer Gemma 3 with random weights and a byte-level BPE trained on the examples' words."""
    from monologue_llm.testing import write_tiny_gemma3

    return write_tiny_gemma3(tmp_path_factory.mktemp("tiny_gemma3_train"), TEXT, vocab_size=320, max_positions=512)


@pytest.fixture(scope="module")
def tiny_base_gguf(tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model's adapted weights as a 'base model' GGUF (names and shapes as llama.cpp's converter writes
    them), which export and monologue_llm.lora check adapters against."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    path = tmp_path_factory.mktemp("tiny_base") / "tiny-base.gguf"
    w = gguf.GGUFWriter(str(path), "gemma3")
    names = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
             "mlp.down_proj": "ffn_down"}
    for i, layer in enumerate(model.model.layers):
        for hf, g in names.items():
            module = layer.get_submodule(hf)
            w.add_tensor(f"blk.{i}.{g}.weight", module.weight.detach().numpy().astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four training examples (matching bowls) and one held-out example that training must never see."""
    directory = tmp_path_factory.mktemp("tune_data")
    exs = [example(i, "Human: Put the blocks in their matching bowls.\n" + TEXT[5 * k],
                   f"Robot action: Pick the {c} block and place it in the {c} bowl.")
           for i, (k, c) in enumerate(zip(range(4), COLOURS, strict=True))]
    exs.append(example(9, "Human: held out\n", "Robot action: NEVER TRAINED ON", split="heldout"))
    write_examples(directory / "examples.jsonl", exs, append=False)
    return directory


def test_encode_puts_the_loss_on_the_completion_tokens_only(tiny_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenize = hf_tokenize(AutoTokenizer.from_pretrained(tiny_dir))
    ex = example(0, "Human: go\n", "Robot action: Pick the red block")
    enc = encode(tokenize, ex)
    assert enc is not None and enc.ids[0] == 2  # BOS, as the backends tokenize
    assert list(enc.ids[: enc.start]) == tokenize(ex.prompt)
    # a generate answer ends with the planner's stop string ("\n" for Inner Monologue's lines)
    assert list(enc.ids) == tokenize(ex.prompt + ex.completion + "\n")
    score = Example(**{**ex.__dict__, "kind": "score", "candidates": (ex.completion,)})
    assert list(encode(tokenize, score).ids) == tokenize(ex.prompt + ex.completion)  # type: ignore[union-attr]
    assert encode(tokenize, Example(**{**ex.__dict__, "kind": "score", "completion": "",
                                       "candidates": ("",)})) is None


def test_the_terminator_is_the_calls_stop_string_or_the_strategys() -> None:
    ex = example(0, "Human: go\n", "Robot action: Pick the red block")
    assert terminator(ex) == "\n"
    assert terminator(Example(**{**ex.__dict__, "stop": ("# query:", "===")})) == "# query:"
    assert terminator(Example(**{**ex.__dict__, "strategy": "multitalk"})) == "\n\nUser:"
    assert terminator(Example(**{**ex.__dict__, "strategy": "statler"})) == ""  # no known stop: EOS (encode)
    assert terminator(Example(**{**ex.__dict__, "kind": "score", "candidates": (ex.completion,)})) == ""


def test_an_unknown_stop_ends_the_answer_with_eos(tiny_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenize = hf_tokenize(AutoTokenizer.from_pretrained(tiny_dir))
    ex = Example(**{**example(0, "Human: go\n", "Robot action: Pick").__dict__, "strategy": "statler"})
    enc = encode(tokenize, ex, eos=1)
    assert enc is not None and enc.ids[-1] == 1 and list(enc.ids[:-1]) == tokenize(ex.prompt + ex.completion)


def test_batches_are_token_sorted_neighbours_in_a_seeded_order() -> None:
    encs = [Encoded(str(i), ids, 2) for i, ids in enumerate([(2, 9, 1), (2, 5, 1), (2, 9, 0), (2, 5, 0), (2, 9, 9)])]
    plan = batch_plan(encs, 2, 1.0, seed=3, share_prefix=True)
    assert sorted(map(tuple, plan)) == [(2, 0), (3, 1), (4,)]  # neighbours in token order: (2, 5) / (2, 9, 0|1)
    assert plan == batch_plan(encs, 2, 1.0, seed=3, share_prefix=True)
    assert len(batch_plan(encs, 2, 2.0, seed=3, share_prefix=True)) == 6
    flat = sorted(i for b in batch_plan(encs, 2, 1.0, seed=3, share_prefix=False) for i in b)
    assert flat == [0, 1, 2, 3, 4]


def test_a_stratified_subset_keeps_every_stratum() -> None:
    exs = [example(i, "p", "c") for i in range(90)]
    rare = [Example(**{**example(100 + i, "p", "c").__dict__, "world": "multitalk", "strategy": "multitalk"})
            for i in range(5)]
    sub = stratified_subset(exs + rare, 20, seed=0, floor=4)
    assert sum(e.world == "multitalk" for e in sub) == 4
    assert 18 <= len(sub) <= 20 and len({e.id for e in sub}) == len(sub)
    assert sub == stratified_subset(exs + rare, 20, seed=0, floor=4)
    assert len(stratified_subset(exs, 0, seed=0, floor=4)) == 90


def test_a_shared_prefix_pass_gives_the_separate_losses_and_gradients(tiny_dir: Path) -> None:
    """One no-grad pass over the batch's common prefix: the same loss as separate passes, and the LoRA
    weights get the same gradients as with a no-grad context of the same length."""
    from transformers import AutoTokenizer

    tokenize = hf_tokenize(AutoTokenizer.from_pretrained(tiny_dir))
    _, model = load_model(tiny_dir, TrainConfig(rank=4, seed=3))
    for p in model.parameters():  # LoRA B starts at 0: make the adapter active so the check means something
        if p.requires_grad:
            torch.nn.init.normal_(p, std=0.05)
    prompt = "".join(TEXT[:3])
    group = [encode(tokenize, example(i, prompt + TEXT[4 + i], f"Robot action: Pick the {c} block"))
             for i, c in enumerate(COLOURS[:3])]
    encs = [e for e in group if e is not None]
    assert len(encs) == 3
    lora = [p for p in model.parameters() if p.requires_grad]
    model.zero_grad()
    loss, n_grad, shared = group_loss(model, encs, 6)
    got = [p.grad.clone() for p in lora]
    assert shared > 20
    model.zero_grad()
    want = 0.0
    for e in encs:
        separate, _ = example_loss(model, e, min(e.start - shared, 6))  # the same no-grad context
        (separate / len(encs)).backward()
        want += float(separate.detach()) / len(encs)
    assert loss == pytest.approx(want, abs=1e-4)
    assert n_grad > 0
    for g, p in zip(got, lora, strict=True):
        assert torch.allclose(g, p.grad, atol=1e-5)


def test_the_schedule_and_order_are_fixed_by_the_seed() -> None:
    cfg = TrainConfig(lr=1e-3, warmup_steps=4)
    assert lr_at(0, cfg, 100) == pytest.approx(2.5e-4)
    assert lr_at(3, cfg, 100) == pytest.approx(1e-3)
    assert lr_at(100, cfg, 100) == pytest.approx(1e-4)
    assert order(10, 2.5, 7) == order(10, 2.5, 7) != order(10, 2.5, 8)
    o = order(10, 2.5, 7)
    assert len(o) == 25 and sorted(o[:10]) == list(range(10)) and sorted(o[10:20]) == list(range(10))


def test_a_truncated_gradient_context_computes_the_same_loss(tiny_dir: Path) -> None:
    """The prompt before `grad_context` runs without gradients, but the forward pass (so the loss) is exact."""
    from transformers import AutoTokenizer

    tokenize = hf_tokenize(AutoTokenizer.from_pretrained(tiny_dir))
    _, model = load_model(tiny_dir, TrainConfig(rank=4, seed=3))
    prompt = "".join(TEXT[:3])  # longer than the sliding window (8 tokens)
    enc = encode(tokenize, example(0, prompt, "Robot action: Pick the green block"))
    assert isinstance(enc, Encoded) and enc.start > 20
    full, n_full = example_loss(model, enc, 10_000)
    cut, n_cut = example_loss(model, enc, 4)
    assert n_cut < n_full == len(enc.ids)
    assert float(cut.detach()) == pytest.approx(float(full.detach()), abs=1e-4)


def test_training_20_steps_lowers_the_loss_and_writes_adapter_curve_and_summary(
        tiny_dir: Path, data_dir: Path, tmp_path: Path) -> None:
    cfg = TrainConfig(rank=8, alpha=16, lr=1e-2, warmup_steps=2, batch=1, epochs=5, seed=0, mlp=True, save_every=5)
    summary = train(data_dir, tmp_path / "run", cfg, base=str(tiny_dir), progress=False)
    assert summary["steps"] == 20 and summary["train_examples"] == 4  # the held-out example is not trained on
    assert summary["loss_window"] == 5 and summary["loss_last"] < summary["loss_first"]
    rows = (tmp_path / "run" / "loss.csv").read_text().splitlines()[1:]
    losses = [float(r.split(",")[1]) for r in rows]
    assert len(losses) == 20 and np.mean(losses[-4:]) < np.mean(losses[:4]) - 0.3  # nats
    assert (tmp_path / "run" / "loss.png").stat().st_size > 1000
    cfg_json = json.loads((tmp_path / "run" / "adapter" / "adapter_config.json").read_text())
    assert cfg_json["r"] == 8 and set(cfg_json["target_modules"]) >= {"q_proj", "down_proj"}
    assert summary["tokens_per_s"] > 0 and summary["examples_per_cpu_s"] > 0


def test_resuming_after_a_time_budget_stop_gives_the_same_adapter(tiny_dir: Path, data_dir: Path,
                                                                  tmp_path: Path) -> None:
    from safetensors.numpy import load_file

    cfg = TrainConfig(rank=4, lr=5e-3, warmup_steps=1, batch=2, epochs=2, seed=1)
    straight = train(data_dir, tmp_path / "straight", cfg, base=str(tiny_dir), progress=False)
    stopping = TrainConfig(**{**cfg.__dict__, "time_budget_min": 1e-6})  # stops after every step
    first = train(data_dir, tmp_path / "resumed", stopping, base=str(tiny_dir), progress=False)
    assert first["stopped"] == "time budget" and first["steps"] == 1
    runs = 1
    while True:
        s = train(data_dir, tmp_path / "resumed", stopping, base=str(tiny_dir), resume=True, progress=False)
        runs += 1
        if s["stopped"] == "done":
            break
    assert runs == straight["steps"] == 4
    a = load_file(str(tmp_path / "straight" / "adapter" / "adapter_model.safetensors"))
    b = load_file(str(tmp_path / "resumed" / "adapter" / "adapter_model.safetensors"))
    assert a.keys() == b.keys() and all(np.allclose(a[k], b[k], atol=1e-6) for k in a)
    other = TrainConfig(**{**cfg.__dict__, "rank": 8})
    with pytest.raises(ValueError, match="other settings"):
        train(data_dir, tmp_path / "resumed", other, base=str(tiny_dir), resume=True, progress=False)


def test_export_writes_llama_cpp_names_and_both_loaders_agree(tiny_dir: Path, tiny_base_gguf: Path, data_dir: Path,
                                                              tmp_path: Path) -> None:
    """The exported GGUF LoRA, merged by the transformers backend, scores like the peft adapter it came from."""
    from monologue_llm.lora import read_adapter
    from monologue_llm.transformers_backend import TransformersBackend

    cfg = TrainConfig(rank=4, alpha=8, lr=5e-3, batch=1, epochs=2, seed=0, mlp=True)
    train(data_dir, tmp_path / "run", cfg, base=str(tiny_dir), progress=False)
    info = export(tmp_path / "run" / "adapter", tmp_path / "a.gguf", base=str(tiny_base_gguf))
    assert info["rank"] == 4 and info["tensors"] == 2 * 7 * 2  # A and B, 7 projections, 2 layers
    adapter = read_adapter(tmp_path / "a.gguf", tiny_base_gguf)
    assert "blk.1.ffn_down.weight" in adapter.weights and adapter.alpha == 8.0
    prompt, cands = "Human: Put the blocks in their matching bowls.\n", [t.split("\n")[0] for t in TEXT[:6]]
    with TransformersBackend(tiny_dir, n_ctx=256, lora_path=tmp_path / "a.gguf") as g:
        from_gguf = [s.logprob for s in g.score(prompt, cands).scores]
    with TransformersBackend(tiny_dir, n_ctx=256, lora_path=tmp_path / "run" / "adapter") as p:
        from_peft = [s.logprob for s in p.score(prompt, cands).scores]
    with TransformersBackend(tiny_dir, n_ctx=256) as f:
        frozen = [s.logprob for s in f.score(prompt, cands).scores]
    assert np.allclose(from_gguf, from_peft, atol=1e-4)
    assert max(abs(x - y) for x, y in zip(from_gguf, frozen, strict=True)) > 0.05  # the adapter matters
    f16 = export(tmp_path / "run" / "adapter", tmp_path / "h.gguf", base=str(tiny_base_gguf), outtype="f16")
    assert f16["bytes"] < info["bytes"]


def test_export_refuses_foreign_tensors() -> None:
    with pytest.raises(ValueError, match="unexpected adapter tensor"):
        gguf_tensors({"base_model.model.lm_head.lora_A.weight": np.zeros((2, 2))})
    names: dict[str, Any] = {"base_model.model.model.layers.3.self_attn.o_proj.lora_B.weight": 1}
    assert gguf_tensors(names) == {"blk.3.attn_output.weight.lora_b": 1}
