"""Helpers of the system tests that start a graph (test/test_*_system.py): waits that fail with the
graph's log, a clean stop, and the test's own node in the graph."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from .graph_run import GraphRun

if TYPE_CHECKING:
    from rclpy.executors import Executor

OK_EXIT_CODES = (0, -2, -15, 130)  # exited, or stopped by SIGINT / SIGTERM


def log_tail(lines: list[str], n: int = 80) -> str:
    return "\n".join(lines[-n:])


def wait_for(what: str, cond: Callable[[], bool], timeout_s: float, sup: GraphRun, lines: list[str],
             poll_s: float = 0.05) -> None:
    """Poll `cond` every `poll_s` s until it holds; AssertionError (with the log's tail) once a node
    has exited or after `timeout_s` s."""
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert not sup.dead(), f"node(s) exited: {sup.dead()}\n" + log_tail(lines)
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n" + log_tail(lines)
        time.sleep(poll_s)


@contextmanager
def running(sup: GraphRun, lines: list[str], then: Callable[[], object] = lambda: None, secret: str = "",
            ok_codes: Collection[int] = OK_EXIT_CODES) -> Iterator[None]:
    """Start the graph; on leaving, stop it, then call `then` (e.g. stop a fake robot), and check that
    every node exited cleanly and that `secret` never showed in the log."""
    sup.start()
    try:
        yield
    finally:
        codes = sup.stop()
        then()
        assert all(c in ok_codes for c in codes.values()), (codes, log_tail(lines))
        assert not (secret and any(secret in line for line in lines))


class GraphPeer:
    """A test's own node in the graph under test, on `executor` (a SingleThreadedExecutor by default):
    rclpy is initialised for it, and close() shuts everything down. The test spins `ex` itself, or
    calls spin_in_background() once its subscriptions exist."""

    def __init__(self, name: str, executor: Callable[[], Executor] | None = None) -> None:
        """`executor` makes the executor (called after rclpy.init: an executor needs an initialised context)."""
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        rclpy.init()
        self.node = rclpy.create_node(name)
        self.ex = executor() if executor is not None else SingleThreadedExecutor()
        self.ex.add_node(self.node)
        self._thread: threading.Thread | None = None

    def spin_in_background(self) -> None:
        self._thread = threading.Thread(target=self.ex.spin, daemon=True)
        self._thread.start()

    def close(self) -> None:
        import rclpy

        self.ex.shutdown()
        self.node.destroy_node()
        rclpy.shutdown()
        if self._thread is not None:
            self._thread.join(5.0)
