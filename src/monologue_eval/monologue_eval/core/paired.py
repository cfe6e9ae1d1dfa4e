"""Paired comparison of two IM Table 1 runs (or two variants of one run) on the same scenes: which
episodes flipped, and McNemar's exact test on the discordant pairs. No ROS."""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .benchmark import EpisodeRecord, ResultStore


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a run directory and, optionally, one variant of it."""

    out: Path
    variant: str = ""

    @classmethod
    def parse(cls, text: str) -> Side:
        """`DIR` or `DIR:VARIANT`."""
        path, _, variant = text.rpartition(":") if ":" in text and not Path(text).exists() else (text, "", "")
        return cls(Path(path).expanduser(), variant)

    @property
    def label(self) -> str:
        return f"{self.out.name}{':' + self.variant if self.variant else ''}"

    def records(self) -> dict[tuple[str, int], EpisodeRecord]:
        """(task, index) -> record; ValueError if the directory holds no run or the variant is ambiguous."""
        if not (self.out / "run.json").is_file():
            raise ValueError(f"{self.out} holds no benchmark run (no run.json)")
        recs = ResultStore(self.out).load()
        variants = sorted({r.variant for r in recs})
        if self.variant:
            recs = [r for r in recs if r.variant == self.variant]
            if not recs:
                raise ValueError(f"{self.out} has no episodes of variant {self.variant!r} (it has {variants})")
        elif len(variants) > 1:
            raise ValueError(f"{self.out} holds variants {variants}: name one as {self.out}:<variant>")
        return {(r.task, r.index): r for r in recs}

    def base_seed(self) -> object:
        return json.loads((self.out / "run.json").read_text(encoding="utf-8")).get("settings", {}).get("seed")


@dataclass
class Flip:
    task: str
    index: int
    seed: int
    instruction: str
    a: bool
    b: bool


@dataclass
class Comparison:
    a: str
    b: str
    both: int = 0
    only_a: int = 0
    only_b: int = 0
    neither: int = 0
    unpaired: int = 0          # episodes in one run only, or with a different scene seed
    flips: list[Flip] = field(default_factory=list)

    @property
    def n(self) -> int:
        return self.both + self.only_a + self.only_b + self.neither

    @property
    def p_value(self) -> float:
        """McNemar's exact two-sided p on the discordant pairs (1.0 without any)."""
        return mcnemar_exact(self.only_a, self.only_b)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: discordant counts b and c under Binomial(b + c, 1/2)."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0 ** n
    return min(1.0, 2.0 * tail)


def compare(a: Side, b: Side) -> Comparison:
    """Pair the episodes of `a` and `b` by (task, index) with the same scene seed."""
    ra, rb = a.records(), b.records()
    out = Comparison(a.label, b.label)
    for key in sorted(set(ra) | set(rb)):
        x, y = ra.get(key), rb.get(key)
        if x is None or y is None or x.seed != y.seed:
            out.unpaired += 1
            continue
        if x.reward and y.reward:
            out.both += 1
        elif x.reward:
            out.only_a += 1
        elif y.reward:
            out.only_b += 1
        else:
            out.neither += 1
        if x.reward != y.reward:
            out.flips.append(Flip(key[0], key[1], x.seed, x.instruction, x.reward, y.reward))
    return out


def comparison_markdown(c: Comparison, tasks: Sequence[str] = ()) -> str:
    """The comparison as Markdown: counts, success of each side on the paired episodes, p, the flips."""
    if c.n == 0:
        return f"No paired episodes between {c.a} and {c.b} ({c.unpaired} unpaired)."
    ra, rb = (c.both + c.only_a) / c.n, (c.both + c.only_b) / c.n
    lines = [f"Paired comparison on {c.n} episodes with the same scenes ({c.unpaired} unpaired left out)", "",
             "| | B succeeded | B failed |", "|---|---|---|",
             f"| A succeeded | {c.both} | {c.only_a} |", f"| A failed | {c.only_b} | {c.neither} |", "",
             f"A = {c.a}: {ra:.0%}; B = {c.b}: {rb:.0%}; difference {rb - ra:+.0%}; "
             f"McNemar exact p = {c.p_value:.3g} ({c.only_a} vs {c.only_b} discordant)", ""]
    order = {t: i for i, t in enumerate(tasks)}
    flips = sorted(c.flips, key=lambda f: (order.get(f.task, len(order)), f.task, f.index))
    if flips:
        lines += ["| task | episode | seed | instruction | A | B |", "|---|---|---|---|---|---|"]
        lines += [f"| {f.task} | {f.index} | {f.seed} | {f.instruction} | {'✓' if f.a else '✗'} | "
                  f"{'✓' if f.b else '✗'} |" for f in flips]
    return "\n".join(lines) + "\n"
