"""Helpers of the web console's tests (no rclpy): settings from the defaults of config/monologue.yaml's
shape, fake controls that record what they were asked, and a TestClient of the app."""
from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient

from .core.access import Access
from .core.app import ControlError, create_app
from .core.origins import HostPolicy
from .core.settings import LOOPBACK, WILDCARD, WebSettings, settings_from_parameters
from .core.state import MonitorState

PARAMS: dict[str, object] = {
    "host": "127.0.0.1", "port": 0, "read_only": False, "token_env": "TEST_WEB_TOKEN",
    "transcript_dir": "/nonexistent", "max_events": 100, "answer_timeout": 60.0, "serve_ask_human": True,
    "ros_timeout": 5.0, "serve_approvals": True, "approval_action": "approve_motion",
    "camera_topics": ["perception/detections_image", "camera/color/image_raw"], "camera_rate": 2.0,
    "camera_stale": 3.0, "bag_dirs": [""], "allowed_hosts": [""], "tls_cert": "", "tls_key": "",
    "token_max_failures": 5, "token_lockout": 60.0,
}
PORT = 8123  # the port the test apps pretend to serve (TestClient's Host header names it)


def settings(**over: object) -> WebSettings:
    return settings_from_parameters({**PARAMS, **over})


class FakeControls:
    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def send_instruction(self, text: str, strategy: str) -> str:
        self.calls.append(("instruction", text, strategy))
        return f"sent: {text}"

    def cancel(self) -> str:
        self.calls.append(("cancel",))
        return "cancel requested"

    def interject(self, text: str) -> str:
        self.calls.append(("interject", text))
        return "sent"

    def answer(self, text: str) -> str:
        raise ControlError("the robot has no open question")

    def approve(self, approved: bool) -> str:
        self.calls.append(("approve", str(approved)))
        return "approved" if approved else "denied"

    def estop(self) -> str:
        self.calls.append(("estop",))
        return "e-stop sent"

    def estop_reset(self) -> str:
        self.calls.append(("estop_reset",))
        return "e-stop reset"


def access(s: WebSettings, env: dict[str, str] | None = None, port: int = PORT) -> Access:
    policy = HostPolicy.build(s.scheme, port, s.host, LOOPBACK, s.host in WILDCARD,
                              own_names=("robot-pc",), allowed=s.allowed_hosts)
    return Access(s, env or {}, policy)


def client(s: WebSettings, env: dict[str, str] | None = None, tdir: Path | None = None,
           state: MonitorState | None = None, bag_dirs: tuple[Path, ...] = (),
           camera: Any = lambda: None, host: str = "127.0.0.1") -> tuple[TestClient, FakeControls]:
    """A client of the app with this page's CSRF header set (as the page sends it on every POST)."""
    controls = FakeControls()
    app = create_app(state or MonitorState(), controls, access(s, env), tdir or s.transcript_dir,
                     logging.getLogger("test"), poll_s=0.05, bag_dirs=bag_dirs, camera=camera)
    c = TestClient(app, base_url=f"{s.scheme}://{host}:{PORT}")
    c.headers["X-Monologue-CSRF"] = c.get("/api/session").json()["csrf"]
    return c, controls


class Served:
    """`make_app(port)` served by uvicorn in a thread on 127.0.0.1 (https with `cert`/`key`), as the node
    serves it: `with Served(...) as port:`."""

    def __init__(self, make_app: Callable[[int], FastAPI], cert: Path | None = None, key: Path | None = None,
                 host: str = "127.0.0.1") -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind((host, 0))
        self.port = int(self.sock.getsockname()[1])
        self.server = uvicorn.Server(uvicorn.Config(
            make_app(self.port), log_level="warning", lifespan="off",
            ssl_certfile=None if cert is None else str(cert), ssl_keyfile=None if key is None else str(key)))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> int:
        self.thread.start()
        deadline = time.monotonic() + 30.0
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test web server did not start")
            time.sleep(0.02)
        return self.port

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10.0)
        self.sock.close()


def served_app(s: WebSettings, controls: Any, logger: logging.Logger, env: dict[str, str] | None = None,
               state: MonitorState | None = None) -> Callable[[int], FastAPI]:
    """The app of settings `s` over `controls` for a port (for Served)."""
    return lambda port: create_app(state or MonitorState(), controls, access(s, env, port), s.transcript_dir,
                                   logger, poll_s=0.2)
