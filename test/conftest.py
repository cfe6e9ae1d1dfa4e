"""System-test fixtures: the real node graph as separate processes on an isolated ROS domain."""
from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from monologue_common.core import domain as ros_domains

REPO = Path(__file__).resolve().parents[1]


def claim_domain(first: int = 100, last: int = 199) -> tuple[int, IO[bytes]]:
    """A ROS_DOMAIN_ID in [first, last] that no other session holds (monologue_common.core.domain.claim):
    the returned file keeps it; closing it releases it."""
    return ros_domains.claim(first, last)


@pytest.fixture(scope="session")
def ros_domain() -> int:
    """The session's own ROS_DOMAIN_ID, claimed by the root conftest.py before any test ran, so tests
    never talk to another graph on the machine (not even a concurrent test session's)."""
    return int(os.environ["ROS_DOMAIN_ID"])


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
