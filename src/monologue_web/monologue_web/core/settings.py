"""Validated settings of the web node, from its ROS parameters (defaults only in config/monologue.yaml,
section `web`; see monologue_common.core.settings). No rclpy here."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from monologue_common.core.settings import ParamReader

LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


@dataclass(frozen=True)
class BindAddress:
    """Where a server listens (shared by the web node and the Foxglove bridge)."""

    host: str                          # address to bind; 127.0.0.1 unless configured
    port: int                          # TCP port; 0 = any free port (the node logs the URL)

    @property
    def local(self) -> bool:
        """Bound to the loopback interface only."""
        return self.host in LOOPBACK or self.host.startswith("127.")

    def address(self, scheme: str, port: int | None = None) -> str:
        """`scheme://host:port` (an IPv6 host in brackets); `port` overrides the configured one."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port if port is None else port}"


@dataclass(frozen=True)
class WebSettings(BindAddress):
    read_only: bool                    # no control at all (monitor only)
    token_env: str                     # environment variable holding the control token (non-local binds)
    transcript_dir: Path               # the planner's transcript_dir (history)
    max_events: int                    # transcript events kept for the live view
    answer_timeout_s: float            # s to wait for an answer when the question gives none
    serve_ask_human: bool              # serve the ask_human action (the robot's questions)
    ros_timeout_s: float               # s to wait for an action or service server
    serve_approvals: bool              # serve the skills node's approval gate (approve / deny in the page)
    approval_action: str               # its AskHuman action (skills `approval.action`)
    camera_topics: tuple[str, ...]     # images to show, first preferred while it is fresh
    camera_rate: float                 # Hz: at most this many new frames announced to the page
    camera_stale_s: float              # s after which a preferred topic's frame gives way to the next
    bag_dirs: tuple[Path, ...]         # directories holding recorded bags (history)
    unused: tuple[str, ...] = ()       # parameters set but not read

    def url(self, port: int | None = None) -> str:
        """The http:// address of the page."""
        return self.address("http", port) + "/"


def settings_from_parameters(params: Mapping[str, object]) -> WebSettings:
    """Check every parameter of the web node; ValueError listing all problems at once."""
    r = ParamReader(params, "web")
    s = WebSettings(
        host=r.string("host", nonempty=True),
        port=r.integer("port", 0, 65535),
        read_only=r.boolean("read_only"),
        token_env=r.string("token_env", nonempty=True),
        transcript_dir=Path(r.string("transcript_dir", nonempty=True)).expanduser(),
        max_events=r.integer("max_events", 1),
        answer_timeout_s=r.number("answer_timeout", 0.0, low_open=True),
        serve_ask_human=r.boolean("serve_ask_human"),
        ros_timeout_s=r.number("ros_timeout", 0.0, low_open=True),
        serve_approvals=r.boolean("serve_approvals"),
        approval_action=r.string("approval_action", nonempty=True),
        camera_topics=r.strings("camera_topics"),
        camera_rate=r.number("camera_rate", 0.0, low_open=True),
        camera_stale_s=r.number("camera_stale", 0.0, low_open=True),
        bag_dirs=tuple(Path(d).expanduser() for d in r.strings("bag_dirs")),
    )
    r.finish()
    # not read: rclpy's own parameters, and the shared llm block of config/llm/*.yaml (`/**`)
    return replace(s, unused=tuple(r.unused(("use_sim_time", "start_type_description_service", "llm"))))
