"""Paired comparison of two IM Table 1 runs (or two variants of one run) on the same scenes: which
episodes flipped, and McNemar's exact test on the discordant pairs. No ROS."""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

from .benchmark import Cell, EpisodeRecord, ResultStore, Settings
from .report import cell_text


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

    def settings(self) -> dict[str, object]:
        """The run's settings (run.json), with the defaults of fields added since it was written."""
        theirs = json.loads((self.out / "run.json").read_text(encoding="utf-8")).get("settings", {})
        defaults = {f.name: f.default for f in fields(Settings)}
        return {**defaults, **theirs}

    def base_seed(self) -> object:
        return self.settings().get("seed")


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
    # settings that differ between the two runs: (name, A's value, B's value); the variant counts as one
    settings_diff: list[tuple[str, object, object]] = field(default_factory=list)

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
    sa, sb = a.settings(), b.settings()
    va, vb = sorted({r.variant for r in ra.values()}), sorted({r.variant for r in rb.values()})
    out.settings_diff = [(k, sa.get(k), sb.get(k)) for k in sorted(set(sa) | set(sb)) if sa.get(k) != sb.get(k)]
    if va != vb:
        out.settings_diff.insert(0, ("variant", ",".join(va), ",".join(vb)))
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
    if c.settings_diff:
        lines += ["What differs (A -> B): " + "; ".join(f"{k}: `{x}` -> `{y}`" for k, x, y in c.settings_diff), ""]
    else:
        lines += ["The two runs have the same settings and variant.", ""]
    order = {t: i for i, t in enumerate(tasks)}
    flips = sorted(c.flips, key=lambda f: (order.get(f.task, len(order)), f.task, f.index))
    if flips:
        lines += ["| task | episode | seed | instruction | A | B |", "|---|---|---|---|---|---|"]
        lines += [f"| {f.task} | {f.index} | {f.seed} | {f.instruction} | {'✓' if f.a else '✗'} | "
                  f"{'✓' if f.b else '✗'} |" for f in flips]
    return "\n".join(lines) + "\n"


def ablation_markdown(sides: Sequence[Side], tasks: Sequence[str], titles: Mapping[str, str] | None = None) -> str:
    """Runs side by side (one column per run or run:variant), one row per task: success rate, 95% Wilson
    interval and counts; then the mean of the task rates over the tasks each run has, and all episodes
    pooled. A column header names the run, its variant and its --param overrides."""
    titles = titles or {}
    recs = [side.records() for side in sides]
    heads = []
    for side, rs in zip(sides, recs):
        params = str(side.settings().get("params") or "")
        variant = side.variant or ",".join(sorted({r.variant for r in rs.values()}))
        heads.append(f"{side.out.name}: {variant}" + (f" (`{params}`)" if params else ""))
    lines = ["| task | " + " | ".join(heads) + " |", "|---|" + "---:|" * len(sides)]
    rates: list[list[float]] = [[] for _ in sides]
    pooled = [[0, 0] for _ in sides]
    for task in tasks:
        row = []
        for j, rs in enumerate(recs):
            eps = [r for (t, _i), r in rs.items() if t == task]
            cell = Cell(task, "", len(eps), sum(r.reward for r in eps), None)
            row.append(cell_text(cell))
            if eps:
                rates[j].append(cell.rate)
                pooled[j][0] += cell.successes
                pooled[j][1] += cell.n
        if any(c != "–" for c in row):
            lines.append(f"| {titles.get(task, task)} | " + " | ".join(row) + " |")
    mean = [f"{100 * sum(r) / len(r):.1f}% ({len(r)} tasks)" if r else "–" for r in rates]
    lines.append("| **mean over tasks** | " + " | ".join(mean) + " |")
    lines.append("| all episodes | " + " | ".join(
        cell_text(Cell("", "", n, k, None)) if n else "–" for k, n in pooled) + " |")
    return "\n".join(lines) + "\n"
