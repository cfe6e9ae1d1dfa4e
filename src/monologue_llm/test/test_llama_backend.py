"""Tests of the in-process llama.cpp backend against the embedded Gemma 3 270M model."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from monologue_llm.base import LLMBackend, LLMError

pytestmark = [pytest.mark.llm, pytest.mark.slow]

SKY = "The colour of the sky on a clear day is"
SCENE = (
    "You are a robot in a kitchen. Objects: red block, blue block, green bowl, "
    "yellow bowl, sponge. Done steps: 1. pick up the red block. 2. place it in the "
    "green bowl. Success: yes.\nRobot action:"
)
CANDIDATES = (
    " blue.",
    " a sandwich.",
    " green",
    "",
    " blue",
    " light blue with a few white clouds, and the sun shines over the hills.",
)


@pytest.fixture(scope="module")
def reference_llama(model_path: Path, llm_threads: int) -> Iterator[Any]:
    """Independent reference: llama_cpp.Llama with logits for every token."""
    from monologue_llm.llama_cpp_backend import _load_without_repack

    llama_cpp = pytest.importorskip("llama_cpp")
    llm = _load_without_repack(
        llama_cpp, model_path=str(model_path), n_ctx=256, n_batch=256, n_ubatch=256,
        n_threads=llm_threads, n_threads_batch=llm_threads, logits_all=True, verbose=False,
    )
    yield llm
    llm.close()


def scratch_logprob(llm: Any, prompt: str, candidate: str) -> float:
    """Sum of log-probs of the candidate's tokens, evaluating prompt+candidate at once."""
    ptoks = llm.tokenize(prompt.encode(), add_bos=True, special=False)
    toks = llm.tokenize((prompt + candidate).encode(), add_bos=True, special=False)
    first = 0
    while first < min(len(ptoks), len(toks)) and ptoks[first] == toks[first]:
        first += 1
    llm.reset()
    llm.eval(toks)
    logits = np.asarray(llm.scores[: len(toks)], dtype=np.float64)
    top = logits.max(axis=1, keepdims=True)
    logprobs = logits - (top + np.log(np.exp(logits - top).sum(axis=1, keepdims=True)))
    return float(sum(logprobs[i - 1, toks[i]] for i in range(first, len(toks))))


def test_implements_protocol(llama_backend: Any) -> None:
    assert isinstance(llama_backend, LLMBackend)


def test_generation_is_deterministic(llama_backend: Any, fresh_backend: Any) -> None:
    first = llama_backend.generate(SKY, stop=["\n"], max_tokens=12)
    llama_backend.score(SCENE, [" pick up the blue block."])  # disturb the KV cache
    second = llama_backend.generate(SKY, stop=["\n"], max_tokens=12)
    scratch = fresh_backend.generate(SKY, stop=["\n"], max_tokens=12)
    assert first.text == second.text == scratch.text
    assert first.text.strip()
    assert first.prompt_tokens == scratch.prompt_tokens > 5
    assert 1 <= first.completion_tokens <= 12
    assert first.finish_reason in ("stop", "length")


def test_generation_stop_and_max_tokens(llama_backend: Any) -> None:
    gen = llama_backend.generate(SCENE, max_tokens=3)
    assert gen.completion_tokens == 3
    assert gen.finish_reason == "length"
    full = llama_backend.generate(SKY, max_tokens=20)
    cut_at = full.text.strip()[:3]
    cut = llama_backend.generate(SKY, stop=[cut_at], max_tokens=20)
    assert cut.finish_reason == "stop"
    assert cut_at not in cut.text
    assert full.text.startswith(cut.text)
    assert llama_backend.generate(SKY, max_tokens=0).text == ""


def test_score_matches_from_scratch_evaluation(llama_backend: Any, reference_llama: Any) -> None:
    # includes a prompt ending in a space: the candidate's first token then
    # merges with it, and is scored as part of the candidate
    for prompt, cands in ((SKY, CANDIDATES), (SKY + " ", ("blue.", "a sandwich."))):
        llama_backend.score(prompt, cands)  # warm: second call runs from caches
        for result in (llama_backend.score(prompt, cands), llama_backend.score(prompt, cands)):
            for s in result.scores:
                if not s.text:
                    assert s.logprob == 0.0 and s.token_count == 0
                    continue
                ref = scratch_logprob(reference_llama, prompt, s.text)
                assert s.logprob == pytest.approx(ref, abs=1e-3), s.text
                assert s.token_count == len(s.token_logprobs) >= 1
                assert math.isclose(math.fsum(s.token_logprobs), s.logprob)


def test_reuse_is_exact_and_cheaper(
    model_path: Path, fresh_backend: Any, llm_threads: int
) -> None:
    from monologue_llm.llama_cpp_backend import LlamaCppBackend

    # > n_swa (512) tokens, so trimming crosses the sliding-window boundary
    long_prompt = SCENE + " pick up the sponge.\nSuccess: no.\n" * 60 + "Robot action:"
    steps = [
        (long_prompt, [" pick up the sponge.", " done."]),
        (long_prompt + " pick up the sponge.", [" Success: yes.", " Success: no."]),
        (SCENE, [" pick up the blue block.", " place it in the yellow bowl."]),
        (long_prompt, [" pick up the sponge.", " done."]),
    ]
    with LlamaCppBackend(model_path, n_ctx=2048, n_threads=llm_threads) as reusing:
        for i, (prompt, cands) in enumerate(steps):
            got = reusing.score(prompt, cands)
            want = fresh_backend.score(prompt, cands)
            assert [s.logprob for s in got.scores] == [s.logprob for s in want.scores]
            assert want.new_tokens_processed >= want.prompt_tokens
            if i == 0:
                assert got.prompt_tokens > 600
            if i == 1:  # the extended prompt re-uses the cached prefix
                assert got.new_tokens_processed < 60
        assert got.new_tokens_processed == 0  # a repeated request is answered from caches


def test_prefix_reuse_lowers_new_tokens(model_path: Path, llm_threads: int) -> None:
    from monologue_llm.llama_cpp_backend import LlamaCppBackend

    with LlamaCppBackend(model_path, n_ctx=2048, n_threads=llm_threads) as backend:
        first = backend.score(SCENE, [" pick up the blue block."])
        second = backend.score(SCENE + " pick up the blue block.\nSuccess:", [" yes", " no"])
        assert first.new_tokens_processed >= first.prompt_tokens
        assert second.new_tokens_processed < second.prompt_tokens / 3


def test_ranking_sanity(llama_backend: Any) -> None:
    result = llama_backend.score(SKY, [" blue.", " a sandwich."])
    blue, sandwich = result.scores
    assert blue.logprob > sandwich.logprob
    assert blue.text == " blue." and sandwich.text == " a sandwich."


def test_context_overflow_and_close(model_path: Path, llm_threads: int) -> None:
    from monologue_llm.llama_cpp_backend import LlamaCppBackend

    backend = LlamaCppBackend(model_path, n_ctx=64, n_threads=llm_threads)
    with pytest.raises(LLMError, match="n_ctx"):
        backend.score("word " * 100, [" a"])
    assert backend.score(SKY, [" blue."]).scores[0].logprob < 0  # still usable
    backend.close()
    backend.close()
    with pytest.raises(LLMError, match="closed"):
        backend.generate(SKY)


def test_missing_model_file(tmp_path: Path) -> None:
    from monologue_llm.llama_cpp_backend import LlamaCppBackend

    with pytest.raises(LLMError, match="not found"):
        LlamaCppBackend(tmp_path / "nope.gguf")
