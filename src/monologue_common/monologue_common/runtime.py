"""Node entry point and bounded waits on rclpy futures."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import rclpy
from builtin_interfaces.msg import Time
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node
from rclpy.task import Future
from rclpy.utilities import ok


class WaitTimeout(Exception):
    """A future did not complete within its timeout."""


def run_node(factory: Callable[[], Node], threads: int = 4, args: list[str] | None = None) -> None:
    """Create the node, spin it on a multi-threaded executor, and shut down cleanly on Ctrl-C."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    rclpy.init(args=args)
    node: Node | None = None
    try:
        node = factory()
        executor = MultiThreadedExecutor(num_threads=threads)
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        # Ctrl-C / SIGINT shuts the context down from rclpy's signal handler; an executor that is
        # building its wait set at that moment raises RCLError ("context is not valid") instead of
        # ExternalShutdownException. That is a clean stop too; anything else is a real error.
        if ok():
            raise
    finally:
        if node is not None:
            node.destroy_node()
        if ok():
            rclpy.shutdown()


def wait_future(future: Future, timeout_s: float, what: str, cancel: threading.Event | None = None) -> Any:
    """Block a non-executor thread until `future` is done.

    Returns the result (Any: rclpy's Future is not generic), or None if `cancel` was set first.
    Raises WaitTimeout after `timeout_s` (s), and RuntimeError if the future raised.
    """
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())
    deadline = time.monotonic() + timeout_s
    while not done.wait(0.05):
        if cancel is not None and cancel.is_set():
            return None
        if time.monotonic() > deadline:
            future.cancel()
            raise WaitTimeout(f"{what} did not answer within {timeout_s:.1f} s")
    exc = future.exception()
    if exc is not None:
        raise RuntimeError(f"{what} failed: {exc}") from exc
    return future.result()


def to_time(t: float) -> Time:
    """Seconds since the epoch -> builtin_interfaces/Time."""
    sec = int(t)
    return Time(sec=sec, nanosec=int((t - sec) * 1e9))


def from_time(t: Time) -> float:
    return float(t.sec) + float(t.nanosec) * 1e-9
