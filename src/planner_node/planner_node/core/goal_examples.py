"""Retrieved few-shot examples for the goal grounding (no rclpy; `scoring.goal_grounding:
llm_named_retrieved`): of a library of (instruction, goal) examples, the `k` most similar to the
instruction make the goal prompt, the most similar last (next to the instruction).

Similarity is the cosine of character n-gram (2 to 4 characters) TF-IDF vectors, so it works in any
script (Chinese and Japanese have no spaces) and with misspellings. The scene's object and location names
are masked on both sides first: the examples are chosen for how the instruction is said, not for which
objects it names.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

GOAL_EXAMPLES_K = 8  # examples in the goal prompt (as many as goal_tabletop.txt has)
NGRAMS = (2, 3, 4)  # character n-gram lengths
MASK = "\u25a1"  # stands for any masked name


@dataclass(frozen=True)
class GoalExamples:
    """`header` (the task line) and the (instruction, goal) examples, in file order."""

    header: str
    examples: tuple[tuple[str, str], ...]


def load_goal_examples(path: Path) -> GoalExamples:
    """The library `path` (YAML: `header`, `examples: [[instruction, goal], ...]`); ValueError naming the
    file and the entry for anything else."""
    try:
        raw: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot read the goal examples: {e}") from e
    if not isinstance(raw, dict) or not isinstance(raw.get("header"), str) or not isinstance(raw.get("examples"), list):
        raise ValueError(f"{path}: expected a mapping with `header` (text) and `examples` (list)")
    out = []
    for i, entry in enumerate(raw["examples"]):
        if not (isinstance(entry, list) and len(entry) == 2 and all(isinstance(x, str) and x.strip() for x in entry)):
            raise ValueError(f"{path}: example {i} must be [instruction, goal], got {entry!r}")
        out.append((" ".join(entry[0].split()), " ".join(entry[1].split())))
    if not out:
        raise ValueError(f"{path}: no examples")
    return GoalExamples(raw["header"].strip(), tuple(out))


def _masked(text: str, names: Iterable[str]) -> str:
    out = " " + " ".join(text.lower().split()) + " "
    for n in sorted(set(names), key=len, reverse=True):
        out = re.sub(rf"(?<![a-z]){re.escape(n.lower())}(?![a-z])", MASK, out)
    return out


def _grams(text: str) -> Counter[str]:
    return Counter(text[i:i + n] for n in NGRAMS for i in range(len(text) - n + 1))


def _goal_names(goal: str) -> list[str]:
    """The names a goal in the robot's words uses: after `the` up to `and`/the end."""
    return [m.strip() for m in re.findall(r"\bthe ([^.]+?)(?= and |\.|$)", goal)]


def retrieve(examples: GoalExamples, instruction: str, names: Iterable[str], k: int) -> list[tuple[str, str]]:
    """The `k` examples most similar to `instruction` (ties: file order), least similar first. `names`:
    the scene's names, masked in the instruction and the examples (with each example's own names)."""
    names = list(names)
    docs = [_grams(_masked(i, [*names, *_goal_names(g)])) for i, g in examples.examples]
    df: Counter[str] = Counter(g for d in docs for g in d)
    n = len(docs)

    def vec(c: Mapping[str, int]) -> dict[str, float]:
        v = {g: tf * (math.log((n + 1) / (df.get(g, 0) + 1)) + 1.0) for g, tf in c.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        return {g: x / norm for g, x in v.items()}

    q = vec(_grams(_masked(instruction, names)))
    sims = [sum(q.get(g, 0.0) * x for g, x in vec(d).items()) for d in docs]
    best = sorted(range(n), key=lambda i: (-sims[i], i))[:max(0, k)]
    return [examples.examples[i] for i in reversed(best)]


def goal_head(examples: GoalExamples, chosen: Sequence[tuple[str, str]]) -> str:
    """The goal prompt's head: the header and the chosen examples as `Instruction:` / `Goal:` lines."""
    return "\n".join([examples.header, *(f"Instruction: {i}\nGoal: {g}" for i, g in chosen)])
