"""monologue-demo's web monitor address: the configured port, or a free one when that is taken."""
from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

from monologue_eval.demo import DEFAULTS, OWN_GRAPH_ONLY, _web_address


@contextmanager
def taken_port() -> Iterator[int]:
    """A loopback TCP port that is listened on (taken) until the block ends."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


def test_demo_starts_the_web_monitor_on_the_configured_or_a_free_port() -> None:
    assert DEFAULTS["web"] == "true" and "web" in OWN_GRAPH_ONLY
    with taken_port() as port:
        host, got = _web_address("sim_kinematic", "embedded", {"port": str(port)})
        assert host == "127.0.0.1" and got not in (port, 0)
    assert _web_address("sim_kinematic", "embedded", {"port": str(port)}) == ("127.0.0.1", port)


def test_demo_starts_the_foxglove_bridge_only_when_asked_on_its_configured_or_a_free_port() -> None:
    assert DEFAULTS["foxglove"] == "false" and "foxglove" in OWN_GRAPH_ONLY
    with taken_port() as port:
        host, got = _web_address("sim_kinematic", "embedded", {"port": str(port)}, "foxglove_bridge", 8765)
        assert host == "127.0.0.1" and got not in (port, 0)
    host, got = _web_address("sim_kinematic", "embedded", {}, "foxglove_bridge", 8765)
    assert host == "127.0.0.1" and got > 0  # 8765 from config/monologue.yaml, or a free one if that is taken
