"""Layout of a bag directory (no dependencies): the rosbag2 files plus the planner's sidecar files."""
from __future__ import annotations

from pathlib import Path

CASSETTE_FILE = "llm_cassette.jsonl"  # the planner's LLM cassette (record mode writes it here)
TRANSCRIPTS_DIR = "transcripts"  # the planner's transcript files (JSONL, with the goal options)


def bag_files_in(path: Path) -> list[Path]:
    """The bag files (metadata and storage) already present in a directory."""
    if not path.is_dir():
        return []
    return sorted(p for p in path.iterdir() if p.name == "metadata.yaml" or p.suffix in (".mcap", ".db3"))
