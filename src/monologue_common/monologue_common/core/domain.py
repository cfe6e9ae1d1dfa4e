"""A ROS_DOMAIN_ID of one's own, so two graphs on one machine never cross-talk by default (no rclpy).

Two ways a domain is taken on this machine:
- a test session (or a benchmark) holds an exclusive lock on `<tmp>/monologue-ros-domain-<id>.lock`
  for as long as it runs (`claim`);
- a running DDS participant has bound a UDP port of the domain's range. Fast DDS's well-known ports
  (RTPS spec 9.6.1.1, PB = 7400, DG = 250) put domain d on ports 7400 + 250 d .. 7400 + 250 d + 249,
  so a port in /proc/net/udp{,6} says which domains have participants (`domains_in_use`). This is a
  preference, not a guarantee: from domain 102 up these ports lie in Linux's ephemeral range, where any
  socket can make a domain look taken (and the lock files are what keeps test sessions apart).

Ranges (never overlapping, so a shell's graph never meets a test's): shells 1-99 (scripts/env.sh
picks one with `python -m monologue_common.core.domain`), test sessions and benchmarks 100-199,
scripts/make_bag_fixture.sh 200-229. Domain 0 (ROS's default) is left to users who want it.

    python -m monologue_common.core.domain            # print a free shell domain
    python -m monologue_common.core.domain --first 100 --last 199
"""
from __future__ import annotations

import argparse
import fcntl
import os
import random
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO

PORT_BASE = 7400  # RTPS PB
DOMAIN_GAIN = 250  # RTPS DG
MAX_DOMAIN = 232  # the last domain whose ports fit below 65536
SHELL_RANGE = (1, 99)
TEST_RANGE = (100, 199)
UDP_TABLES = ("/proc/net/udp", "/proc/net/udp6")


def lock_path(domain: int) -> Path:
    """The lock file that a session claiming `domain` holds."""
    return Path(tempfile.gettempdir()) / f"monologue-ros-domain-{domain}.lock"


def bound_udp_ports(tables: Iterable[str] = UDP_TABLES) -> set[int]:
    """Local UDP ports bound on this machine (every network namespace's table we can read)."""
    ports: set[int] = set()
    for table in tables:
        try:
            lines = Path(table).read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 1 and ":" in fields[1]:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def domains_in_use(ports: Iterable[int] | None = None) -> set[int]:
    """Domains with a DDS participant on this machine, from the UDP ports they bound."""
    found = set()
    for port in bound_udp_ports() if ports is None else ports:
        if PORT_BASE <= port < PORT_BASE + DOMAIN_GAIN * (MAX_DOMAIN + 1):
            found.add((port - PORT_BASE) // DOMAIN_GAIN)
    return found


def _locked(domain: int) -> bool:
    try:
        with open(lock_path(domain), "ab") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return True
            fcntl.flock(f, fcntl.LOCK_UN)
            return False
    except OSError:
        return False


def _candidates(first: int, last: int, seed: int | None) -> list[int]:
    if not 0 <= first <= last <= MAX_DOMAIN:
        raise ValueError(f"domain range [{first}, {last}] must lie in [0, {MAX_DOMAIN}]")
    ids = list(range(first, last + 1))
    random.Random(os.getpid() if seed is None else seed).shuffle(ids)
    busy = domains_in_use()
    return [d for d in ids if d not in busy] + [d for d in ids if d in busy]  # free ones first


def claim(first: int = TEST_RANGE[0], last: int = TEST_RANGE[1], seed: int | None = None) -> tuple[int, IO[bytes]]:
    """A domain in [first, last] that no other session holds and, where possible, no participant uses.
    The caller keeps the returned file open for as long as it uses the domain (closing it releases it)."""
    for domain in _candidates(first, last, seed):
        f = open(lock_path(domain), "ab")  # noqa: SIM115 - held open by the caller
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            continue
        return domain, f
    raise RuntimeError(f"every ROS_DOMAIN_ID in [{first}, {last}] is held by another session")


def pick(first: int = SHELL_RANGE[0], last: int = SHELL_RANGE[1], seed: int | None = None) -> int:
    """A domain in [first, last] that nobody holds or uses right now (not reserved: for a shell)."""
    for domain in _candidates(first, last, seed):
        if not _locked(domain):
            return domain
    raise RuntimeError(f"every ROS_DOMAIN_ID in [{first}, {last}] is held by another session")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m monologue_common.core.domain", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--first", type=int, default=SHELL_RANGE[0])
    ap.add_argument("--last", type=int, default=SHELL_RANGE[1])
    ap.add_argument("--seed", type=int, default=None, help="shuffle seed (default: the process id)")
    args = ap.parse_args(argv)
    print(pick(args.first, args.last, args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
