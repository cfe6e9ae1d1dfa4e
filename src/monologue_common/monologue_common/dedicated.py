"""A callback group that runs on a thread of its own (rclpy adapter): for callbacks that must never wait,
such as an e-stop.

A node spun by a MultiThreadedExecutor has one thread that waits on every entity of the node and hands
each ready callback to a pool of worker threads. A callback there waits for that thread to come round
(it also dispatches, say, joint_states and tcp_pose at 100 Hz each, action server tasks and timers)
and then for a free worker (a skill holds one for its whole duration). Measured in the simulator's
skills node on a loaded machine: 20-112 ms from an `estop` publish to its callback (docs/reliability.md, R4).

`DedicatedCallbacks` owns a callback group whose entities no other executor waits on or runs
(`OwnedCallbackGroup.can_execute` is true only on the owning thread, so the node's executor leaves
them out of its wait set) and a thread that waits on those entities alone and runs their callbacks
itself: the message is taken and handled by the first thread that wakes. rclpy has no per-callback-group
executor (rclcpp's `add_callback_group`); this is its equivalent for rclpy 7.1 (Jazzy).
"""
from __future__ import annotations

import logging
import threading
from typing import Any

from rclpy.callback_groups import CallbackGroup
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node

JOIN_TIMEOUT_S = 2.0  # s: close() waits this long for the thread to leave its wait


class OwnedCallbackGroup(CallbackGroup):
    """Callbacks that only the owning thread may run (one at a time: it is a single thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.owner: int | None = None  # threading.get_ident() of the thread that runs them

    def can_execute(self, entity: Any) -> bool:
        return threading.get_ident() == self.owner

    def beginning_execution(self, entity: Any) -> bool:
        return threading.get_ident() == self.owner

    def ending_execution(self, entity: Any) -> None:
        return None


class _GroupView:
    """The entities of `node` in `group`: what the dedicated executor waits on (rclpy's Executor reads
    these six lists of each node it spins)."""

    def __init__(self, node: Node, group: CallbackGroup) -> None:
        self._node, self._group = node, group

    def _mine(self, entities: Any) -> list[Any]:
        return [e for e in entities if e.callback_group is self._group]

    @property
    def subscriptions(self) -> list[Any]:
        return self._mine(self._node.subscriptions)

    @property
    def timers(self) -> list[Any]:
        return self._mine(self._node.timers)

    @property
    def clients(self) -> list[Any]:
        return self._mine(self._node.clients)

    @property
    def services(self) -> list[Any]:
        return self._mine(self._node.services)

    @property
    def guards(self) -> list[Any]:
        return self._mine(self._node.guards)

    @property
    def waitables(self) -> list[Any]:
        return self._mine(self._node.waitables)


class _GroupExecutor(SingleThreadedExecutor):
    """Waits on one callback group of one node and runs its callbacks on the spinning thread."""

    def __init__(self, node: Node, group: CallbackGroup) -> None:
        super().__init__(context=node.context)
        self._view = _GroupView(node, group)

    def get_nodes(self) -> list[Any]:  # views of the node (rclpy reads only their entity lists)
        return [self._view]


class DedicatedCallbacks:
    """`group` of `node` on its own thread `name`: create the entities with `callback_group=self.group`,
    then `start()`."""

    def __init__(self, node: Node, name: str, logger: logging.Logger) -> None:
        self.group = OwnedCallbackGroup()
        self._log = logger
        self._executor = _GroupExecutor(node, self.group)
        self._thread = threading.Thread(target=self._spin, name=name, daemon=True)

    def start(self) -> None:
        """Start waiting (on the entities of the group created so far)."""
        self._thread.start()

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    def _spin(self) -> None:
        self.group.owner = threading.get_ident()
        ex = self._executor
        while ex.context.ok() and not ex._is_shutdown:  # noqa: SLF001 - Executor.spin's own condition
            try:
                ex.spin_once()
            except Exception:  # a failing callback must not end the e-stop thread
                if ex.context.ok() and not ex._is_shutdown:  # noqa: SLF001
                    self._log.exception("a callback on %s raised", self._thread.name)

    def close(self) -> bool:
        """Stop the thread (before the node's entities are destroyed); True if it ended."""
        try:
            self._executor.shutdown(timeout_sec=JOIN_TIMEOUT_S)
        except Exception as e:  # the context is already gone: the thread is leaving anyway
            self._log.debug("dedicated executor shutdown: %s", e)
        if self._thread.ident is not None and self._thread is not threading.current_thread():
            self._thread.join(JOIN_TIMEOUT_S)
        return not self._thread.is_alive()
