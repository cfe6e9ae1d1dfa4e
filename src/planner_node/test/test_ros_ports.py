"""The planner's rclpy ports against servers in the same process (real DDS, own ROS domain)."""
from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.action import ActionServer, CancelResponse, GoalResponse  # noqa: E402
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup  # noqa: E402
from rclpy.executors import MultiThreadedExecutor  # noqa: E402

from monologue_interfaces.action import ExecuteSkill  # noqa: E402
from planner_node.core.ports import PortUnavailable  # noqa: E402
from planner_node.ros_ports import RosSkillsPort  # noqa: E402


@pytest.fixture
def context() -> Iterator[Any]:
    ctx = rclpy.Context()
    # a domain of this test's own: nothing else on the machine answers
    rclpy.init(context=ctx, domain_id=random.Random(os.getpid()).randrange(200, 230))
    try:
        yield ctx
    finally:
        rclpy.shutdown(context=ctx)


def test_a_goal_answered_too_late_is_cancelled_not_left_running(context: Any) -> None:
    """The skills node accepts a goal after the planner stopped waiting for the answer: the planner's
    cancel (by the goal's id) must stop that skill, so nothing runs that the planner no longer watches."""
    server = rclpy.create_node("skills", context=context)
    client = rclpy.create_node("planner", context=context)
    executor = MultiThreadedExecutor(num_threads=4, context=context)
    executor.add_node(server)
    executor.add_node(client)
    ran: list[str] = []
    cancelled = threading.Event()

    def slow_accept(_goal: Any) -> GoalResponse:
        time.sleep(1.5)  # longer than the port's service timeout (0.5 s): the answer comes too late
        return GoalResponse.ACCEPT

    def execute(handle: Any) -> Any:
        ran.append(handle.request.skill)
        deadline = time.monotonic() + 20.0
        while time.monotonic() < deadline and not handle.is_cancel_requested:
            time.sleep(0.01)
        result = ExecuteSkill.Result()
        if handle.is_cancel_requested:
            cancelled.set()
            handle.canceled()
        else:
            handle.succeed()
        return result

    ActionServer(server, ExecuteSkill, "execute_skill", execute_callback=execute, goal_callback=slow_accept,
                 cancel_callback=lambda _h: CancelResponse.ACCEPT, callback_group=ReentrantCallbackGroup())
    port = RosSkillsPort(client, MutuallyExclusiveCallbackGroup(), service_timeout_s=0.5, skill_timeout_s=30.0)
    spin = threading.Thread(target=executor.spin, daemon=True)
    spin.start()
    try:
        with pytest.raises(PortUnavailable, match="execute_skill goal did not answer within 0.5 s"):
            port.execute("pick_place", ["red block", "blue bowl"], threading.Event())
        assert cancelled.wait(15.0), f"the late goal was not cancelled (ran: {ran})"
        assert ran == ["pick_place"]
    finally:
        executor.shutdown()
        server.destroy_node()
        client.destroy_node()
