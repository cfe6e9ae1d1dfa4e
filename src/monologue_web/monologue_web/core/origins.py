"""The Host and Origin allow-list of the web console (no rclpy).

A browser page can only reach the console's port from another origin by a cross-site request (its
Origin header names the other site) or by DNS rebinding (an attacker's name resolved to the robot: the
Host header names the attacker's domain). Both are refused here: the Host must be one of the console's
own names on its port, and an Origin, when present, must be the console's own."""
from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def split_host(text: str) -> tuple[str, int | None] | None:
    """`name`, `name:port`, `[v6]`, `[v6]:port` or a bare IPv6 address as (lowercase name, port or None);
    None when malformed."""
    text = text.strip().lower()
    if not text or any(c in text for c in "/@?#\\ "):
        return None
    port: str | None = None
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return None
        name, rest = text[1:end], text[end + 1:]
        if rest:
            if not rest.startswith(":"):
                return None
            port = rest[1:]
        if not _is_ip(name):
            return None
    elif text.count(":") > 1:  # a bare IPv6 address
        name = text
        if not _is_ip(name):
            return None
    else:
        name, _, port_text = text.partition(":")
        port = port_text if ":" in text else None
    if not name:
        return None
    if port is None:
        return name, None
    if not port.isdigit() or not 0 < int(port) < 65536:
        return None
    return name, int(port)


def parse_origin(text: str) -> tuple[str, str, int] | None:
    """`scheme://host[:port]` as (scheme, host, port with the scheme's default); None when malformed
    (a path, credentials, an unknown scheme, or "null")."""
    scheme, sep, rest = text.strip().lower().removesuffix("/").partition("://")
    if not sep or scheme not in DEFAULT_PORTS:
        return None
    hp = split_host(rest)
    if hp is None:
        return None
    name, port = hp
    return scheme, name, DEFAULT_PORTS[scheme] if port is None else port


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class HostPolicy:
    """Who the console is: the names it answers to on its port, and the origins its page comes from."""

    scheme: str                               # http or https (what the console serves)
    port: int                                 # the port it serves (after binding)
    names: frozenset[str]                     # its names on that port (loopback names, the bound host, ...)
    pairs: frozenset[tuple[str, int]]         # further (name, port) pairs of configured entries
    origins: frozenset[tuple[str, str, int]]  # configured origins (a reverse proxy's public address)
    any_ip: bool                              # bound to every interface: any IP-literal Host on the port

    @classmethod
    def build(cls, scheme: str, port: int, bound: str, loopback: Iterable[str], wildcard: bool,
              own_names: Iterable[str] = (), allowed: Iterable[str] = ()) -> HostPolicy:
        """The default list (loopback names and the bound address on `port`; with a wildcard bind also
        the machine's `own_names` and any IP literal) plus the `allowed` entries (`name`, `name:port`,
        `scheme://name[:port]`)."""
        names = {n.lower() for n in loopback}
        if wildcard:
            names |= {n.lower() for n in own_names if n}
        else:
            names.add(bound.lower())
        pairs: set[tuple[str, int]] = set()
        origins: set[tuple[str, str, int]] = set()
        for entry in allowed:
            if "://" in entry:
                o = parse_origin(entry)
                if o is None:
                    raise ValueError(f"not an origin: {entry!r}")
                origins.add(o)
                pairs.add((o[1], o[2]))
                continue
            hp = split_host(entry)
            if hp is None:
                raise ValueError(f"not a host: {entry!r}")
            if hp[1] is None:
                names.add(hp[0])
            else:
                pairs.add((hp[0], hp[1]))
        return cls(scheme, port, frozenset(names), frozenset(pairs), frozenset(origins), wildcard)

    def _named(self, name: str, port: int) -> bool:
        return (port == self.port and name in self.names) or (name, port) in self.pairs

    def host_refusal(self, host: str | None) -> str | None:
        """Why a request with this Host header is refused (None: it is one of ours)."""
        if not host:
            return "no Host header"
        hp = split_host(host)
        if hp is None:
            return f"malformed Host header {host!r}"
        name, port = hp
        if port is None:  # the default port of the scheme, or a proxy's public address
            if any(o[1] == name for o in self.origins):
                return None
            port = DEFAULT_PORTS[self.scheme]
        if self._named(name, port) or (self.any_ip and port == self.port and _is_ip(name)):
            return None
        return f"Host {host!r} is not an allowed name of this console (DNS rebinding?)"

    def origin_refusal(self, origin: str | None, host: str | None) -> str | None:
        """Why a request with this Origin header (and an allowed `host`) is refused. No Origin: not a
        cross-site browser request (browsers send it on every cross-origin request and on POSTs)."""
        if origin is None:
            return None
        o = parse_origin(origin)
        if o is None:
            return f"Origin {origin!r} is not allowed"
        scheme, name, port = o
        if o in self.origins or (scheme == self.scheme and self._named(name, port)):
            return None
        hp = split_host(host or "")
        if self.any_ip and scheme == self.scheme and _is_ip(name) and hp is not None \
                and (name, port) == (hp[0], self.port if hp[1] is None else hp[1]) and port == self.port:
            return None  # same origin as the request, on an IP of a wildcard bind
        return f"Origin {origin!r} is not allowed (cross-site request?)"
