"""The persistent embedding cache: exact round trips, sharing between instances and processes'
backends, and a store that cannot be used (corrupt file, unwritable directory) bypassed with a warning."""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import pytest

from monologue_llm.embedding_store import EmbeddingStore, model_fingerprint


def test_round_trip_is_exact_and_shared_between_instances(tmp_path: Path) -> None:
    vec = (0.1, -0.25, 1 / 3, math.pi / 10)
    a = EmbeddingStore(tmp_path, "m1")
    a.put_many({"pick up the apple": vec, "go to the trash": (1.0, 0.0, 0.0, 0.0)})
    b = EmbeddingStore(tmp_path, "m1")  # another process's view of the same file
    got = b.get_many(["go to the trash", "pick up the apple", "unknown"])
    assert got == {"pick up the apple": vec, "go to the trash": (1.0, 0.0, 0.0, 0.0)}
    assert len(b) == 2 and EmbeddingStore(tmp_path, "m2").get_many(["pick up the apple"]) == {}


def test_many_texts_are_read_in_chunks(tmp_path: Path) -> None:
    store = EmbeddingStore(tmp_path, "m")
    items = {f"action {i}": (float(i), 1.0) for i in range(1200)}
    store.put_many(items)
    assert store.get_many(list(items)) == items


def test_fingerprint_names_content_and_method(tmp_path: Path) -> None:
    f = tmp_path / "model.gguf"
    f.write_bytes(b"x" * 3_000_000)
    g = tmp_path / "other.gguf"
    g.write_bytes(b"x" * 2_999_999 + b"y")
    assert model_fingerprint(f, "mean") == model_fingerprint(f, "mean")
    assert len({model_fingerprint(f, "mean"), model_fingerprint(f, "cls"), model_fingerprint(g, "mean")}) == 3


def test_a_corrupt_store_is_bypassed_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "m.sqlite").write_bytes(b"this is not a database" * 100)
    with caplog.at_level(logging.WARNING):
        store = EmbeddingStore(tmp_path, "m")
    assert not store.usable and "not usable" in caplog.text
    store.put_many({"a": (1.0,)})
    assert store.get_many(["a"]) == {} and (tmp_path / "m.sqlite").read_bytes().startswith(b"this is not")


def test_an_unwritable_directory_is_bypassed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with caplog.at_level(logging.WARNING):
        store = EmbeddingStore(blocker / "embeddings", "m")
    assert not store.usable and "embeddings are not kept on disk" in caplog.text


@pytest.mark.llm
def test_llama_backend_reads_embeddings_another_backend_stored(tmp_path: Path) -> None:
    from monologue_llm.llama_cpp_backend import LlamaCppBackend
    from monologue_llm.model_files import embedded_model_path

    texts = ["pick up the apple", "walk to the kitchen"]
    path = embedded_model_path()
    with LlamaCppBackend(path, n_ctx=256, n_threads=1, embedding_cache_dir=tmp_path) as first:
        computed = first.embed(texts)
    (store_file,) = tmp_path.glob("*.sqlite")
    with LlamaCppBackend(path, n_ctx=256, n_threads=1, embedding_cache_dir=tmp_path) as second:
        calls: list[Any] = []
        second.embed(["x"])  # loads the embedding context
        real = second._embedder.embed
        second._embedder.embed = lambda *a, **k: calls.append(a) or real(*a, **k)
        assert second.embed(texts) == computed and calls == []  # read from disk, nothing recomputed
        second.embed(["a new text"])
        assert len(calls) == 1
    assert len(EmbeddingStore(tmp_path, store_file.stem)) == 4
