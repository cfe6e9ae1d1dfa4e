"""`ExpertBackend`: the LLM backend that answers as a capable model would (see monologue_llm.expert).

Every query goes to the first prompt-format responder (`format.FORMATS`) that claims it; the responder
returns the correct continuation from the simulator's truth. With probability `error_rate` a query gets a
wrong answer instead: another admissible line (the responder's `wrong`, or for scoring another
candidate), or, for `slip_share` of the errors in generated text, a format slip the strategy's parser
must reject. Draws are deterministic per (seed, prompt, how often that prompt was asked), so a re-run
gives the same answers and a re-prompt with the same text gets a fresh draw.

Recording (`record_path`, "" = off; the training data of a tuned planner, monologue_eval.tune): every
query a responder answers is appended to that JSONL file as one object

    {"format": <responder name>, "kind": "generate|score|sample", "prompt": <the exact prompt>,
     "completion": <the CORRECT answer>, "candidates": [<score: the candidates>; else []],
     "erred": <bool: the error rate replaced the answer given>, "note": <the responder's reason>}

`completion` is the expert's correct answer even when the error rate gave a wrong one (the model is
to learn recovering from the failures in the prompt, never making them): for generate/sample the
answer's text cut at the stop strings, for score the candidate the expert prefers (verbatim, the
prompt's continuation). Queries no responder claims, or without a preference, are not recorded.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import random
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from ..base import (
    CandidateScore,
    Generation,
    InvalidOutputError,
    Sample,
    SampleResult,
    ScoreResult,
    Vector,
    l2_normalize,
)
from .format import (
    FORMATS,
    Answer,
    ExpertError,
    NoPreference,
    Query,
    QueryKind,
    Responder,
    SlipMaker,
    Truth,
    first_claiming,
)

GOOD_TOKEN_LOGPROB = -0.01  # natural log per token of the expert's answer
BAD_TOKEN_LOGPROB = -6.0  # natural log per token of every other candidate
EMBED_DIM = 1024  # hashed bag-of-words embedding size
# buckets per word: two different words share all of them with negligible probability (one bucket each in
# 256 dimensions made e.g. "fridge" and "mug" identical, so "walk to the mug" grounded to "walk to the fridge")
EMBED_HASHES = 4


def _tokens(text: str) -> list[str]:
    """Whitespace tokens (the stand-in's token count; at least 1)."""
    return text.split() or [""]


def _cut(text: str, stop: Sequence[str]) -> tuple[str, str]:
    """`text` up to the first stop string, and the finish reason."""
    ends = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    return (text[: min(ends)], "stop") if ends else (text, "stop")


def _norm(text: str) -> str:
    return " ".join(text.lower().replace(".", " ").split())


class ExpertBackend:
    """The expert stand-in (backend `expert`)."""

    name = "expert"
    accepts_grammar = True  # takes a grammar; its answers are in format by construction

    def __init__(self, truth_dir: str | Path, error_rate: float = 0.0, slip_share: float = 0.25, seed: int = 0,
                 truth_timeout_s: float = 10.0, responders: Sequence[Responder] | None = None,
                 logger: logging.Logger | None = None, record_path: str | Path = "") -> None:
        if not str(truth_dir):
            raise ValueError("the expert LLM stand-in needs a truth directory written by a simulated world "
                             "(llm:=expert with a simulated robot sets it); it never runs on a real robot")
        if not 0.0 <= error_rate <= 1.0 or not 0.0 <= slip_share <= 1.0:
            raise ValueError(f"expert: error_rate and slip_share must be in [0, 1], got {error_rate}, {slip_share}")
        self.truth = Truth(Path(truth_dir), truth_timeout_s)
        self.error_rate = error_rate
        self.slip_share = slip_share
        self.seed = seed
        self._responders = list(responders) if responders is not None else [
            FORMATS.get(n) for n in FORMATS.names()]
        self._log = logger or logging.getLogger(__name__)
        self._asked: dict[str, int] = {}
        self._lock = threading.Lock()
        self.errors_made = 0  # wrong answers and slips given so far
        self.queries = 0
        self.record_path = Path(record_path) if str(record_path) else None  # None: not recording
        if self.record_path is not None:
            self.record_path.parent.mkdir(parents=True, exist_ok=True)

    # ----------------------------------------------------------------- helpers --
    def _rng(self, kind: str, prompt: str, extra: str = "") -> random.Random:
        key = hashlib.sha256(f"{kind}\0{prompt}\0{extra}".encode()).hexdigest()
        with self._lock:
            n = self._asked.get(key, 0)
            self._asked[key] = n + 1
        return random.Random(f"{self.seed}:{key}:{n}")

    def _answer(self, kind: QueryKind, prompt: str, candidates: Sequence[str] = (), stop: Sequence[str] = (),
                grammar: str | None = None, responder: Responder | None = None) -> tuple[Answer, str]:
        """The responder's answer and the responder's name."""
        q = Query(kind, prompt, self.truth, tuple(candidates), tuple(stop), grammar)
        responder = responder or first_claiming(self._responders, q)
        ans = responder.answer(q)
        self._log.debug("expert[%s] %s -> %r (%s)", responder.name, kind, ans.text, ans.note)
        with self._lock:
            self.queries += 1
        return ans, responder.name

    def _record(self, fmt: str, kind: QueryKind, prompt: str, completion: str, candidates: Sequence[str],
                erred: bool, note: str, stop: Sequence[str] = ()) -> None:
        """Append one answered query to `record_path` (when recording): the prompt, the CORRECT answer and the
        call's stop strings (the tuned model learns to end its answer with one)."""
        if self.record_path is None:
            return
        line = json.dumps({"format": fmt, "kind": kind, "prompt": prompt, "completion": completion,
                           "candidates": list(candidates), "erred": erred, "note": note, "stop": list(stop)},
                          ensure_ascii=False)
        with self._lock, self.record_path.open("a", encoding="utf-8") as f:
            f.write(line + "\n")

    def _erred(self, rng: random.Random) -> bool:
        bad = self.error_rate > 0.0 and rng.random() < self.error_rate
        if bad:
            with self._lock:
                self.errors_made += 1
        return bad

    def _text(self, ans: Answer, rng: random.Random) -> str:
        """The answer's text, or with the error rate a wrong line or a format slip."""
        if not self._erred(rng):
            return ans.text
        if ans.wrong and rng.random() >= self.slip_share:
            return rng.choice(ans.wrong)
        return SlipMaker(rng).slip(ans.text)

    # ---------------------------------------------------------------- backend --
    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64,
                 grammar: str | None = None) -> Generation:
        t0 = time.perf_counter()
        ans, fmt = self._answer("generate", prompt, stop=stop, grammar=grammar)
        text, reason = _cut(self._text(ans, self._rng("generate", prompt)), stop)
        correct = _cut(ans.text, stop)[0]
        self._record(fmt, "generate", prompt, correct, (), text != correct, ans.note, stop)
        toks = _tokens(text)
        if len(toks) > max_tokens:
            text, reason = " ".join(toks[:max_tokens]), "length"
        return Generation(text=text, prompt_tokens=len(_tokens(prompt)), new_tokens_processed=len(_tokens(prompt)),
                          completion_tokens=len(_tokens(text)), finish_reason=reason,
                          wall_time_s=time.perf_counter() - t0)

    def score(self, prompt: str, candidates: Sequence[str]) -> ScoreResult:
        t0 = time.perf_counter()
        try:
            responder = first_claiming(self._responders, Query("score", prompt, self.truth, tuple(candidates)))
        except ExpertError as e:  # a prompt in no known format (a content-free calibration prompt): no preference
            self._log.debug("expert: no preference (%s)", e)
            return self._scores(prompt, candidates, None, t0)
        # a format that claims the prompt but cannot answer it is an error, never a silent tie (a tie would
        # favour the shortest line, usually `done`)
        try:
            ans, fmt = self._answer("score", prompt, candidates=candidates, responder=responder)
        except NoPreference as e:
            self._log.debug("expert: no preference (%s)", e)
            return self._scores(prompt, candidates, None, t0)
        correct = chosen = self._pick(ans, candidates)
        rng = self._rng("score", prompt, "\0".join(candidates))
        if self._erred(rng) and len(candidates) > 1:
            others = [c for c in candidates if c != chosen]
            wrong = [c for c in others if c in ans.wrong]
            chosen = rng.choice(wrong or others)
        self._record(fmt, "score", prompt, correct, candidates, chosen != correct, ans.note)
        return self._scores(prompt, candidates, chosen, t0)

    def _pick(self, ans: Answer, candidates: Sequence[str]) -> str:
        if ans.text in candidates:
            return ans.text
        matches = [c for c in candidates if _norm(c) == _norm(ans.text)]
        if len(matches) == 1:
            return matches[0]
        raise ExpertError(f"expert: its answer {ans.text!r} is not among the {len(candidates)} candidates "
                          f"(e.g. {list(candidates)[:5]!r})")

    @staticmethod
    def _scores(prompt: str, candidates: Sequence[str], chosen: str | None, t0: float) -> ScoreResult:
        out = []
        for c in candidates:
            n = len(_tokens(c))
            if chosen is None:  # no preference: the same total for every candidate
                out.append(CandidateScore(text=c, logprob=-1.0, token_count=n, token_logprobs=(-1.0 / n,) * n))
                continue
            lp = GOOD_TOKEN_LOGPROB if c == chosen else BAD_TOKEN_LOGPROB
            out.append(CandidateScore(text=c, logprob=lp * n, token_count=n, token_logprobs=(lp,) * n))
        return ScoreResult(scores=tuple(out), prompt_tokens=len(_tokens(prompt)),
                           new_tokens_processed=len(_tokens(prompt)), wall_time_s=time.perf_counter() - t0)

    def sample(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64, n: int = 1,
               temperature: float = 1.0, presence_penalty: float = 0.0, seed: int = 0) -> SampleResult:
        t0 = time.perf_counter()
        ans, fmt = self._answer("sample", prompt, stop=stop)
        correct = _cut(ans.text, stop)[0]
        samples = []
        for i in range(n):
            rng = self._rng("sample", prompt, f"{seed}:{i}")
            text, reason = _cut(self._text(ans, rng), stop)
            lp = GOOD_TOKEN_LOGPROB if text == correct else -1.5
            samples.append(Sample(text=text, token_logprobs=(lp,) * len(_tokens(text)), finish_reason=reason))
        self._record(fmt, "sample", prompt, correct, (), any(s.text != correct for s in samples), ans.note, stop)
        return SampleResult(samples=tuple(samples), prompt_tokens=len(_tokens(prompt)),
                            new_tokens_processed=len(_tokens(prompt)), wall_time_s=time.perf_counter() - t0)

    def embed(self, texts: Sequence[str]) -> tuple[Vector, ...]:
        """Hashed bag-of-words vectors (unit length): equal texts embed equally, shared words score higher."""
        out = []
        for text in texts:
            v = [0.0] * EMBED_DIM
            for w in _norm(text).split():
                h = int(hashlib.md5(w.encode()).hexdigest(), 16)
                for k in range(EMBED_HASHES):  # 11 bits each: a bucket (10) and a sign (1)
                    bits = h >> (11 * k)
                    v[bits % EMBED_DIM] += 1.0 if (bits >> 10) & 1 else -1.0
            out.append(l2_normalize(v) if any(v) else tuple([1.0 / math.sqrt(EMBED_DIM)] * EMBED_DIM))
        return tuple(out)

    def close(self) -> None:
        pass


__all__ = ["ExpertBackend", "ExpertError", "InvalidOutputError"]
