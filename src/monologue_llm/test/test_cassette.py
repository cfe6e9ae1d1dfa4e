"""Tests of the record/replay cassette wrapper."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from monologue_llm.base import (
    CandidateScore,
    CassetteMissError,
    Generation,
    LLMBackend,
    ScoreResult,
)
from monologue_llm.cassette import CassetteBackend, request_key


class FakeBackend:
    """Deterministic stand-in that counts its calls."""

    name = "fake"

    def __init__(self) -> None:
        self.calls = 0
        self.closed = False

    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64) -> Generation:
        self.calls += 1
        return Generation(f"<{len(prompt)}|{','.join(stop)}|{max_tokens}>", len(prompt), 3, 2,
                          "stop", 0.125)

    def score(self, prompt: str, candidates: Sequence[str]) -> ScoreResult:
        self.calls += 1
        scores = tuple(
            CandidateScore(c, -0.1 * len(c) - 1e-17, len(c), tuple([-0.1] * len(c)))
            for c in candidates
        )
        return ScoreResult(scores, len(prompt), 7, 0.25)

    def close(self) -> None:
        self.closed = True


class ExplodingBackend(FakeBackend):
    name = "exploding"

    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64) -> Generation:
        raise AssertionError("replay must not call the inner backend")

    def score(self, prompt: str, candidates: Sequence[str]) -> ScoreResult:
        raise AssertionError("replay must not call the inner backend")


PROMPT = "Scene: a red block and a blue bowl.\n" * 20 + "Robot action:"


def record_some(inner: Any, path: Path) -> tuple[Generation, ScoreResult]:
    rec = CassetteBackend(inner, path, "record")
    assert isinstance(rec, LLMBackend)
    gen = rec.generate(PROMPT, stop=["\n"], max_tokens=8)
    res = rec.score(PROMPT, [" pick up the red block.", " done.", ""])
    return gen, res


def test_record_then_replay_is_identical_without_inner(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "cassette.jsonl"
    inner = FakeBackend()
    gen, res = record_some(inner, path)
    assert inner.calls == 2
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    entry = json.loads(lines[1])
    assert entry["prompt"] == PROMPT and entry["kind"] == "score"
    assert entry["key"] == request_key("score", PROMPT, entry["args"])

    for inner_for_replay in (None, ExplodingBackend()):
        rep = CassetteBackend(inner_for_replay, path, "replay")
        assert rep.generate(PROMPT, stop=["\n"], max_tokens=8) == gen
        assert rep.score(PROMPT, [" pick up the red block.", " done.", ""]) == res


def test_changed_request_is_a_loud_miss(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    record_some(FakeBackend(), path)
    rep = CassetteBackend(None, path, "replay")
    changed = PROMPT.replace("blue bowl", "green bowl", 1)
    with pytest.raises(CassetteMissError) as err:
        rep.score(changed, [" pick up the red block.", " done.", ""])
    msg = str(err.value)
    assert "Scene: a red block and a green bowl" in msg  # start of the unseen prompt
    assert "Robot action:" in msg  # end of the unseen prompt
    assert "diverges at char" in msg
    with pytest.raises(CassetteMissError, match="different arguments"):
        rep.generate(PROMPT, stop=["\n"], max_tokens=9)
    with pytest.raises(CassetteMissError):
        rep.score(PROMPT, [" done."])


def test_replay_needs_existing_file_and_record_needs_inner(tmp_path: Path) -> None:
    with pytest.raises(CassetteMissError, match="does not exist"):
        CassetteBackend(None, tmp_path / "missing.jsonl", "replay")
    with pytest.raises(ValueError, match="inner"):
        CassetteBackend(None, tmp_path / "x.jsonl", "record")
    with pytest.raises(ValueError, match="mode"):
        CassetteBackend(FakeBackend(), tmp_path / "x.jsonl", "rewind")


def test_off_mode_passes_through_and_close(tmp_path: Path) -> None:
    inner = FakeBackend()
    off = CassetteBackend(inner, tmp_path / "unused.jsonl", "off")
    assert off.generate("p").text == inner.generate("p").text
    assert not (tmp_path / "unused.jsonl").exists()
    off.close()
    assert inner.closed


@pytest.mark.llm
@pytest.mark.slow
def test_record_replay_with_real_model(llama_backend: Any, tmp_path: Path) -> None:
    path = tmp_path / "real.jsonl"
    gen, res = record_some(llama_backend, path)
    rep = CassetteBackend(None, path, "replay")
    assert rep.generate(PROMPT, stop=["\n"], max_tokens=8) == gen
    replayed = rep.score(PROMPT, [" pick up the red block.", " done.", ""])
    assert replayed == res
    assert [s.logprob for s in replayed.scores] == [s.logprob for s in res.scores]
