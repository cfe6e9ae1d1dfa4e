"""What the Foxglove bridge publishes, and how (no rclpy, no foxglove-sdk).

The bridge forwards ROS topics to a Foxglove WebSocket server as they are on the wire: one channel per
topic with message encoding `cdr` and a `ros2msg` schema (the concatenated `.msg` text with a `MSG:`
block per nested type, as in MCAP; monologue_common.core.msgdefs builds it). This module holds the
validated parameters (section `foxglove_bridge` of config/monologue.yaml), the topic selection (names
or fnmatch patterns, with optional rate limits and per-topic history for late clients) and the channel
description of one topic.
"""
from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from monologue_common.core.msgdefs import MessageDefinitions
from monologue_common.core.settings import ParamReader
from monologue_common.core.topics import TopicPatterns, first_match, normalize_topic, parse_topic_values

from .settings import BindAddress

NS = 1_000_000_000
MESSAGE_ENCODING = "cdr"
SCHEMA_ENCODING = "ros2msg"
# Parameters every node has but this one does not read: rclpy's own, and the shared llm block of
# config/llm/*.yaml (`/**`).
NOT_MINE = ("use_sim_time", "start_type_description_service", "llm")


def parse_pattern_values(items: Sequence[str], what: str, integer: bool = False) -> dict[str, float]:
    """`["/camera/*/image_raw=5", ...]` -> {topic pattern: value > 0}; ValueError naming `what` if malformed."""
    kind = "an integer" if integer else "a number"
    return parse_topic_values(items, (lambda text: float(int(text))) if integer else float,
                              f"{what} entries are <topic pattern>=<{kind} > 0>")


@dataclass(frozen=True)
class FoxgloveSettings(BindAddress):
    """Parameters of the foxglove_bridge node (host and port: where it listens)."""

    name: str                                 # server name shown in Foxglove
    topics: tuple[str, ...]                   # topic names or fnmatch patterns (normalized to /...)
    max_rates: Mapping[str, float]            # topic pattern -> Hz (first match wins)
    history: Mapping[str, int]                # transient-local topic pattern -> messages kept for late clients
    default_history: int                      # messages kept per transient-local topic matching no entry
    depth: int                                # messages queued per ROS subscription (volatile topics)
    discovery_period: float                   # s between scans for new topics
    message_backlog: int                      # messages buffered per client before the oldest is dropped
    unused: tuple[str, ...] = ()              # parameters set but not read

    def url(self, port: int | None = None) -> str:
        """The ws:// address a Foxglove client connects to."""
        return self.address("ws", port)


def foxglove_settings_from_parameters(params: Mapping[str, object]) -> FoxgloveSettings:
    """Check every parameter of foxglove_bridge; ValueError listing all problems at once."""
    r = ParamReader(params, "foxglove_bridge")
    rates: dict[str, float] = {}
    history: dict[str, float] = {}
    try:
        rates = parse_pattern_values(list(r.strings("max_rates")), "max_rates")
    except ValueError as e:
        r.check(False, f"max_rates: {e}")
    try:
        history = parse_pattern_values(list(r.strings("history")), "history", integer=True)
    except ValueError as e:
        r.check(False, f"history: {e}")
    topics = tuple(normalize_topic(t) for t in r.strings("topics"))
    r.check(bool(topics), "topics: the bridge needs at least one topic name or pattern")
    s = FoxgloveSettings(
        host=r.string("host", nonempty=True),
        port=r.integer("port", 0, 65535),
        name=r.string("name", nonempty=True),
        topics=topics,
        max_rates=rates,
        history={k: int(v) for k, v in history.items()},
        default_history=r.integer("default_history", 1),
        depth=r.integer("depth", 1),
        discovery_period=r.number("discovery_period", 0.0, low_open=True),
        message_backlog=r.integer("message_backlog", 1),
    )
    r.finish()
    return replace(s, unused=tuple(r.unused(NOT_MINE)))


@dataclass
class TopicSelection(TopicPatterns):
    """Which topics to bridge (names or fnmatch patterns), and how often (Hz limits per pattern)."""

    USER = "the Foxglove bridge"
    max_rates: Mapping[str, float] = field(default_factory=dict)
    _last: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def admit(self, topic: str, t_ns: int) -> bool:
        """True if a message on `topic` at `t_ns` (ns) is forwarded under the topic's rate limit."""
        hz = first_match(topic, self.max_rates)
        if hz is None:
            return True
        with self._lock:
            last = self._last.get(topic)
            if last is not None and 0 <= t_ns - last < NS / hz:
                return False
            self._last[topic] = t_ns
            return True


def history_depth(topic: str, transient_local: bool, settings: FoxgloveSettings) -> int:
    """Messages of `topic` kept for clients that subscribe later: 0 for volatile topics (a late
    Foxglove client sees only new messages, as a late ROS subscriber would), else the first
    matching `history` entry or `default_history`."""
    if not transient_local:
        return 0
    n = first_match(topic, settings.history)
    return int(n) if n is not None else settings.default_history


@dataclass(frozen=True)
class ChannelSpec:
    """A Foxglove channel carrying one ROS topic's CDR messages."""

    topic: str
    type_name: str                            # pkg/msg/Name, also the schema name
    schema: bytes                             # ros2msg text, UTF-8
    transient_local: bool = False             # the publishers latch (late clients get the last messages)
    history: int = 0                          # messages kept for late clients (transient-local topics)
    message_encoding: str = MESSAGE_ENCODING
    schema_encoding: str = SCHEMA_ENCODING

    @property
    def metadata(self) -> dict[str, str]:
        """Channel metadata shown by Foxglove (strings only)."""
        return {"ros_type": self.type_name, "durability": "transient_local" if self.transient_local else "volatile"}


def channel_spec(topic: str, type_name: str, definitions: MessageDefinitions, transient_local: bool = False,
                 history: int = 0) -> ChannelSpec:
    """The channel of `topic` carrying `type_name` (e.g. `monologue_interfaces/msg/TranscriptEvent`);
    raises monologue_common.core.msgdefs.DefinitionError if its interface files are not installed."""
    text = definitions.get(type_name).text
    return ChannelSpec(topic=topic, type_name=type_name, schema=text.encode("utf-8"),
                       transient_local=transient_local, history=history if transient_local else 0)


class History:
    """The last messages of each transient-local topic, replayed to a client that subscribes late.
    Thread-safe: ROS callbacks add, the server's subscribe callback reads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[str, deque[tuple[bytes, int]]] = {}

    def configure(self, topic: str, depth: int) -> None:
        """Keep the last `depth` messages of `topic` (0: none)."""
        with self._lock:
            if depth > 0:
                self._kept[topic] = deque(self._kept.get(topic, ()), maxlen=depth)
            else:
                self._kept.pop(topic, None)

    def add(self, topic: str, data: bytes, t_ns: int) -> None:
        with self._lock:
            kept = self._kept.get(topic)
            if kept is not None:
                kept.append((data, t_ns))

    def messages(self, topic: str) -> list[tuple[bytes, int]]:
        """(CDR bytes, time in ns) of the kept messages of `topic`, oldest first."""
        with self._lock:
            return list(self._kept.get(topic, ()))
