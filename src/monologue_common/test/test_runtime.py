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


class _Recorder:
    """What run_node did, in order."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.timeouts: list[float | None] = []  # s, given to the executor's shutdown


def _fake_runtime(monkeypatch: pytest.MonkeyPatch, rec: _Recorder) -> type:
    """run_node's rclpy collaborators replaced by recording fakes; returns the fake executor class."""
    from rclpy.executors import ExternalShutdownException

    from monologue_common import runtime

    class FakeExecutor:
        def __init__(self, num_threads: int | None = None) -> None:
            rec.calls.append("executor")

        def add_node(self, node: object) -> bool:
            return True

        @property
        def context(self) -> object:
            return type("Ctx", (), {"ok": lambda _self: True})()

        def spin(self) -> None:
            rec.calls.append("spin")
            raise ExternalShutdownException()  # the context was shut down (Ctrl-C)

        def shutdown(self, timeout_sec: float | None = None) -> bool:
            rec.calls.append("shutdown")
            rec.timeouts.append(timeout_sec)
            return True

    monkeypatch.setattr(runtime, "MultiThreadedExecutor", FakeExecutor)
    monkeypatch.setattr(runtime.rclpy, "init", lambda args=None: rec.calls.append("init"))
    monkeypatch.setattr(runtime.faulthandler, "register", lambda *a, **k: None)
    monkeypatch.setattr(runtime, "uninstall_signal_handlers", lambda: rec.calls.append("uninstall_signal_handlers"))
    monkeypatch.setattr(runtime, "_report_slow_exit", lambda _s: rec.calls.append("report_slow_exit"))
    monkeypatch.setattr(runtime, "try_shutdown", lambda: rec.calls.append("try_shutdown"))
    return FakeExecutor


class _FakeNode:
    def __init__(self, rec: _Recorder) -> None:
        self.rec = rec

    def destroy_node(self) -> None:
        self.rec.calls.append("destroy_node")


def test_run_node_shuts_the_executor_down_before_destroying_the_node(monkeypatch: pytest.MonkeyPatch) -> None:
    from monologue_common import runtime

    rec = _Recorder()
    _fake_runtime(monkeypatch, rec)
    runtime.run_node(lambda: _FakeNode(rec), threads=2)  # type: ignore[arg-type,return-value]
    assert rec.calls == ["init", "executor", "spin", "uninstall_signal_handlers", "report_slow_exit",
                         "shutdown", "destroy_node", "try_shutdown"]
    assert rec.timeouts and all(t is not None and 0.0 < t < 60.0 for t in rec.timeouts)  # a bounded wait


def test_run_node_without_a_node_still_shuts_down(monkeypatch: pytest.MonkeyPatch) -> None:
    from monologue_common import runtime

    rec = _Recorder()
    _fake_runtime(monkeypatch, rec)

    def broken() -> object:
        raise KeyboardInterrupt

    runtime.run_node(broken)  # type: ignore[arg-type]
    assert rec.calls == ["init", "uninstall_signal_handlers", "report_slow_exit", "try_shutdown"]


def test_stop_executor_never_raises_and_reports_running_callbacks(caplog: pytest.LogCaptureFixture) -> None:
    from monologue_common.runtime import stop_executor

    class Broken:
        def shutdown(self, timeout_sec: float | None = None) -> bool:
            raise RuntimeError("broken")

    class Busy:
        def shutdown(self, timeout_sec: float | None = None) -> bool:
            return False  # a callback still runs after timeout_sec

    assert stop_executor(Broken(), 0.01) is False  # type: ignore[arg-type]
    assert stop_executor(Busy(), 0.01) is False  # type: ignore[arg-type]
    assert "callbacks still running" in caplog.text


@pytest.mark.parametrize("kind", ("single", "multi"))
def test_spin_ends_when_the_context_is_shut_down_without_waking_the_executor(kind: str) -> None:
    """rclpy's signal thread wakes the executors first and shuts the contexts down afterwards, with no
    on-shutdown callback: an executor waiting again in between must still return. Shown here with the
    same C-level shutdown (context.handle.shutdown()) while a node with no timer and no traffic spins."""
    import os
    import random

    import rclpy
    from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor

    from monologue_common.runtime import spin_until_shutdown

    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=random.Random(os.getpid() + 1).randrange(200, 230))
    node = rclpy.create_node("spin_until_shutdown_test", context=ctx)
    executor = (MultiThreadedExecutor(num_threads=2, context=ctx) if kind == "multi"
                else SingleThreadedExecutor(context=ctx))
    executor.add_node(node)
    ended = threading.Event()
    errors: list[BaseException] = []

    def spin() -> None:
        try:
            spin_until_shutdown(executor, poll_s=0.05)
        except ExternalShutdownException:
            pass
        except BaseException as e:  # noqa: BLE001 - reported by the assertion below
            errors.append(e)
        ended.set()

    threading.Thread(target=spin, daemon=True).start()
    time.sleep(0.3)  # s: the executor is waiting on an empty wait set
    assert not ended.is_set()
    ctx.handle.shutdown()  # rcl_shutdown only, as rclpy's signal thread does
    try:
        assert ended.wait(5.0), "spin did not return after the context was shut down"
        assert not errors or "context" in str(errors[0]), errors
    finally:
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()


@pytest.mark.parametrize("kind", ("single", "multi"))
def test_stop_executor_waits_bounded_for_a_running_callback(kind: str) -> None:
    """Real executors: a callback still running makes stop_executor wait at most its timeout; once it
    has ended, the executor stops and the node is destroyed."""
    import os
    import random

    import rclpy
    from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor

    from monologue_common.runtime import stop_executor

    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=random.Random(os.getpid()).randrange(200, 230))
    try:
        node = rclpy.create_node("stop_executor_test", context=ctx)
        started, release = threading.Event(), threading.Event()

        def tick() -> None:
            started.set()
            release.wait(5.0)  # s

        node.create_timer(0.01, tick)
        executor = (MultiThreadedExecutor(num_threads=2, context=ctx) if kind == "multi"
                    else SingleThreadedExecutor(context=ctx))
        executor.add_node(node)
        spinner = threading.Thread(target=executor.spin, daemon=True)
        spinner.start()
        assert started.wait(5.0)
        if kind == "multi":  # the callback runs in a worker thread: bounded wait, then False
            t0 = time.monotonic()
            assert stop_executor(executor, 0.1) is False
            assert time.monotonic() - t0 < 2.0
        release.set()
        assert stop_executor(executor, 5.0) is True
        spinner.join(5.0)
        assert not spinner.is_alive()
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=ctx)


def test_probe_node_owns_the_context_only_when_it_started_it() -> None:
    import rclpy
    from rclpy.utilities import ok

    from monologue_common.runtime import probe_node

    assert not ok()
    with probe_node("runtime_test_probe") as (node, executor):
        assert ok() and node.get_name() == "runtime_test_probe"
        executor.spin_once(timeout_sec=0.01)
    assert not ok()  # it started rclpy, so it shut it down
    rclpy.init(args=[])
    try:
        with probe_node("runtime_test_probe_2") as (node, _executor):
            assert node.get_name() == "runtime_test_probe_2"
        assert ok()  # the caller's context is left running
    finally:
        rclpy.shutdown()
