"""Machines on one desk: Linux network namespaces joined by veth pairs on a bridge, for tests of the graph
split across hosts (issue 33: a robot PC, a planner host and an LLM server), no rclpy.

    with NetnsLab(("robot", "planner", "llm")) as lab:
        proc = lab.popen("robot", ["skills_node", ...], env)
        lab.set_link("robot", up=False)  # pull the robot PC's cable

Every host is a namespace `<lab>-<host>` with one interface `eth0` (a veth whose peer `p-<host>` sits on
the bridge `br0` of a switch namespace `<lab>-sw`) and a link-local IPv4 address 169.254.10.<n>/24 (the
only addresses used), plus `lo` and a multicast route so that DDS discovery works as on a LAN. Nothing
is created in the caller's namespace, so deleting the lab's namespaces removes every interface too;
`close()` does that (also after a failure), stops the processes the lab started (their whole process
groups, SIGTERM then SIGKILL, bounded), and `leftovers()` says what is still there. Needs root or
CAP_NET_ADMIN and iproute2's `ip`.

DDS between namespaces: Fast DDS's shared-memory transport would connect processes of different
namespaces through /dev/shm, around the cable; a test must run them with UDP only (`UDP_ONLY_PROFILE`).
"""
from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

SUBNET = "169.254.10"  # link-local (RFC 3927), /24: host n is SUBNET.<n + 1>
STOP_TIMEOUT_S = 5.0  # s: a started process gets this long after SIGTERM before SIGKILL
IP_TIMEOUT_S = 10.0  # s: any one `ip` command

# Fast DDS participant profile: UDPv4 only (no shared memory across namespaces), every participant.
UDP_ONLY_PROFILE = """<?xml version="1.0" encoding="UTF-8" ?>
<profiles xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles">
  <transport_descriptors>
    <transport_descriptor>
      <transport_id>udp_only</transport_id>
      <type>UDPv4</type>
    </transport_descriptor>
  </transport_descriptors>
  <participant profile_name="udp_only_participant" is_default_profile="true">
    <rtps>
      <userTransports><transport_id>udp_only</transport_id></userTransports>
      <useBuiltinTransports>false</useBuiltinTransports>
    </rtps>
  </participant>
</profiles>
"""


class NetnsError(RuntimeError):
    """An `ip` command failed, or the system cannot make namespaces (not root, no iproute2)."""


@dataclass(frozen=True)
class Host:
    name: str  # the lab's name for it, e.g. "robot"
    namespace: str  # the Linux network namespace
    address: str  # its IPv4 link-local address on eth0


def available() -> str:
    """'' when this process can build a lab, else why not (for a test's skip reason)."""
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    if os.geteuid() != 0:
        return "network namespaces need root (CAP_NET_ADMIN)"
    return ""


def _ip(*args: str) -> str:
    try:
        done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=IP_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise NetnsError(f"ip {' '.join(args)}: {e}") from e
    if done.returncode != 0:
        raise NetnsError(f"ip {' '.join(args)}: {done.stderr.strip() or done.returncode}")
    return done.stdout


def namespaces() -> list[str]:
    """The network namespaces that exist (`ip netns list`)."""
    return [line.split()[0] for line in _ip("netns", "list").splitlines() if line.strip()]


class NetnsLab:
    """Hosts `names` on one switch; a context manager (closes on leaving, also after an exception)."""

    def __init__(self, names: Sequence[str], log: logging.Logger | None = None, lab: str = "") -> None:
        if not names or len(set(names)) != len(names) or len(names) > 200:
            raise ValueError(f"host names must be 1-200 distinct names, got {list(names)}")
        for name in names:
            if not name.isalnum() or len(name) > 12:
                raise ValueError(f"a host name is up to 12 letters or digits, got {name!r}")
        self.lab = lab or f"mono{uuid.uuid4().hex[:6]}"
        self.log = log or logging.getLogger("netns")
        self.hosts = {n: Host(n, f"{self.lab}-{n}", f"{SUBNET}.{i + 1}") for i, n in enumerate(names)}
        self.switch = f"{self.lab}-sw"
        self._procs: list[subprocess.Popen[bytes]] = []
        self._made: list[str] = []  # namespaces created, deleted by close()

    # -- building and tearing down --------------------------------------------------------------
    def __enter__(self) -> NetnsLab:
        try:
            self.build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def build(self) -> None:
        why = available()
        if why:
            raise NetnsError(why)
        self._add_namespace(self.switch)
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")
        for host in self.hosts.values():
            self._add_namespace(host.namespace)
            port = f"p-{host.name}"
            _ip("link", "add", "eth0", "netns", host.namespace, "type", "veth", "peer", "name", port,
                "netns", self.switch)
            _ip("-n", self.switch, "link", "set", port, "master", "br0")
            _ip("-n", self.switch, "link", "set", port, "up")
            _ip("-n", host.namespace, "link", "set", "lo", "up")
            _ip("-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", "eth0")
            _ip("-n", host.namespace, "link", "set", "eth0", "multicast", "on", "up")
            _ip("-n", host.namespace, "route", "add", "224.0.0.0/4", "dev", "eth0")  # DDS discovery
        self.log.info("netns lab %s: %s", self.lab,
                      ", ".join(f"{h.name}={h.address}" for h in self.hosts.values()))

    def _add_namespace(self, name: str) -> None:
        _ip("netns", "add", name)
        self._made.append(name)

    def close(self) -> None:
        """Stop the started processes, then delete the namespaces (and with them every interface)."""
        for proc in self._procs:
            _stop_group(proc)
        self._procs.clear()
        for name in reversed(self._made):
            try:
                _ip("netns", "delete", name)
            except NetnsError as e:
                self.log.error("could not delete network namespace %s: %s", name, e)
        self._made.clear()

    def leftovers(self) -> list[str]:
        """Namespaces of this lab that still exist, and processes it started that still run."""
        left = [n for n in namespaces() if n.startswith(f"{self.lab}-")]
        return left + [f"pid {p.pid}" for p in self._procs if p.poll() is None]

    # -- using it -------------------------------------------------------------------------------
    def argv(self, host: str, argv: Sequence[str]) -> list[str]:
        """`argv` run inside `host`'s namespace."""
        return ["ip", "netns", "exec", self.hosts[host].namespace, *argv]

    def popen(self, host: str, argv: Sequence[str], env: Mapping[str, str] | None = None,
              log_file: Path | None = None) -> subprocess.Popen[bytes]:
        """Start `argv` on `host` in a process group of its own (stopped by close())."""
        out = open(log_file, "ab") if log_file is not None else subprocess.DEVNULL  # noqa: SIM115
        try:
            proc = subprocess.Popen(self.argv(host, argv), env=dict(env) if env is not None else None,
                                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            if log_file is not None:
                out.close()  # type: ignore[union-attr]
        self._procs.append(proc)
        return proc

    def run(self, host: str, argv: Sequence[str], timeout_s: float,
            env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run `argv` on `host` to completion (bounded by `timeout_s`)."""
        return subprocess.run(self.argv(host, argv), env=dict(env) if env is not None else None,
                              capture_output=True, text=True, timeout=timeout_s, check=False)

    def set_link(self, host: str, up: bool) -> None:
        """Plug or pull `host`'s cable: its port on the switch goes up or down (its own eth0 stays up,
        as a real NIC whose cable is pulled keeps its address)."""
        _ip("-n", self.switch, "link", "set", f"p-{host}", "up" if up else "down")

    def dds_env(self, profile_dir: Path) -> dict[str, str]:
        """Environment for a ROS 2 process of the lab: Fast DDS over UDP only (written to `profile_dir`)."""
        profile = profile_dir / "fastdds_udp_only.xml"
        profile.write_text(UDP_ONLY_PROFILE)
        return {"FASTDDS_DEFAULT_PROFILES_FILE": str(profile), "RMW_IMPLEMENTATION": "rmw_fastrtps_cpp",
                "ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET"}


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process group, then SIGKILL after STOP_TIMEOUT_S; waits (bounded)."""
    if proc.poll() is not None:
        return
    for sig, wait_s in ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, STOP_TIMEOUT_S)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if proc.poll() is not None:
            return
