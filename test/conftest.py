"""System-test fixtures: the real node graph as separate processes on an isolated ROS domain."""
from __future__ import annotations

import fcntl
import os
import random
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

REPO = Path(__file__).resolve().parents[1]


def claim_domain(first: int = 100, last: int = 199) -> tuple[int, IO[bytes]]:
    """A ROS_DOMAIN_ID in [first, last] that no other test session on this machine holds: each session keeps
    an exclusive lock on `<tmp>/monologue-ros-domain-<id>.lock` (released when the process ends)."""
    ids = list(range(first, last + 1))
    random.Random(os.getpid()).shuffle(ids)
    for domain in ids:
        f = open(Path(tempfile.gettempdir()) / f"monologue-ros-domain-{domain}.lock", "ab")  # noqa: SIM115
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            continue
        return domain, f
    raise RuntimeError(f"every ROS_DOMAIN_ID in [{first}, {last}] is held by another test session")


@pytest.fixture(scope="session")
def ros_domain() -> Iterator[int]:
    """A ROS_DOMAIN_ID of our own, so tests never talk to another graph on the machine (not even a
    concurrent test session's: see claim_domain)."""
    domain, lock = claim_domain()
    old = os.environ.get("ROS_DOMAIN_ID")
    os.environ["ROS_DOMAIN_ID"] = str(domain)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    try:
        yield domain
    finally:
        lock.close()
        if old is None:
            os.environ.pop("ROS_DOMAIN_ID", None)
        else:
            os.environ["ROS_DOMAIN_ID"] = old


@pytest.fixture()
def other_ros_domain(ros_domain: int) -> Iterator[int]:
    """A second claimed ROS_DOMAIN_ID, for a graph that must not see the session's."""
    domain, lock = claim_domain()
    try:
        yield domain
    finally:
        lock.close()


class GraphLog:
    """Collects the nodes' output lines for assertions and failure reports."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, line: str) -> None:
        with self._lock:
            self.lines.append(line)

    def text(self) -> str:
        with self._lock:
            return "\n".join(self.lines)


@pytest.fixture(scope="module")
def sim_graph(ros_domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, GraphLog, Path]]:
    """The four nodes with the embedded LLM on a fixed matching-bowls scene."""
    from monologue_bringup.up import Supervisor

    transcripts = tmp_path_factory.mktemp("transcripts")
    log = GraphLog()
    sup = Supervisor(
        "sim_kinematic", "embedded",
        config_dir=REPO / "config",
        node_params={
            "skills": {"sim.seed": "11", "sim.num_blocks": "2", "sim.num_bowls": "3",
                       "sim.matching_bowls": "true", "sim.phase_duration": "0.05"},
            "planner": {"transcript_dir": str(transcripts)},
        },
        sink=log,
    )
    sup.start()
    try:
        yield sup, log, transcripts
    finally:
        codes = sup.stop()
        crashed = {n: c for n, c in codes.items() if c not in (0, -2, -15, 130)}
        assert not crashed, f"nodes exited with errors {crashed}\n{log.text()[-5000:]}"
