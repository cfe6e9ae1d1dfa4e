"""Bounded waits and time conversion."""
from __future__ import annotations

import threading
import time

import pytest
from rclpy.task import Future

from monologue_common.runtime import WaitTimeout, call_service, from_time, to_time, wait_future


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


class DroppingClient:
    """A service client whose server drops the first `drop` responses (rmw_fastrtps under load)."""

    def __init__(self, drop: int, answer_after_s: float = 0.0) -> None:
        self.drop, self.answer_after_s = drop, answer_after_s
        self.sent: list[Future] = []

    def call_async(self, request: object) -> Future:
        f = Future()
        self.sent.append(f)
        if len(self.sent) > self.drop:
            threading.Timer(self.answer_after_s, lambda: f.set_result(("answer", request, len(self.sent)))).start()
        return f


def test_call_service_resends_a_request_whose_answer_was_dropped() -> None:
    client = DroppingClient(drop=1)
    assert call_service(client, "req", 5.0, "thing", resend_after_s=0.1) == ("answer", "req", 2)
    assert len(client.sent) == 2 and client.sent[0].cancelled()


def test_call_service_backs_off_and_times_out_with_the_count() -> None:
    client = DroppingClient(drop=100)
    with pytest.raises(WaitTimeout, match=r"thing did not answer within 1.0 s \(4 requests sent\)"):
        call_service(client, "req", 1.0, "thing", resend_after_s=0.1)  # sent at 0, 0.1, 0.3, 0.7 s
    assert all(f.cancelled() for f in client.sent)


def test_call_service_a_slow_answer_is_not_resent_forever() -> None:
    client = DroppingClient(drop=0, answer_after_s=0.35)
    assert call_service(client, "req", 5.0, "thing", resend_after_s=0.1)[0] == "answer"
    assert len(client.sent) <= 3  # 0, 0.1, 0.3 s: the first answer (0.35 s) ends it


def test_call_service_stops_on_cancel_and_wraps_exceptions() -> None:
    cancel = threading.Event()
    cancel.set()
    assert call_service(DroppingClient(drop=100), "req", 5.0, "thing", cancel) is None

    class Failing:
        def call_async(self, request: object) -> Future:
            f = Future()
            f.set_exception(ValueError("bad"))
            return f

    with pytest.raises(RuntimeError, match="thing failed: bad"):
        call_service(Failing(), "req", 1.0, "thing")
