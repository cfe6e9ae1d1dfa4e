"""Which topics a recorder takes, and how often (no rclpy)."""
from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

NS = 1_000_000_000


def normalize_topic(name: str) -> str:
    name = name.strip()
    return name if name.startswith("/") else "/" + name


def parse_rates(items: Sequence[str]) -> dict[str, float]:
    """`["/camera/color/image_raw=5", ...]` -> {topic pattern: max rate in Hz}; ValueError if malformed."""
    out: dict[str, float] = {}
    for item in items:
        if not item.strip():
            continue
        topic, sep, value = item.rpartition("=")
        try:
            hz = float(value)
        except ValueError:
            hz = -1.0
        if not sep or not topic.strip() or not hz > 0:
            raise ValueError(f"max rate entries are <topic>=<Hz> with Hz > 0, got {item!r}")
        out[normalize_topic(topic)] = hz
    return out


@dataclass
class TopicSelection:
    """Topic names or fnmatch patterns (`/camera/*`) to record, each optionally rate-limited."""

    patterns: Sequence[str]
    max_rates: Mapping[str, float] = field(default_factory=dict)  # pattern -> Hz
    _last: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.patterns = [normalize_topic(p) for p in self.patterns if p.strip()]
        if not self.patterns:
            raise ValueError("the recorder needs at least one topic")

    def wanted(self, available: Iterable[str]) -> list[str]:
        """The available topics that match a pattern, sorted."""
        return sorted(t for t in available if any(fnmatch.fnmatchcase(t, p) for p in self.patterns))

    def max_rate(self, topic: str) -> float | None:
        """Hz limit of `topic` (the first matching rate entry), or None."""
        for pattern, hz in self.max_rates.items():
            if fnmatch.fnmatchcase(topic, pattern):
                return hz
        return None

    def admit(self, topic: str, t_ns: int) -> bool:
        """True if a message on `topic` at `t_ns` should be written (rate limit)."""
        hz = self.max_rate(topic)
        if hz is None:
            return True
        last = self._last.get(topic)
        if last is not None and t_ns - last < NS / hz:
            return False
        self._last[topic] = t_ns
        return True
