"""An in-process graph: every node in this Python process, as a ROS 2 component container runs them.

`Container` has the Supervisor's interface (start, dead, stop, a context manager) and the same
arguments, but constructs each node of the graph (container_plan: its component is loaded by module
name at run time) in this process on one rclpy context, with the `--ros-args` of its own process as
its node arguments (monologue_common.params.node_arguments, as a component container passes
NodeOptions), and spins each on its own MultiThreadedExecutor thread with the threads its process
would use, so a node's blocking waits in callbacks behave as they do in its own process. Start-up
then costs one interpreter and one import of rclpy, numpy..., and no discovery between processes.
Used by `monologue-up container:=true` and by `monologue-replay` (by default).

Stopping is bounded: every executor gets EXECUTOR_STOP_S s for its running callbacks, every node's
destroy_node and before_stop (a recorder's drain) `timeout_s`; recorders stop after the others. A node
that raises while it is constructed stops the nodes already started and fails start() with a
ContainerError naming it; a node whose callback raises later ends its executor (dead() reports it,
exit code 1), as its process would exit.
"""
from __future__ import annotations

import functools
import importlib
import logging
import os
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from rclpy.utilities import ok, try_shutdown

from monologue_common.params import node_arguments
from monologue_common.runtime import (
    EXECUTOR_STOP_S,
    Component,
    destroy_with_waitables,
    setup_process_logging,
    spin_until_shutdown,
    stop_executor,
)

from .container_plan import ContainerPlan, PlannedNode, plan_container
from .graph_run import GraphRun

log = logging.getLogger("container")


class ContainerError(RuntimeError):
    """A node of an in-process graph could not be loaded or constructed."""


@dataclass
class _Hosted:
    """A node running in the container."""

    planned: PlannedNode
    component: Component[Any]
    node: Node
    executor: MultiThreadedExecutor
    thread: threading.Thread | None = None
    code: int | None = None  # exit code once its executor has stopped: 0 clean, 1 a callback raised
    stopping: threading.Event = field(default_factory=threading.Event)


def load_component(planned: PlannedNode) -> Component[Any]:
    """The Component `planned` names, imported at run time (bring-up never imports node packages)."""
    try:
        module = importlib.import_module(planned.module)
    except Exception as e:
        raise ContainerError(f"node {planned.name!r}: cannot import {planned.module}: {type(e).__name__}: {e}") from e
    component = getattr(module, planned.attribute, None)
    if not isinstance(component, Component):
        raise ContainerError(f"node {planned.name!r}: {planned.module} has no {planned.attribute} (a "
                             "monologue_common.runtime.Component), so it can only run as a process (container:=false)")
    return component


def bounded(what: str, fn: Callable[[], object], timeout_s: float) -> bool:
    """Run `fn` on a daemon thread and wait at most `timeout_s` (s) for it; False (logged) if it is still
    running then or raised."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as e:  # reported below; a stop goes on with the other nodes
            failed.append(e)

    t = threading.Thread(target=run, name=f"stop-{what}", daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        log.warning("%s still running after %.1f s; going on", what, timeout_s)
        return False
    if failed:
        log.warning("%s failed: %s", what, "".join(traceback.format_exception(failed[0])).rstrip())
        return False
    return True


class Container(GraphRun):
    """The robot's graph (graph_for, or `nodes`) in this process; see the module doc."""

    in_process = True  # one participant: a secured container runs in the /monologue/container enclave

    def _init_state(self) -> None:
        self.hosted: list[_Hosted] = []
        self._own_context = False
        self._codes: dict[str, int] | None = None

    def plan(self) -> ContainerPlan:
        return plan_container(self.specs, self.config_dir, self.robot, self.llm, self.node_params, self.log_level)

    def commands(self) -> dict[str, list[str]]:
        """What each node runs: its component (there is no command line)."""
        return {p.name: [p.component] for p in self.plan().nodes}

    def start(self) -> Container:
        try:
            plan = self.plan()
        except ValueError as e:
            raise ContainerError(str(e)) from e
        if ok():
            raise ContainerError("an in-process graph needs this process's rclpy context for itself (the log "
                                 "level is per process, it stops the context), but rclpy is already initialised")
        for k, v in self.env.items():  # the environment the nodes' processes would get (DDS profile, ...)
            if os.environ.get(k) != v:
                os.environ[k] = v
        setup_process_logging()
        # no rclpy signal handlers: the caller's SIGINT/SIGTERM handling calls stop(), which stops the
        # nodes in order (a handler would shut the context down under the recorder before it drained)
        rclpy.init(args=plan.init_args(), signal_handler_options=SignalHandlerOptions.NO)
        self._own_context = True
        self._codes = None
        try:
            for planned in plan.nodes:
                self._host(planned)
        except BaseException:
            self.stop()
            raise
        return self

    def _host(self, planned: PlannedNode) -> None:
        t0 = time.monotonic()
        component = load_component(planned)
        try:
            with node_arguments(planned.ros_args):
                node = component.factory()
        except Exception as e:
            raise ContainerError(f"node {planned.name!r} failed to start: {type(e).__name__}: {e}") from e
        if node.get_name() != planned.name:
            name = node.get_name()
            node.destroy_node()
            raise ContainerError(f"node {planned.name!r}: {planned.component} created a node named {name!r}")
        executor = MultiThreadedExecutor(num_threads=component.threads)
        executor.add_node(node)
        hosted = _Hosted(planned, component, node, executor)
        hosted.thread = threading.Thread(target=self._spin, args=(hosted,), name=f"spin-{planned.name}", daemon=True)
        self.hosted.append(hosted)
        hosted.thread.start()
        self.sink(f"[container] started {planned.name} ({planned.component}) in {time.monotonic() - t0:.2f} s")

    def _spin(self, hosted: _Hosted) -> None:
        try:
            spin_until_shutdown(hosted.executor)
            hosted.code = 0
        except ExternalShutdownException:
            hosted.code = 0
        except Exception:
            # as run_node: an error while the context is being shut down is a clean stop
            if ok() and not hosted.stopping.is_set():
                self.sink(f"[container] node {hosted.planned.name!r} failed:\n{traceback.format_exc().rstrip()}")
                hosted.code = 1
            else:
                hosted.code = 0

    def dead(self) -> dict[str, int]:
        """Nodes whose executor has stopped (a callback raised, or the context was shut down), with exit codes."""
        return {h.planned.name: h.code if h.code is not None else 1
                for h in self.hosted if h.thread is not None and not h.thread.is_alive()}

    def stop(self, timeout_s: float = 10.0) -> dict[str, int]:
        """Stop every node (recorders last), each wait bounded by `timeout_s` (s); returns exit codes."""
        if self._codes is not None:
            return self._codes
        first = [h for h in self.hosted if not h.planned.last]
        last = [h for h in self.hosted if h.planned.last]
        for group in (first, last):
            self._stop_group(group, timeout_s)
        codes = {h.planned.name: h.code if h.code is not None else 1 for h in self.hosted}
        if self._own_context:
            try_shutdown()
            self._own_context = False
        self._codes = codes
        self.sink(f"[container] stopped: {codes}")
        return codes

    def _stop_group(self, group: list[_Hosted], timeout_s: float) -> None:
        for h in group:
            before = h.component.before_stop
            if before is not None:
                bounded(f"{h.planned.name} before_stop", functools.partial(before, h.node), timeout_s)
        threads = []
        for h in group:  # in parallel: the executors' waits overlap
            h.stopping.set()
            t = threading.Thread(target=stop_executor, args=(h.executor, min(EXECUTOR_STOP_S, timeout_s)),
                                 name=f"stop-{h.planned.name}", daemon=True)
            t.start()
            threads.append(t)
        deadline = time.monotonic() + timeout_s
        for t in threads:
            t.join(max(deadline - time.monotonic(), 0.0))
        for h in group:
            if h.thread is not None:
                h.thread.join(max(deadline - time.monotonic(), 0.1))
                if h.thread.is_alive():
                    log.warning("%s: executor still spinning after %.1f s", h.planned.name, timeout_s)
            # its action servers and clients too: rclpy's destroy_node leaves them, and they keep the
            # node discoverable for as long as this process goes on
            bounded(f"{h.planned.name} destroy_node", functools.partial(destroy_with_waitables, h.node), timeout_s)
