"""Topic selections by name or fnmatch pattern, as the bag recorder and the Foxglove bridge take them
(no rclpy)."""
from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar


def normalize_topic(name: str) -> str:
    """`monologue/transcript` -> `/monologue/transcript` (patterns too)."""
    name = name.strip()
    return name if name.startswith("/") else "/" + name


def parse_topic_values(items: Sequence[str], convert: Callable[[str], float], expected: str) -> dict[str, float]:
    """`["/camera/*/image_raw=5", ...]` -> {topic pattern: convert(value) > 0}, blank items skipped;
    ValueError "<expected>, got '<item>'" on a malformed item."""
    out: dict[str, float] = {}
    for item in items:
        if not item.strip():
            continue
        topic, sep, text = item.rpartition("=")
        try:
            value = convert(text)
        except ValueError:
            value = -1.0
        if not sep or not topic.strip() or not value > 0:
            raise ValueError(f"{expected}, got {item!r}")
        out[normalize_topic(topic)] = value
    return out


def first_match(topic: str, table: Mapping[str, float]) -> float | None:
    """The value of the first pattern of `table` that `topic` matches, or None."""
    for pattern, value in table.items():
        if fnmatch.fnmatchcase(topic, pattern):
            return value
    return None


@dataclass
class TopicPatterns:
    """Topic names or fnmatch patterns (`/camera/*`), normalized to absolute names; blank ones dropped."""

    USER: ClassVar[str] = "a topic selection"  # who needs them, for the error
    patterns: Sequence[str]

    def __post_init__(self) -> None:
        self.patterns = [normalize_topic(p) for p in self.patterns if p.strip()]
        if not self.patterns:
            raise ValueError(f"{self.USER} needs at least one topic")

    def wanted(self, available: Iterable[str]) -> list[str]:
        """The available topics that match a pattern, sorted."""
        return sorted(t for t in available if any(fnmatch.fnmatchcase(t, p) for p in self.patterns))
