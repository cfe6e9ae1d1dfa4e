"""The monologue transcript: append-only typed events, persisted as JSONL (no rclpy)."""
from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import IO, Any


class EventKind(IntEnum):
    """Event kinds; must match monologue_interfaces/msg/TranscriptEvent KIND_* (checked by a test)."""

    HUMAN_INSTRUCTION = 0
    ROBOT_ACTION = 1
    ROBOT_THOUGHT = 2
    SCENE_OBJECTS = 3
    SCENE_PROGRESS = 4
    SUCCESS = 5
    ROBOT_QUESTION = 6
    HUMAN_ANSWER = 7
    HUMAN_INTERJECTION = 8
    ERROR = 9
    EPISODE_END = 10


# Kinds that are part of the LLM prompt. ERROR and EPISODE_END are for people and logs only.
PROMPT_KINDS = frozenset(set(EventKind) - {EventKind.ERROR, EventKind.EPISODE_END})


@dataclass(frozen=True)
class Event:
    episode_id: str
    index: int
    kind: EventKind
    text: str
    data: Mapping[str, Any] = field(default_factory=dict)
    stamp: float = 0.0  # seconds since the epoch

    def to_json(self) -> dict[str, Any]:
        return {
            "record": "event",
            "episode_id": self.episode_id,
            "index": self.index,
            "kind": self.kind.name,
            "text": self.text,
            "data": dict(self.data),
            "stamp": self.stamp,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Event:
        return cls(
            episode_id=str(obj["episode_id"]),
            index=int(obj["index"]),
            kind=EventKind[str(obj["kind"])],
            text=str(obj["text"]),
            data=dict(obj.get("data", {})),
            stamp=float(obj.get("stamp", 0.0)),
        )


Listener = Callable[[Event], None]


def valid_unicode(value: Any) -> Any:
    """`value` with every string made encodable as UTF-8 (a lone surrogate, which an LLM server's
    JSON can carry, becomes "?"), through dicts, lists and tuples; anything else as it is."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, Mapping):
        return {valid_unicode(k): valid_unicode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [valid_unicode(v) for v in value]
    if isinstance(value, tuple):
        return tuple(valid_unicode(v) for v in value)
    return value


class TranscriptWriteError(OSError):
    """The transcript file could not be written (a full disk, ...): the episode must stop. The file keeps
    every event before the failed one (later events are kept in memory and still go to the listeners)."""


class Transcript:
    """Append-only list of events for one episode; every append is flushed to `path` first.

    File layout (JSONL): one header record, one record per event, and an end record when the
    episode finished. A file without an end record belongs to an interrupted episode, unless a live
    process still holds it: while an episode runs its writer keeps an exclusive `flock` on the file
    (released at `end()` or `close()`, or by the kernel when the process dies), so a second graph
    sharing the directory does not take another planner's running episode for an interrupted one.
    Within one process the lock is not consulted (a process knows its own episodes).
    """

    def __init__(
        self,
        episode_id: str | None = None,
        path: Path | None = None,
        header: Mapping[str, Any] | None = None,
        clock: Callable[[], float] = time.time,
        logger: logging.Logger | None = None,
    ) -> None:
        self.episode_id = episode_id or new_episode_id()
        self.path = path
        self._clock = clock
        self._events: list[Event] = []
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()
        self._log = logger or logging.getLogger("transcript")
        self._ended = False
        self._owner: IO[bytes] | None = None  # the open file holding the ownership lock while the episode runs
        self.write_error = ""  # why the file stopped being written ("" while it is complete)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            record = {"record": "header", "episode_id": self.episode_id, "stamp": clock()}
            record.update(dict(header or {}))
            failure = self._write(record)
            if failure is not None:
                raise failure
            self._take_ownership()

    @classmethod
    def reopen(
        cls, stored: StoredEpisode, clock: Callable[[], float] = time.time, logger: logging.Logger | None = None
    ) -> Transcript:
        """Continue an interrupted episode: its events are kept and new ones go to the same file (a line
        cut by the crash, which load_episode skipped with a warning, stays on its own line)."""
        if not stored.interrupted:
            raise ValueError(f"episode in {stored.path} has ended; only an interrupted one can be resumed")
        t = cls(str(stored.header.get("episode_id") or stored.path.stem), None, clock=clock, logger=logger)
        t._events = list(stored.events)
        t.path = stored.path
        if running_in_another_process(stored.path):
            raise ValueError(f"episode in {stored.path} is still running in another process")
        with open(stored.path, "rb+") as f:  # a line cut by the crash stays on its own (and is skipped)
            f.seek(0, os.SEEK_END)
            if f.tell() > 0:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    f.write(b"\n")
        t._take_ownership()
        return t

    @property
    def events(self) -> tuple[Event, ...]:
        with self._lock:
            return tuple(self._events)

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    @property
    def ended(self) -> bool:
        return self._ended

    def append(
        self, kind: EventKind, text: str, data: Mapping[str, Any] | None = None, post_task: bool = False
    ) -> Event:
        """Append one event, persist it, then notify listeners (their errors are logged, not raised).

        After the episode ended only `post_task` events (questions about the scene and their answers,
        IM Fig. 5d) are accepted; they are marked so in their data. Raises TranscriptWriteError (after
        notifying the listeners) when the file cannot be written for the first time; the file then stops
        being written, so it stays a gapless prefix of the episode, and later appends do not raise.
        """
        if "\x00" in text:
            raise ValueError("transcript text must not contain NUL bytes")
        text, data = valid_unicode(text), valid_unicode(data)  # the file, the listeners and ROS need UTF-8
        if post_task:
            data = {**(data or {}), "post_task": True}
        with self._lock:
            if self._ended and not post_task:
                raise RuntimeError(f"episode {self.episode_id} has ended")
            event = Event(self.episode_id, len(self._events), kind, text, dict(data or {}), self._clock())
            self._events.append(event)
            failure = self._write(event.to_json())
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # a broken listener must not lose the episode
                self._log.exception("transcript listener failed")
        if failure is not None:
            raise failure
        return event

    def end(self, summary: Mapping[str, Any]) -> None:
        with self._lock:
            if self._ended:
                return
            self._ended = True
            record = {"record": "end", "episode_id": self.episode_id, "stamp": self._clock()}
            record.update(dict(summary))
            self._write(record)
            self._release_ownership()

    def close(self) -> None:
        """Let go of the file without ending the episode (it then reads as interrupted, and can be
        resumed by this or another process)."""
        with self._lock:
            self._release_ownership()

    def _take_ownership(self) -> None:
        if self.path is None:
            return
        try:
            f = open(self.path, "rb")  # noqa: SIM115 - held open for the episode's lifetime
        except OSError as e:
            self._log.warning("cannot open %s to mark its episode as running: %s", self.path, e)
            return
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            f.close()
            self._log.warning("cannot lock %s to mark its episode as running: %s", self.path, e)
            return
        self._owner = f
        with _OWNED_LOCK:
            _OWNED.add(self.path.resolve())

    def _release_ownership(self) -> None:
        if self._owner is not None:
            assert self.path is not None
            with _OWNED_LOCK:
                _OWNED.discard(self.path.resolve())
            self._owner.close()  # closing the last descriptor releases the flock
            self._owner = None

    def prompt_lines(self, kinds: Iterable[EventKind] = PROMPT_KINDS) -> list[str]:
        wanted = set(kinds)
        return [e.text for e in self.events if e.kind in wanted and e.text]

    def prompt_events(self) -> list[Event]:
        """Events that are part of the LLM prompt, in order."""
        return [e for e in self.events if e.kind in PROMPT_KINDS]

    def texts(self, kind: EventKind) -> list[str]:
        return [e.text for e in self.events if e.kind == kind]

    def _write(self, record: Mapping[str, Any]) -> TranscriptWriteError | None:
        """Append one record to the file; the error the first time that fails (None otherwise). After a
        failure nothing more is written, so the file never has a gap."""
        if self.path is None or self.write_error:
            return None
        line = json.dumps(valid_unicode(record), ensure_ascii=False)
        try:
            with self._open_append() as f:
                f.write(line + "\n")
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            self.write_error = f"cannot write the transcript file {self.path}: {e}"
            self._log.error("%s; the file keeps the events before this one, later ones are not written",
                            self.write_error)
            failure = TranscriptWriteError(self.write_error)
            failure.errno = e.errno
            return failure
        return None

    def _open_append(self) -> IO[str]:
        assert self.path is not None
        return open(self.path, "a", encoding="utf-8")


@dataclass(frozen=True)
class StoredEpisode:
    path: Path
    header: Mapping[str, Any]
    events: tuple[Event, ...]
    end: Mapping[str, Any] | None

    @property
    def interrupted(self) -> bool:
        return self.end is None


def load_episode(path: Path, logger: logging.Logger | None = None) -> StoredEpisode:
    """Read a transcript file; a line that is not a record (a truncated last line: a crash mid-write) is
    skipped with a warning on `logger`."""
    header: dict[str, Any] = {}
    events: list[Event] = []
    end: dict[str, Any] | None = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                (logger or logging.getLogger("transcript")).warning(
                    "%s line %d is not a complete record (cut by a crash?); skipped: %.80r", path, number, line)
                continue
            rec = obj.get("record")
            if rec == "header":
                header = obj
            elif rec == "event":
                events.append(Event.from_json(obj))
            elif rec == "end":
                end = obj
    return StoredEpisode(path, header, tuple(events), end)


# Transcript files this process is writing (their flock would otherwise block this process's own scans).
_OWNED: set[Path] = set()
_OWNED_LOCK = threading.Lock()


def running_in_another_process(path: Path) -> bool:
    """Whether another live process's running episode holds `path` (its writer's flock)."""
    with _OWNED_LOCK:
        if path.resolve() in _OWNED:
            return False
    try:
        with open(path, "rb") as f:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError as e:
                if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    return True
                raise
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)
    except FileNotFoundError:
        return False
    return False


def find_interrupted(directory: Path, logger: logging.Logger | None = None) -> list[StoredEpisode]:
    """Episodes under `directory` whose files have no end record and that no live process is still
    writing (another graph's running episode is not interrupted); skipped lines are warned on `logger`."""
    if not directory.is_dir():
        return []
    out = []
    for p in sorted(directory.glob("*.jsonl")):
        ep = load_episode(p, logger)
        if ep.interrupted and not running_in_another_process(p):
            out.append(ep)
    return out


def new_episode_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + uuid.uuid4().hex[:8]
