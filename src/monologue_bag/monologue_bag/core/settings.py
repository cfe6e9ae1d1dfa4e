"""Validated settings of the bag_recorder and bag_player nodes, from their ROS parameters (defaults
only in config/monologue.yaml, sections `recorder` and `bag_player`; see
monologue_common.core.settings). No rclpy here."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from monologue_common.core.settings import ParamReader

from .recording import parse_rates
from .timeline import PlaybackOptions

# Parameters every node has but these do not read: rclpy's own, and the shared llm block of
# config/llm/*.yaml (`/**`).
NOT_MINE = ("use_sim_time", "start_type_description_service", "llm")


@dataclass(frozen=True)
class RecorderSettings:
    output: str                              # bag directory (may exist with sidecar files, but hold no bag)
    topics: tuple[str, ...]                  # names or fnmatch patterns
    max_rates: Mapping[str, float]           # topic pattern -> Hz
    depth: int                               # messages queued per subscription
    discovery_period: float                  # s between scans for new topics
    compress: bool                           # zstd-compressed MCAP chunks
    custom_data: Mapping[str, str] = field(default_factory=dict)  # metadata.yaml custom_data
    unused: tuple[str, ...] = ()


def recorder_settings_from_parameters(params: Mapping[str, object]) -> RecorderSettings:
    """Check every parameter of bag_recorder; ValueError listing all problems at once."""
    r = ParamReader(params, "recorder")
    output = r.string("output", nonempty=True)
    rates: dict[str, float] = {}
    try:
        rates = parse_rates(list(r.strings("max_rates")))
    except ValueError as e:
        r.check(False, f"max_rates: {e}")
    custom: dict[str, str] = {}
    for item in r.strings("custom_data"):
        k, sep, v = item.partition("=")
        r.check(bool(sep and k.strip()), f"custom_data: entries are key=value, got {item!r}")
        if sep:
            custom[k] = v
    s = RecorderSettings(
        output=output, topics=r.strings("topics"), max_rates=rates,
        depth=r.integer("depth", 1), discovery_period=r.number("discovery_period", 0.0, low_open=True),
        compress=r.boolean("compress"), custom_data=custom,
    )
    r.finish()
    return replace(s, unused=tuple(r.unused(NOT_MINE)))


@dataclass(frozen=True)
class PlayerSettings:
    bag: str                                 # rosbag2 directory
    topics: tuple[str, ...]                  # recorded sensor topics to publish (names or fnmatch patterns)
    playback: PlaybackOptions                # rate, start offset (s), loop, hold period (s)
    episode: bool                            # serve the recorded skills and gate playback by them
    skill_timeout: float                     # s a recorded skill may take to play through
    unused: tuple[str, ...] = ()


def player_settings_from_parameters(params: Mapping[str, object]) -> PlayerSettings:
    """Check every parameter of bag_player; ValueError listing all problems at once."""
    r = ParamReader(params, "bag_player")
    s = PlayerSettings(
        bag=r.string("bag", nonempty=True),
        topics=r.strings("topics"),
        playback=PlaybackOptions(rate=r.number("rate", 0.0, low_open=True),
                                 start_offset_s=r.number("start_offset", 0.0),
                                 loop=r.boolean("loop"),
                                 hold_period_s=r.number("hold_period", 0.0)),
        episode=r.boolean("episode"),
        skill_timeout=r.number("skill_timeout", 0.0, low_open=True),
    )
    r.finish()
    return replace(s, unused=tuple(r.unused(NOT_MINE)))
