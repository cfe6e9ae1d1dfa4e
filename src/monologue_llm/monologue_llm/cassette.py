"""Record/replay wrapper that makes LLM calls reproducible (JSONL cassettes)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from .base import (
    CandidateScore,
    CapabilityUnsupportedError,
    CassetteMissError,
    EmbeddingBackend,
    Generation,
    InvalidOutputError,
    LLMBackend,
    LLMError,
    Sample,
    SampleResult,
    SamplingBackend,
    ScoreResult,
    Vector,
    generate_constrained,
)

CassetteMode = Literal["record", "replay", "off"]
CASSETTE_MODES: tuple[str, ...] = ("record", "replay", "off")
_SNIPPET = 160


def request_key(kind: str, prompt: str, args: dict[str, Any]) -> str:
    """sha256 over the canonical JSON of the request kind, prompt and arguments."""
    blob = json.dumps(
        {"kind": kind, "prompt": prompt, "args": args},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _snippet(text: str) -> str:
    if len(text) <= 2 * _SNIPPET:
        return repr(text)
    return f"{text[:_SNIPPET]!r} ... {text[-_SNIPPET:]!r} ({len(text)} chars)"


def _generation_to_json(gen: Generation) -> dict[str, Any]:
    return {
        "text": gen.text,
        "prompt_tokens": gen.prompt_tokens,
        "new_tokens_processed": gen.new_tokens_processed,
        "completion_tokens": gen.completion_tokens,
        "finish_reason": gen.finish_reason,
        "wall_time_s": gen.wall_time_s,
    }


def _generation_from_json(d: dict[str, Any]) -> Generation:
    return Generation(
        text=str(d["text"]),
        prompt_tokens=int(d["prompt_tokens"]),
        new_tokens_processed=int(d["new_tokens_processed"]),
        completion_tokens=int(d["completion_tokens"]),
        finish_reason=str(d["finish_reason"]),
        wall_time_s=float(d["wall_time_s"]),
    )


def _counts_to_json(res: ScoreResult | SampleResult) -> dict[str, Any]:
    """The token counts and time every scoring or sampling result has."""
    return {"prompt_tokens": res.prompt_tokens, "new_tokens_processed": res.new_tokens_processed,
            "wall_time_s": res.wall_time_s}


def _counts_from_json(d: dict[str, Any]) -> dict[str, Any]:
    return {"prompt_tokens": int(d["prompt_tokens"]), "new_tokens_processed": int(d["new_tokens_processed"]),
            "wall_time_s": float(d["wall_time_s"])}


def _score_to_json(res: ScoreResult) -> dict[str, Any]:
    return {
        "scores": [
            {
                "text": s.text,
                "logprob": s.logprob,
                "token_count": s.token_count,
                "token_logprobs": list(s.token_logprobs),
            }
            for s in res.scores
        ],
        **_counts_to_json(res),
    }


def _score_from_json(d: dict[str, Any]) -> ScoreResult:
    return ScoreResult(
        scores=tuple(
            CandidateScore(
                text=str(s["text"]),
                logprob=float(s["logprob"]),
                token_count=int(s["token_count"]),
                token_logprobs=tuple(float(x) for x in s["token_logprobs"]),
            )
            for s in d["scores"]
        ),
        **_counts_from_json(d),
    )


def _samples_to_json(res: SampleResult) -> dict[str, Any]:
    return {
        "samples": [
            {"text": s.text, "token_logprobs": list(s.token_logprobs), "finish_reason": s.finish_reason}
            for s in res.samples
        ],
        **_counts_to_json(res),
    }


def _samples_from_json(d: dict[str, Any]) -> SampleResult:
    return SampleResult(
        samples=tuple(
            Sample(
                text=str(s["text"]),
                token_logprobs=tuple(float(x) for x in s["token_logprobs"]),
                finish_reason=str(s["finish_reason"]),
            )
            for s in d["samples"]
        ),
        **_counts_from_json(d),
    )


def _vectors_from_json(d: dict[str, Any]) -> tuple[Vector, ...]:
    return tuple(tuple(float(x) for x in v) for v in d["vectors"])


class CassetteBackend:
    """Wraps a backend and records its calls to, or replays them from, a JSONL file.

    * ``record``: forwards to ``inner`` and appends one JSON object per call.
    * ``replay``: answers only from the file, never calls ``inner``; an unseen
      request raises :class:`CassetteMissError`. If a request was recorded
      several times, the last record wins.
    * ``off``: plain pass-through to ``inner``.
    """

    def __init__(
        self, inner: LLMBackend | None, path: Path | str, mode: CassetteMode | str
    ) -> None:
        if mode not in CASSETTE_MODES:
            raise ValueError(f"cassette mode must be one of {CASSETTE_MODES}, got {mode!r}")
        if mode in ("record", "off") and inner is None:
            raise ValueError(f"cassette mode {mode!r} needs an inner backend")
        self._inner = inner
        self.path = Path(path)
        self.mode = mode
        self._lock = threading.Lock()
        self._entries: dict[str, dict[str, Any]] = {}
        inner_name = inner.name if inner is not None else "none"
        self.name = f"cassette[{mode}]({inner_name})"
        if mode == "replay":
            self._load()
        elif mode == "record":
            self.path.parent.mkdir(parents=True, exist_ok=True)

    # -- file handling -------------------------------------------------
    def _load(self) -> None:
        if not self.path.is_file():
            raise CassetteMissError(f"cassette file {self.path} does not exist (mode=replay)")
        with self.path.open("r", encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                    key = str(entry["key"])
                except (json.JSONDecodeError, KeyError, TypeError) as exc:
                    raise InvalidOutputError(
                        f"{self.path}:{lineno}: malformed cassette line: {exc}"
                    ) from exc
                self._entries[key] = entry

    def _append(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, ensure_ascii=False, sort_keys=True)
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()

    def _miss(self, kind: str, prompt: str, args: dict[str, Any]) -> CassetteMissError:
        best_len = -1
        best_prompt = ""
        for entry in self._entries.values():
            if entry.get("kind") != kind:
                continue
            other = str(entry.get("prompt", ""))
            n = 0
            for a, b in zip(prompt, other, strict=False):
                if a != b:
                    break
                n += 1
            if n > best_len:
                best_len, best_prompt = n, other
        hint = ""
        if best_len >= 0:
            if best_prompt == prompt:
                hint = " A recorded request has the same prompt but different arguments."
            else:
                hint = (
                    f" Closest recorded {kind} prompt diverges at char {best_len}: "
                    f"unseen has {prompt[best_len:best_len + 60]!r}, "
                    f"recorded has {best_prompt[best_len:best_len + 60]!r}."
                )
        return CassetteMissError(
            f"cassette miss in {self.path} ({len(self._entries)} recorded requests): "
            f"{kind} with args {args} and unseen prompt {_snippet(prompt)}.{hint} "
            "Re-record the cassette (cassette_mode=record) if the prompt change is intended."
        )

    def _replay(self, kind: str, prompt: str, args: dict[str, Any]) -> dict[str, Any]:
        entry = self._entries.get(request_key(kind, prompt, args))
        if entry is None:
            raise self._miss(kind, prompt, args)
        response = entry.get("response")
        if not isinstance(response, dict):
            raise InvalidOutputError(f"cassette entry for {kind} has no response object")
        return response

    def _require_inner(self) -> LLMBackend:
        if self._inner is None:  # pragma: no cover - guarded in __init__
            raise LLMError("cassette has no inner backend")
        return self._inner

    # -- LLMBackend ----------------------------------------------------
    accepts_grammar = True  # the grammar goes into the request key and on to the inner backend

    def generate(
        self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64, grammar: str | None = None
    ) -> Generation:
        """Generate through the inner backend or the cassette. A ``grammar`` is part of the request key
        (only when given, so cassettes recorded before grammars existed still replay)."""
        args: dict[str, Any] = {"stop": list(stop), "max_tokens": int(max_tokens)}
        if grammar:
            args["grammar"] = grammar
        if self.mode == "replay":
            return _generation_from_json(self._replay("generate", prompt, args))
        inner = self._require_inner()
        gen = generate_constrained(inner, prompt, stop=stop, max_tokens=max_tokens, grammar=grammar)
        if self.mode == "record":
            self._append(
                {
                    "key": request_key("generate", prompt, args),
                    "kind": "generate",
                    "backend": inner.name,
                    "prompt": prompt,
                    "args": args,
                    "response": _generation_to_json(gen),
                }
            )
        return gen

    def score(self, prompt: str, candidates: Sequence[str]) -> ScoreResult:
        """Score through the inner backend or the cassette."""
        args: dict[str, Any] = {"candidates": list(candidates)}
        if self.mode == "replay":
            return _score_from_json(self._replay("score", prompt, args))
        inner = self._require_inner()
        res = inner.score(prompt, candidates)
        if self.mode == "record":
            self._append(
                {
                    "key": request_key("score", prompt, args),
                    "kind": "score",
                    "backend": inner.name,
                    "prompt": prompt,
                    "args": args,
                    "response": _score_to_json(res),
                }
            )
        return res

    def _record(self, kind: str, prompt: str, args: dict[str, Any], response: dict[str, Any]) -> None:
        inner = self._require_inner()
        self._append(
            {
                "key": request_key(kind, prompt, args),
                "kind": kind,
                "backend": inner.name,
                "prompt": prompt,
                "args": args,
                "response": response,
            }
        )

    def sample(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64, n: int = 1,
               temperature: float = 1.0, presence_penalty: float = 0.0, seed: int = 0) -> SampleResult:
        """Sample through the inner backend (it must support sampling) or the cassette."""
        args: dict[str, Any] = {
            "stop": list(stop), "max_tokens": int(max_tokens), "n": int(n),
            "temperature": float(temperature), "presence_penalty": float(presence_penalty), "seed": int(seed),
        }
        if self.mode == "replay":
            return _samples_from_json(self._replay("sample", prompt, args))
        inner = self._require_inner()
        if not isinstance(inner, SamplingBackend):
            raise CapabilityUnsupportedError(f"{inner.name} cannot sample")
        res = inner.sample(prompt, stop=stop, max_tokens=max_tokens, n=n, temperature=temperature,
                           presence_penalty=presence_penalty, seed=seed)
        if self.mode == "record":
            self._record("sample", prompt, args, _samples_to_json(res))
        return res

    def embed(self, texts: Sequence[str]) -> tuple[Vector, ...]:
        """Embed through the inner backend (it must support embeddings) or the cassette; the
        request key is over the texts (as the prompt, JSON-encoded)."""
        prompt = json.dumps(list(texts), ensure_ascii=False)
        args: dict[str, Any] = {}
        if self.mode == "replay":
            return _vectors_from_json(self._replay("embed", prompt, args))
        inner = self._require_inner()
        if not isinstance(inner, EmbeddingBackend):
            raise CapabilityUnsupportedError(f"{inner.name} has no embeddings")
        vectors = inner.embed(texts)
        if self.mode == "record":
            self._record("embed", prompt, args, {"vectors": [list(v) for v in vectors]})
        return vectors

    def close(self) -> None:
        """Close the inner backend, if any."""
        if self._inner is not None:
            self._inner.close()
