"""StampedHistory: the image/scene at a skill's start and a fresh one after the request."""
from __future__ import annotations

import threading
import time

import pytest

from success_detector_node.core.history import StampedHistory


def test_at_or_before_picks_the_newest_not_after_t() -> None:
    h: StampedHistory[str] = StampedHistory(10)
    assert h.at_or_before(5.0) is None and h.span() is None
    for t in (1.0, 2.0, 3.0):
        h.add(t, f"img{t:.0f}")
    assert h.at_or_before(2.5) == (2.0, "img2")
    assert h.at_or_before(2.0) == (2.0, "img2")
    assert h.at_or_before(9.0) == (3.0, "img3")
    assert h.at_or_before(0.5) is None
    assert h.span() == (1.0, 3.0)


def test_period_thins_the_history_but_the_newest_is_always_kept() -> None:
    h: StampedHistory[int] = StampedHistory(3, period_s=1.0)
    for i in range(10):   # 0.0, 0.4, ... 3.6 s
        h.add(i * 0.4, i)
    # kept: one per second at most, the last 3 of them (1.2, 2.4, 3.6 s) ...
    assert h.at_or_before(1.3) == (pytest.approx(1.2), 3)
    assert h.at_or_before(1.1) is None   # ... 0.0 fell out of the 3-item history
    assert h.at_or_before(100.0) == (pytest.approx(3.6), 9)
    h.add(3.8, 10)   # too soon to keep, but it is the newest
    assert h.at_or_before(100.0) == (pytest.approx(3.8), 10)
    assert h.at_or_before(3.7) == (pytest.approx(3.6), 9)
    assert h.span() == (pytest.approx(1.2), pytest.approx(3.8))


def test_time_jumping_back_starts_a_new_timeline_at_once() -> None:
    h: StampedHistory[str] = StampedHistory(10, period_s=1.0)
    h.add(100.0, "old run")
    h.add(5.0, "restarted")
    h.add(5.5, "restarted, 0.5 s on")   # the newest, not kept
    h.add(6.0, "restarted, 1 s on")
    assert h.at_or_before(200.0) == (6.0, "restarted, 1 s on")   # the latest arrival, not the largest stamp
    assert h.at_or_before(5.9) == (5.0, "restarted")
    assert h.span() == (5.0, 100.0)


def test_wait_after_returns_a_fresh_item_or_none_on_timeout() -> None:
    h: StampedHistory[str] = StampedHistory(10)
    h.add(1.0, "before")
    assert h.wait_after(0.5, 0.0) == (1.0, "before")   # already there: no wait
    t0 = time.monotonic()
    assert h.wait_after(1.0, 0.05) is None   # stamped at, not after, the request
    assert 0.04 <= time.monotonic() - t0 < 1.0
    threading.Timer(0.02, h.add, (2.0, "after")).start()
    assert h.wait_after(1.5, 2.0) == (2.0, "after")


def test_bad_sizes_are_rejected() -> None:
    with pytest.raises(ValueError, match="size"):
        StampedHistory(0)
    with pytest.raises(ValueError, match="period_s"):
        StampedHistory(3, period_s=-1.0)
