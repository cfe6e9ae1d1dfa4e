"""Tree scoring of the llama.cpp backend (`tree_scoring`): all candidates in one multi-sequence decode."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from monologue_llm.base import LLMError

pytestmark = [pytest.mark.llm, pytest.mark.slow]

BLOCKS = ("red", "blue", "green", "yellow")
TARGETS = ("red block", "blue block", "green block", "yellow block", "green bowl", "blue bowl",
           "top left corner", "bottom right corner", "middle")
HISTORY = "".join(
    f"Robot action: Pick the {b} block and place it on the {t}.\nSuccess: {'yes' if i % 3 else 'no'}.\n"
    for i, (b, t) in enumerate((b, t) for b in BLOCKS for t in TARGETS[4:]))
# > n_swa (512) tokens, so the candidates' attention spans the sliding window's edge
PROMPT = ("Objects: " + ", ".join(f"{b} block" for b in BLOCKS) + ", green bowl, blue bowl.\n"
          "Human: Put all the blocks in the green bowl.\n" + HISTORY * 2)
CANDIDATES = [f"Robot action: Pick the {b} block and place it on the {t}." for b in BLOCKS for t in TARGETS
              if not t.startswith(b)] + ["Robot action: Done."]


@pytest.fixture(scope="module")
def tree(model_path: Path, llm_threads: int) -> Iterator[Any]:
    from monologue_llm.llama_cpp_backend import LlamaCppBackend

    with LlamaCppBackend(model_path, n_ctx=2048, n_threads=llm_threads, tree_scoring=True) as backend:
        yield backend


@pytest.fixture(scope="module")
def reference(model_path: Path, llm_threads: int) -> Iterator[Any]:
    """llama_cpp.Llama with logits for every token: prompt + candidate in one pass."""
    llama_cpp = pytest.importorskip("llama_cpp")
    from monologue_llm.llama_cpp_backend import _load_without_repack

    llm = _load_without_repack(llama_cpp, model_path=str(model_path), n_ctx=2048, n_batch=2048, n_ubatch=2048,
                               n_threads=llm_threads, n_threads_batch=llm_threads, logits_all=True,
                               swa_full=True, verbose=False)
    yield llm
    llm.close()


def scratch(llm: Any, prompt: str, candidate: str) -> list[float]:
    ptoks = llm.tokenize(prompt.encode(), add_bos=True, special=False)
    toks = llm.tokenize((prompt + candidate).encode(), add_bos=True, special=False)
    first = 0
    while first < min(len(ptoks), len(toks)) and ptoks[first] == toks[first]:
        first += 1
    llm.reset()
    llm.eval(toks)
    # only the rows that predict the candidate's tokens (the whole array is ~1 MB per prompt token in float64)
    logits = np.asarray(llm.scores[first - 1: len(toks) - 1], dtype=np.float64)
    top = logits.max(axis=1, keepdims=True)
    logp = logits - (top + np.log(np.exp(logits - top).sum(axis=1, keepdims=True)))
    return [float(logp[i - first, toks[i]]) for i in range(first, len(toks))]


def test_tree_scores_match_a_from_scratch_evaluation(tree: Any, reference: Any) -> None:
    result = tree.score(PROMPT, CANDIDATES)
    assert result.prompt_tokens > 512
    picked = [0, len(CANDIDATES) - 1]  # a sample: each reference pass evaluates the whole prompt
    for i in picked:
        want = scratch(reference, PROMPT, CANDIDATES[i])
        got = result.scores[i]
        assert got.token_count == len(want) > 0
        assert got.logprob == pytest.approx(sum(want), abs=tree.TREE_TOLERANCE), CANDIDATES[i]
    # a prompt ending in a space: the candidate's first token merges with it and is scored as candidate
    spaced = tree.score("The colour of the sky on a clear day is ", ["blue.", "a sandwich.", "blue"])
    for s in spaced.scores:
        assert s.logprob == pytest.approx(sum(scratch(reference, "The colour of the sky on a clear day is ", s.text)),
                                          abs=tree.TREE_TOLERANCE)
    assert spaced.scores[0].logprob > spaced.scores[1].logprob


def test_a_candidates_score_does_not_depend_on_the_others_or_on_earlier_calls(
    tree: Any, model_path: Path, llm_threads: int
) -> None:
    from monologue_llm.llama_cpp_backend import LlamaCppBackend

    full = {s.text: s.logprob for s in tree.score(PROMPT, CANDIDATES).scores}
    tree.score("Something else entirely.\n", [" a", " b"])  # disturb the cache
    few = tree.score(PROMPT + "", CANDIDATES[3:6] + ["Robot action: Pick the banana."])
    for s in few.scores[:3]:
        assert s.logprob == pytest.approx(full[s.text], abs=tree.TREE_TOLERANCE)
    with LlamaCppBackend(model_path, n_ctx=2048, n_threads=llm_threads, tree_scoring=True) as fresh:
        grown = PROMPT + CANDIDATES[0] + "\nSuccess: yes.\n"
        tree.score(grown, CANDIDATES)  # reuses the cached prompt prefix
        again = tree.score(grown, CANDIDATES)
        scratch_scores = fresh.score(grown, CANDIDATES)
        assert tree.last_prompt_evaluated == 0  # the same prompt again: nothing of it is evaluated
        for a, b in zip(again.scores, scratch_scores.scores, strict=True):
            assert a.logprob == b.logprob  # independent of the cache's history


def test_groups_beyond_the_sequence_limit_give_the_same_scores(
    tree: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = tree.score(PROMPT, CANDIDATES)
    monkeypatch.setattr(tree, "_tree_seqs", 5)  # 3 candidates per group
    grouped = tree.score(PROMPT, CANDIDATES)
    assert grouped.new_tokens_processed > whole.new_tokens_processed  # shared prefixes re-evaluated per group
    for a, b in zip(whole.scores, grouped.scores, strict=True):
        assert a.logprob == pytest.approx(b.logprob, abs=tree.TREE_TOLERANCE)
    assert _best(whole) == _best(grouped)


def _best(result: Any) -> str:
    return str(max(result.scores, key=lambda s: s.logprob).text)


def test_the_kv_cache_is_intact_after_tree_scoring(tree: Any, fresh_backend: Any) -> None:
    sky = "The colour of the sky on a clear day is"
    tree.score(sky, [" blue.", " a sandwich.", " green"])
    after = tree.generate(sky, stop=["\n"], max_tokens=12)
    assert after.new_tokens_processed <= 12  # continued from the cached prompt, not re-evaluated
    assert after.text == fresh_backend.generate(sky, stop=["\n"], max_tokens=12).text
    assert after.text.strip()


def test_tree_scoring_evaluates_fewer_tokens_than_candidate_by_candidate(
    tree: Any, model_path: Path, llm_threads: int
) -> None:
    from monologue_llm.llama_cpp_backend import LlamaCppBackend

    grown = PROMPT + CANDIDATES[1] + "\nSuccess: no.\n"
    with LlamaCppBackend(model_path, n_ctx=2048, n_threads=llm_threads) as sequential:
        sequential.score(PROMPT, CANDIDATES[:1])
        seq = sequential.score(grown, CANDIDATES)
        seq_prompt = sequential.last_prompt_evaluated
    tree.score(PROMPT, CANDIDATES[:1])
    res = tree.score(grown, CANDIDATES)
    suffix_tokens = sum(len(tree.tokenize(grown + c)) for c in CANDIDATES) - len(CANDIDATES) * res.prompt_tokens
    assert res.new_tokens_processed < seq.new_tokens_processed
    assert res.new_tokens_processed < suffix_tokens / 2  # shared candidate prefixes are evaluated once
    assert _best(res) == _best(seq)
    assert tree.last_prompt_evaluated <= 24 and seq_prompt <= 24  # only the new transcript line (+ back-off)


def test_a_candidate_that_does_not_fit_is_an_error_and_the_backend_stays_usable(
    model_path: Path, llm_threads: int
) -> None:
    from monologue_llm.llama_cpp_backend import LlamaCppBackend

    with LlamaCppBackend(model_path, n_ctx=128, n_threads=llm_threads, tree_scoring=True) as small:
        with pytest.raises(LLMError, match="n_ctx"):
            small.score("word " * 50, [" a", " b" * 120])
        res = small.score("The colour of the sky on a clear day is", [" blue.", " a sandwich."])
        assert res.scores[0].logprob > res.scores[1].logprob


def test_one_token_candidates_need_no_decode_beyond_the_prompt(tree: Any, llama_backend: Any) -> None:
    sky = "The colour of the sky on a clear day is"
    tree.score(sky, [" blue."])
    words = [" blue", " green", " red", " grey"]
    assert all(len(tree.tokenize(sky + w)) == len(tree.tokenize(sky)) + 1 for w in words)
    res = tree.score(sky, words)
    assert res.new_tokens_processed == 0  # the prompt's cached row scores them; leaves are never decoded
    want = llama_backend.score(sky, words)
    assert [s.logprob for s in res.scores] == [s.logprob for s in want.scores]
