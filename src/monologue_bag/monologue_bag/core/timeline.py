"""Replay timing: recorded messages re-published on the original schedule, gated by the live graph.

Bag time (ns since the epoch, the recorder's receive time) maps to wall time (s) as
    bag = bag_anchor + (wall - wall_anchor) * rate
from a start offset into the bag. The playback may only advance up to a *limit*: a replayed
episode sets the limit to the start of the next recorded skill, raises it to that skill's end when
the planner sends the same goal, and so on. While it waits at the limit (and after the last
message), the latest message of every topic is re-published every `hold_period_s`, so consumers
that ask for a fresh observation still get one. No rclpy: the caller publishes and sleeps.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .bagio import BagMessage

NS = 1_000_000_000


@dataclass(frozen=True)
class PlaybackOptions:
    """bag_player's playback parameters (values: config/monologue.yaml, section `bag_player`)."""

    rate: float  # playback speed factor (2.0 = twice as fast)
    start_offset_s: float  # s into the bag where playback starts
    loop: bool  # restart at the offset after the last message (not with gates)
    hold_period_s: float  # s between re-publications while waiting; 0 = never

    def validate(self) -> None:
        if not self.rate > 0:
            raise ValueError(f"rate must be > 0, got {self.rate}")
        if self.start_offset_s < 0:
            raise ValueError(f"start offset must be >= 0 s, got {self.start_offset_s}")
        if self.hold_period_s < 0:
            raise ValueError(f"hold period must be >= 0 s, got {self.hold_period_s}")


class Playback:
    """Publishes `messages` (sorted by log time) on schedule; call `tick(now)` from one thread.

    `limit_ns` is the bag time playback may reach; None means no limit (plain playback).
    """

    def __init__(
        self,
        messages: Sequence[BagMessage],
        bag_start_ns: int,
        options: PlaybackOptions,
        publish: Callable[[BagMessage], None],
        logger: logging.Logger,
        limit_ns: int | None = None,
    ) -> None:
        options.validate()
        if options.loop and limit_ns is not None:
            raise ValueError("loop cannot be combined with gated (episode) playback")
        self._msgs = sorted(messages, key=lambda m: m.log_time_ns)
        self._opts = options
        self._publish = publish
        self._log = logger
        self._start_ns = bag_start_ns + int(options.start_offset_s * NS)
        self._limit = limit_ns
        self._cond = threading.Condition()
        self._started = False
        self._wall_anchor = 0.0
        self._bag_anchor = self._start_ns
        self._pos = self._start_ns
        self._done = self._start_ns  # bag time whose messages have all been handed to `publish`
        self._i = 0
        self._latest: dict[str, BagMessage] = {}
        self._next_hold = 0.0
        self.loops = 0
        self.published = 0

    # -- state ---------------------------------------------------------
    @property
    def position_ns(self) -> int:
        """Bag time (ns) the playback has reached."""
        with self._cond:
            return self._pos

    @property
    def finished(self) -> bool:
        """True once every message was published (never when looping)."""
        with self._cond:
            return self._i >= len(self._msgs) and not self._opts.loop

    @property
    def last_ns(self) -> int:
        return self._msgs[-1].log_time_ns if self._msgs else self._start_ns

    def allow(self, limit_ns: int | None, now: float) -> None:
        """Let playback advance to `limit_ns` (None: to the end). Never moves the limit back."""
        with self._cond:
            if self._limit is not None and limit_ns is not None and limit_ns < self._limit:
                return
            if self._started and self._limit is not None and self._pos >= self._limit:
                self._bag_anchor, self._wall_anchor = self._pos, now  # resume from where it waited
            self._limit = limit_ns
            self._cond.notify_all()

    def wait_reached(self, t_ns: int, timeout_s: float) -> bool:
        """Block until every message up to bag time `t_ns` was published; False after `timeout_s` (s).
        (A skill's result must not overtake the scene it left behind.)"""
        with self._cond:
            return self._cond.wait_for(lambda: self._done >= t_ns, timeout=timeout_s)

    # -- the clock -----------------------------------------------------
    def tick(self, now: float) -> float:
        """Publish what is due at wall time `now` (s); return the wall time of the next thing to do."""
        due: list[BagMessage] = []
        hold: list[BagMessage] = []
        with self._cond:
            if not self._started:
                self._start(now, due)
            target = self._bag_anchor + int((now - self._wall_anchor) * self._opts.rate * NS)
            if self._limit is not None:
                target = min(target, self._limit)
            target = max(target, self._pos)
            while self._i < len(self._msgs) and self._msgs[self._i].log_time_ns <= target:
                due.append(self._msgs[self._i])
                self._i += 1
            self._pos = target
            waiting = (self._limit is not None and self._pos >= self._limit) or self._i >= len(self._msgs)
            if self._i >= len(self._msgs) and self._opts.loop and self._msgs:
                self.loops += 1
                self._log.info("end of bag reached; looping (%d)", self.loops)
                self._i, self._pos = self._seek(due), self._start_ns
                self._bag_anchor, self._wall_anchor = self._start_ns, now
                waiting = False
            for m in due:
                self._latest[m.topic] = m
            if waiting and self._opts.hold_period_s > 0 and now >= self._next_hold and not due:
                hold = list(self._latest.values())
                self._next_hold = now + self._opts.hold_period_s
            elif not waiting:
                self._next_hold = now + self._opts.hold_period_s
            wake = self._next_wake(now, waiting)
        for m in due + hold:
            self._publish(m)
        self.published += len(due) + len(hold)
        with self._cond:
            self._done = max(self._done, target)
            self._cond.notify_all()
        return wake

    def _start(self, now: float, due: list[BagMessage]) -> None:
        self._started = True
        self._wall_anchor, self._bag_anchor = now, self._start_ns
        self._i = self._seek(due)
        self._next_hold = now + self._opts.hold_period_s

    def _seek(self, due: list[BagMessage]) -> int:
        """Index of the first message at or after the start; the latest earlier one of each topic
        is published at once, so state topics (latched scene, static TF) are there from the start."""
        i = 0
        before: dict[str, BagMessage] = {}
        while i < len(self._msgs) and self._msgs[i].log_time_ns < self._start_ns:
            before[self._msgs[i].topic] = self._msgs[i]
            i += 1
        due.extend(sorted(before.values(), key=lambda m: m.log_time_ns))
        return i

    def _next_wake(self, now: float, waiting: bool) -> float:
        if waiting:
            return now + (self._opts.hold_period_s or 0.1)
        nxt = self._msgs[self._i].log_time_ns if self._i < len(self._msgs) else None
        if self._limit is not None and (nxt is None or self._limit < nxt):
            nxt = self._limit
        if nxt is None:
            return now + 0.1
        return self._wall_anchor + (nxt - self._bag_anchor) / NS / self._opts.rate
