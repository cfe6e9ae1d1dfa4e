"""Issue 32, DDS part: the graph under SROS2 (DDS Security) over real DDS.

On a middleware without DDS Security (the PyPI wheels' Fast DDS 2.14 is built with -DSECURITY=OFF), a
secured graph must fail closed: monologue-up refuses to start, and a node started with the security
environment anyway refuses to run rather than join the domain unprotected.
Where Fast DDS has its security plug-ins (a full ROS 2 install from the ROS apt repository), the secured
graph runs an episode for the operator's enclave; a participant outside the keystore cannot find the
planner's action, reset the e-stop or latch it; an enclave of the keystore without the permission (viz)
cannot send a goal, reset the e-stop or publish human input. Every wait is bounded.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from monologue_bringup.keystore import create_keystore, graph_node_names
from monologue_bringup.security import FASTDDS_PLUGINS, enclave_name, fastdds_security, security_env

pytestmark = [pytest.mark.system]
REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "config"
PROBE = fastdds_security()
needs_dds_security = pytest.mark.skipif(not PROBE.available, reason=PROBE.explain())


@pytest.fixture(scope="module")
def keystore(ros_domain: int, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("keystore")
    create_keystore(root, graph_node_names(CONFIG), ros_domain, days=2)
    return root


# ---- what any installation must do: never run open when asked to run secured ------------------------


@pytest.mark.skipif(PROBE.available, reason="this Fast DDS has DDS Security: the secured graph is tested below")
def test_without_dds_security_a_secured_graph_fails_closed(ros_domain: int, keystore: Path) -> None:
    from monologue_bringup.up import Supervisor

    env = dict(os.environ, ROS_DOMAIN_ID=str(ros_domain))
    run = subprocess.run([sys.executable, "-m", "monologue_bringup.up", "robot:=sim_kinematic", "secure:=true",
                          f"keystore:={keystore}", "--config-dir", str(CONFIG)],
                         env=env, capture_output=True, text=True, timeout=120.0)
    assert run.returncode == 2, (run.stdout[-2000:], run.stderr[-2000:])
    assert "[up] started" not in run.stdout
    assert "without DDS Security" in run.stderr and all(p in run.stderr for p in FASTDDS_PLUGINS), run.stderr

    # past monologue-up's check, the node itself refuses: rmw_fastrtps will not create an open participant
    lines: list[str] = []
    sup = Supervisor("sim_kinematic", "embedded", CONFIG, nodes=["viz"], env=env, sink=lines.append, keystore=keystore)
    sup.start()
    try:
        deadline = time.monotonic() + 60.0
        while not sup.dead() and time.monotonic() < deadline:
            time.sleep(0.2)
        dead = sup.dead()
    finally:
        sup.stop()
    log = "\n".join(lines)
    assert dead.get("viz", 0) != 0, log[-3000:]
    assert "doesn't have the security libraries" in log, log[-3000:]


# ---- where DDS Security is there: members only, and only the named ones command ---------------------

# A participant of its own (a process: rcl reads the security environment once per context). It tries
# one thing and prints a JSON line: whether it found the other side, and what happened.
PEER = r'''
import json, sys, time
import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy, DurabilityPolicy
what, wait_s = sys.argv[1], float(sys.argv[2])
out = {}
rclpy.init()
node = rclpy.create_node("sros2_peer")
try:
    if what == "instruct":
        from rclpy.action import ActionClient
        from monologue_interfaces.action import ExecuteInstruction
        client = ActionClient(node, ExecuteInstruction, "execute_instruction")
        out["found"] = client.wait_for_server(timeout_sec=wait_s)
        if out["found"]:
            goal = ExecuteInstruction.Goal(instruction="Put the blocks in their matching bowls.", max_steps=3)
            send = client.send_goal_async(goal)
            rclpy.spin_until_future_complete(node, send, timeout_sec=120.0)
            handle = send.result()
            out["accepted"] = bool(handle is not None and handle.accepted)
            if out["accepted"]:
                res = handle.get_result_async()
                rclpy.spin_until_future_complete(node, res, timeout_sec=600.0)
                out["status"] = res.result().status if res.done() else None
    elif what == "reset":
        from monologue_interfaces.srv import ResetEstop
        client = node.create_client(ResetEstop, "estop_reset")
        out["found"] = client.wait_for_service(timeout_sec=wait_s)
        if out["found"]:
            fut = client.call_async(ResetEstop.Request())
            rclpy.spin_until_future_complete(node, fut, timeout_sec=10.0)
            out["done"] = fut.done()
    elif what in ("estop", "human"):
        if what == "estop":
            from std_msgs.msg import Bool
            pub = node.create_publisher(Bool, "estop", QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
            msg = Bool(data=True)
        else:
            from monologue_interfaces.msg import HumanInput
            pub = node.create_publisher(HumanInput, "human/input", 10)
            msg = HumanInput()
        end = time.monotonic() + wait_s
        while time.monotonic() < end:
            pub.publish(msg)
            rclpy.spin_once(node, timeout_sec=0.2)
        out["subscribers"] = pub.get_subscription_count()
    elif what == "status":
        from monologue_interfaces.msg import RobotStatus
        got = []
        node.create_subscription(RobotStatus, "robot/status", got.append,
            QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE))
        end = time.monotonic() + wait_s
        while not got and time.monotonic() < end:
            rclpy.spin_once(node, timeout_sec=0.2)
        out["latched"] = got[-1].estop_latched if got else None
except Exception as e:  # access control may refuse the reader or writer itself
    out["refused"] = f"{type(e).__name__}: {e}"
print("PEER " + json.dumps(out), flush=True)
node.destroy_node()
rclpy.try_shutdown()
'''


def peer(what: str, domain: int, keystore: Path | None, enclave: str = "", wait_s: float = 15.0) -> dict[str, Any]:
    """Run PEER as a stranger (no keystore) or in `enclave` of `keystore`; its JSON answer."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROS_SECURITY_")}
    env["ROS_DOMAIN_ID"] = str(domain)
    if keystore is not None:
        env.update(security_env(keystore), ROS_SECURITY_ENCLAVE_OVERRIDE=enclave)
    run = subprocess.run([sys.executable, "-c", PEER, what, str(wait_s)], env=env, capture_output=True, text=True,
                         timeout=wait_s + 720.0)
    lines = [ln for ln in run.stdout.splitlines() if ln.startswith("PEER ")]
    assert lines, (run.returncode, run.stdout[-2000:], run.stderr[-2000:])
    answer: dict[str, Any] = json.loads(lines[-1][5:])
    return answer


@pytest.fixture(scope="module")
def secured_graph(ros_domain: int, keystore: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from monologue_bringup.up import Supervisor

    sup = Supervisor("sim_kinematic", "embedded", CONFIG, sink=print, keystore=keystore,
                     env=dict(os.environ, ROS_DOMAIN_ID=str(ros_domain)), node_params={
                         "skills": {"sim.seed": "5", "sim.num_blocks": "2"},
                         "planner": {"transcript_dir": str(tmp_path_factory.mktemp("transcripts"))}})
    sup.start()
    try:
        yield sup
    finally:
        sup.stop()


@needs_dds_security
def test_a_stranger_cannot_command_the_secured_graph(secured_graph: object, ros_domain: int, keystore: Path) -> None:
    operator = enclave_name("operator")
    stranger = peer("instruct", ros_domain, None)
    assert not stranger.get("found") and not stranger.get("accepted"), stranger
    assert not peer("reset", ros_domain, None).get("found")
    assert peer("estop", ros_domain, None, wait_s=3.0).get("subscribers", 0) == 0
    assert peer("status", ros_domain, keystore, operator).get("latched") is False  # nothing was delivered
    # the operator's e-stop latches, and only a permitted enclave releases it
    assert peer("estop", ros_domain, keystore, operator, wait_s=2.0).get("subscribers", 0) >= 1
    assert peer("status", ros_domain, keystore, operator).get("latched") is True
    viz = enclave_name("viz")
    refused = peer("reset", ros_domain, keystore, viz, wait_s=10.0)
    assert "refused" in refused or not refused.get("found"), refused
    assert peer("status", ros_domain, keystore, operator).get("latched") is True
    assert peer("reset", ros_domain, keystore, operator).get("done") is True
    assert peer("status", ros_domain, keystore, operator).get("latched") is False


@needs_dds_security
def test_a_member_without_the_permission_is_refused(secured_graph: object, ros_domain: int, keystore: Path) -> None:
    viz = enclave_name("viz")
    goal = peer("instruct", ros_domain, keystore, viz, wait_s=10.0)
    assert "refused" in goal or not goal.get("found"), goal
    human = peer("human", ros_domain, keystore, viz, wait_s=3.0)
    assert "refused" in human or human.get("subscribers", 0) == 0, human


@needs_dds_security
def test_the_operator_runs_an_episode_on_the_secured_graph(secured_graph: object, ros_domain: int,
                                                            keystore: Path) -> None:
    episode = peer("instruct", ros_domain, keystore, enclave_name("operator"), wait_s=180.0)
    assert episode.get("found") and episode.get("accepted"), episode
    assert episode.get("status") == 4, episode  # GoalStatus.STATUS_SUCCEEDED: the planner finished the episode
