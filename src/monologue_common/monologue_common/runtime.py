"""Node entry point and bounded waits on rclpy futures."""
from __future__ import annotations

import faulthandler
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

import rclpy
from builtin_interfaces.msg import Time
from rclpy.executors import Executor, ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.impl.rcutils_logger import RcutilsLogger
from rclpy.node import Node
from rclpy.signals import uninstall_signal_handlers
from rclpy.task import Future
from rclpy.topic_endpoint_info import TopicEndpointInfo
from rclpy.utilities import ok, try_shutdown


class WaitTimeout(Exception):
    """A future did not complete within its timeout."""


class TypedNode(Node):
    """A Node whose get_logger is typed (rclpy leaves it unannotated; mypy's untyped_calls_exclude does not
    cover inherited methods called on a subclass)."""

    def get_logger(self) -> RcutilsLogger:
        return cast(RcutilsLogger, Node.get_logger(self))


N = TypeVar("N", bound=Node)


@dataclass(frozen=True)
class Component(Generic[N]):
    """A node as an in-process graph (monologue_bringup.container) runs it, next to the others in one
    process: its factory, the threads of its own executor (as its process's `run_node` would spin it),
    and what to do before it is stopped (a recorder drains what is in flight)."""

    factory: Callable[[], N]
    threads: int = 4
    before_stop: Callable[[N], None] | None = None


def setup_process_logging() -> None:
    """Python logging as every node process has it, and SIGUSR1 printing every thread's stack (the
    supervisor asks before SIGKILL)."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if hasattr(faulthandler, "register"):
        faulthandler.register(signal.SIGUSR1, all_threads=True)


def run_node(factory: Callable[[], Node], threads: int = 4, args: list[str] | None = None) -> None:
    """Create the node, spin it on a multi-threaded executor, and shut down cleanly on Ctrl-C."""
    setup_process_logging()
    rclpy.init(args=args)
    node: Node | None = None
    executor: Executor | None = None
    try:
        node = factory()
        executor = MultiThreadedExecutor(num_threads=threads)
        executor.add_node(node)
        spin_until_shutdown(executor)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        # Ctrl-C / SIGINT shuts the context down from rclpy's signal handler; an executor that is
        # building its wait set at that moment raises RCLError ("context is not valid") instead of
        # ExternalShutdownException. That is a clean stop too; anything else is a real error.
        if ok():
            raise
    finally:
        # rclpy's handlers stay installed after a signal shut the context down, and they swallow SIGTERM:
        # restore the defaults so that a supervisor's SIGTERM ends a node that hangs while stopping.
        uninstall_signal_handlers()
        _report_slow_exit(STOP_REPORT_S)
        if executor is not None:  # before destroy_node, which can hang on handles the executor still holds
            stop_executor(executor, EXECUTOR_STOP_S)
        if node is not None:
            node.destroy_node()
        try_shutdown()


SHUTDOWN_POLL_S = 0.1  # s: how often spin_until_shutdown checks the context


def spin_until_shutdown(executor: Executor, poll_s: float = SHUTDOWN_POLL_S) -> None:
    """`executor.spin()` that also ends when the context is shut down while the executor waits.

    rclpy's signal thread triggers the executors' guard conditions *before* it shuts the contexts
    down, and without the Python on-shutdown callbacks that would wake them. An executor that wakes in
    between sees a valid context, waits again with no timeout, and a node with no timer and no traffic
    never stops (a RealSense bag player ignored SIGTERM this way). A watcher thread wakes the executor
    every `poll_s` s once the context is no longer ok."""
    stopped = threading.Event()

    def watch() -> None:
        while not stopped.wait(poll_s):
            if not executor.context.ok():
                try:
                    executor.wake()
                except Exception:  # the executor is being shut down: it is leaving spin anyway
                    pass

    watcher = threading.Thread(target=watch, name="shutdown-watch", daemon=True)
    watcher.start()
    try:
        executor.spin()
    finally:
        stopped.set()
        watcher.join()


STOP_REPORT_S = 5.0  # s: a node still stopping after this long prints its threads' stacks
EXECUTOR_STOP_S = 2.0  # s: run_node waits this long for callbacks still running before destroying the node


def stop_executor(executor: Executor, timeout_s: float) -> bool:
    """Shut `executor` down before its nodes are destroyed; True if no callback is still running.

    A suspended wait of the executor can hold a node's handles, and `Node.destroy_node` then busy-waits
    for them with the GIL held (forever); `shutdown` drops that wait. Callbacks still running (worker
    threads of a MultiThreadedExecutor) get up to `timeout_s` s to end: rclpy 7.1.5's
    `Executor.shutdown(timeout_sec)` returns without waiting for them, so their work count is waited on
    here too. Never raises: the node is destroyed afterwards in any case."""
    log = logging.getLogger("runtime")
    deadline = time.monotonic() + max(timeout_s, 0.0)
    try:
        finished = executor.shutdown(timeout_sec=max(timeout_s, 0.0))
        tracker = getattr(executor, "_work_tracker", None)  # rclpy's count of the callbacks running now
        if finished and tracker is not None:
            finished = bool(tracker.wait(max(deadline - time.monotonic(), 0.0)))
    except Exception:  # a broken executor must not keep the node from being destroyed
        log.exception("executor shutdown failed")
        return False
    if not finished:
        log.warning("callbacks still running %.1f s after the executor's shutdown; destroying the node anyway",
                    timeout_s)
    return finished


def destroy_with_waitables(node: Node) -> None:
    """`node.destroy_node()`, after destroying its action servers and clients: rclpy's destroy_node leaves
    a node's waitables alone, and one left holds the node, which stays discoverable in a process that
    goes on (an in-process graph's caller) until garbage collection."""
    for waitable in list(node.waitables):
        destroy = getattr(waitable, "destroy", None)
        if callable(destroy):
            destroy()
    node.destroy_node()


def _report_slow_exit(after_s: float) -> None:
    def report() -> None:
        logging.getLogger("runtime").error("still stopping after %.0f s; threads:", after_s)
        faulthandler.dump_traceback(all_threads=True)
    timer = threading.Timer(after_s, report)
    timer.daemon = True
    timer.start()


def wait_future(future: Future, timeout_s: float, what: str, cancel: threading.Event | None = None,
                keep_on_timeout: bool = False) -> Any:
    """Block a non-executor thread until `future` is done.

    Returns the result (Any: rclpy's Future is not generic), or None if `cancel` was set first.
    Raises WaitTimeout after `timeout_s` (s), and RuntimeError if the future raised. The future is
    cancelled on a timeout (a late answer is dropped) unless `keep_on_timeout`.
    """
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())
    deadline = time.monotonic() + timeout_s
    while not done.wait(0.05):
        if cancel is not None and cancel.is_set():
            return None
        if time.monotonic() > deadline:
            if not keep_on_timeout:
                future.cancel()
            raise WaitTimeout(f"{what} did not answer within {timeout_s:.1f} s")
    exc = future.exception()
    if exc is not None:
        raise RuntimeError(f"{what} failed: {exc}") from exc
    return future.result()


def call_service(client: Any, request: Any, timeout_s: float, what: str,
                 cancel: threading.Event | None = None, resend_after_s: float = 1.0) -> Any:
    """`client.call_async(request)`, sent again when no answer came after `resend_after_s` (s), then
    after twice that, and so on, until `timeout_s` (s); the first answer to any of them is returned.

    A server drops a response whose client it has not discovered yet (rmw_fastrtps waits 100 ms for the
    client's response reader, then gives up: "failed to send response (timeout)"); under load that
    happens to a first call. Only for requests that may be served twice (queries, idempotent resets).
    Returns None if `cancel` was set first; raises WaitTimeout, or RuntimeError if the call raised."""
    done = threading.Event()
    futures: list[Future] = []
    deadline = time.monotonic() + timeout_s
    wait_s = max(resend_after_s, 0.05)
    next_send = time.monotonic()
    try:
        while True:
            now = time.monotonic()
            if now >= next_send and now < deadline:
                future = client.call_async(request)
                future.add_done_callback(lambda _f: done.set())
                futures.append(future)
                next_send = now + wait_s
                wait_s *= 2.0
            if done.wait(0.05):
                break
            if cancel is not None and cancel.is_set():
                return None
            if time.monotonic() > deadline:
                raise WaitTimeout(f"{what} did not answer within {timeout_s:.1f} s"
                                  f" ({len(futures)} request{'s' if len(futures) > 1 else ''} sent)")
        first = next(f for f in futures if f.done())
        exc = first.exception()
        if exc is not None:
            raise RuntimeError(f"{what} failed: {exc}") from exc
        return first.result()
    finally:
        for f in futures:  # the others: no late answer is delivered to them (rclpy drops it)
            if not f.done():
                f.cancel()


def to_time(t: float) -> Time:
    """Seconds since the epoch -> builtin_interfaces/Time."""
    sec = int(t)
    return Time(sec=sec, nanosec=int((t - sec) * 1e9))


def from_time(t: Time) -> float:
    return float(t.sec) + float(t.nanosec) * 1e-9


@contextmanager
def probe_node(name: str) -> Iterator[tuple[Node, SingleThreadedExecutor]]:
    """A short-lived node of its own on a single-threaded executor (the caller spins it), for a client of
    a running graph; rclpy is initialised for it (and shut down after) unless the caller already has."""
    own_context = not ok()
    if own_context:
        rclpy.init(args=[])  # not sys.argv: its key:=value arguments are not ROS remappings
    node = rclpy.create_node(name)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        yield node, executor
    finally:
        executor.shutdown()  # drops spin_once's suspended wait (it holds the node's handles: destroy would hang)
        destroy_with_waitables(node)  # its action clients too: else the node outlives the probe
        if own_context:
            rclpy.shutdown()


def published_topics(node: Node, wanted: Callable[[Iterable[str]], list[str]], skip: Callable[[str], bool]
                     ) -> Iterator[tuple[str, list[str], list[TopicEndpointInfo]]]:
    """The topics on the graph that `wanted` selects and `skip` does not, with a publisher: (topic, its
    type names, its publishers). A topic known from subscribers only waits for a publisher, whose QoS
    a subscription must match."""
    types = dict(node.get_topic_names_and_types())
    for topic in wanted(types):
        if skip(topic):
            continue
        infos = node.get_publishers_info_by_topic(topic)
        if infos:
            yield topic, types[topic], infos
