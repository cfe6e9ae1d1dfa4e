"""The web monitor in a real browser: headless Debian Chromium driven by Playwright (nothing downloaded;
scripts/setup.sh installs chromium), against real node graphs over DDS.

* robot:=sim_kinematic with the embedded LLM and `web`: an instruction typed in the page runs an episode;
  the page shows the Scene line, a `Robot action`, the step's candidates as a bar chart (chosen marked),
  and the finished episode in the history (viewable, downloadable).
* robot:=ur5e's skills node on the fake RTDE (the kinematic world has no e-stop) with `web` bound to
  0.0.0.0: the page's control is refused without the token; with it, the E-STOP button latches
  robot/status and the reset clears it; the approval gate's request shows in the page (deny: the skill
  is refused, approve: the arm moves); a scene description and a camera frame published by the test show
  as the top view and the camera image; the fixture bag is listed with its statistics.

MONOLOGUE_WEB_SCREENSHOT=<png> saves a screenshot of the episode page (docs/images/monitor.png).
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import time
from collections.abc import Iterator
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
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Debian's Chromium under Playwright, with a fresh profile; skipped when not installed."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).is_file():
        pytest.skip("Debian chromium is not installed (scripts/setup.sh installs it as root)")
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    profile = tmp_path_factory.mktemp("chromium_profile")
    with sync_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 900}, accept_downloads=True)
        try:
            yield context
        finally:
            context.close()


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
        page.wait_for_function("document.querySelector('#message').textContent !== ''", timeout=30000)
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
        page.wait_for_function("(JSON.parse(document.querySelector('#topview').dataset.objects || '[]')).length > 0",
                               timeout=30000)
        shot = os.environ.get("MONOLOGUE_WEB_SCREENSHOT")
        page.wait_for_selector("#transcript li[data-kind=EPISODE_END]", timeout=LLM_WAIT_MS)
        page.wait_for_function("!['running', 'sending'].includes(document.querySelector('#goal').className"
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



def test_estop_button_latches_and_control_needs_the_token(ros_domain: int, browser: Any, tmp_path: Path) -> None:
    from monologue_bringup.up import Supervisor

    port = _free_port()
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
                                 "bag_dirs": json.dumps([str(REPO / "test" / "fixtures" / "bags")])}})
    sup.start()
    page = browser.new_page()
    ros = _TestNode()
    try:
        _wait_up(page, f"http://127.0.0.1:{port}/", lines)
        assert page.is_visible("#token-row")
        page.wait_for_selector("#status.ok", timeout=30000)
        # without the token: refused, nothing latched
        page.click("#estop")
        page.wait_for_selector("#message.error", timeout=10000)
        assert "refused (403)" in page.text_content("#message")
        page.click("#estop")  # refused again; robot/status keeps coming at 10 Hz and stays ok
        page.wait_for_selector("#message.error", timeout=10000)
        assert page.get_attribute("#status", "data-estop-latched") == "false"
        # with the token: the e-stop latches robot/status, the reset clears it
        page.fill("#token", "test-token-4711")
        page.click("#estop")
        page.wait_for_selector("#status.latched", timeout=15000)
        assert "E-STOP LATCHED" in page.text_content("#status")
        assert page.get_attribute("#estop", "class") == "estop latched"
        page.click("#estop-reset")
        page.wait_for_selector("#status.ok", timeout=15000)
        # robot/status (websocket) may show the reset before the page has the POST's answer
        page.wait_for_function("document.querySelector('#message').textContent === 'e-stop reset'",
                               timeout=15000)

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
        page.wait_for_function("document.querySelector('#topview').dataset.objects"
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
