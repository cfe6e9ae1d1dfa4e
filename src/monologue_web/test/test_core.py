"""The web monitor's ROS-free core: state model, settings, access rules, history and the FastAPI app."""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from monologue_domain.transcript import EventKind, Transcript
from monologue_web.core.access import Access
from monologue_web.core.app import ControlError, create_app
from monologue_web.core.history import episode_file, list_episodes
from monologue_web.core.settings import WebSettings, settings_from_parameters
from monologue_web.core.state import EventView, MonitorState, ScoreRow

PARAMS: dict[str, object] = {
    "host": "127.0.0.1", "port": 0, "read_only": False, "token_env": "TEST_WEB_TOKEN",
    "transcript_dir": "/nonexistent", "max_events": 100, "answer_timeout": 60.0, "serve_ask_human": True,
    "ros_timeout": 5.0,
}


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

    def estop(self) -> str:
        self.calls.append(("estop",))
        return "e-stop sent"

    def estop_reset(self) -> str:
        self.calls.append(("estop_reset",))
        return "e-stop reset"


def client(s: WebSettings, env: dict[str, str] | None = None, tdir: Path | None = None,
           state: MonitorState | None = None) -> tuple[TestClient, FakeControls]:
    controls = FakeControls()
    app = create_app(state or MonitorState(), controls, Access(s, env or {}), tdir or s.transcript_dir,
                     logging.getLogger("test"), poll_s=0.05)
    return TestClient(app), controls


def test_settings_validate_everything_at_once() -> None:
    s = settings()
    assert s.local and s.url(8080) == "http://127.0.0.1:8080/" and s.unused == ()
    with pytest.raises(ValueError) as e:
        settings(port=70000, max_events=0, token_env="")
    assert "port" in str(e.value) and "max_events" in str(e.value) and "token_env" in str(e.value)
    assert not settings(host="0.0.0.0").local


def test_state_tracks_episode_skill_scores_and_status() -> None:
    st = MonitorState(max_events=3)
    v0 = st.version
    st.on_event(EventView("e1", 0, "SCENE_OBJECTS", "Scene: There is a red block."))
    st.on_event(EventView("e1", 1, "ROBOT_ACTION", "Robot action: Pick the red block.",
                          {"skill": "pick_place", "args": ["red block", "red bowl"]}))
    st.on_event(EventView("e1", 1, "ROBOT_ACTION", "duplicate"))  # redelivered: ignored
    st.on_skill_state("moving")
    snap = st.snapshot()
    assert [e["index"] for e in snap["events"]] == [0, 1]
    assert snap["skill"] == {"skill": "pick_place", "args": ["red block", "red bowl"],
                             "text": "Robot action: Pick the red block.", "state": "moving"}
    st.on_event(EventView("e1", 2, "SUCCESS", "Success: True", {"success": True}))
    st.on_event(EventView("e1", 3, "HUMAN_INTERJECTION", "Human: 请停止。"))
    snap = st.snapshot()
    assert snap["skill"] == {} and [e["index"] for e in snap["events"]] == [1, 2, 3]  # max_events
    assert json.loads(json.dumps(snap, ensure_ascii=False))["events"][-1]["text"] == "Human: 请停止。"
    st.on_scores("e1", 2, [ScoreRow("a", 0.7, 1.0, 0.7), ScoreRow("b", 0.3, 0.1, 0.03)], "a")
    assert [r["chosen"] for r in st.snapshot()["scores"]["rows"]] == [True, False]
    st.on_status({"ok": False, "estop_latched": True})
    v = st.version
    st.on_status({"ok": False, "estop_latched": True})  # unchanged: no update
    assert st.version == v > v0
    assert st.wait_change(v, 0.01) == v
    st.on_event(EventView("e2", 0, "HUMAN_INSTRUCTION", "Human: next"))  # a new episode starts over
    snap = st.snapshot()
    assert snap["episode_id"] == "e2" and len(snap["events"]) == 1 and snap["scores"] == {}


def test_access_rules() -> None:
    assert Access(settings(), {}).refusal(None) is None
    assert "read-only" in (Access(settings(read_only=True), {}).refusal(None) or "")
    remote = settings(host="0.0.0.0")
    assert "unset" in (Access(remote, {}).refusal("x") or "")
    a = Access(remote, {"TEST_WEB_TOKEN": "s3cret"})
    assert a.needs_token and a.refusal(None) and a.refusal("wrong") and a.refusal("s3cret") is None


def test_app_control_and_token() -> None:
    c, controls = client(settings())
    assert c.get("/api/config").json() == {"read_only": False, "needs_token": False, "token_env": "TEST_WEB_TOKEN"}
    r = c.post("/api/instruction", json={"text": "  把红色方块放进   红色碗里。 ", "strategy": "saycan"})
    assert r.status_code == 200 and controls.calls == [("instruction", "把红色方块放进 红色碗里。", "saycan")]
    assert c.post("/api/instruction", json={"text": " "}).status_code == 422
    assert c.post("/api/answer", json={"text": "yes"}).status_code == 409
    assert c.post("/api/estop").status_code == 200 and controls.calls[-1] == ("estop",)
    remote, controls = client(settings(host="0.0.0.0"), {"TEST_WEB_TOKEN": "s3cret"})
    assert remote.post("/api/estop").status_code == 403
    assert remote.post("/api/cancel", headers={"X-Monologue-Token": "nope"}).status_code == 403
    assert controls.calls == []
    assert remote.post("/api/estop", headers={"X-Monologue-Token": "s3cret"}).status_code == 200
    ro, controls = client(settings(read_only=True))
    assert ro.post("/api/estop").status_code == 403 and controls.calls == []


def test_page_and_websocket() -> None:
    st = MonitorState()
    c, _ = client(settings(), state=st)
    page = c.get("/")
    assert page.status_code == 200 and 'id="estop"' in page.text and "http" not in page.text.split("<body>")[1]
    assert c.get("/app.js").status_code == 200 and c.get("/style.css").status_code == 200
    assert st.viewers == 0
    with c.websocket_connect("/ws") as ws:
        assert ws.receive_json()["events"] == []
        assert st.viewers == 1  # the robot's questions are taken only while a page is open
        st.on_event(EventView("e", 0, "SCENE_OBJECTS", "Scene: There is a red block."))
        msg = ws.receive_json()
        while "events" not in msg:
            msg = ws.receive_json()
        assert msg["events"][0]["text"] == "Scene: There is a red block."


def test_history_lists_views_and_downloads(tmp_path: Path) -> None:
    t = Transcript("ep1", tmp_path / "ep1.jsonl", header={"instruction": "x"})
    t.append(EventKind.HUMAN_INSTRUCTION, "Human: Put the red block in the red bowl.")
    t.append(EventKind.ROBOT_ACTION, "Robot action: Pick the red block and place it in the red bowl.")
    t.end({"success": True, "reason": "done"})
    (tmp_path / "notes.txt").write_text("not a transcript")
    rows = list_episodes(tmp_path)
    assert [(r["name"], r["instruction"], r["events"], r["success"]) for r in rows] == [
        ("ep1.jsonl", "Human: Put the red block in the red bowl.", 2, True)]
    assert episode_file(tmp_path, "../ep1.jsonl") is None and episode_file(tmp_path, "nope.jsonl") is None
    c, _ = client(settings(), tdir=tmp_path)
    assert c.get("/api/history").json()[0]["episode_id"] == "ep1"
    ep: dict[str, Any] = c.get("/api/history/ep1.jsonl").json()
    assert [e["kind"] for e in ep["events"]] == ["HUMAN_INSTRUCTION", "ROBOT_ACTION"] and ep["end"]["success"]
    dl = c.get("/api/history/ep1.jsonl/download")
    assert dl.status_code == 200 and dl.content == (tmp_path / "ep1.jsonl").read_bytes()
    assert "attachment" in dl.headers["content-disposition"]
    assert c.get("/api/history/..%2Fetc.jsonl").status_code == 404
