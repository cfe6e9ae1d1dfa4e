"""Bounded waits and time conversion."""
from __future__ import annotations

import threading
import time

import pytest
from rclpy.task import Future

from monologue_common.runtime import WaitTimeout, from_time, to_time, wait_future


def test_wait_future_times_out_and_cancels() -> None:
    f = Future()
    t0 = time.monotonic()
    with pytest.raises(WaitTimeout, match="thing did not answer within 0.2 s"):
        wait_future(f, 0.2, "thing")
    assert time.monotonic() - t0 < 2.0
    assert f.cancelled()


def test_wait_future_returns_result_set_from_another_thread() -> None:
    f = Future()
    threading.Timer(0.05, lambda: f.set_result(42)).start()
    assert wait_future(f, 5.0, "thing") == 42


def test_wait_future_stops_on_cancel_event() -> None:
    cancel = threading.Event()
    cancel.set()
    assert wait_future(Future(), 5.0, "thing", cancel) is None


def test_wait_future_wraps_exceptions() -> None:
    f = Future()
    f.set_exception(ValueError("bad"))
    with pytest.raises(RuntimeError, match="thing failed: bad"):
        wait_future(f, 1.0, "thing")


def test_time_round_trip() -> None:
    t = 1795315456.25
    assert from_time(to_time(t)) == pytest.approx(t, abs=1e-6)
