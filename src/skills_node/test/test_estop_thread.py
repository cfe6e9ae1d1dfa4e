"""Issue 32: the `estop` callback runs on a thread of its own, never queued behind the node's executor.

Before, the e-stop subscription was in a callback group of the node's MultiThreadedExecutor: its message
waited for the executor's dispatch thread and then for a free worker (one is held by a running skill).
Here every worker of that executor is held by a blocked callback while a motion runs on the fake UR5e:
the e-stop must still reach the arm (stopL) before any of them is released. With the old wiring the
callback could not run at all until a worker was free, and these tests fail (their bounded waits end).
"""
from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from monologue_common.dedicated import DedicatedCallbacks, OwnedCallbackGroup
from skills_node.core.arm import TcpPose
from skills_node.robots.ur5e.core.rtde import RtdeArm
from skills_node.robots.ur5e.testing.fake_rtde import FakeUrController
from skills_node.testing.host import skills_params

CONFIG = Path(__file__).resolve().parents[3] / "config"
WORKERS = 2  # threads of the node's executor in these tests
LIVENESS_S = 30.0  # s: bound of every wait (a liveness bound, not a latency figure)


class _Graph:
    """A node spun by a MultiThreadedExecutor whose workers can all be blocked, and a publisher node."""

    def __init__(self) -> None:
        import rclpy
        from rclpy.callback_groups import ReentrantCallbackGroup
        from rclpy.context import Context
        from rclpy.executors import MultiThreadedExecutor
        from rclpy.node import Node

        self.context = Context()
        rclpy.init(context=self.context)
        self.node = Node("skills", context=self.context)
        self.sender = Node("estop_sender", context=self.context)
        self.release = threading.Event()
        self.freed = threading.Event()  # a held worker went back to the executor
        self.blocked = threading.Semaphore(0)
        self._busy_threads: set[str] = set()
        group = ReentrantCallbackGroup()
        self._timers = [self.node.create_timer(0.01, self._hold_worker, callback_group=group) for _ in range(WORKERS)]
        self.executor = MultiThreadedExecutor(num_threads=WORKERS, context=self.context)
        self.executor.add_node(self.node)
        self._spin = threading.Thread(target=self.executor.spin, daemon=True)

    def _hold_worker(self) -> None:
        """Hold this worker until `release` (a skill's execute callback holds one for the whole skill)."""
        name = threading.current_thread().name
        if name in self._busy_threads or self.release.is_set():
            return
        self._busy_threads.add(name)
        self.blocked.release()
        self.release.wait(LIVENESS_S)
        self.freed.set()

    def start_and_block_every_worker(self) -> None:
        self._spin.start()
        for _ in range(WORKERS):
            assert self.blocked.acquire(timeout=LIVENESS_S), "the executor's workers were never all busy"
        for t in self._timers:
            t.cancel()

    def publish_estop(self) -> None:
        from std_msgs.msg import Bool

        pub = self.sender.create_publisher(Bool, "estop", 10)
        # bounded: discovery inside one process
        wait_until(lambda: pub.get_subscription_count() > 0, "the estop subscription to match")
        pub.publish(Bool(data=True))

    def close(self) -> None:
        import rclpy

        self.release.set()
        self.executor.shutdown(timeout_sec=5.0)
        if self._spin.ident is not None:
            self._spin.join(5.0)
        self.sender.destroy_node()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


def wait_until(cond: Callable[[], bool], what: str) -> None:
    done = threading.Event()
    for _ in range(int(LIVENESS_S / 0.01)):
        if cond():
            return
        done.wait(0.01)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def graph() -> Iterator[_Graph]:
    g = _Graph()
    yield g
    g.close()


@pytest.fixture
def ur5e_bridge(graph: _Graph, make_arm: Callable[..., RtdeArm]) -> Iterator[Any]:
    from skills_node.arm_ros import ArmRosBridge
    from skills_node.plugin import settings_from_parameters

    settings, _ = settings_from_parameters(skills_params(CONFIG, "ur5e"))
    arm_settings = settings.backend_settings.arm  # type: ignore[attr-defined]
    bridge = ArmRosBridge(graph.node, logging.getLogger("test.estop"), "ur5e", make_arm(),
                          (0.0, 0.0, 0.1, 0.0, 0.0, 0.0), arm_settings, "base_link")
    yield bridge
    bridge.close()


def test_the_estop_subscription_is_in_a_group_only_its_own_thread_runs(graph: _Graph, ur5e_bridge: Any) -> None:
    estop = [s for s in graph.node.subscriptions if s.topic_name == "/estop"]
    assert len(estop) == 1 and isinstance(estop[0].callback_group, OwnedCallbackGroup)
    assert not estop[0].callback_group.can_execute(estop[0])  # not on this (or the executor's) thread
    resets = [s for s in graph.node.services if s.srv_name.lstrip("/") == "estop_reset"]
    # the reset (slow on Spot: power on, stand) stays on the node's executor, never on the e-stop thread
    assert len(resets) == 1 and not isinstance(resets[0].callback_group, OwnedCallbackGroup)


def test_an_estop_stops_a_running_motion_while_every_executor_worker_is_blocked(
        graph: _Graph, ur5e_bridge: Any, robot: FakeUrController) -> None:
    robot.set_time_scale(1.0)  # a motion of seconds: it is still running when the e-stop comes
    graph.start_and_block_every_worker()
    safe_arm = ur5e_bridge.safe_arm
    start = safe_arm.tcp_pose()
    target = TcpPose(start.x + 0.2, start.y, start.z, 0.0, math.pi, 0.0)
    errors: list[BaseException] = []

    def move() -> None:  # what a skill's execute callback does
        try:
            safe_arm.move_linear(target, 0.05, 0.5)
        except BaseException as e:  # noqa: BLE001 - MotionInterrupted expected
            errors.append(e)

    mover = threading.Thread(target=move, daemon=True)
    mover.start()
    wait_until(lambda: any(c[0] == "moveL" for c in robot.motion_commands()), "the motion to start")
    graph.publish_estop()
    wait_until(lambda: any(c[0] == "stopL" for c in robot.motion_commands()), "stopL at the arm")
    assert not graph.freed.is_set()  # every worker of the node's executor was still held
    assert safe_arm.estop_latched and safe_arm.estop_reason == "estop topic"
    mover.join(LIVENESS_S)
    assert errors and type(errors[0]).__name__ == "MotionInterrupted"


def test_a_failing_callback_does_not_end_the_dedicated_thread(graph: _Graph) -> None:
    from std_msgs.msg import Bool

    dedicated = DedicatedCallbacks(graph.node, "estop", logging.getLogger("test.estop"))
    seen: list[bool] = []

    def callback(msg: Bool) -> None:
        seen.append(bool(msg.data))
        if len(seen) == 1:
            raise RuntimeError("a bug in the first callback")

    graph.node.create_subscription(Bool, "estop", callback, 10, callback_group=dedicated.group)
    dedicated.start()
    try:
        graph.start_and_block_every_worker()
        pub = graph.sender.create_publisher(Bool, "estop", 10)
        wait_until(lambda: pub.get_subscription_count() > 0, "the subscription to match")
        pub.publish(Bool(data=True))
        wait_until(lambda: len(seen) == 1, "the first message")
        pub.publish(Bool(data=False))
        wait_until(lambda: len(seen) == 2, "the second message after the first raised")
        assert dedicated.thread.is_alive()
    finally:
        assert dedicated.close()


def test_arm_stop_names_the_goal_as_the_simulator_reads_its_id() -> None:
    import numpy as np

    from skills_node.robots.mujoco.sim_arm import goal_key

    uuid = np.arange(16, dtype=np.uint8) * 15  # unique_identifier_msgs/UUID.uuid as rclpy gives it
    assert goal_key(uuid) == bytes(range(0, 240, 15)).hex()
    assert goal_key(list(uuid)) == goal_key(uuid)  # a list of ints (another rclpy build) too
