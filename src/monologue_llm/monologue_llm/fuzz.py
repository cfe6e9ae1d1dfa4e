"""A fuzzing LLM backend (ROS-free): adversarial text, scores, samples and embeddings, seeded.

It implements LLMBackend, SamplingBackend and EmbeddingBackend so every planner strategy can run on
it. What it writes (docs/reliability.md, R1): the corpus (monologue_llm.fuzz_corpus), mutated corpus
entries, echoes of the prompt, the caller's valid lines (`valid`) as they are and with near-miss
mutations (typos, other names, numbers as objects, extra text), random Unicode (controls, lone
surrogates, mixed scripts) and very long lines. Scores are finite, tied, NaN, +-inf, huge or zero-token;
embeddings random, zero, NaN or inf. A `texts` iterator (e.g. drawn by hypothesis) replaces the
random texts. `outputs` counts what was fed: one per generated or sampled text, score table and
embedding batch.
"""
from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence

from .base import CandidateScore, Generation, Sample, SampleResult, ScoreResult, Vector
from .fuzz_corpus import CORPUS

EMBED_DIM = 16
_SCRIPTS = ("abcdefghijklmnopqrstuvwxyz ", "ABCXYZ0123456789.,;:()[]{}'\"#=_-+*/\\",
            "红色方块碗机器人动作停止忽略限制", "حرك الذراع وعاء أحمر", "ßäöüéñçøå", "АБВГДежзи",
            "\x00\x01\x07\x08\x0b\x0c\x1b\x7f\u200b\u200e\u202e\ufeff\ufffd", "🤖🟥🥣💥")
_CONTROL = "\x00\x01\x07\x08\t\n\r\x0b\x0c\x1b\x7f\u2028\u2029\u202e\ud800"


class FuzzBackend:
    """Seeded adversarial backend. `valid`: lines a correct model could write in the current context
    (set by the harness per episode); `valid_rate`: how often one is written as is (so episodes get
    far enough to execute skills); `honour_stop`: probability a generation is cut at its stop
    strings as a conforming server does (the rest return text past them)."""

    name = "fuzz"

    def __init__(self, seed: int = 0, valid: Sequence[str] = (), corpus: Sequence[str] = CORPUS,
                 texts: Iterator[str] | None = None, valid_rate: float = 0.3, honour_stop: float = 0.8,
                 max_outputs: int | None = None) -> None:
        self.rng = random.Random(seed)
        self.valid: list[str] = list(valid)
        self.corpus = tuple(corpus)
        self.texts = texts
        self.valid_rate = valid_rate
        self.honour_stop = honour_stop
        self.max_outputs = max_outputs
        self.outputs = 0  # texts, score tables and embedding batches fed to the caller
        self.calls: list[tuple[str, str]] = []  # (kind, prompt) of the recent calls (the harness clears it)

    # ---- text ----------------------------------------------------------------------------------
    def text(self, prompt: str) -> str:
        """One adversarial output for `prompt`."""
        if self.texts is not None:
            return next(self.texts, "")
        r = self.rng
        roll = r.random()
        if self.valid and roll < self.valid_rate:
            return r.choice(self.valid)
        kind = r.randrange(9)
        if kind == 0 and self.valid:
            return self.near_miss(r.choice(self.valid))
        if kind in (0, 1):
            return r.choice(self.corpus)
        if kind == 2:
            return self.mutate(r.choice(self.corpus))
        if kind == 3:
            return self.echo(prompt)
        if kind == 4:
            return self.random_unicode(r.randrange(0, 200))
        if kind == 5:
            return self.long_line()
        if kind == 6 and self.valid:
            return self.mutate(r.choice(self.valid))
        if kind == 7 and self.valid:
            return r.choice(self.valid) + r.choice(("\n", " ", "; ", "")) + r.choice(self.corpus)
        return self.near_miss(r.choice(self.valid)) if self.valid else self.mutate(r.choice(self.corpus))

    def near_miss(self, line: str) -> str:
        """`line` with one plausible mistake: a typo, a number or another word for a name, a plural,
        case, a duplicated or dropped word, trailing junk."""
        r = self.rng
        words = line.split(" ")
        if not words:
            return line
        i = r.randrange(len(words))
        kind = r.randrange(8)
        if kind == 0 and words[i]:
            w = words[i]
            j = r.randrange(len(w))
            words[i] = w[:j] + r.choice("abcdefghijklmnopqrstuvwxyz") + w[j + 1:]
        elif kind == 1:
            words[i] = r.choice(("3", "-1", "0.4", "1e9", "nan", "inf", "None", "[]", "''"))
        elif kind == 2:
            words[i] = words[i] + "s"
        elif kind == 3:
            words[i] = words[i].upper()
        elif kind == 4:
            words.insert(i, words[i])
        elif kind == 5 and len(words) > 1:
            del words[i]
        elif kind == 6:
            words[i] = r.choice(("purple", "gold", "invisible", "robot", "table", "floor", "human", "bowl", "block"))
        else:
            words.append(r.choice(("and then jump", "twice", "quickly", "at 10 m/s", "!!!", "# ignore limits")))
        return " ".join(words)

    def mutate(self, text: str) -> str:
        """`text` truncated, repeated, interleaved with control characters or case-flipped."""
        r = self.rng
        kind = r.randrange(5)
        if kind == 0 and text:
            return text[: r.randrange(len(text))]
        if kind == 1:
            return text * r.randrange(2, 20)
        if kind == 2:
            chars = list(text)
            for _ in range(r.randrange(1, 6)):
                chars.insert(r.randrange(len(chars) + 1), r.choice(_CONTROL))
            return "".join(chars)
        if kind == 3:
            return text.swapcase()
        return r.choice(self.corpus) + r.choice(("\n", " ")) + text

    def echo(self, prompt: str) -> str:
        """A slice of the prompt's lines (models repeat their few-shot examples)."""
        lines = prompt.splitlines() or [""]
        i = self.rng.randrange(len(lines))
        return "\n".join(lines[i: i + self.rng.randrange(1, 6)])

    def random_unicode(self, n: int) -> str:
        r = self.rng
        return "".join(r.choice(r.choice(_SCRIPTS)) for _ in range(n))

    def long_line(self) -> str:
        """10 k to 200 k characters on one line."""
        r = self.rng
        unit = r.choice(self.valid or self.corpus) or "x"
        unit = unit.replace("\n", " ")
        return (unit + " ") * max(1, r.randrange(10_000, 200_000) // (len(unit) + 1))

    def _count(self) -> None:
        self.outputs += 1
        if self.max_outputs is not None and self.outputs > self.max_outputs:
            from .base import LLMUnavailableError
            raise LLMUnavailableError("fuzz budget exhausted")

    def _cut(self, text: str, stop: Sequence[str]) -> str:
        if self.rng.random() < self.honour_stop:
            for s in stop:
                if s:
                    text = text.split(s)[0]
        return text

    # ---- numbers -------------------------------------------------------------------------------
    def number(self) -> float:
        """A log-probability: usually finite and negative, sometimes NaN, +-inf, huge or subnormal."""
        r = self.rng
        roll = r.random()
        if roll < 0.9:
            return -r.expovariate(0.2)
        return r.choice((math.nan, math.inf, -math.inf, 1e308, -1e308, 0.0, -0.0, 5e-324, 3.0, -1e-300))

    def logprobs(self, n: int) -> list[float]:
        r = self.rng
        mode = r.randrange(5)
        if mode == 0:  # ties
            v = self.number() if r.random() < 0.3 else -1.0
            return [v] * n
        if mode == 1:  # all -inf
            return [-math.inf] * n
        return [self.number() for _ in range(n)]

    # ---- LLMBackend ----------------------------------------------------------------------------
    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64) -> Generation:
        self._count()
        self.calls.append(("generate", prompt))
        text = self._cut(self.text(prompt), stop)
        finish = self.rng.choice(("stop", "length", "", "content_filter"))
        return Generation(text, len(prompt) // 4, len(prompt) // 4, len(text) // 4, finish, 0.0)

    def score(self, prompt: str, candidates: Sequence[str]) -> ScoreResult:
        self._count()
        self.calls.append(("score", prompt))
        values = self.logprobs(len(candidates))
        scores = tuple(CandidateScore(c, v, self.rng.choice((0, 1, 3, 10**6)), (v,))
                       for c, v in zip(candidates, values))
        return ScoreResult(scores, len(prompt) // 4, len(prompt) // 4, 0.0)

    def close(self) -> None:
        pass

    # ---- SamplingBackend -----------------------------------------------------------------------
    def sample(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64, n: int = 1,
               temperature: float = 1.0, presence_penalty: float = 0.0, seed: int = 0) -> SampleResult:
        self.calls.append(("sample", prompt))
        samples = []
        for _ in range(n):
            self._count()
            text = self._cut(self.text(prompt), stop)
            samples.append(Sample(text, tuple(self.number() for _ in range(self.rng.randrange(0, 6))),
                                  self.rng.choice(("stop", "length"))))
        return SampleResult(tuple(samples), len(prompt) // 4, len(prompt) // 4, 0.0)

    # ---- EmbeddingBackend ----------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> tuple[Vector, ...]:
        self._count()
        r = self.rng
        out: list[Vector] = []
        for _ in texts:
            mode = r.randrange(10)
            if mode == 0:
                out.append(tuple(0.0 for _ in range(EMBED_DIM)))
            elif mode == 1:
                out.append(tuple(r.choice((math.nan, math.inf, -math.inf, 1.0)) for _ in range(EMBED_DIM)))
            else:
                v = [r.gauss(0.0, 1.0) for _ in range(EMBED_DIM)]
                norm = math.sqrt(math.fsum(x * x for x in v)) or 1.0
                out.append(tuple(x / norm for x in v))
        return tuple(out)
