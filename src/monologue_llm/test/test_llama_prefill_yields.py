"""Prefill yields to an episode that starts before it finishes: a call between two prefill slices ends the
prefill, so the cache keeps that call's prompt. (It used to trim the cache back to the preamble slice by
slice: a demo episode started with the planner evaluated 1,043 and 535 new tokens in its second and third
steps, most of its 1,209- and 1,229-token prompts again, instead of the new lines and the candidates.)"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

from monologue_llm.decoding import common_prefix

pytestmark = [pytest.mark.llm, pytest.mark.slow]

PREAMBLE = "".join(f"Human: Put the {c} block in the {d} bowl.\nRobot action: Pick the {c} block and place it in "
                   f"the {d} bowl.\nSuccess: yes.\nRobot action: Done.\n"
                   for c, d in (("red", "blue"), ("green", "yellow"), ("blue", "red"), ("yellow", "green")) * 3)
PROMPT = PREAMBLE + "Objects: red block, blue bowl.\nHuman: Put the red block in the blue bowl.\n"
CANDIDATES = ["Robot action: Pick the red block and place it in the blue bowl.", "Robot action: Done."]


class HookLock:
    """The backend's lock, running `hook` once right after its `release`-th release."""

    def __init__(self, inner: Any, release: int, hook: Callable[[], None]) -> None:
        self.inner, self.left, self.hook = inner, release, hook

    def __enter__(self) -> None:
        self.inner.acquire()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.inner.release()
        self.left -= 1
        if self.left == 0:
            self.hook()


@pytest.mark.parametrize("release", [1, 2], ids=["before the first slice", "after the first slice"])
def test_a_call_between_prefill_slices_ends_the_prefill_and_keeps_its_cache(
        model_path: Path, llm_threads: int, monkeypatch: pytest.MonkeyPatch, release: int) -> None:
    from monologue_llm.llama_cpp_backend import LlamaCppBackend

    with LlamaCppBackend(model_path, n_ctx=2048, n_threads=llm_threads, logger=logging.getLogger("t")) as b:
        preamble = len(b.tokenize(PREAMBLE))
        assert preamble > 2 * 128  # several prefill slices
        episode: list[Any] = []
        # release 1 ends prefill's tokenization, release 2 its first slice: the episode's step runs then
        monkeypatch.setattr(b, "_lock", HookLock(threading.Lock(), release,
                                                 lambda: episode.append(b.score(PROMPT, CANDIDATES))))
        done = b.prefill(PREAMBLE)
        assert episode, "the step did not run"
        assert done < preamble  # prefill stopped early ...
        ptoks = b.tokenize(PROMPT)
        assert common_prefix(b._kv, ptoks) >= len(ptoks) - 1  # ... and left the step's prompt in the cache
        again = b.score(PROMPT + "Robot action: Pick the red block.\n", CANDIDATES)
        assert again.new_tokens_processed < len(ptoks) - preamble + 128  # the next step reuses it
