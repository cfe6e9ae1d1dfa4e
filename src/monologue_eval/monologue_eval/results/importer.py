"""`monologue-report import`: a result run (store.py) from a finished run directory and its command (no rclpy).

The suite, robot, llm and error rate come from the `monologue-bench` command (parsed leniently, so an
older or newer revision's command still imports); the column from the llm and the error rate.
"""
from __future__ import annotations

import json
import shlex
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .store import (
    COLUMNS,
    DEFAULT_ROBOTS,
    EPISODES_FILE,
    RECORD_FILES,
    RUN_FILE,
    SUITES,
    ResultError,
    RunInfo,
    read_records,
    shrink,
    trim,
    write_records,
)
from .tables import cell_keys, latest


# ----- the command -------------------------------------------------------------------------------------
def bench_tokens(command: str) -> list[str]:
    """The `monologue-bench` arguments of a command: `monologue-bench ...`, `python -m
    monologue_eval.bench ...`, `python -m monologue_eval.suites.<suite> ...` (with `--suite <suite>`),
    `make bench ARGS="..."` (anything before them, e.g. `. scripts/env.sh &&` or `timeout 3000`, is
    ignored); [] for another command."""
    tokens = shlex.split(command)
    for i, t in enumerate(tokens):
        if t.endswith("monologue-bench"):
            return tokens[i + 1:]
        if t == "monologue_eval.bench" and i > 0 and tokens[i - 1] == "-m":
            return tokens[i + 1:]
        if t.startswith("monologue_eval.suites.") and i > 0 and tokens[i - 1] == "-m":  # a suite's own main
            return ["--suite", t.rsplit(".", 1)[1], *tokens[i + 1:]]
        if t == "bench" and i > 0 and tokens[i - 1] == "make":
            args = [a[len("ARGS="):] for a in tokens[i + 1:] if a.startswith("ARGS=")]
            return shlex.split(args[0]) if args else []
    return []


def bench_defaults() -> dict[str, Any]:
    """`monologue-bench`'s argument defaults."""
    from ..bench import parse_args

    return dict(vars(parse_args([])))


def parse_bench(tokens: Sequence[str]) -> dict[str, Any]:
    """`monologue-bench` arguments -> {dest: value}, leniently: an option this revision's parser does not
    know (or a value it refuses) is kept as text, so an older or newer run's command still imports."""
    out: dict[str, Any] = {}
    flags = {"--full", "--list"}
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if not t.startswith("--"):
            i += 1
            continue
        name, eq, value = t[2:].partition("=")
        dest = name.replace("-", "_")
        if not eq and t not in flags and i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
            value = tokens[i + 1]
            i += 1
        val: Any = True if (not eq and t in flags) else value
        if dest == "param":
            out.setdefault("param", []).append(value)
        elif dest in ("compare", "table"):
            out[dest] = value
        else:
            out[dest] = val
        i += 1
    return out


def _coerce(value: Any, default: Any) -> Any:
    """A parsed text value as the type of its default (int, float), else unchanged."""
    if isinstance(value, str) and isinstance(default, bool):
        return value
    for kind in (int, float):
        if isinstance(default, kind) and isinstance(value, str):
            try:
                return kind(value)
            except ValueError:
                return value
    return value


def non_default(args: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments whose value differs from the bench's default (`--out` is not a parameter)."""
    out: dict[str, Any] = {}
    for k, v in args.items():
        if k in ("out",):
            continue
        d = defaults.get(k)
        v = _coerce(v, d)
        if v != d:
            out[k] = v
    return out


def expert_error_rate(args: Mapping[str, Any]) -> float:
    """llm.expert.error_rate from `--param NODE:llm.expert.error_rate=P` or `--error-rate P` (0 if absent)."""
    for item in args.get("param", []) or []:
        name, _, value = str(item).partition("=")
        if name.endswith("llm.expert.error_rate"):
            return float(value)
    rate = args.get("error_rate")
    return float(rate) if rate is not None else 0.0


def infer_column(llm: str, error_rate: float) -> str:
    """The column a run fills by default: expert (p = 0), expert_p02 (p = 0.2), embedded (defaults)."""
    if llm == "expert":
        if error_rate == 0.0:
            return "expert"
        if abs(error_rate - 0.2) < 1e-9:
            return "expert_p02"
        raise ResultError(f"an expert run at error rate {error_rate} fills no column; pass --column")
    return "embedded"


def record_file(src: Path) -> Path:
    for name in RECORD_FILES:
        if (src / name).is_file():
            return src / name
    raise ResultError(f"{src}: no {' or '.join(RECORD_FILES)}: not a finished monologue-bench run directory")


def suite_of(records: Sequence[Mapping[str, Any]], settings: Mapping[str, Any], file: str) -> str:
    """The suite that wrote these records, from its settings or the records' shape."""
    if settings.get("suite") in SUITES:
        return str(settings["suite"])
    if file == "trials.jsonl":
        return "statler_cups"
    first = records[0] if records else {}
    episode = first.get("episode")
    if isinstance(episode, Mapping):
        return str(episode.get("suite") or "cape") if "executable" not in episode else "cape"
    if "task" in first and "variant" in first and "reward" in first:
        return "table1"
    if "method" in first and "queries" in first:
        return "statler"
    if "variant" in first and "counts" in first:
        return "multitalk"
    raise ResultError("cannot tell the suite from the records; pass --suite")


def n_per_cell(suite: str, records: Sequence[Mapping[str, Any]]) -> int:
    """The most records of one cell (the suite's row x column)."""
    counts: dict[Any, int] = {}
    for r in latest(suite, records):
        for k in cell_keys(suite, r):
            if "total" not in k:  # pooled rows are not cells
                counts[k] = counts.get(k, 0) + 1
    return max(counts.values(), default=0)


# ----- git -------------------------------------------------------------------------------------------------
def git_commit(where: Path) -> str:
    """HEAD of the work tree holding `where`, "+dirty" when it has uncommitted changes; "unknown" without git."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True,
                              timeout=30, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=where,
                               capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def utc(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


# ----- import --------------------------------------------------------------------------------------------------
def import_run(src: Path, dst: Path, command: str, *, column: str | None = None, suite: str | None = None,
               robot: str | None = None, commit: str | None = None, legacy: bool = False, notes: str = "",
               replace: bool = False) -> RunInfo:
    """Copy a finished run directory `src` into the result run `dst` (module docstring). `command` is the
    command that produced it; the suite, robot, llm and error rate come from it (or the arguments)."""
    src, dst = src.resolve(), Path(dst)
    rfile = record_file(src)
    raw = read_records(rfile)
    if not raw:
        raise ResultError(f"{rfile}: no records")
    settings: dict[str, Any] = {}
    created: float | None = None
    if (src / "run.json").is_file():
        data = json.loads((src / "run.json").read_text(encoding="utf-8"))
        settings = dict(data.get("settings") or {})
        created = data.get("created")
    tokens = bench_tokens(command)
    if not tokens and not suite:
        raise ResultError(f"{command!r} is not a monologue-bench command; pass --suite")
    defaults = bench_defaults()
    args = parse_bench(tokens)
    chosen_suite = suite or str(args.get("suite") or suite_of(raw, settings, rfile.name))
    if chosen_suite not in SUITES:
        raise ResultError(f"unknown suite {chosen_suite!r}; known: {list(SUITES)}")
    if tokens and "suite" not in args and chosen_suite != defaults["suite"]:
        args["suite"] = chosen_suite
    llm = str(args.get("llm") or settings.get("llm") or defaults["llm"])
    rate = expert_error_rate(args) or expert_error_rate(
        {"param": [p for p in str(settings.get("params", "")).split("; ") if p]})  # the run's own record of it
    col = column or infer_column(llm, rate)
    if col not in COLUMNS:
        raise ResultError(f"unknown column {col!r}; known: {list(COLUMNS)}")
    roots = [str(src), str(Path.cwd().resolve())]
    records = [shrink(trim(r, roots)) for r in raw]
    starts = [float(r["started"]) for r in records if isinstance(r.get("started"), (int, float)) and r["started"]]
    first = created if created else min(starts) if starts else rfile.stat().st_mtime
    info = RunInfo(
        name=dst.name, suite=chosen_suite, column=col, command=command,
        commit=commit or ("unknown" if legacy else git_commit(src if src.is_dir() else Path.cwd())),
        date=utc(float(first)),
        robot=robot or str(args.get("robot") or DEFAULT_ROBOTS.get(chosen_suite, "")),
        llm=llm, error_rate=rate, n_per_cell=n_per_cell(chosen_suite, records), episodes=len(records),
        non_default=non_default(args, defaults), settings=settings, legacy=legacy, notes=notes,
        imported=utc(time.time()))
    if dst.exists() and not replace:
        raise ResultError(f"{dst} exists; pass --replace to overwrite it")
    dst.mkdir(parents=True, exist_ok=True)
    write_records(dst / EPISODES_FILE, records)
    (dst / RUN_FILE).write_text(json.dumps(info.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return info


