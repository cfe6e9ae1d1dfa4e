"""Which topics a recorder takes, and how often (no rclpy)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from monologue_common.core.topics import TopicPatterns, first_match, parse_topic_values

NS = 1_000_000_000


def parse_rates(items: Sequence[str]) -> dict[str, float]:
    """`["/camera/color/image_raw=5", ...]` -> {topic pattern: max rate in Hz}; ValueError if malformed."""
    return parse_topic_values(items, float, "max rate entries are <topic>=<Hz> with Hz > 0")


@dataclass
class TopicSelection(TopicPatterns):
    """Topic names or fnmatch patterns (`/camera/*`) to record, each optionally rate-limited."""

    USER = "the recorder"
    max_rates: Mapping[str, float] = field(default_factory=dict)  # pattern -> Hz
    _last: dict[str, int] = field(default_factory=dict)

    def max_rate(self, topic: str) -> float | None:
        """Hz limit of `topic` (the first matching rate entry), or None."""
        return first_match(topic, self.max_rates)

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
