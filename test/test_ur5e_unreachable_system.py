"""The skills node with backend ur5e and the real ur_rtde library, with no robot at the address: the node
stays up, robot/status says why it is not connected, and a skill fails at once with ROBOT_FAULT."""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from monologue_common.actions import ActionClient
from monologue_common.qos import LATCHED
from monologue_common.runtime import probe_node
from monologue_interfaces.action import ExecuteSkill
from monologue_interfaces.msg import RobotStatus

pytestmark = [pytest.mark.system]
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def unreachable(ros_domain: int) -> Iterator[list[str]]:
    from monologue_bringup.up import Supervisor

    lines: list[str] = []
    # probe off: the real ur_rtde constructor itself meets the closed port (RuntimeError at once)
    sup = Supervisor("ur5e", "embedded", config_dir=REPO / "config", sink=lines.append, nodes=["skills"],
                     node_params={"skills": {"ur5e.host": "127.0.0.1", "ur5e.probe": "false",
                                             "ur5e.reconnect_period": "0.5"}})
    sup.start()
    try:
        yield lines
    finally:
        codes = sup.stop()
        assert codes["skills"] in (0, -2, -15, 130), "\n".join(lines[-50:])


def test_no_robot_is_reported_and_skills_fail_fast(unreachable: list[str]) -> None:
    with probe_node("ur5e_unreachable_probe") as (node, ex):
        status: list[RobotStatus] = []
        node.create_subscription(RobotStatus, "robot/status", status.append, LATCHED)
        client = ActionClient(node, ExecuteSkill, "execute_skill")
        # the first status may predate the first connection attempt ("not connected yet"); wait for its verdict
        def refused() -> bool:
            return any("Could not connect to: 127.0.0.1 at 30004" in m.fault for m in status)
        deadline = time.monotonic() + 30.0
        while not refused() and time.monotonic() < deadline:
            ex.spin_once(timeout_sec=0.1)
        assert status, "\n".join(unreachable[-30:])
        assert refused(), ([m.fault for m in status], "\n".join(unreachable[-30:]))
        assert all(not m.ok and not m.connected for m in status)
        assert client.wait_for_server(timeout_sec=20.0)
        started = time.monotonic()
        goal = client.send_goal_async(ExecuteSkill.Goal(skill="home", args=[]))
        while not goal.done():
            ex.spin_once(timeout_sec=0.1)
        result_future: Any = goal.result().get_result_async()
        while not result_future.done():
            ex.spin_once(timeout_sec=0.1)
        result = result_future.result().result
        assert result.error_code == ExecuteSkill.Result.ROBOT_FAULT
        assert "connection lost" in result.error_msg and "Could not connect" in result.error_msg
        assert time.monotonic() - started < 5.0
