"""A node whose stop hangs (a thread that never ends) reports its stacks and still ends on SIGTERM."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

NODE = """
import threading
from rclpy.node import Node
from monologue_common import runtime

runtime.STOP_REPORT_S = 1.0
def make():
    node = Node("hangs_while_stopping")
    threading.Thread(target=threading.Event().wait, name="never_ends").start()  # not a daemon
    node.get_logger().info("hangs_while_stopping is ready")
    return node
runtime.run_node(make, threads=2)
"""

pytestmark = [pytest.mark.system]


def test_sigint_then_sigterm_ends_a_node_that_hangs_while_stopping(ros_domain: int) -> None:
    proc = subprocess.Popen([sys.executable, "-c", NODE], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=dict(os.environ), start_new_session=True)
    lines: list[str] = []
    seen = {"is ready": threading.Event(), "still stopping": threading.Event()}

    def pump() -> None:
        assert proc.stdout is not None
        for raw in iter(proc.stdout.readline, b""):
            lines.append(raw.decode("utf-8", "replace"))
            for key, event in seen.items():
                if key in lines[-1]:
                    event.set()
    threading.Thread(target=pump, daemon=True).start()
    try:
        assert seen["is ready"].wait(60.0), "".join(lines)
        proc.send_signal(signal.SIGINT)
        assert seen["still stopping"].wait(30.0), "".join(lines)
        assert proc.poll() is None  # held by the thread that never ends
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30.0) == -signal.SIGTERM
        assert time.monotonic() - t0 < 30.0
        time.sleep(0.2)  # s: the pump reads the rest
        assert any("never_ends" in x or "threading.py" in x for x in lines), "".join(lines)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
