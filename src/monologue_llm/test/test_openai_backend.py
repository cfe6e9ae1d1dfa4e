"""Tests of the OpenAI-compatible backend, mostly against a real local llama.cpp server."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from monologue_llm.base import (
    LLMBackend,
    LLMError,
    LLMUnavailableError,
    ScoringUnsupportedError,
)

openai_backend = pytest.importorskip("monologue_llm.openai_backend")
OpenAICompatBackend = openai_backend.OpenAICompatBackend

SKY = "The colour of the sky on a clear day is"


def remote(server: Any, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> Any:
    monkeypatch.setenv(server.key_env, server.api_key)
    kw.setdefault("timeout_s", 120.0)  # llama_cpp.server is slow with logprobs
    return OpenAICompatBackend(server.base_url, server.model, api_key_env=server.key_env,
                               max_retries=1, backoff_s=0.1, **kw)


# -- against the real llama.cpp server ---------------------------------------

@pytest.mark.llm
@pytest.mark.slow
def test_generate_via_completions(llama_server: Any, llama_backend: Any,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    backend = remote(llama_server, monkeypatch)
    assert isinstance(backend, LLMBackend)
    gen = backend.generate(SKY, stop=["\n"], max_tokens=8)
    local = llama_backend.generate(SKY, stop=["\n"], max_tokens=8)
    assert gen.text.strip()
    assert "\n" not in gen.text
    assert gen.text.split()[0] == local.text.split()[0]  # same greedy first word
    assert gen.prompt_tokens == local.prompt_tokens
    assert 1 <= gen.completion_tokens <= 8
    assert gen.finish_reason in ("stop", "length")
    backend.close()


@pytest.mark.llm
@pytest.mark.slow
def test_generate_via_chat(llama_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = remote(llama_server, monkeypatch, generation_api="chat")
    gen = backend.generate("Name a colour.", max_tokens=4)
    assert isinstance(gen.text, str)  # a base model may answer with nothing
    assert gen.prompt_tokens > 0
    assert gen.finish_reason


@pytest.mark.llm
@pytest.mark.slow
def test_score_agrees_with_in_process_backend(llama_server: Any, llama_backend: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    backend = remote(llama_server, monkeypatch)
    # the second prompt ends in a space, which merges into the candidate's first token
    results = []
    for prompt, cands in ((SKY, [" a sandwich.", " blue.", ""]), (SKY + " ", ["blue."])):
        got = backend.score(prompt, cands)
        results.append(got)
        local = llama_backend.score(prompt, cands)
        assert [s.text for s in got.scores] == cands
        for g, w in zip(got.scores, local.scores, strict=True):
            assert g.token_count == w.token_count
            # llama_cpp.server uses repacked kernels and other batch splits, so
            # values agree to within llama.cpp's numerical noise (measured <= 0.3)
            assert g.logprob == pytest.approx(w.logprob, abs=max(0.5, 0.05 * abs(w.logprob)))
        assert got.new_tokens_processed > 0
        assert got.prompt_tokens > 5
    sandwich, blue, empty = results[0].scores
    assert blue.logprob > sandwich.logprob  # same ranking as in-process
    assert (empty.logprob, empty.token_count) == (0.0, 0)


@pytest.mark.llm
@pytest.mark.slow
def test_api_key_comes_only_from_named_env(llama_server: Any,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(llama_server.key_env, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", llama_server.api_key)  # must not be used
    backend = OpenAICompatBackend(llama_server.base_url, llama_server.model,
                                  api_key_env=llama_server.key_env, timeout_s=30,
                                  max_retries=3, backoff_s=1.0)
    start = time.monotonic()
    with pytest.raises(LLMError, match="HTTP 401") as err:
        backend.generate(SKY, max_tokens=1)
    assert not isinstance(err.value, LLMUnavailableError)
    assert time.monotonic() - start < 5  # 4xx is not retried
    ok = remote(llama_server, monkeypatch)  # the right variable set: accepted
    assert ok.generate(SKY, max_tokens=1).completion_tokens == 1


# -- failure modes -------------------------------------------------------------

def test_down_server_is_unavailable_after_retries(unused_port: int) -> None:
    port = unused_port
    backend = OpenAICompatBackend(f"http://127.0.0.1:{port}/v1", "m", timeout_s=2,
                                  max_retries=2, backoff_s=0.05)
    for call in (lambda: backend.generate("hi"), lambda: backend.score("hi", [" a", " b"])):
        start = time.monotonic()
        with pytest.raises(LLMUnavailableError, match="3 attempt"):
            call()
        assert time.monotonic() - start < 5


def test_silent_server_times_out() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)  # accepts connections (backlog) but never answers
        port = sock.getsockname()[1]
        backend = OpenAICompatBackend(f"http://127.0.0.1:{port}/v1", "m", timeout_s=0.5,
                                      max_retries=1, backoff_s=0.05)
        start = time.monotonic()
        with pytest.raises(LLMUnavailableError, match="2 attempt"):
            backend.generate("hi")
        assert time.monotonic() - start < 5


class FakeServer(ThreadingHTTPServer):
    """Minimal OpenAI-like server. Fails ``fail_first`` requests with 500; then
    answers completions, with echoed word-level log-probs (-len(token)) if
    ``with_logprobs``; rejects a list of prompts with 500 unless ``accept_lists``.
    Records the request bodies."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), FakeHandler)
        self.fail_first = 0
        self.with_logprobs = False
        self.accept_lists = False
        self.reject_echo = False
        self.requests: list[dict[str, Any]] = []


def fake_choice(prompt: str, index: int, body: dict[str, Any], logprobs: bool) -> dict[str, Any]:
    text = (prompt if body.get("echo") else "") + " ok"
    lp = None
    if logprobs and body.get("echo"):
        tokens = re.findall(r"\s*\S+|\s+", text)
        offsets = [sum(len(t) for t in tokens[:i]) for i in range(len(tokens))]
        values: list[float | None] = [None] + [-float(len(t)) for t in tokens[1:]]
        lp = {"tokens": tokens, "text_offset": offsets, "token_logprobs": values}
    return {"text": text, "index": index, "logprobs": lp, "finish_reason": "length"}


class FakeHandler(BaseHTTPRequestHandler):
    server: FakeServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(body)
        if len(self.server.requests) <= self.server.fail_first:
            self._send(500, {"error": {"message": "boom"}})
            return
        if body.get("echo") and self.server.reject_echo:
            self._send(400, {"error": {"message": "echo is not supported"}})
            return
        prompts = body["prompt"]
        if isinstance(prompts, list) and not self.server.accept_lists:
            self._send(500, {"error": {"message": "lists not supported"}})
            return
        prompts = prompts if isinstance(prompts, list) else [prompts]
        choices = [fake_choice(p, i, body, self.server.with_logprobs)
                   for i, p in enumerate(prompts)]
        self._send(200, {
            "id": "x", "object": "text_completion", "created": 0, "model": body["model"],
            "choices": choices[::-1],  # out of order on purpose
            "usage": {"prompt_tokens": 3 * len(prompts), "completion_tokens": 1,
                      "total_tokens": 4},
        })

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture()
def fake_server() -> Iterator[FakeServer]:
    server = FakeServer()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def fake_backend(server: FakeServer, **kw: Any) -> Any:
    port = server.server_address[1]
    return OpenAICompatBackend(f"http://127.0.0.1:{port}/v1", "fake", timeout_s=5,
                               max_retries=2, backoff_s=0.01, **kw)


def test_5xx_is_retried(fake_server: FakeServer) -> None:
    fake_server.fail_first = 2
    gen = fake_backend(fake_server).generate("hello", max_tokens=2)
    assert gen.text == " ok"
    assert len(fake_server.requests) == 3
    assert fake_server.requests[-1]["temperature"] == 0.0


def test_missing_prompt_logprobs_is_not_silently_degraded(fake_server: FakeServer) -> None:
    backend = fake_backend(fake_server)
    with pytest.raises(ScoringUnsupportedError, match="no prompt log-probs"):
        backend.score("hello", [" world"])
    assert fake_server.requests[-1]["echo"] is True
    fake_server.reject_echo = True
    with pytest.raises(ScoringUnsupportedError, match="echo is not supported"):
        backend.score("hello", [" world"])
    unsupported = fake_backend(fake_server, scoring="unsupported")
    with pytest.raises(ScoringUnsupportedError, match="disabled"):
        unsupported.score("hello", [" world"])


@pytest.mark.parametrize("accept_lists", [True, False])
def test_echo_scoring_by_text_offsets(fake_server: FakeServer, accept_lists: bool) -> None:
    fake_server.with_logprobs = True
    fake_server.accept_lists = accept_lists
    backend = fake_backend(fake_server)
    res = backend.score("The sky is", [" blue.", "", " very blue"])
    assert [s.logprob for s in res.scores] == [-6.0, 0.0, -10.0]
    assert [s.token_logprobs for s in res.scores] == [(-6.0,), (), (-5.0, -5.0)]
    assert res.prompt_tokens == 3
    n_first = len(fake_server.requests)
    assert n_first == (1 if accept_lists else 3)  # list probe, then one per candidate
    merged = backend.score("The sky is ", ["blue", "grey"])  # space merges into the token
    assert [(s.logprob, s.token_count) for s in merged.scores] == [(-5.0, 1), (-5.0, 1)]
    assert len(fake_server.requests) - n_first == (1 if accept_lists else 2)  # no new probe


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="generation_api"):
        OpenAICompatBackend("http://127.0.0.1:1/v1", "m", generation_api="responses")
    with pytest.raises(ValueError, match="scoring"):
        OpenAICompatBackend("http://127.0.0.1:1/v1", "m", scoring="magic")


def test_grammar_is_sent_only_when_a_field_is_configured(fake_server: FakeServer,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    grammar = 'root ::= "ok"'
    fake_backend(fake_server, grammar_field="grammar").generate("hello", max_tokens=2, grammar=grammar)
    assert fake_server.requests[-1]["grammar"] == grammar
    plain = fake_backend(fake_server)
    with caplog.at_level("WARNING"):
        plain.generate("hello", max_tokens=2, grammar=grammar)
        plain.generate("hello", max_tokens=2, grammar=grammar)
    assert "grammar" not in fake_server.requests[-1]
    assert sum("NOT constrained" in r.message for r in caplog.records) <= 1
