"""LLM backend layer (ROS-free): llama.cpp in-process, OpenAI-compatible HTTP, cassettes.

Heavy backends are imported lazily, so ``import monologue_llm`` needs
neither ``llama_cpp`` nor ``openai``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import (
    CandidateScore,
    CapabilityUnsupportedError,
    CassetteMissError,
    EmbeddingBackend,
    Generation,
    InvalidOutputError,
    LLMBackend,
    LLMError,
    LLMUnavailableError,
    Sample,
    SampleResult,
    SamplingBackend,
    ScoreResult,
    ScoringUnsupportedError,
    Vector,
    l2_normalize,
    normalize_scores,
)
from .cassette import CassetteBackend
from .factory import make_backend
from .model_files import ModelFileError, embedded_model_path

if TYPE_CHECKING:
    from .llama_cpp_backend import LlamaCppBackend
    from .openai_backend import OpenAICompatBackend

__all__ = [
    "CandidateScore",
    "CapabilityUnsupportedError",
    "CassetteBackend",
    "CassetteMissError",
    "EmbeddingBackend",
    "Generation",
    "InvalidOutputError",
    "LLMBackend",
    "LLMError",
    "LLMUnavailableError",
    "LlamaCppBackend",
    "ModelFileError",
    "OpenAICompatBackend",
    "Sample",
    "SampleResult",
    "SamplingBackend",
    "ScoreResult",
    "ScoringUnsupportedError",
    "Vector",
    "embedded_model_path",
    "l2_normalize",
    "make_backend",
    "normalize_scores",
]


def __getattr__(name: str) -> Any:
    if name == "LlamaCppBackend":
        from .llama_cpp_backend import LlamaCppBackend

        return LlamaCppBackend
    if name == "OpenAICompatBackend":
        from .openai_backend import OpenAICompatBackend

        return OpenAICompatBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
