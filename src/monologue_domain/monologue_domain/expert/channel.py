"""The expert's side channel: a directory holding the simulated world's truth and the tasks' goals.

Only simulators write `world.json` (the skills node's simulated backends, tabletop_sim), only the
evaluation side (benchmark runner, demo, tests) writes `tasks.json`, and only the expert LLM stand-in
reads them. The planner and perception never get the directory's path. Files are replaced atomically
(write to a temporary file, then rename), so a reader never sees half a file.

    world.json   {"source": <simulated backend>, "world": <kind>, "stamp_s": <s since epoch>,
                  "objects": [<SceneObject fields>...], "held": [<names>], "extra": {...}}
    tasks.json   {<instruction text>: {"world": <kind>, "goal": {...}}, ...}

`extra` carries hidden state a world has beyond its objects (e.g. the Statler domain's state); a task's
`goal` is world-specific (the expert planner of that world reads it; see each planner's docstring).
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..scene import SceneObject

WORLD_FILE = "world.json"
TASKS_FILE = "tasks.json"
# The skills backends and simulator nodes that may write world truth: simulated ones only. The expert
# refuses any other source, so it can never run on a real robot.
# source -> the kind of world it simulates.
SOURCE_WORLDS: Mapping[str, str] = {"mujoco": "tabletop", "kinematic": "tabletop", "kitchen": "kitchen",
                                    "household": "household"}
SIMULATED_SOURCES: frozenset[str] = frozenset(SOURCE_WORLDS)


class TruthUnavailableError(RuntimeError):
    """No simulator has written the world's truth (the expert runs only with a simulated robot)."""


@dataclass(frozen=True)
class WorldTruth:
    """One snapshot of a simulated world, as its simulator wrote it."""

    source: str  # the simulated backend that wrote it (one of SIMULATED_SOURCES)
    world: str  # tabletop | kitchen | household
    stamp_s: float  # s since the epoch, when written
    objects: tuple[SceneObject, ...]
    held: tuple[str, ...] = ()  # names of held objects
    extra: Mapping[str, Any] = field(default_factory=dict)

    def by_name(self) -> dict[str, SceneObject]:
        return {o.name: o for o in self.objects}


def _atomic_write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _object_json(o: SceneObject) -> dict[str, Any]:
    return asdict(o)


def _object_from_json(d: Mapping[str, Any]) -> SceneObject:
    tup = {k: tuple(v) for k, v in d.items() if isinstance(v, list)}
    return SceneObject(**{**d, **tup})


def write_world(directory: str | Path, source: str, objects: Iterable[SceneObject],
                held: Iterable[str] = (), extra: Mapping[str, Any] | None = None) -> None:
    """Replace the world's truth in `directory` (a simulator calls this after every change); `source` is the
    simulated backend (SOURCE_WORLDS gives its kind of world)."""
    if source not in SIMULATED_SOURCES:
        raise ValueError(f"expert truth: {source!r} is not a simulated backend {sorted(SIMULATED_SOURCES)}")
    _atomic_write(Path(directory) / WORLD_FILE, {
        "source": source, "world": SOURCE_WORLDS[source], "stamp_s": time.time(),
        "objects": [_object_json(o) for o in objects], "held": list(held), "extra": dict(extra or {})})


def read_world(directory: str | Path) -> WorldTruth | None:
    """The latest truth in `directory`, or None before any simulator wrote one. ValueError when it was
    written by something that is not a simulated backend."""
    path = Path(directory) / WORLD_FILE
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    if d.get("source") not in SIMULATED_SOURCES:
        raise ValueError(f"expert truth in {path} comes from {d.get('source')!r}, not a simulated backend")
    return WorldTruth(source=d["source"], world=d["world"], stamp_s=float(d["stamp_s"]),
                      objects=tuple(_object_from_json(o) for o in d["objects"]),
                      held=tuple(d.get("held", ())), extra=d.get("extra", {}))


def wait_world(directory: str | Path, timeout_s: float, poll_s: float = 0.05) -> WorldTruth:
    """`read_world`, waiting up to `timeout_s` (s) for a simulator to write it; TruthUnavailableError after."""
    deadline = time.monotonic() + timeout_s
    while True:
        truth = read_world(directory)
        if truth is not None:
            return truth
        if time.monotonic() >= deadline:
            raise TruthUnavailableError(
                f"no simulated world wrote its truth to {directory} within {timeout_s:g} s: the expert "
                "LLM stand-in runs only with a simulated robot (llm:=expert)")
        time.sleep(poll_s)


def write_task(directory: str | Path, instruction: str, world: str, goal: Mapping[str, Any]) -> None:
    """Record the goal of `instruction` (the benchmark runner, demo or test that starts the episode)."""
    path = Path(directory) / TASKS_FILE
    tasks = read_tasks(directory)
    tasks[instruction.strip()] = {"world": world, "goal": dict(goal)}
    _atomic_write(path, tasks)


def read_tasks(directory: str | Path) -> dict[str, Any]:
    try:
        return dict(json.loads((Path(directory) / TASKS_FILE).read_text(encoding="utf-8")))
    except FileNotFoundError:
        return {}


def read_task(directory: str | Path, instruction: str) -> Mapping[str, Any] | None:
    """The goal recorded for `instruction` ({"world", "goal"}), or None."""
    return read_tasks(directory).get(instruction.strip())
