"""The tuning data's example format (issue 30): what `python -m monologue_eval.tune data` writes and the
trainer reads.

A data set is a directory holding `examples.jsonl` (and `summary.json`, `generation.log`). Each line of
`examples.jsonl` is one JSON object, one training example:

    {"id": str,              # unique in the set: "<world>/<strategy>/<episode>/<n>"
     "world": str,           # kinematic | mujoco | kitchen | household | statler:<domain> | multitalk
     "strategy": str,        # inner_monologue | saycan | cape | statler | multitalk
     "format": str,          # the expert responder that answered (monologue_llm.expert.formats)
     "kind": str,            # generate | score | sample (the LLM call the planner made)
     "prompt": str,          # the exact prompt the planner built
     "completion": str,      # the CORRECT answer: the prompt's continuation (loss goes on these tokens only)
     "candidates": [str],    # score queries: the candidates ranked (completion is one of them); else []
     "family": str,          # the task family (IM Table 1's family key, our kitchen/household intent, the
                             #   Statler domain's query kind, ...)
     "instruction": str,     # the episode's instruction (for Statler: the episode's queries, one per line)
     "split": str,           # train | heldout (tune/heldout.py; heldout examples are never trained on)
     "stop": [str]}          # generate/sample: the stop strings the planner passed (optional; older data sets
                             #   lack it and the trainer infers them from the strategy: train.terminator)

`completion` is the expert's correct answer also where the expert, through its error rate, gave the
planner a wrong one: the prompts then show failures, retries and interjections, and the target is always
the right next text (learn to recover, never to fail). For generate/sample queries it is the answer cut
at the call's stop strings; for score queries the preferred candidate verbatim.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

WORLDS_FIXED = ("kinematic", "mujoco", "kitchen", "household", "multitalk")  # and statler:<domain>
STRATEGIES = ("inner_monologue", "saycan", "cape", "statler", "multitalk")
KINDS = ("generate", "score", "sample")
SPLITS = ("train", "heldout")
EXAMPLES_FILE = "examples.jsonl"


class ExampleError(ValueError):
    """A malformed example (names the field)."""


@dataclass(frozen=True)
class Example:
    """One training example (see the module docstring)."""

    id: str
    world: str
    strategy: str
    format: str
    kind: str
    prompt: str
    completion: str
    family: str
    instruction: str
    split: str
    candidates: tuple[str, ...] = field(default_factory=tuple)
    stop: tuple[str, ...] = field(default_factory=tuple)

    def validate(self) -> None:
        if not (self.world in WORLDS_FIXED or self.world.startswith("statler:")):
            raise ExampleError(f"example {self.id}: unknown world {self.world!r}")
        if self.strategy not in STRATEGIES:
            raise ExampleError(f"example {self.id}: unknown strategy {self.strategy!r}")
        if self.kind not in KINDS:
            raise ExampleError(f"example {self.id}: unknown kind {self.kind!r}")
        if self.split not in SPLITS:
            raise ExampleError(f"example {self.id}: unknown split {self.split!r}")
        if self.kind == "score" and self.completion not in self.candidates:
            raise ExampleError(f"example {self.id}: the completion is not among its candidates")
        if self.kind != "score" and self.candidates:
            raise ExampleError(f"example {self.id}: a {self.kind} example has candidates")
        if not self.prompt:
            raise ExampleError(f"example {self.id}: empty prompt")

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["candidates"] = list(self.candidates)
        d["stop"] = list(self.stop)
        return d

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Example:
        try:
            ex = Example(id=str(d["id"]), world=str(d["world"]), strategy=str(d["strategy"]), format=str(d["format"]),
                         kind=str(d["kind"]), prompt=str(d["prompt"]), completion=str(d["completion"]),
                         family=str(d["family"]), instruction=str(d["instruction"]), split=str(d["split"]),
                         candidates=tuple(str(c) for c in d.get("candidates") or ()),
                         stop=tuple(str(c) for c in d.get("stop") or ()))
        except KeyError as e:
            raise ExampleError(f"example {d.get('id', '?')}: missing field {e}") from e
        ex.validate()
        return ex


def from_record(record: Mapping[str, Any], *, id: str, world: str, strategy: str, family: str, instruction: str,
                split: str) -> Example:
    """An Example from one line the expert backend recorded (monologue_llm.expert.backend, `record_path`)."""
    return Example(id=id, world=world, strategy=strategy, format=str(record["format"]), kind=str(record["kind"]),
                   prompt=str(record["prompt"]), completion=str(record["completion"]), family=family,
                   instruction=instruction, split=split, candidates=tuple(record.get("candidates") or ()),
                   stop=tuple(record.get("stop") or ()))


def write_examples(path: Path, examples: Iterable[Example], append: bool = True) -> int:
    """Append (or write) `examples` to the JSONL file `path`; how many."""
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("a" if append else "w", encoding="utf-8") as f:
        for ex in examples:
            ex.validate()
            f.write(json.dumps(ex.to_json(), ensure_ascii=False) + "\n")
            n += 1
    return n


def read_examples(path: Path, split: str | None = None) -> Iterator[Example]:
    """The examples of a JSONL file (or of `<dir>/examples.jsonl`), of one split if given; ExampleError
    naming the line for a malformed one."""
    if path.is_dir():
        path = path / EXAMPLES_FILE
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                ex = Example.from_json(json.loads(line))
            except (json.JSONDecodeError, ExampleError) as e:
                raise ExampleError(f"{path}:{n}: {e}") from e
            if split is None or ex.split == split:
                yield ex
