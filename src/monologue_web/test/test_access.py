"""The web console's ROS-free defences: the Host/Origin allow-list, CSRF, the read token off loopback,
the rate limit of failed tokens, the security headers, TLS settings and the certificate tool."""
from __future__ import annotations

import logging
import ssl
import stat
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from fastapi.routing import APIRoute

from monologue_web.core.access import Access, FailureLimiter, Kind
from monologue_web.core.app import KINDS
from monologue_web.core.certs import check_tls, have_cryptography, make_certificate
from monologue_web.core.origins import HostPolicy, parse_origin, split_host
from monologue_web.testing import PORT, FakeControls, Served, client, served_app, settings

CONTROLS = [("/api/instruction", {"text": "Put the red block in the red bowl."}), ("/api/cancel", {}),
            ("/api/interject", {"text": "stop"}), ("/api/answer", {"text": "yes"}),
            ("/api/approval", {"approve": True}), ("/api/estop_reset", {})]
READS = ["/api/state", "/api/history", "/api/history/ep1.jsonl", "/api/history/ep1.jsonl/download", "/api/bags",
         "/api/camera.jpg", "/api/no_such_thing"]
TOKEN = {"TEST_WEB_TOKEN": "s3cret"}


def test_host_and_origin_parsing() -> None:
    assert split_host("LocalHost:8080") == ("localhost", 8080)
    assert split_host("[::1]:8080") == ("::1", 8080) and split_host("::1") == ("::1", None)
    assert split_host("robot.lab") == ("robot.lab", None)
    for bad in ("", "a:b", "a:0", "a:70000", "[::1", "[nope]:80", "user@host:80", "host/path", "h:80:90"):
        assert split_host(bad) is None, bad
    assert parse_origin("http://127.0.0.1:8080") == ("http", "127.0.0.1", 8080)
    assert parse_origin("https://robot.lab/") == ("https", "robot.lab", 443)
    for bad in ("null", "file://", "ftp://x", "http://x/path", "127.0.0.1:8080"):
        assert parse_origin(bad) is None, bad


def test_loopback_bind_allows_its_own_names_only() -> None:
    p = HostPolicy.build("http", 8080, "127.0.0.1", ("127.0.0.1", "localhost", "::1"), wildcard=False)
    for good in ("127.0.0.1:8080", "localhost:8080", "[::1]:8080", "LOCALHOST:8080"):
        assert p.host_refusal(good) is None, good
    # DNS rebinding: the attacker's name resolved to 127.0.0.1 arrives with the attacker's Host
    for bad in ("evil.example:8080", "127.0.0.1:9999", "localhost", "localhost.:8080", "", None, "a b"):
        assert p.host_refusal(bad) is not None, bad
    host = "127.0.0.1:8080"
    for origin in (None, "http://127.0.0.1:8080", "http://localhost:8080"):
        assert p.origin_refusal(origin, host) is None, origin
    # another page of this machine (another port is another origin), another scheme, sandboxed frames
    for bad in ("http://127.0.0.1:9999", "https://127.0.0.1:8080", "null", "http://evil.example:8080"):
        assert p.origin_refusal(bad, host) is not None, bad


def test_wildcard_bind_allows_the_machines_names_and_same_origin_ips() -> None:
    p = HostPolicy.build("https", 8443, "0.0.0.0", ("127.0.0.1", "localhost", "::1"), wildcard=True,
                         own_names=("robot-pc", "robot-pc.lab"), allowed=("console.lab", "proxy.lab:9000",
                                                                            "https://gateway.lab"))
    for ok in ("robot-pc:8443", "robot-pc.lab:8443", "10.0.0.5:8443", "[fe80::1]:8443", "console.lab:8443",
               "proxy.lab:9000", "gateway.lab", "gateway.lab:443"):
        assert p.host_refusal(ok) is None, ok
    for bad in ("evil.example:8443", "10.0.0.5:9999", "console.lab:9000", "0.0.0.0.evil:8443"):
        assert p.host_refusal(bad) is not None, bad
    assert p.origin_refusal("https://10.0.0.5:8443", "10.0.0.5:8443") is None  # the page itself
    assert p.origin_refusal("https://gateway.lab", "127.0.0.1:8443") is None   # through the proxy
    # an attacker's server on another IP with the same port is another origin
    assert p.origin_refusal("https://10.0.0.66:8443", "10.0.0.5:8443") is not None
    assert p.origin_refusal("http://10.0.0.5:8443", "10.0.0.5:8443") is not None
    with pytest.raises(ValueError):
        HostPolicy.build("http", 1, "0.0.0.0", (), True, allowed=("http://x/path",))


def test_settings_of_the_new_parameters(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as e:
        settings(tls_cert=str(tmp_path / "missing.pem"), token_max_failures=0, token_lockout=0.0,
                 allowed_hosts=["ok.lab", "bad host", "http://x/path"])
    text = str(e.value)
    for name in ("tls_cert", "tls_key", "token_max_failures", "token_lockout", "'bad host'", "'http://x/path'"):
        assert name in text, name
    assert settings().exposure_warning() is None
    warning = settings(host="0.0.0.0").exposure_warning() or ""
    assert "without TLS" in warning and "clear text" in warning and "token" in warning
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    cert.write_text("x")
    key.write_text("x")
    tls = settings(host="0.0.0.0", tls_cert=str(cert), tls_key=str(key), allowed_hosts=["robot.lab", ""])
    assert tls.tls and tls.exposure_warning() is None and tls.url(8443) == "https://0.0.0.0:8443/"
    assert tls.allowed_hosts == ("robot.lab",)


def test_every_control_endpoint_refuses_a_foreign_origin_and_host() -> None:
    c, controls = client(settings())
    for path, body in [*CONTROLS, ("/api/estop", {})]:
        for headers in ({"Origin": "http://127.0.0.1:9999"}, {"Origin": "http://evil.example"},
                        {"Origin": "null"}, {"Host": f"evil.example:{PORT}"},
                        {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"}):
            r = c.post(path, json=body, headers=headers)
            assert r.status_code == 403, (path, headers, r.status_code)
    assert controls.calls == []
    # from the page's own origin, every control is carried out
    for path, body in CONTROLS:
        assert c.post(path, json=body, headers={"Origin": f"http://127.0.0.1:{PORT}"}).status_code in (200, 409)
    assert [x[0] for x in controls.calls] == ["instruction", "cancel", "interject", "approve", "estop_reset"]


def test_rebinding_refuses_every_request_and_the_websocket() -> None:
    from starlette.websockets import WebSocketDisconnect

    c, _ = client(settings())
    for path in ["/", "/app.js", "/api/config", "/api/session", *READS]:
        assert c.get(path, headers={"Host": f"attacker.example:{PORT}"}).status_code == 403, path
    with pytest.raises(WebSocketDisconnect):
        with c.websocket_connect(f"ws://attacker.example:{PORT}/ws"):
            pass
    with pytest.raises(WebSocketDisconnect):  # cross-site websocket hijacking
        with c.websocket_connect(f"ws://127.0.0.1:{PORT}/ws", headers={"Origin": "http://127.0.0.1:9999"}):
            pass
    with c.websocket_connect(f"ws://127.0.0.1:{PORT}/ws", headers={"Origin": f"http://localhost:{PORT}"}) as ws:
        assert "events" in ws.receive_json()
    # a link followed from another site still opens the page (but nothing else)
    nav = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}
    assert c.get("/", headers=nav).status_code == 200
    assert c.get("/api/state", headers=nav).status_code == 403


def test_controls_need_the_pages_csrf_value_also_on_loopback() -> None:
    c, controls = client(settings())
    good = str(c.headers.get("X-Monologue-CSRF", ""))
    other, _ = client(settings())  # another console's value: signed with another key
    forged = str(other.headers["X-Monologue-CSRF"])
    for path, body in CONTROLS:
        assert c.post(path, json=body, headers={"X-Monologue-CSRF": ""}).status_code == 403
        assert c.post(path, json=body, headers={"X-Monologue-CSRF": good + "x"}).status_code == 403
        c.cookies.clear()
        c.cookies.set(f"monologue_csrf_{PORT}", forged)
        r = c.post(path, json=body, headers={"X-Monologue-CSRF": forged})
        assert r.status_code == 403 and r.json()["detail"].startswith("CSRF"), path
        c.cookies.clear()
        c.cookies.set(f"monologue_csrf_{PORT}", good)
    assert controls.calls == []
    assert c.post("/api/estop", headers={"X-Monologue-CSRF": ""}).status_code == 200  # E-STOP: one click
    assert c.post("/api/cancel").status_code == 200
    assert controls.calls == [("estop",), ("cancel",)]
    s = c.get("/api/session")
    cookie = s.headers["set-cookie"]
    assert "SameSite=Strict" in cookie and "HttpOnly" not in cookie and "Secure" not in cookie
    assert s.json()["csrf"] != good  # a new value per page


def test_off_loopback_reads_need_the_token() -> None:
    from starlette.websockets import WebSocketDisconnect

    c, _ = client(settings(host="0.0.0.0"), TOKEN, host="robot-pc")
    for path in READS:
        r = c.get(path)
        assert r.status_code == 401 and "token" in r.json()["detail"], path
    with pytest.raises(WebSocketDisconnect):
        with c.websocket_connect(f"ws://robot-pc:{PORT}/ws"):
            pass
    # the page itself, its config and a CSRF value are public (the page needs them to log in)
    for path in ("/", "/app.js", "/style.css", "/api/config", "/api/session"):
        assert c.get(path).status_code == 200, path
    c.headers["X-Monologue-CSRF"] = c.get("/api/session").json()["csrf"]  # the cookie is the newest value
    assert c.get("/api/config").json()["needs_token"] and not c.get("/api/config").json()["authenticated"]
    assert c.get("/api/state", headers={"X-Monologue-Token": "s3cret"}).status_code == 200
    assert c.post("/api/login", headers={"X-Monologue-Token": "nope"}).status_code == 401
    r = c.post("/api/login", headers={"X-Monologue-Token": "s3cret"})
    assert r.status_code == 200
    assert "HttpOnly" in r.headers["set-cookie"] and "SameSite=Strict" in r.headers["set-cookie"]
    assert c.get("/api/config").json()["authenticated"]
    assert c.get("/api/state").status_code == 200 and c.get("/api/bags").status_code == 200
    with c.websocket_connect(f"ws://robot-pc:{PORT}/ws") as ws:
        assert "events" in ws.receive_json()
    assert c.post("/api/cancel").status_code == 200
    # a session of another console (or of this one before a restart) is not one
    other, _ = client(settings(host="0.0.0.0"), TOKEN, host="robot-pc")
    assert other.post("/api/login", headers={"X-Monologue-Token": "s3cret"}).status_code == 200
    foreign = str(other.cookies.get(f"monologue_session_{PORT}"))
    c.cookies.clear()
    c.cookies.set(f"monologue_session_{PORT}", foreign)
    assert c.get("/api/state").status_code == 401
    # without the variable set, nobody can read or control
    off, _ = client(settings(host="0.0.0.0"), {}, host="robot-pc")
    assert off.get("/api/state").status_code == 403 and "unset" in off.get("/api/state").json()["detail"]
    assert off.post("/api/login", headers={"X-Monologue-Token": ""}).status_code == 403


def test_failed_tokens_are_rate_limited_per_address_in_bounded_memory() -> None:
    now = [0.0]
    lim = FailureLimiter(3, 60.0, capacity=100, clock=lambda: now[0])
    for _ in range(3):
        assert lim.locked_for("a") == 0.0
        lim.failed("a")
    assert lim.locked_for("a") == pytest.approx(60.0) and lim.locked_for("b") == 0.0
    now[0] = 59.0
    assert lim.locked_for("a") == pytest.approx(1.0)
    now[0] = 60.0
    assert lim.locked_for("a") == 0.0
    for i in range(1000):
        lim.failed(f"10.0.{i // 256}.{i % 256}")
    assert len(lim) == 100
    a = Access(settings(host="0.0.0.0", token_max_failures=3), TOKEN,
               HostPolicy.build("http", PORT, "0.0.0.0", (), True), clock=lambda: now[0])
    assert [getattr(a.try_token("c", "wrong"), "status", 0) for _ in range(4)] == [401, 401, 401, 429]
    assert getattr(a.try_token("c", "s3cret"), "status", 0) == 429  # locked: even the right token
    assert a.try_token("other", "s3cret") is None
    now[0] += 60.0
    assert a.try_token("c", "s3cret") is None


def test_login_is_rate_limited_in_the_app() -> None:
    c, _ = client(settings(host="0.0.0.0", token_max_failures=2), TOKEN, host="robot-pc")
    assert [c.post("/api/login", headers={"X-Monologue-Token": t}).status_code
            for t in ("a", "b", "s3cret")] == [401, 401, 429]
    r = c.get("/api/state", headers={"X-Monologue-Token": "s3cret"})
    assert r.status_code == 429 and r.headers["retry-after"] == "60"


def test_every_post_route_is_classified_and_responses_forbid_framing() -> None:
    c, _ = client(settings())
    app: Any = c.app
    posts = {r.path for r in app.routes if isinstance(r, APIRoute) and "POST" in (r.methods or set())}
    assert posts and all(KINDS.get(p) in (Kind.CONTROL, Kind.ESTOP, Kind.LOGIN) for p in posts), posts
    assert {p for p, k in KINDS.items() if k is Kind.ESTOP} == {"/api/estop"}
    for r in (c.get("/"), c.get("/api/state"), c.get("/api/state", headers={"Host": "x:1"})):
        assert r.headers["x-frame-options"] == "DENY" and "frame-ancestors 'none'" in r.headers[
            "content-security-policy"]
    assert c.get("/api/state").headers["cache-control"] == "no-store"
    assert c.post("/api/login").json()["message"].startswith("bound to loopback")


@pytest.mark.parametrize("backend", ["openssl", "cryptography"])
def test_certificate_tool_makes_a_pair_a_client_verifies(backend: str, tmp_path: Path) -> None:
    if backend == "cryptography" and not have_cryptography():
        pytest.skip("the Python package cryptography is not installed")
    cert, key, used = make_certificate(tmp_path / "tls", ["localhost", "127.0.0.1"], days=2, backend=backend)
    assert used == backend and stat.S_IMODE(key.stat().st_mode) == 0o600
    check_tls(cert, key)
    other, other_key, _ = make_certificate(tmp_path / "other", ["localhost"], backend=backend)
    with pytest.raises(ValueError, match="cannot serve TLS"):
        check_tls(cert, other_key)
    s = settings(tls_cert=str(cert), tls_key=str(key))
    with Served(served_app(s, FakeControls(), logging.getLogger("test")), cert, key) as port:
        ok = ssl.create_default_context(cafile=str(cert))  # verifies the chain and the name 127.0.0.1
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/api/config", context=ok, timeout=10) as r:
            assert r.status == 200 and b'"tls":true' in r.read()
        with pytest.raises(urllib.error.URLError):  # a client that trusts another certificate refuses
            urllib.request.urlopen(f"https://127.0.0.1:{port}/api/config",
                                   context=ssl.create_default_context(cafile=str(other)), timeout=10)


def test_repeated_security_headers_are_refused() -> None:
    c, controls = client(settings())
    own = f"127.0.0.1:{PORT}"
    r = c.post("/api/cancel", headers=[("Host", own), ("Host", "evil.example")])
    assert r.status_code == 400 and controls.calls == []
    r = c.post("/api/estop", headers=[("Origin", f"http://{own}"), ("Origin", "http://evil.example")])
    assert r.status_code == 400 and controls.calls == []
