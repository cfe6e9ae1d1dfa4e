"""Past episodes: the planner's transcript files (`<transcript_dir>/<episode>.jsonl`), no rclpy."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from monologue_domain.transcript import load_episode, running_in_another_process

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\.jsonl$")


def episode_file(directory: Path, name: str) -> Path | None:
    """`directory/name` if `name` is a plain transcript file name that exists there (no path tricks)."""
    if not _NAME.match(name):
        return None
    path = directory / name
    return path if path.is_file() else None


def list_episodes(directory: Path, limit: int = 200) -> list[dict[str, Any]]:
    """The newest `limit` transcripts: file name, episode id, instruction, outcome, whether a live planner
    is still running it, size (bytes), mtime (s)."""
    if not directory.is_dir():
        return []
    files = sorted(directory.glob("*.jsonl"), key=lambda p: p.stat().st_mtime, reverse=True)[:limit]
    out = []
    for p in files:
        try:
            ep = load_episode(p)
        except (OSError, ValueError, KeyError):
            continue
        instruction = next((e.text for e in ep.events if e.kind.name == "HUMAN_INSTRUCTION"), "")
        end = ep.end or {}
        out.append({"name": p.name, "episode_id": str(ep.header.get("episode_id") or p.stem),
                    "instruction": instruction, "events": len(ep.events), "ended": ep.end is not None,
                    "running": ep.end is None and running_in_another_process(p),
                    "success": end.get("success"), "reason": str(end.get("reason", "")),
                    "size": p.stat().st_size, "mtime": p.stat().st_mtime})
    return out


def read_episode(path: Path) -> dict[str, Any]:
    """A transcript file as JSON: header, events (kind names) and end record (None if interrupted)."""
    ep = load_episode(path)
    return {"name": path.name, "header": dict(ep.header), "events": [e.to_json() for e in ep.events],
            "end": dict(ep.end) if ep.end is not None else None}
