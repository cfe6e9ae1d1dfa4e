"""Backend for OpenAI-compatible HTTP servers (vLLM, llama.cpp server, OpenAI)."""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

import openai

from .base import (
    CandidateScore,
    Generation,
    InvalidOutputError,
    LLMError,
    LLMUnavailableError,
    Sample,
    SampleResult,
    ScoreResult,
    ScoringUnsupportedError,
    Vector,
    l2_normalize,
    warn_unconstrained_once,
)
from .decoding import check_sample_args, stop_at

GenerationApi = Literal["completions", "chat"]
ScoringMode = Literal["echo_logprobs", "unsupported"]
GENERATION_APIS: tuple[str, ...] = ("completions", "chat")
SCORING_MODES: tuple[str, ...] = ("echo_logprobs", "unsupported")
PLACEHOLDER_API_KEY = "sk-no-key"
_MAX_BACKOFF_S = 30.0

_LOG = logging.getLogger(__name__)
T = TypeVar("T")


def _cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    cut = stop_at(text, stop)
    return (text, False) if cut is None else (text[:cut], True)


def _usage_tokens(resp: Any) -> tuple[int, int, int]:
    """(prompt, completion, cached prompt) token counts reported by the server."""
    usage = getattr(resp, "usage", None)
    if usage is None:
        return 0, 0, 0
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    return (
        int(getattr(usage, "prompt_tokens", 0) or 0),
        int(getattr(usage, "completion_tokens", 0) or 0),
        int(cached or 0),
    )


class OpenAICompatBackend:
    """LLM backend talking to an OpenAI-compatible server through ``openai``.

    The API key is read only from the environment variable ``api_key_env``;
    if it is unset a placeholder key is sent (fine for local servers).
    Scoring uses ``/v1/completions`` with ``echo=True`` and ``logprobs`` and
    needs a server that returns prompt log-probs (vLLM, llama.cpp); otherwise
    :class:`ScoringUnsupportedError` is raised. ``new_tokens_processed`` is
    what the server reports (prompt minus cached tokens, plus completion).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float = 30.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        generation_api: GenerationApi | str = "completions",
        scoring: ScoringMode | str = "echo_logprobs",
        logger: logging.Logger | None = None,
        batch_prompts: bool | None = None,
        grammar_field: str = "",
    ) -> None:
        if not base_url:
            raise ValueError("base_url must be set, e.g. http://127.0.0.1:8000/v1")
        if not model:
            raise ValueError("model must be set")
        if generation_api not in GENERATION_APIS:
            raise ValueError(
                f"generation_api must be one of {GENERATION_APIS}, got {generation_api!r}"
            )
        if scoring not in SCORING_MODES:
            raise ValueError(f"scoring must be one of {SCORING_MODES}, got {scoring!r}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if max_retries < 0 or backoff_s < 0:
            raise ValueError("max_retries and backoff_s must be >= 0")
        self.log = logger or _LOG
        self.name = f"openai:{model}@{base_url}"
        self.base_url = base_url
        self.model = model
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.generation_api = generation_api
        self.scoring = scoring
        self._batch_prompts = batch_prompts  # None: probe once whether lists work
        self.grammar_field = grammar_field  # request field of a GBNF grammar ("grammar": llama.cpp's server)
        key = os.environ.get(api_key_env, "") if api_key_env else ""
        if not key:
            self.log.info(
                "environment variable %r is not set; using placeholder API key", api_key_env
            )
            key = PLACEHOLDER_API_KEY
        # retries are done here (with our backoff); the client only enforces timeouts
        self._client = openai.OpenAI(
            api_key=key, base_url=base_url, timeout=self.timeout_s, max_retries=0
        )

    # -- transport -------------------------------------------------------
    def _call(self, what: str, fn: Callable[[], T], retries: int | None = None) -> T:
        """Run ``fn`` retrying connection errors, timeouts, 429 and 5xx."""
        attempts = 1 + (self.max_retries if retries is None else retries)
        last = ""
        for attempt in range(attempts):
            try:
                return fn()
            except (
                openai.APIConnectionError,
                openai.RateLimitError,
                openai.InternalServerError,
            ) as exc:
                last = f"{type(exc).__name__}: {exc}"
            except openai.APIStatusError as exc:
                if exc.status_code < 500:
                    raise LLMError(
                        f"{what} rejected by {self.base_url} "
                        f"(HTTP {exc.status_code}): {exc.message}"
                    ) from exc
                last = f"HTTP {exc.status_code}: {exc.message}"
            if attempt + 1 < attempts:
                delay = min(self.backoff_s * (2**attempt), _MAX_BACKOFF_S)
                self.log.warning(
                    "%s to %s failed (%s); retry %d/%d in %.2fs",
                    what, self.base_url, last, attempt + 1, attempts - 1, delay,
                )
                time.sleep(delay)
        raise LLMUnavailableError(
            f"{what} to {self.base_url} failed after {attempts} attempt(s): {last}"
        )

    # -- generation ------------------------------------------------------
    accepts_grammar = True  # sent when grammar_field is set, else logged once and ignored

    def generate(
        self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64, grammar: str | None = None
    ) -> Generation:
        """Greedy (temperature 0) completion via completions or chat API.

        ``grammar`` (GBNF) is sent as the request field ``grammar_field`` (llama.cpp's server: ``grammar``);
        with no field configured it is not sent and the output is not constrained (logged once).
        """
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1 for remote generation, got {max_tokens}")
        stops = [s for s in stop if s]
        extra: dict[str, Any] | None = None
        if grammar:
            if self.grammar_field:
                extra = {self.grammar_field: grammar}
            else:
                warn_unconstrained_once(self.log, self.name, "llm.grammar_field is empty")
        t0 = time.perf_counter()
        resp: Any
        if self.generation_api == "chat":
            resp = self._call(
                "chat completion",
                lambda: self._client.chat.completions.create(
                    model=self.model,
                    messages=[{"role": "user", "content": prompt}],
                    max_tokens=max_tokens,
                    temperature=0.0,
                    stop=stops or openai.omit,
                    extra_body=extra,
                ),
            )
            choice = resp.choices[0] if resp.choices else None
            text = getattr(getattr(choice, "message", None), "content", None)
        else:
            resp = self._call(
                "completion",
                lambda: self._client.completions.create(
                    model=self.model,
                    prompt=prompt,
                    max_tokens=max_tokens,
                    temperature=0.0,
                    stop=stops or openai.omit,
                    extra_body=extra,
                ),
            )
            choice = resp.choices[0] if resp.choices else None
            text = getattr(choice, "text", None)
        if choice is None or text is None:
            raise InvalidOutputError(f"{self.name}: response has no text: {resp!r:.300}")
        text, stopped = _cut_at_stop(str(text), stops)
        finish = "stop" if stopped else str(getattr(choice, "finish_reason", None) or "stop")
        prompt_toks, completion_toks, cached = _usage_tokens(resp)
        return Generation(
            text=text,
            prompt_tokens=prompt_toks,
            new_tokens_processed=prompt_toks - cached + completion_toks,
            completion_tokens=completion_toks,
            finish_reason=finish,
            wall_time_s=time.perf_counter() - t0,
        )

    # -- scoring ---------------------------------------------------------
    def _echo_request(self, texts: list[str], retries: int | None = None) -> Any:
        prompt: str | list[str] = texts[0] if len(texts) == 1 else texts
        try:
            return self._call(
                "scoring completion",
                lambda: self._client.completions.create(
                    model=self.model,
                    prompt=prompt,
                    max_tokens=1,  # llama.cpp treats 0 as "unlimited"
                    temperature=0.0,
                    echo=True,
                    logprobs=1,
                ),
                retries=retries,
            )
        except LLMError as exc:
            cause = exc.__cause__
            if isinstance(cause, openai.APIStatusError) and cause.status_code in (400, 422):
                raise ScoringUnsupportedError(
                    f"{self.name} rejected echo+logprobs scoring: {exc}"
                ) from exc
            raise

    def _list_request(self, texts: list[str]) -> tuple[list[Any], Any] | None:
        """One echo request for all texts -> (choices in order, response), or None
        if the server cannot take a list of prompts."""
        if self._batch_prompts:
            resp = self._echo_request(texts)
        else:  # unknown yet: probe once, without retries
            try:
                resp = self._client.completions.create(
                    model=self.model, prompt=texts, max_tokens=1, temperature=0.0,
                    echo=True, logprobs=1,
                )
            except openai.APIConnectionError:
                return None  # server problem, not an answer; retried per candidate
            except openai.APIStatusError as exc:
                self.log.info("%s: list prompts rejected (HTTP %d); one request per candidate",
                              self.name, exc.status_code)
                self._batch_prompts = False
                return None
        got = list(getattr(resp, "choices", None) or [])
        indices = sorted(int(getattr(ch, "index", -1)) for ch in got)
        if indices != list(range(len(texts))):
            if self._batch_prompts:
                raise InvalidOutputError(f"{len(got)} choices for {len(texts)} prompts")
            self.log.info("%s: list prompts not answered one-to-one; one request per candidate",
                          self.name)
            self._batch_prompts = False
            return None
        self._batch_prompts = True
        got.sort(key=lambda ch: int(ch.index))
        return got, resp

    def _parse_candidate(self, choice: Any, prompt: str, cand: str) -> tuple[list[float], int]:
        """Candidate token log-probs from an echoed choice, and the prompt token count."""
        lp = getattr(choice, "logprobs", None)
        offsets = getattr(lp, "text_offset", None) if lp is not None else None
        values = getattr(lp, "token_logprobs", None) if lp is not None else None
        text = str(getattr(choice, "text", "") or "")
        if not offsets or values is None or len(offsets) != len(values):
            raise ScoringUnsupportedError(
                f"{self.name} returned no prompt log-probs for echo=True "
                "(the server cannot score; use vLLM or llama.cpp, or scoring='unsupported')"
            )
        full = prompt + cand
        if not text.startswith(full):
            raise ScoringUnsupportedError(
                f"{self.name} did not echo the prompt (got {text[:80]!r}); cannot score"
            )
        p_end, c_end = len(prompt), len(full)
        picked: list[float] = []
        n_prompt = 0
        for i, off in enumerate(offsets):
            end = offsets[i + 1] if i + 1 < len(offsets) else len(text)
            if end <= p_end:
                n_prompt += 1
            elif off < c_end:  # token overlaps the candidate (incl. a merged boundary token)
                value = values[i]
                if value is None:
                    raise InvalidOutputError(
                        f"{self.name}: no log-prob for candidate token {i} of {cand!r}"
                    )
                picked.append(float(value))
        if not picked:
            raise InvalidOutputError(f"{self.name}: no echoed tokens cover candidate {cand!r}")
        return picked, n_prompt

    def score(self, prompt: str, candidates: Sequence[str]) -> ScoreResult:
        """Log-prob of each candidate via echoed prompt log-probs (one request each
        unless the server accepts a list of prompts)."""
        if self.scoring == "unsupported":
            raise ScoringUnsupportedError(
                f"scoring is disabled for {self.name} (scoring='unsupported'); "
                "configure a server that returns prompt log-probs and scoring='echo_logprobs'"
            )
        t0 = time.perf_counter()
        active = [i for i, c in enumerate(candidates) if c]
        choices: dict[int, Any] = {}
        processed = 0
        texts = [prompt + candidates[i] for i in active]
        if len(texts) > 1 and self._batch_prompts is not False:
            listed = self._list_request(texts)
            if listed is not None:
                choices = dict(zip(active, listed[0], strict=True))
                p, _, cached = _usage_tokens(listed[1])
                processed += p - cached
        for i, text in zip(active, texts, strict=True):
            if i in choices:
                continue
            resp = self._echo_request([text])
            if not resp.choices:
                raise InvalidOutputError(f"{self.name}: scoring response has no choices")
            choices[i] = resp.choices[0]
            p, _, cached = _usage_tokens(resp)
            processed += p - cached
        scores: list[CandidateScore] = []
        prompt_tokens = 0
        for i, cand in enumerate(candidates):
            if i not in choices:
                scores.append(CandidateScore(cand, 0.0, 0, ()))
                continue
            lps, n_prompt = self._parse_candidate(choices[i], prompt, cand)
            prompt_tokens = max(prompt_tokens, n_prompt)
            total = math.fsum(lps)
            scores.append(CandidateScore(cand, total, len(lps), tuple(lps)))
        return ScoreResult(
            scores=tuple(scores),
            prompt_tokens=prompt_tokens,
            new_tokens_processed=processed,
            wall_time_s=time.perf_counter() - t0,
        )

    # -- sampling --------------------------------------------------------
    def sample(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64, n: int = 1,
               temperature: float = 1.0, presence_penalty: float = 0.0, seed: int = 0) -> SampleResult:
        """``n`` samples in one request (``n``, ``temperature``, ``presence_penalty``, ``seed``
        and the sampled tokens' log-probs). Whether ``seed`` makes the samples reproducible is
        up to the server; record a cassette for exact replays."""
        check_sample_args(max_tokens, n)
        stops = [s for s in stop if s]
        t0 = time.perf_counter()
        resp: Any
        if self.generation_api == "chat":
            resp = self._call(
                "chat sampling",
                lambda: self._client.chat.completions.create(
                    model=self.model,
                    messages=[{"role": "user", "content": prompt}],
                    max_tokens=max_tokens,
                    n=n,
                    temperature=temperature,
                    presence_penalty=presence_penalty,
                    seed=seed,
                    logprobs=True,
                    stop=stops or openai.omit,
                ),
            )
        else:
            resp = self._call(
                "sampling completion",
                lambda: self._client.completions.create(
                    model=self.model,
                    prompt=prompt,
                    max_tokens=max_tokens,
                    n=n,
                    temperature=temperature,
                    presence_penalty=presence_penalty,
                    seed=seed,
                    logprobs=1,
                    stop=stops or openai.omit,
                ),
            )
        choices = sorted(getattr(resp, "choices", None) or [], key=lambda c: int(getattr(c, "index", 0) or 0))
        if not choices:
            raise InvalidOutputError(f"{self.name}: sampling response has no choices")
        samples = tuple(self._sample_from_choice(c, stops) for c in choices)
        prompt_toks, completion_toks, cached = _usage_tokens(resp)
        return SampleResult(
            samples=samples,
            prompt_tokens=prompt_toks,
            new_tokens_processed=prompt_toks - cached + completion_toks,
            wall_time_s=time.perf_counter() - t0,
        )

    def _sample_from_choice(self, choice: Any, stops: Sequence[str]) -> Sample:
        """Text and kept-token log-probs of one sampled choice (completions or chat shape)."""
        message = getattr(choice, "message", None)
        lp = getattr(choice, "logprobs", None)
        pairs: list[tuple[str, float]] = []
        if message is not None:
            text = getattr(message, "content", None)
            for item in getattr(lp, "content", None) or []:
                pairs.append((str(getattr(item, "token", "")), float(getattr(item, "logprob", 0.0))))
        else:
            text = getattr(choice, "text", None)
            tokens = getattr(lp, "tokens", None) or []
            values = getattr(lp, "token_logprobs", None) or []
            pairs = [(str(t), float(v)) for t, v in zip(tokens, values, strict=False) if v is not None]
        if text is None:
            raise InvalidOutputError(f"{self.name}: sampled choice has no text")
        if not pairs and str(text):
            raise ScoringUnsupportedError(f"{self.name} returned no log-probs of the sampled tokens")
        cut_text, stopped = _cut_at_stop(str(text), stops)
        kept: list[float] = []
        pos = 0
        for token, value in pairs:  # keep the tokens that start before the cut
            if pos >= len(cut_text):
                break
            kept.append(value)
            pos += len(token)
        finish = "stop" if stopped else str(getattr(choice, "finish_reason", None) or "stop")
        return Sample(cut_text, tuple(kept), finish)

    # -- embeddings ------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> tuple[Vector, ...]:
        """Embeddings from ``/v1/embeddings`` (the server's pooling), L2-normalised here."""
        if not texts:
            return ()
        resp: Any = self._call(
            "embeddings",
            lambda: self._client.embeddings.create(model=self.model, input=list(texts)),
        )
        data = sorted(getattr(resp, "data", None) or [], key=lambda d: int(getattr(d, "index", 0) or 0))
        if len(data) != len(texts):
            raise InvalidOutputError(f"{self.name}: {len(data)} embeddings for {len(texts)} texts")
        out: list[Vector] = []
        for d in data:
            vec = getattr(d, "embedding", None)
            if not isinstance(vec, list) or not vec:
                raise InvalidOutputError(f"{self.name}: an embedding is not a list of numbers")
            out.append(l2_normalize([float(x) for x in vec]))
        return tuple(out)

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()
