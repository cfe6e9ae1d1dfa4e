"""A committed result run, `results/<name>/` (no rclpy):

- `episodes.jsonl.gz`: the bench's per-episode records exactly as `monologue-bench --out DIR` wrote them
  to `DIR/episodes.jsonl` (`trials.jsonl` for the cup game), later lines for the same episode kept as
  the bench keeps them, strings longer than `MAX_STRING` characters cut (`CUT_MARK`), paths under the
  run directory or the work tree made relative. No images, no transcripts.
- `run.json`: `RunInfo`: the exact command, the git commit and date, the suite, robot, llm, the table
  column it fills, every non-default `monologue-bench` argument, n per cell, and the run's own settings.

importer.py makes one from a finished run directory.
"""
from __future__ import annotations

import gzip
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

EPISODES_FILE = "episodes.jsonl.gz"
RUN_FILE = "run.json"
RECORD_FILES = ("episodes.jsonl", "trials.jsonl")  # what the suites write (trials: statler_cups)
MAX_STRING = 2000  # characters kept of one string field of a record
CUT_MARK = " [cut: {n} more characters]"
MAX_RECORD_BYTES = 16_000  # a record still longer after the cut loses its largest fields (bytes of JSON)

# Table columns a run can fill (tables.py prints them side by side; "paper" comes from the code).
COLUMNS: dict[str, str] = {
    "embedded": "embedded model (defaults)",
    "embedded_best": "embedded model (best documented settings)",
    "expert": "expert",
    "expert_p02": "expert, p = 0.2",
}
SUITES = ("table1", "saycan", "im_kitchen", "cape", "statler", "statler_cups", "multitalk", "reliability")
DEFAULT_ROBOTS = {"table1": "sim", "saycan": "sim_kitchen", "im_kitchen": "sim_kitchen", "cape": "sim_household",
                  "statler": "sim_kinematic", "statler_cups": "", "multitalk": "sim_kinematic", "reliability": ""}


class ResultError(ValueError):
    """A run directory or a result that cannot be imported or read; the message names it."""


@dataclass(frozen=True)
class RunInfo:
    """`results/<name>/run.json`."""

    name: str
    suite: str  # a key of SUITES
    column: str  # a key of COLUMNS
    command: str  # the exact command that produced the records
    commit: str  # git commit of the run ("+dirty": uncommitted changes; "unknown" for legacy runs)
    date: str  # UTC, ISO 8601, of the run's first record
    robot: str = ""
    llm: str = ""
    error_rate: float = 0.0  # llm.expert.error_rate (0 for other LLMs)
    n_per_cell: int = 0  # most episodes of one cell
    episodes: int = 0  # records
    non_default: dict[str, Any] = field(default_factory=dict)  # monologue-bench arguments off their defaults
    settings: dict[str, Any] = field(default_factory=dict)  # the run's own run.json settings, if it wrote one
    legacy: bool = False  # imported from a run made before results/ existed: the command is reconstructed
    notes: str = ""
    imported: str = ""  # UTC date of the import

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunInfo:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class Run:
    """A loaded result run: its run.json and its records (JSON objects, file order)."""

    info: RunInfo
    records: tuple[dict[str, Any], ...]


# ----- records ---------------------------------------------------------------------------------------------
def trim(value: Any, roots: Sequence[str] = ()) -> Any:
    """`value` with every string longer than MAX_STRING cut and every string starting with one of
    `roots` (absolute directories) made relative to it."""
    if isinstance(value, str):
        for root in roots:
            if root and value.startswith(root.rstrip("/") + "/"):
                value = value[len(root.rstrip("/")) + 1:]
                break
        if len(value) > MAX_STRING:
            return value[:MAX_STRING] + CUT_MARK.format(n=len(value) - MAX_STRING)
        return value
    if isinstance(value, list):
        return [trim(v, roots) for v in value]
    if isinstance(value, dict):
        return {k: trim(v, roots) for k, v in value.items()}
    return value


def shrink(record: dict[str, Any]) -> dict[str, Any]:
    """A record over MAX_RECORD_BYTES of JSON loses its largest top-level string, list or object fields (each
    replaced by a note) until it fits; scores and keys are small and stay."""
    out = dict(record)
    while len(json.dumps(out, ensure_ascii=False).encode()) > MAX_RECORD_BYTES:
        sizes = {k: len(json.dumps(v, ensure_ascii=False)) for k, v in out.items() if isinstance(v, (str, list, dict))}
        sizes = {k: s for k, s in sizes.items() if s > 200}
        if not sizes:
            break
        big = max(sizes, key=lambda k: sizes[k])
        out[big] = f"[dropped from the committed result: {sizes[big]} characters of JSON]"
    return out


def read_records(path: Path) -> list[dict[str, Any]]:
    """JSON objects of a JSONL file (plain or .gz); an unreadable line (a run cut mid-write) is skipped."""
    opener = gzip.open if path.suffix == ".gz" else open
    out: list[dict[str, Any]] = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict):
                out.append(obj)
    return out


def write_records(path: Path, records: Sequence[Mapping[str, Any]]) -> None:
    """Gzipped JSONL, byte-for-byte the same for the same records (mtime 0, no file name)."""
    data = "".join(json.dumps(r, ensure_ascii=False, sort_keys=False) + "\n" for r in records).encode()
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        gz.write(data)


# ----- import / load -----------------------------------------------------------------------------------------
def load_run(path: Path) -> Run:
    try:
        info = RunInfo.from_json(json.loads((path / RUN_FILE).read_text(encoding="utf-8")))
    except (OSError, json.JSONDecodeError, TypeError) as e:
        raise ResultError(f"{path / RUN_FILE}: {e}") from e
    return Run(info, tuple(read_records(path / EPISODES_FILE)))


def load_runs(results: Path) -> list[Run]:
    """Every result run under `results/` (directories with a run.json), by name."""
    if not results.is_dir():
        return []
    return [load_run(p) for p in sorted(results.iterdir()) if (p / RUN_FILE).is_file()]


def iter_sizes(results: Path) -> Iterator[tuple[Path, int]]:
    for p in sorted(results.rglob("*")):
        if p.is_file():
            yield p, p.stat().st_size
