"""The web monitor in a real browser: headless Debian Chromium driven by Playwright (nothing downloaded;
scripts/setup.sh installs chromium), against real node graphs over DDS.

* robot:=sim_kinematic with the embedded LLM and `web`: an instruction typed in the page runs an episode;
  the page shows the Scene line, a `Robot action`, the step's candidates as a bar chart (chosen marked),
  and the finished episode in the history (viewable, downloadable).
* robot:=ur5e's skills node on the fake RTDE (the kinematic world has no e-stop) with `web` bound to
  0.0.0.0 over TLS (a monologue-web-cert pair, trusted by Chromium through its key's hash): reads are
  refused without the token; the E-STOP button latches robot/status in one click without it; the reset
  needs the page to log in; the approval gate's request shows in the page (deny: the skill is refused,
  approve: the arm moves); a scene description and a camera frame published by the test show as the top
  view and the camera image; the fixture bag is listed with its statistics.
* Without a graph (the app over fake controls, served by uvicorn as the node serves it): a page of
  another origin (a second HTTP server on another loopback port) tries every control endpoint and the
  websocket, and each is refused; a DNS-rebinding load is refused; E-STOP is one click; TLS with the
  generated certificate; the rebinding and foreign-Origin checks over plain HTTP.

MONOLOGUE_WEB_SCREENSHOT=<png> saves a screenshot of the episode page (docs/images/monitor.png).
"""
from __future__ import annotations

import base64
import contextlib
import hashlib
import http.server
import json
import logging
import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from monologue_bringup.testing import GraphPeer

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = [pytest.mark.system, pytest.mark.slow]
# ms to wait for an LLM step: about 2 s on 2 idle cores, minutes when the machine is heavily loaded
LLM_WAIT_MS = 300_000
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
                 # DNS rebinding as an attacker does it: a name of theirs resolved to this machine
                 "--host-resolver-rules=MAP rebind.test 127.0.0.1"]
CONTROL_PATHS = ["/api/instruction", "/api/cancel", "/api/interject", "/api/answer", "/api/approval",
                 "/api/estop_reset", "/api/estop", "/api/login"]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def playwright() -> Iterator[Any]:
    """Playwright (one per thread: every browser of the module comes from it); skipped when Debian's
    Chromium is not installed."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).is_file():
        pytest.skip("Debian chromium is not installed (scripts/setup.sh installs it as root)")
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    with sync_api.sync_playwright() as pw:
        yield pw


@contextlib.contextmanager
def _chromium(pw: Any, profile: Path, extra_args: Sequence[str] = ()) -> Iterator[Any]:
    """Debian's Chromium with the profile `profile` and `extra_args`."""
    context = pw.chromium.launch_persistent_context(
        str(profile), executable_path=CHROMIUM, headless=True, args=[*CHROMIUM_ARGS, *extra_args],
        viewport={"width": 1280, "height": 900}, accept_downloads=True)
    try:
        yield context
    finally:
        context.close()


@pytest.fixture(scope="module")
def browser(playwright: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Debian's Chromium under Playwright, with a fresh profile."""
    with _chromium(playwright, tmp_path_factory.mktemp("chromium_profile")) as context:
        yield context


def _spki_sha256(cert: Path) -> str:
    """base64 SHA-256 of the certificate's public key (Chromium's --ignore-certificate-errors-spki-list:
    the browser then trusts exactly this certificate, as if its owner had imported it)."""
    pub = subprocess.run(["openssl", "x509", "-in", str(cert), "-pubkey", "-noout"], check=True,
                         capture_output=True, timeout=30).stdout
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=pub, check=True,
                         capture_output=True, timeout=30).stdout
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


def _wait_up(page: Any, url: str, lines: list[str], timeout_s: float = 60.0) -> None:
    """Open `url` once the web node serves it (polled; the node starts with the graph)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            page.goto(url, timeout=5000)
            page.wait_for_selector("#conn.on", timeout=5000)
            return
        except Exception:
            if time.monotonic() > deadline:
                raise AssertionError("web monitor did not come up:\n" + "\n".join(lines[-60:])) from None
            page.wait_for_timeout(300)


def test_instruction_from_the_page_runs_an_episode_shown_live(ros_domain: int, browser: Any,
                                                              tmp_path: Path) -> None:
    from monologue_bringup.up import Supervisor

    port = _free_port()
    transcripts = tmp_path / "transcripts"
    lines: list[str] = []
    sup = Supervisor("sim_kinematic", "embedded", config_dir=REPO / "config", sink=lines.append, web=True,
                     node_params={
                         "skills": {"sim.seed": "11", "sim.num_blocks": "1", "sim.num_bowls": "2",
                                    "sim.matching_bowls": "true", "sim.phase_duration": "0.05"},
                         "planner": {"transcript_dir": str(transcripts), "max_steps": "1"},
                         "web": {"port": str(port)}})
    assert [s.name for s in sup.specs][-1] == "web"
    sup.start()
    page = browser.new_page()
    try:
        _wait_up(page, f"http://127.0.0.1:{port}/", lines)
        deadline = time.monotonic() + 120.0  # the planner loads its LLM before it serves goals
        while not any("ready; strategy" in x for x in list(lines)):
            assert time.monotonic() < deadline, "planner not ready:\n" + "\n".join(lines[-60:])
            page.wait_for_timeout(200)
        page.fill("#instruction", "Put the blocks in their matching bowls.")
        page.click("#send")
        page.wait_for_function("() => document.querySelector('#message').textContent !== ''", timeout=30000)
        assert page.text_content("#message").startswith("sent:"), page.text_content("#message")
        page.wait_for_selector("#transcript li[data-kind=SCENE_OBJECTS]", timeout=60000)
        assert page.text_content("#transcript li[data-kind=SCENE_OBJECTS]").startswith("Scene:")
        assert page.text_content("#transcript li[data-kind=HUMAN_INSTRUCTION]") == \
            "Human: Put the blocks in their matching bowls."
        page.wait_for_selector("#transcript li[data-kind=ROBOT_ACTION]", timeout=LLM_WAIT_MS)
        assert page.text_content("#transcript li[data-kind=ROBOT_ACTION]").startswith("Robot action:")
        # the bar chart holds the step's candidates, the chosen one marked
        page.wait_for_selector("#scores .row.chosen", timeout=30000)
        candidates = page.eval_on_selector_all("#scores .row", "rows => rows.map(r => r.dataset.candidate)")
        chosen = page.eval_on_selector_all("#scores .row.chosen", "rows => rows.map(r => r.dataset.candidate)")
        assert len(candidates) >= 2 and len(chosen) == 1 and chosen[0] in candidates
        assert any(c.startswith("Robot action: Pick the") for c in candidates)
        assert page.eval_on_selector_all("#scores .row .bar.llm", "b => b.length") == len(candidates)
        # the step's cost: prompt tokens read and seconds in the LLM
        page.wait_for_selector("#steps tbody tr[data-step='1']", timeout=30000)
        cells = page.eval_on_selector_all("#steps tbody tr[data-step='1'] td", "tds => tds.map(t => t.textContent)")
        assert int(cells[3]) > 50 and float(cells[5]) > 0.0 and int(cells[2]) == len(candidates), cells
        # the oracle's scene as the top view
        page.wait_for_function("() => (JSON.parse(document.querySelector('#topview').dataset.objects || '[]')).length > 0",
                               timeout=30000)
        shot = os.environ.get("MONOLOGUE_WEB_SCREENSHOT")
        page.wait_for_selector("#transcript li[data-kind=EPISODE_END]", timeout=LLM_WAIT_MS)
        page.wait_for_function("() => !['running', 'sending'].includes(document.querySelector('#goal').className"
                               ".split(' ')[1])", timeout=30000)
        if shot:
            page.screenshot(path=shot, full_page=False)
        # the finished episode is in the history: viewable and downloadable
        page.click("#refresh-history")
        page.wait_for_selector("#history tbody tr", timeout=10000)
        page.click("#history tbody tr button")
        page.wait_for_selector("#viewer-events li[data-kind=ROBOT_ACTION]", timeout=10000)
        with page.expect_download(timeout=10000) as dl:
            page.click("#history tbody tr a")
        saved = tmp_path / "download.jsonl"
        dl.value.save_as(saved)
        records = [json.loads(x) for x in saved.read_text(encoding="utf-8").splitlines()]
        assert records[0]["record"] == "header" and any(r.get("kind") == "ROBOT_ACTION" for r in records)
        assert saved.read_bytes() == next(transcripts.glob("*.jsonl")).read_bytes()
    finally:
        print("\n".join(lines[-80:]))  # shown when the test fails
        page.close()
        codes = sup.stop()
    crashed = {n: c for n, c in codes.items() if c not in (0, -2, -15, 130)}
    assert not crashed, "\n".join(lines[-80:])


class _TestNode(GraphPeer):
    """The test's own ROS node: sends skills, publishes a scene description and a camera frame."""

    def __init__(self) -> None:
        from sensor_msgs.msg import Image

        from monologue_common.actions import ActionClient
        from monologue_common.qos import LATCHED
        from monologue_interfaces.action import ExecuteSkill
        from monologue_interfaces.msg import SceneDescription

        super().__init__("web_system_test")
        self.skills = ActionClient(self.node, ExecuteSkill, "execute_skill")
        self.scene = self.node.create_publisher(SceneDescription, "scene/description", LATCHED)
        self.image = self.node.create_publisher(Image, "perception/detections_image", 2)

    def execute_skill(self, skill: str) -> Any:
        from monologue_interfaces.action import ExecuteSkill

        assert self.skills.wait_for_server(timeout_sec=30.0), "no execute_skill server"
        future = self.skills.send_goal_async(ExecuteSkill.Goal(skill=skill, args=[]))
        self.ex.spin_until_future_complete(future, timeout_sec=30.0)
        assert future.done() and future.result().accepted, "skill goal not accepted"
        return future.result().get_result_async()

    def wait(self, future: Any, timeout_s: float) -> Any:
        deadline = time.monotonic() + timeout_s
        while not future.done() and time.monotonic() < deadline:
            self.ex.spin_once(timeout_sec=0.1)
        assert future.done(), f"no skill result within {timeout_s} s"
        return future.result().result

    def action_served(self, name: str, served: bool, timeout_s: float) -> bool:
        """Whether the graph comes to show (served) or stop showing a server of the `name` action within
        timeout_s (s)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if (self.node.count_services(f"/{name}/_action/send_goal") > 0) == served:
                return True
            self.ex.spin_once(timeout_sec=0.1)
        return False

    def publish_scene_and_image(self) -> None:
        from sensor_msgs.msg import Image

        from monologue_interfaces.msg import SceneDescription, SceneObject

        msg = SceneDescription(source="test")
        msg.header.frame_id = "base_link"
        for name, cat, x, y in (("red block", "block", 0.5, 0.1), ("blue bowl", "bowl", 0.6, -0.2),
                                ("top left corner", "location", 0.8, 0.3)):
            o = SceneObject(name=name, category=cat, visible=True, confidence=1.0)
            o.pose.pose.position.x, o.pose.pose.position.y = x, y
            o.size.x = o.size.y = o.size.z = 0.04 if cat == "block" else 0.0
            msg.objects.append(o)
        self.scene.publish(msg)
        img = Image(height=48, width=64, encoding="rgb8", step=64 * 3, data=bytes(range(256)) * 36)
        img.header.frame_id = "camera_color_optical_frame"
        deadline = time.monotonic() + 15.0
        while self.image.get_subscription_count() == 0 and time.monotonic() < deadline:
            self.ex.spin_once(timeout_sec=0.1)
        for _ in range(3):  # camera_rate announces at most 2 frames a second
            self.image.publish(img)
            self.ex.spin_once(timeout_sec=0.6)



def test_over_tls_estop_is_one_click_and_reads_and_control_need_the_token(ros_domain: int, playwright: Any,
                                                                         tmp_path: Path) -> None:
    from monologue_bringup.up import Supervisor
    from monologue_web.core.certs import make_certificate

    port = _free_port()
    cert, key, _ = make_certificate(tmp_path / "tls", ["localhost", "127.0.0.1"], days=1)
    env = dict(os.environ)
    env["MONOLOGUE_FAKE_RTDE"] = json.dumps({"time_scale": 5.0, "objects": []})
    env["MONOLOGUE_FAKE_RTDE_LOG"] = str(tmp_path / "commands.jsonl")
    env["MONOLOGUE_WEB_TOKEN"] = "test-token-4711"
    lines: list[str] = []
    sup = Supervisor("ur5e", "embedded", config_dir=REPO / "config", sink=lines.append, env=env,
                     nodes=["skills", "web"], node_params={
                         "skills": {"ur5e.rtde_factory": "skills_node.robots.ur5e.testing.fake_rtde:factories_from_env",
                                    "ur5e.probe": "false", "status_rate": "10.0", "approval.mode": "skill",
                                    "approval.timeout": "60.0"},
                         "web": {"host": "0.0.0.0", "port": str(port), "transcript_dir": str(tmp_path),
                                 "tls_cert": str(cert), "tls_key": str(key),
                                 "bag_dirs": json.dumps([str(REPO / "test" / "fixtures" / "bags")])}})
    url = f"https://127.0.0.1:{port}"
    trusted = ssl.create_default_context(cafile=str(cert))  # a client that trusts the generated certificate
    # Chromium trusts exactly this certificate, as an operator who imported it does
    with _chromium(playwright, tmp_path / "profile", [f"--ignore-certificate-errors-spki-list={_spki_sha256(cert)}"]) as browser:
        sup.start()
        ros = _TestNode()
        page = browser.new_page()
        try:
            deadline = time.monotonic() + 60.0
            while True:  # the node starts with the graph
                try:
                    page.goto(url + "/", timeout=5000)
                    page.wait_for_selector("#token-row:not([hidden])", timeout=5000)
                    break
                except Exception:
                    assert time.monotonic() < deadline, "web monitor did not come up:\n" + "\n".join(lines[-60:])
                    page.wait_for_timeout(300)
            assert any("without TLS" in x for x in lines) is False
            # bound to 0.0.0.0: reads need the token, from the page's own origin too, and over plain HTTPS
            statuses = page.evaluate("async () => Promise.all(['/api/state', '/api/history', '/api/bags',"
                                     " '/api/camera.jpg'].map(async (p) => (await fetch(p)).status))")
            assert statuses == [401, 401, 401, 401], statuses
            assert page.text_content("#conn") == "log in with the token"
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(url + "/api/state", context=trusted, timeout=10)
            assert e.value.code == 401
            req = urllib.request.Request(url + "/api/state", headers={"X-Monologue-Token": "test-token-4711"})
            with urllib.request.urlopen(req, context=trusted, timeout=10) as r:
                assert r.status == 200 and "events" in json.loads(r.read())
            # E-STOP: one click, without the token, once the skills node listens (it starts after the page can)
            deadline = time.monotonic() + 60.0
            while ros.node.count_subscribers("/estop") == 0:
                assert time.monotonic() < deadline, "no skills node subscribed to estop:\n" + "\n".join(lines[-60:])
                time.sleep(0.1)
            page.click("#estop")
            page.wait_for_function("() => document.querySelector('#message').textContent === 'e-stop sent on estop'",
                                   timeout=15000)
            # the reset needs the token: refused before logging in, and with a wrong one
            page.click("#estop-reset")
            page.wait_for_selector("#message.error", timeout=10000)
            assert "refused (401)" in page.text_content("#message")
            page.fill("#token", "wrong")
            page.click("#login")
            page.wait_for_function("() => document.querySelector('#message').textContent.startsWith('login refused (401)')",
                                   timeout=10000)
            page.fill("#token", "test-token-4711")
            page.click("#login")
            page.wait_for_selector("#conn.on", timeout=15000)  # wss:// with the session cookie
            # the one click latched the robot; the reset clears it
            page.wait_for_selector("#status.latched", timeout=15000)
            assert "E-STOP LATCHED" in page.text_content("#status")
            assert page.get_attribute("#estop", "class") == "estop latched"
            page.click("#estop-reset")
            page.wait_for_selector("#status.ok", timeout=15000)
            # robot/status (websocket) may show the reset before the page has the POST's answer
            page.wait_for_function("() => document.querySelector('#message').textContent === 'e-stop reset'",
                                   timeout=15000)
            cookies = {c["name"]: c for c in browser.cookies(url)}
            assert cookies[f"monologue_session_{port}"]["secure"] and cookies[f"monologue_session_{port}"]["httpOnly"]
            assert cookies[f"monologue_csrf_{port}"]["secure"] and cookies[f"monologue_csrf_{port}"]["sameSite"] == "Strict"

            # the robot's questions are served while the page is open (and only then, see the end)
            assert ros.action_served("ask_human", True, 15.0), "no ask_human server while the page is open"
            # the approval gate (approval.mode skill) asks in the page: deny refuses the skill, approve runs it
            result = ros.execute_skill("home")
            page.wait_for_selector("#approval-box:not([hidden])", timeout=30000)
            assert "home" in page.text_content("#approval")
            page.click("#deny")
            res = ros.wait(result, 30.0)
            assert res.error_code == res.PRECONDITION_FAILED, (res.error_code, res.error_msg)
            assert "did not approve" in res.error_msg
            page.wait_for_selector("#approval-box[hidden]", state="attached", timeout=10000)
            result = ros.execute_skill("home")
            page.wait_for_selector("#approval-box:not([hidden])", timeout=30000)
            page.click("#approve")
            res = ros.wait(result, 60.0)
            assert res.error_code == res.NONE, (res.error_code, res.error_msg)
            moves = [json.loads(x)["cmd"] for x in (tmp_path / "commands.jsonl").read_text().splitlines()]
            assert any(m.startswith("move") for m in moves), moves[-10:]

            # the scene's top view and the camera frame (published here as perception and a camera would)
            ros.publish_scene_and_image()
            page.wait_for_function("() => document.querySelector('#topview').dataset.objects"
                                   " && JSON.parse(document.querySelector('#topview').dataset.objects).includes('red block')",
                                   timeout=15000)
            page.wait_for_selector("#camera:not([hidden])", timeout=15000)
            assert page.eval_on_selector("#camera", "i => [i.naturalWidth, i.naturalHeight]") == [64, 48]
            assert page.get_attribute("#camera", "data-topic") == "perception/detections_image"
            # the recorded bags with their statistics
            page.wait_for_selector("#bags tbody tr[data-bag=sim_demo]", timeout=10000)
            row = page.text_content("#bags tbody tr[data-bag=sim_demo]")
            assert "2516" in row and "43.4 s" in row and "/monologue/transcript" in row
            # with no page open, the console serves neither ask_human nor the approvals: another person-facing
            # server (monologue-human) is then the only one, and no rejection races its answer
            page.goto("about:blank")
            assert ros.action_served("ask_human", False, 15.0), "ask_human still served with no page open"
            assert ros.action_served("approve_motion", False, 15.0), "approvals still served with no page open"
        finally:
            print("\n".join(lines[-80:]))  # shown when the test fails
            ros.close()
            page.close()
            codes = sup.stop()
    crashed = {n: c for n, c in codes.items() if c not in (0, -2, -15, 130)}
    assert not crashed, "\n".join(lines[-80:])


# ---- the console's defences in the browser (the app served as the node serves it, fake controls: no graph) ----
ATTACK_JS = """
async (target) => {
  const paths = PATHS;
  const body = '{"text": "Put the red block in the red bowl.", "approve": true, "a": "="}';
  const out = {};
  // a page on another port of the console's host can read its cookies: the console's CSRF value
  const csrf = (document.cookie.match(/monologue_csrf_[0-9]+=([^;]+)/) || [])[1] || "";
  out.csrf_readable = csrf !== "";
  for (const p of paths) {
    const r = [];
    try {  // a "simple" request: no preflight, sent with the cookies; the page cannot read the answer
      await fetch(target + p, { method: "POST", mode: "no-cors", credentials: "include",
                                headers: { "Content-Type": "text/plain" }, body });
      r.push("sent");
    } catch (e) { r.push("no-cors failed"); }
    try {  // with the stolen CSRF value and the token header: needs a CORS preflight first
      const x = await fetch(target + p, { method: "POST", mode: "cors", credentials: "include",
        headers: { "Content-Type": "application/json", "X-Monologue-CSRF": csrf, "X-Monologue-Token": "guess" }, body });
      r.push("cors " + x.status);
    } catch (e) { r.push("cors blocked"); }
    // a plain HTML form posted into a hidden frame
    const frame = document.createElement("iframe");
    frame.name = "f" + p.replace(/[^a-z]/g, "");
    document.body.appendChild(frame);
    const f = document.createElement("form");
    f.method = "POST"; f.action = target + p; f.target = frame.name; f.enctype = "text/plain";
    const i = document.createElement("input");
    i.name = '{"text": "x", "approve": true, "a": "'; i.value = '"}';
    f.appendChild(i); document.body.appendChild(f); f.submit();
    out[p] = r;
  }
  // cross-site websocket hijacking: the live transcript, read from the attacker's page
  out.ws = await new Promise((done) => {
    const ws = new WebSocket(target.replace("http", "ws") + "/ws");
    let got = false;
    ws.onmessage = () => { got = true; };
    ws.onclose = () => done(got ? "read" : "refused");
    setTimeout(() => done(got ? "read" : "no answer"), 5000);
  });
  await new Promise((w) => setTimeout(w, 1500));  // the forms' posts
  return out;
}
""".replace("PATHS", json.dumps(CONTROL_PATHS))


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _console_logger() -> tuple[logging.Logger, _Records]:
    logger = logging.getLogger(f"web_test_{time.monotonic_ns()}")
    records = _Records()
    logger.addHandler(records)
    logger.setLevel(logging.INFO)
    return logger, records


@contextlib.contextmanager
def _attacker_site(html: str) -> Iterator[int]:
    """Another web site on this machine: a tiny HTTP server on another loopback port serving `html`."""
    page = html.encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *_: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        thread.join(timeout=10.0)
        server.server_close()


def test_another_origin_cannot_control_or_read_and_estop_stays_one_click(browser: Any) -> None:
    from monologue_web.core.state import EventView, MonitorState
    from monologue_web.testing import FakeControls, Served, served_app, settings

    controls = FakeControls()
    state = MonitorState()
    state.on_event(EventView("e1", 0, "HUMAN_INSTRUCTION", "Human: a secret instruction."))
    logger, records = _console_logger()
    with Served(served_app(settings(), controls, logger, state=state)) as port, _attacker_site("<!doctype html><p>cats") as evil:
        console = f"http://127.0.0.1:{port}"
        page = browser.new_page()
        attacker = browser.new_page()
        try:
            page.goto(console + "/")  # the operator has the console open: its cookies are in the browser
            page.wait_for_selector("#conn.on", timeout=15000)
            for origin in (f"http://127.0.0.1:{evil}/", f"http://localhost:{evil}/"):  # same site, other site
                attacker.goto(origin)
                out = attacker.evaluate(ATTACK_JS, console)
                assert out["ws"] != "read", (origin, out)
                for path in CONTROL_PATHS:
                    assert out[path][1] == "cors blocked", (origin, path, out[path])  # the preflight is refused
                # 127.0.0.1:<other port> reads the console's cookies (cookies ignore ports): only the Origin
                # check stops it; localhost is another host, whose pages do not see them at all
                assert out["csrf_readable"] is origin.startswith("http://127.0.0.1"), (origin, out)
            assert controls.calls == [], controls.calls  # nothing was carried out, E-STOP included
            refused = "\n".join(x for x in records.lines if x.startswith("refused"))
            for path in CONTROL_PATHS:  # every attempt reached the console and was refused there
                assert f"refused POST {path} " in refused and f"refused OPTIONS {path} " in refused, path
            assert f"refused WS /ws from 127.0.0.1: Origin 'http://127.0.0.1:{evil}'" in refused

            # DNS rebinding: the attacker's name resolved to 127.0.0.1, the page loaded from "their" site
            r = attacker.goto(f"http://rebind.test:{port}/")
            assert r is not None and r.status == 403 and "DNS rebinding" in (attacker.text_content("body") or "")
            status = attacker.evaluate("async (u) => (await fetch(u, {method: 'POST'})).status",
                                       f"http://rebind.test:{port}/api/estop")
            assert status == 403 and controls.calls == []

            # the console itself: E-STOP is one click; the other controls pass the full check unseen
            page.click("#estop")
            page.wait_for_function("() => document.querySelector('#message').textContent === 'e-stop sent'",
                                   timeout=10000)
            page.click("#estop-reset")
            page.wait_for_function("() => document.querySelector('#message').textContent === 'e-stop reset'",
                                   timeout=10000)
            page.click("#cancel")
            page.wait_for_function("() => document.querySelector('#message').textContent === 'cancel requested'",
                                   timeout=10000)
            assert controls.calls == [("estop",), ("estop_reset",), ("cancel",)]
            # a console restarted behind the page (new signing key): the page gets a new CSRF value itself
            page.evaluate("(name) => { document.cookie = name + '=stale.value; path=/'; }", f"monologue_csrf_{port}")
            page.evaluate("() => { session.csrf = 'stale.value'; document.querySelector('#message').textContent = ''; }")
            page.click("#cancel")
            page.wait_for_function("() => document.querySelector('#message').textContent === 'cancel requested'",
                                   timeout=10000)
            assert controls.calls[-1] == ("cancel",) and len(controls.calls) == 4
        finally:
            attacker.close()
            page.close()


def test_plain_http_rebinding_and_foreign_origin_are_refused() -> None:
    """The same checks without a browser: a foreign Host header (rebinding) and a foreign Origin."""
    from monologue_web.testing import FakeControls, Served, served_app, settings

    controls = FakeControls()
    logger, _ = _console_logger()
    with Served(served_app(settings(), controls, logger)) as port:
        for path in ("/", "/api/state", *CONTROL_PATHS):
            for headers in ({"Host": f"rebind.test:{port}"}, {"Origin": "http://evil.example"}):
                req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers,
                                             method="POST" if path in CONTROL_PATHS else "GET",
                                             data=b"{}" if path in CONTROL_PATHS else None)
                with pytest.raises(urllib.error.HTTPError) as e:
                    urllib.request.urlopen(req, timeout=10)
                assert e.value.code == 403, (path, headers)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/state", timeout=10) as r:
            assert r.status == 200
    assert controls.calls == []


def test_tls_with_the_generated_certificate(playwright: Any, browser: Any, tmp_path: Path) -> None:
    """monologue-web-cert's pair serves the page over https: a browser that trusts that certificate gets
    the page, the wss:// websocket and a one-click E-STOP; a browser that does not refuses the connection."""
    from monologue_web.testing import FakeControls, Served, served_app, settings

    out = subprocess.run([sys.executable, "-m", "monologue_web.core.certs", "--out", str(tmp_path / "tls"),
                          "--name", "localhost", "--name", "127.0.0.1", "--days", "1"],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    assert "made with openssl" in out or "made with cryptography" in out, out
    cert, key = tmp_path / "tls" / "web_cert.pem", tmp_path / "tls" / "web_key.pem"
    controls = FakeControls()
    logger, _ = _console_logger()
    s = settings(tls_cert=str(cert), tls_key=str(key))
    with Served(served_app(s, controls, logger), cert, key) as port:
        untrusting = browser.new_page()
        try:
            with pytest.raises(Exception, match="ERR_CERT"):
                untrusting.goto(f"https://127.0.0.1:{port}/", timeout=10000)
        finally:
            untrusting.close()
        with _chromium(playwright, tmp_path / "profile", [f"--ignore-certificate-errors-spki-list={_spki_sha256(cert)}"]) as b:
            page = b.new_page()
            page.goto(f"https://127.0.0.1:{port}/", timeout=15000)
            page.wait_for_selector("#conn.on", timeout=15000)
            assert page.evaluate("() => location.protocol") == "https:"
            page.click("#estop")
            page.wait_for_function("() => document.querySelector('#message').textContent === 'e-stop sent'",
                                   timeout=10000)
            page.click("#cancel")
            page.wait_for_function("() => document.querySelector('#message').textContent === 'cancel requested'",
                                   timeout=10000)
            page.close()
    assert controls.calls == [("estop",), ("cancel",)]
