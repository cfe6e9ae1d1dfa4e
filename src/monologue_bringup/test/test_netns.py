"""The network-namespace lab of the multi-host tests (issue 33): hosts reach each other only over the
switch, by unicast and by DDS's multicast; a pulled cable stops traffic; ROS 2 talks across it over UDP;
nothing is left behind, also when building fails half-way."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from monologue_bringup.netns import NetnsError, NetnsLab, available, namespaces

pytestmark = pytest.mark.skipif(bool(available()), reason=available() or "netns available")

# Receive on `port` (unicast or the DDS multicast group) for up to `timeout` s; print what came.
_RECEIVER = textwrap.dedent("""
    import socket, struct, sys
    port, group, timeout = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("", port))
    if group:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, struct.pack("4s4s", socket.inet_aton(group),
                     socket.inet_aton("0.0.0.0")))
    s.settimeout(timeout)
    print("ready", flush=True)
    try:
        print(s.recvfrom(100)[0].decode(), flush=True)
    except socket.timeout:
        print("nothing", flush=True)
""")
# Send `text` to `dest`:`port` every 0.1 s, 12 times.
_SENDER = textwrap.dedent("""
    import socket, sys, time
    dest, port, text = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    for _ in range(12):
        try:
            s.sendto(text.encode(), (dest, port))
        except OSError:
            pass
        time.sleep(0.1)
""")


def _received(lab: NetnsLab, src: str, dst: str, dest_addr: str, group: str = "") -> str:
    rx = subprocess.Popen(lab.argv(dst, [sys.executable, "-c", _RECEIVER, "7400", group, "1.5"]),
                          stdout=subprocess.PIPE, text=True)
    try:
        assert rx.stdout is not None and rx.stdout.readline().strip() == "ready"
        lab.run(src, [sys.executable, "-c", _SENDER, dest_addr, "7400", f"from {src}"], timeout_s=10.0)
        return rx.stdout.readline().strip()
    finally:
        rx.kill()
        rx.wait(timeout=10)


def test_hosts_talk_over_the_switch_by_unicast_and_multicast_until_the_cable_is_pulled() -> None:
    with NetnsLab(("robot", "planner", "llm")) as lab:
        robot, planner = lab.hosts["robot"], lab.hosts["planner"]
        assert robot.address.startswith("169.254.") and planner.address.startswith("169.254.")
        assert _received(lab, "robot", "planner", planner.address) == "from robot"
        assert _received(lab, "planner", "llm", "239.255.0.1", group="239.255.0.1") == "from planner"
        lab.set_link("robot", up=False)
        assert _received(lab, "robot", "planner", planner.address) == "nothing"
        assert _received(lab, "planner", "robot", robot.address) == "nothing"
        lab.set_link("robot", up=True)
        assert _received(lab, "robot", "planner", planner.address) == "from robot"
        name = lab.lab
        assert len([n for n in namespaces() if n.startswith(name)]) == 4  # 3 hosts and the switch
    assert lab.leftovers() == []
    assert not [n for n in namespaces() if n.startswith(name)]


_TALKER = textwrap.dedent("""
    import sys, time, rclpy
    from std_msgs.msg import String
    rclpy.init()
    node = rclpy.create_node("talker")
    pub = node.create_publisher(String, "chatter", 10)
    for i in range(600):  # 60 s at most
        pub.publish(String(data=f"hello {i}"))
        time.sleep(0.1)
""")
_LISTENER = textwrap.dedent("""
    import sys, time, rclpy
    from std_msgs.msg import String
    rclpy.init()
    node = rclpy.create_node("listener")
    got = []
    node.create_subscription(String, "chatter", lambda m: got.append(m.data), 10)
    deadline = time.monotonic() + float(sys.argv[1])
    while not got and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.1)
    print(got[0] if got else "nothing", flush=True)
""")


def test_ros2_over_udp_between_namespaces(tmp_path: Path) -> None:
    with NetnsLab(("robot", "planner")) as lab:
        env = {**os.environ, **lab.dds_env(tmp_path), "ROS_DOMAIN_ID": "17"}
        lab.popen("robot", [sys.executable, "-c", _TALKER], env, log_file=tmp_path / "talker.log")
        heard = lab.run("planner", [sys.executable, "-c", _LISTENER, "30"], timeout_s=60.0, env=env)
        assert heard.stdout.strip().startswith("hello"), heard.stdout + heard.stderr
        lab.set_link("robot", up=False)
        cut = lab.run("planner", [sys.executable, "-c", _LISTENER, "3"], timeout_s=60.0, env=env)
        assert cut.stdout.strip() == "nothing", cut.stdout + cut.stderr
    assert lab.leftovers() == []


def test_a_build_that_fails_half_way_leaves_nothing_of_its_own() -> None:
    lab = NetnsLab(("robot", "planner"))
    blocker = f"{lab.lab}-planner"
    subprocess.run(["ip", "netns", "add", blocker], check=True, timeout=10)
    try:
        with pytest.raises(NetnsError, match="netns add"), lab:
            pass
        assert [n for n in namespaces() if n.startswith(lab.lab)] == [blocker]
    finally:
        subprocess.run(["ip", "netns", "delete", blocker], check=True, timeout=10)


def test_host_names_are_checked() -> None:
    for bad in ((), ("robot", "robot"), ("robot pc",), ("averyveryverylongname",)):
        with pytest.raises(ValueError):
            NetnsLab(bad)
