"""Prefilling a static preamble (the planner does it at start-up): the first call then evaluates only what
follows, and scores are those of a backend that never prefilled."""
from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from monologue_llm.base import PrefillBackend

pytestmark = [pytest.mark.llm, pytest.mark.slow]

PREAMBLE = "".join(f"Human: Put the {c} block in the {d} bowl.\nRobot action: Pick the {c} block and place it in "
                   f"the {d} bowl.\nSuccess: yes.\nRobot action: Done.\n"
                   for c, d in (("red", "blue"), ("green", "yellow"), ("blue", "red"), ("yellow", "green")) * 3)
PROMPT = PREAMBLE + "Objects: red block, blue bowl.\nHuman: Put the red block in the blue bowl.\n"
CANDIDATES = ["Robot action: Pick the red block and place it in the blue bowl.", "Robot action: Done."]


@pytest.fixture()
def backend(model_path: Path, llm_threads: int) -> Iterator[Any]:
    from monologue_llm.llama_cpp_backend import LlamaCppBackend

    with LlamaCppBackend(model_path, n_ctx=2048, n_threads=llm_threads, logger=logging.getLogger("t")) as b:
        yield b


def test_a_prefilled_preamble_is_not_evaluated_again_and_scores_do_not_change(backend: Any, model_path: Path,
                                                                                llm_threads: int) -> None:
    from monologue_llm.llama_cpp_backend import LlamaCppBackend

    assert isinstance(backend, PrefillBackend)
    n = backend.prefill(PREAMBLE)
    assert n >= len(backend.tokenize(PREAMBLE)) - 16  # (a last slice may re-evaluate a few cached tokens)
    warm = backend.score(PROMPT, CANDIDATES)
    assert warm.new_tokens_processed < len(backend.tokenize(PROMPT)) - n + 64  # the preamble was reused
    with LlamaCppBackend(model_path, n_ctx=2048, n_threads=llm_threads) as cold_backend:
        cold = cold_backend.score(PROMPT, CANDIDATES)
    assert cold.new_tokens_processed > warm.new_tokens_processed
    assert [s.logprob for s in warm.scores] == pytest.approx([s.logprob for s in cold.scores], abs=1e-4)


def test_prefill_after_close_does_nothing(model_path: Path, llm_threads: int) -> None:
    from monologue_llm.llama_cpp_backend import LlamaCppBackend

    b = LlamaCppBackend(model_path, n_ctx=2048, n_threads=llm_threads)
    b.close()
    assert b.prefill(PREAMBLE) == 0
