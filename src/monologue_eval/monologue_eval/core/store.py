"""The resumable result store and the episode loop every benchmark suite shares (no rclpy).

`<out>/run.json` holds the run's settings, `<out>/episodes.jsonl` one finished episode per line. Each
line is flushed and fsynced, so after a crash every finished episode is kept; an unreadable (e.g. cut)
line is skipped on loading and a later line for the same episode replaces an earlier one. A rerun with
the same output directory and settings continues where a run stopped (`run_pending`).
"""
from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, asdict, fields
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

K = TypeVar("K")
T = TypeVar("T")
R = TypeVar("R", bound="Record[Any]")
K_co = TypeVar("K_co", covariant=True)
K_contra = TypeVar("K_contra", contravariant=True)
R_co = TypeVar("R_co", covariant=True)


class SettingsMismatch(ValueError):
    """The output directory holds a run with other settings."""


class InfrastructureError(RuntimeError):
    """The graph failed (a node died, a service never answered): not an outcome of the planner."""


class Record(Protocol[K_co]):
    """A finished episode: its key (ordered) and its JSON form."""

    @property
    def key(self) -> K_co: ...

    def to_json(self) -> dict[str, Any]: ...


class Runner(Protocol[K_contra, R_co]):
    def run(self, key: K_contra) -> R_co:
        """Run one episode; raise InfrastructureError when the graph, not the planner, failed."""
        ...

    def recover(self) -> None:
        """Restart whatever is needed after an InfrastructureError."""
        ...


class RecordStore(Generic[R]):
    """`<out>/run.json` (settings, a dataclass) and `<out>/episodes.jsonl` (records parsed by `parse`)."""

    def __init__(self, out_dir: Path, parse: Callable[[Mapping[str, Any]], R],
                 logger: logging.Logger | None = None) -> None:
        self.out = out_dir
        self.run_file = out_dir / "run.json"
        self.episodes_file = out_dir / "episodes.jsonl"
        self.parse = parse
        self.log = logger or logging.getLogger("bench.store")

    def open(self, settings: Any) -> bool:
        """Create the directory or check that it belongs to a run with these settings (a dataclass);
        a field missing in an older run.json counts as its default. True when earlier results exist."""
        self.out.mkdir(parents=True, exist_ok=True)
        mine = asdict(settings)
        if self.run_file.is_file():
            theirs = json.loads(self.run_file.read_text(encoding="utf-8")).get("settings", {})
            defaults = {f.name: None if f.default is MISSING else f.default for f in fields(settings)}
            diff = {k: (theirs.get(k, defaults[k]), v) for k, v in mine.items() if theirs.get(k, defaults[k]) != v}
            if diff:
                raise SettingsMismatch(
                    f"{self.out} holds a run with other settings (theirs, ours): {diff}; "
                    "use another --out or the same settings")
            return self.episodes_file.is_file()
        self.run_file.write_text(json.dumps({"settings": mine, "created": time.time()}, indent=2) + "\n",
                                 encoding="utf-8")
        return False

    def load(self) -> list[R]:
        """Finished episodes in key order; a later line for the same episode replaces an earlier one."""
        if not self.episodes_file.is_file():
            return []
        by_key: dict[Any, R] = {}
        with open(self.episodes_file, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = self.parse(json.loads(line))
                except (json.JSONDecodeError, TypeError, KeyError) as e:
                    self.log.warning("%s:%d: skipping an unreadable line (%s)", self.episodes_file, lineno, e)
                    continue
                by_key[rec.key] = rec
        return [by_key[k] for k in sorted(by_key)]

    def append(self, rec: R) -> None:
        line = json.dumps(rec.to_json(), ensure_ascii=False)
        with open(self.episodes_file, "a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())


def run_pending(plan: Sequence[K], store: RecordStore[R], runner: Runner[K, R], logger: logging.Logger,
                on_record: Callable[[R, float], None], retries: int = 1) -> dict[Any, R]:
    """Run every planned episode not yet in the store, in plan order, appending each record and calling
    `on_record(record, seconds it took)`; return every stored record by key. An InfrastructureError is
    retried `retries` times after `runner.recover()`, then propagates (a rerun continues)."""
    done: dict[Any, R] = {r.key: r for r in store.load()}
    for key in [k for k in plan if k not in done]:
        t0 = time.monotonic()
        for attempt in range(retries + 1):
            try:
                rec = runner.run(key)
                break
            except InfrastructureError as e:
                if attempt == retries:
                    raise
                logger.warning("%s: %s; restarting the graph and retrying", key, e)
                runner.recover()
        store.append(rec)
        done[key] = rec
        on_record(rec, time.monotonic() - t0)
    return done


class Eta:
    """Episodes done of a plan and the time left (min), from the mean of this session's episodes."""

    def __init__(self, total: int, done: int) -> None:
        self.total = total
        self.done = done
        self.times: list[float] = []  # s per episode run now

    def add(self, seconds: float) -> float:
        """Count one more episode that took `seconds`; return the ETA in minutes."""
        self.times.append(seconds)
        self.done += 1
        return (self.total - self.done) * sum(self.times) / len(self.times) / 60


def record_from_json(record: Callable[..., T], episode: Callable[..., Any], data: Mapping[str, Any]) -> T:
    """A record (a dataclass) from its JSON object (asdict's), its `episode` field rebuilt by `episode`."""
    values = dict(data)
    values["episode"] = episode(**values["episode"])
    return record(**values)
