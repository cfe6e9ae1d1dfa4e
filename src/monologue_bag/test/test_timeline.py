"""Replay timing: original schedule scaled by the rate, offsets, loops, gates and holds (fake clock)."""
from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from monologue_bag.core.bagio import BagMessage
from monologue_bag.core.timeline import NS, Playback, PlaybackOptions

T0 = 1_700_000_000 * NS


def msgs(*spec: tuple[str, float]) -> list[BagMessage]:
    return [BagMessage(topic, "pkg/msg/T", T0 + int(t * NS), f"{topic}@{t}".encode()) for topic, t in spec]


class Recorder:
    def __init__(self) -> None:
        self.out: list[tuple[float, bytes]] = []
        self.now = 0.0

    def __call__(self, m: BagMessage) -> None:
        self.out.append((self.now, m.data))

    def run(self, pb: Playback, until: float, step: float = 0.01) -> None:
        while self.now <= until + 1e-9:
            pb.tick(self.now)
            self.now = round(self.now + step, 6)


def options(**changes: float | bool) -> PlaybackOptions:
    """config/monologue.yaml's bag_player values, with `changes`."""
    return replace(PlaybackOptions(rate=1.0, start_offset_s=0.0, loop=False, hold_period_s=0.2), **changes)


def make(spec: list[BagMessage], rec: Recorder, limit: int | None = None, **opts: float | bool) -> Playback:
    return Playback(spec, T0, options(**opts), rec, logging.getLogger("t"), limit_ns=limit)


def test_messages_keep_their_spacing_scaled_by_the_rate() -> None:
    rec = Recorder()
    pb = make(msgs(("/a", 0.0), ("/b", 1.0), ("/a", 2.0)), rec, rate=2.0, hold_period_s=0.0)
    rec.run(pb, 1.5)
    assert [(round(t, 2), d) for t, d in rec.out] == [(0.0, b"/a@0.0"), (0.5, b"/b@1.0"), (1.0, b"/a@2.0")]
    assert pb.finished and pb.published == 3


def test_next_wake_is_the_next_message_time() -> None:
    rec = Recorder()
    pb = make(msgs(("/a", 0.0), ("/a", 3.0)), rec, rate=1.5)
    assert pb.tick(10.0) == pytest.approx(12.0)


def test_start_offset_publishes_the_state_before_it_first() -> None:
    rec = Recorder()
    pb = make(msgs(("/s", 0.0), ("/t", 0.5), ("/s", 1.0), ("/s", 3.0)), rec, start_offset_s=2.0, hold_period_s=0.0)
    rec.run(pb, 1.2)
    assert [d for _t, d in rec.out] == [b"/t@0.5", b"/s@1.0", b"/s@3.0"]
    assert rec.out[2][0] == pytest.approx(1.0)


def test_gate_blocks_and_holds_then_resumes_without_a_burst() -> None:
    rec = Recorder()
    pb = make(msgs(("/s", 0.0), ("/s", 1.0), ("/s", 2.0), ("/s", 3.0)), rec, limit=T0 + int(1.5 * NS),
              hold_period_s=0.5)
    rec.run(pb, 3.0)
    data = [d for _t, d in rec.out]
    assert b"/s@2.0" not in data  # never past the gate
    held = [t for t, d in rec.out if d == b"/s@1.0"]
    assert len(held) >= 3 and all(b - a == pytest.approx(0.5) for a, b in zip(held[1:], held[2:]))
    assert pb.position_ns == T0 + int(1.5 * NS)
    pb.allow(T0 + int(2.5 * NS), rec.now)  # the planner sent the goal: play through the skill
    resume = rec.now
    rec.run(pb, resume + 2.0)
    when: dict[bytes, float] = {}
    for t, d in rec.out:
        when.setdefault(d, t)
    assert when[b"/s@2.0"] == pytest.approx(resume + 0.5, abs=0.011)  # 0.5 s after resuming, no catch-up
    assert pb.wait_reached(T0 + int(2.5 * NS), 0.0)
    assert b"/s@3.0" not in when
    pb.allow(T0, rec.now)  # a lower limit never moves playback back
    assert pb.position_ns == T0 + int(2.5 * NS)


def test_loop_restarts_at_the_offset() -> None:
    rec = Recorder()
    pb = make(msgs(("/a", 0.0), ("/a", 1.0)), rec, loop=True, hold_period_s=0.0)
    rec.run(pb, 2.5)
    assert [d for _t, d in rec.out][:4] == [b"/a@0.0", b"/a@1.0", b"/a@0.0", b"/a@1.0"]
    assert pb.loops >= 2 and not pb.finished


def test_invalid_options_are_refused() -> None:
    with pytest.raises(ValueError, match="rate"):
        options(rate=0).validate()
    with pytest.raises(ValueError, match="offset"):
        options(start_offset_s=-1).validate()
    with pytest.raises(ValueError, match="loop"):
        make(msgs(("/a", 0.0)), Recorder(), limit=T0, loop=True)


def test_a_waiter_is_released_only_after_the_messages_were_published() -> None:
    """The replayed skill result must not overtake the scene the skill left behind."""
    seen: list[bool] = []
    spec = msgs(("/s", 0.0), ("/s", 0.5), ("/s", 1.0))
    holder: list[Playback] = []

    def publish(m: BagMessage) -> None:
        seen.append(holder[0].wait_reached(T0 + NS, 0.0))

    pb = Playback(spec, T0, options(hold_period_s=0.0), publish, logging.getLogger("t"), limit_ns=T0 + NS)
    holder.append(pb)
    pb.tick(0.0)
    pb.tick(5.0)  # one batch up to the limit
    assert seen == [False, False, False] and pb.wait_reached(T0 + NS, 0.0)
