"""Validated settings of the web node, from its ROS parameters (defaults only in config/monologue.yaml,
section `web`; see monologue_common.core.settings). No rclpy here."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from monologue_common.core.settings import ParamReader

from .origins import parse_origin, split_host

LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
WILDCARD = frozenset({"0.0.0.0", "::", ""})


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
    allowed_hosts: tuple[str, ...] = ()  # extra names (`name`, `name:port`) or origins (`https://name[:port]`)
    tls_cert: Path | None = None       # PEM certificate: serve https (with tls_key)
    tls_key: Path | None = None        # its PEM private key
    token_max_failures: int = 5        # failed token attempts per client address before it is locked out
    token_lockout_s: float = 60.0      # s: the window the failures are counted in, and the lockout
    unused: tuple[str, ...] = ()       # parameters set but not read

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    def url(self, port: int | None = None) -> str:
        """The http:// (https:// with TLS) address of the page."""
        return self.address(self.scheme, port) + "/"

    def exposure_warning(self) -> str | None:
        """What a non-loopback bind without TLS exposes (None on loopback or with TLS)."""
        if self.local or self.tls:
            return None
        return (f"web console bound to {self.host}, a non-loopback address, without TLS: the access token "
                "and everything the page shows (transcripts, camera frames, bags) cross the network in clear "
                "text, so anyone on the path can read them and replay the token to control the robot. "
                "Set tls_cert/tls_key (monologue-web-cert makes a self-signed pair) or bind 127.0.0.1 "
                "and use an SSH tunnel")


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
        allowed_hosts=r.strings("allowed_hosts"),
        tls_cert=_optional_file(r, "tls_cert"),
        tls_key=_optional_file(r, "tls_key"),
        token_max_failures=r.integer("token_max_failures", 1),
        token_lockout_s=r.number("token_lockout", 0.0, low_open=True),
    )
    r.check((s.tls_cert is None) == (s.tls_key is None), "tls_cert, tls_key: set both (https) or neither (http)")
    for entry in s.allowed_hosts:
        r.check(_valid_allowed(entry), f"allowed_hosts: {entry!r} is neither name[:port] nor scheme://name[:port]")
    r.finish()
    # not read: rclpy's own parameters, and the shared llm block of config/llm/*.yaml (`/**`)
    return replace(s, unused=tuple(r.unused(("use_sim_time", "start_type_description_service", "llm"))))


def _optional_file(r: ParamReader, name: str) -> Path | None:
    """An existing file, or None for an empty string."""
    text = r.string(name)
    if not text:
        return None
    path = Path(text).expanduser()
    r.check(path.is_file(), f"{name}: no such file {text!r}")
    return path


def _valid_allowed(entry: str) -> bool:
    if "://" in entry:
        return parse_origin(entry) is not None
    return split_host(entry) is not None
