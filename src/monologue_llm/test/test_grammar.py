"""Grammar-constrained generation: the embedded model's output always matches a GBNF grammar; cassettes
key on the grammar and still replay requests recorded without one; backends without grammars fall back."""
from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from monologue_llm.base import Generation, LLMError, generate_constrained
from monologue_llm.cassette import CassetteBackend, request_key

TINY = r'''root ::= "Answer: " ("yes" | "no") " because " [a-z ]{1,20} "."'''
TINY_RE = re.compile(r"Answer: (yes|no) because [a-z ]{1,20}\.")


@pytest.mark.llm
@pytest.mark.parametrize("prompt", [
    "Q: Is the sky green?\n",
    "Write a poem about robots:\n",
    "def main():\n    print(",
    "Step-by-step Instructions:\n1: move(",
])
def test_embedded_output_always_matches_the_grammar(llama_backend: Any, prompt: str) -> None:
    gen = llama_backend.generate(prompt, max_tokens=40, grammar=TINY)
    assert TINY_RE.fullmatch(gen.text), gen.text
    assert gen.finish_reason == "stop"  # ended where the grammar is complete


@pytest.mark.llm
def test_grammar_cache_and_invalid_grammar(llama_backend: Any) -> None:
    a = llama_backend.generate("Q: Is ice cold?\n", max_tokens=40, grammar=TINY)
    b = llama_backend.generate("Q: Is ice cold?\n", max_tokens=40, grammar=TINY)  # cached sampler, reset
    assert a.text == b.text
    free = llama_backend.generate("Q: Is ice cold?\n", max_tokens=8)
    assert free.text == llama_backend.generate("Q: Is ice cold?\n", max_tokens=8, grammar=None).text
    with pytest.raises(LLMError, match="grammar"):
        llama_backend.generate("x", max_tokens=4, grammar="root ::= (")


class _Plain:
    """A backend without grammar support."""

    name = "plain"

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def generate(self, prompt: str, stop: Any = (), max_tokens: int = 64) -> Generation:
        self.calls.append({"prompt": prompt, "max_tokens": max_tokens})
        return Generation("free text", 1, 1, 2, "stop", 0.0)

    def score(self, prompt: str, candidates: Any) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        pass


class _Grammar(_Plain):
    name = "grammar"
    accepts_grammar = True

    def generate(self, prompt: str, stop: Any = (), max_tokens: int = 64,  # type: ignore[override]
                 grammar: str | None = None) -> Generation:
        self.calls.append({"prompt": prompt, "grammar": grammar})
        return Generation("Answer: yes because x.", 1, 1, 2, "stop", 0.0)


def test_fallback_without_grammar_support_logs_once(caplog: pytest.LogCaptureFixture) -> None:
    plain = _Plain()
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            assert generate_constrained(plain, "p", grammar=TINY).text == "free text"
    assert sum("NOT constrained" in r.message for r in caplog.records) == 1
    g = _Grammar()
    generate_constrained(g, "p", grammar=TINY)
    generate_constrained(g, "p", grammar=None)
    assert [c["grammar"] for c in g.calls] == [TINY, None]


def test_cassette_keys_on_the_grammar_and_replays_old_records(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    rec = CassetteBackend(_Grammar(), path, "record")
    rec.generate("p", stop=["\n"], max_tokens=8, grammar=TINY)
    rec.generate("p", stop=["\n"], max_tokens=8)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert lines[0]["args"]["grammar"] == TINY and "grammar" not in lines[1]["args"]
    # an old record (no grammar in its args) keeps its key
    assert lines[1]["key"] == request_key("generate", "p", {"stop": ["\n"], "max_tokens": 8})
    rep = CassetteBackend(None, path, "replay")
    assert rep.generate("p", stop=["\n"], max_tokens=8, grammar=TINY).text == "Answer: yes because x."
    assert rep.generate("p", stop=["\n"], max_tokens=8).text == "Answer: yes because x."
    with pytest.raises(LLMError):
        rep.generate("p", stop=["\n"], max_tokens=8, grammar='root ::= "other"')
