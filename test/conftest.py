"""System-test fixtures: the real node graph as separate processes on an isolated ROS domain."""
from __future__ import annotations

import os
import random
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def ros_domain() -> Iterator[int]:
    """A ROS_DOMAIN_ID of our own, so tests never talk to another graph on the machine."""
    domain = random.Random(os.getpid()).randrange(100, 200)
    old = os.environ.get("ROS_DOMAIN_ID")
    os.environ["ROS_DOMAIN_ID"] = str(domain)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    yield domain
    if old is None:
        os.environ.pop("ROS_DOMAIN_ID", None)
    else:
        os.environ["ROS_DOMAIN_ID"] = old


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
