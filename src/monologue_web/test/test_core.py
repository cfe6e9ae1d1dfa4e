"""The web monitor's ROS-free core: state model, settings, access rules, history and the FastAPI app."""
from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from monologue_domain.transcript import EventKind, Transcript
from monologue_web.core.history import episode_file, list_episodes
from monologue_web.core.media import jpeg_from_image, list_bags
from monologue_web.core.state import EventView, MonitorState, ScoreRow, StepStats
from monologue_web.testing import PORT, access, client, settings


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
    from monologue_web.core.access import Kind

    own = {"host": f"127.0.0.1:{PORT}"}
    assert access(settings()).check(Kind.CONTROL, "c", own, {}) is not None  # no CSRF value
    a = access(settings())
    value = a.issue_csrf()
    assert a.check(Kind.CONTROL, "c", {**own, "x-monologue-csrf": value}, {a.csrf_cookie: value}) is None
    ro = access(settings(read_only=True))
    assert "read-only" in getattr(ro.check(Kind.ESTOP, "c", own, {}), "reason", "")
    remote = settings(host="0.0.0.0")
    assert "unset" in getattr(access(remote).try_token("c", "x"), "reason", "")
    a = access(remote, {"TEST_WEB_TOKEN": "s3cret"})
    assert a.needs_token and a.try_token("c", None) and a.try_token("c", "wrong") and a.try_token("c", "s3cret") is None


def test_app_control_and_token() -> None:
    c, controls = client(settings())
    assert c.get("/api/config").json() == {"read_only": False, "needs_token": False, "token_env": "TEST_WEB_TOKEN",
                                           "authenticated": True, "tls": False}
    r = c.post("/api/instruction", json={"text": "  把红色方块放进   红色碗里。 ", "strategy": "saycan"})
    assert r.status_code == 200 and controls.calls == [("instruction", "把红色方块放进 红色碗里。", "saycan")]
    assert c.post("/api/instruction", json={"text": " "}).status_code == 422
    assert c.post("/api/answer", json={"text": "yes"}).status_code == 409
    assert c.post("/api/estop").status_code == 200 and controls.calls[-1] == ("estop",)
    remote, controls = client(settings(host="0.0.0.0"), {"TEST_WEB_TOKEN": "s3cret"})
    assert remote.post("/api/estop_reset").status_code == 401
    assert remote.post("/api/cancel", headers={"X-Monologue-Token": "nope"}).status_code == 401
    assert controls.calls == []
    # E-STOP stays one click: no token, no CSRF value
    assert remote.post("/api/estop", headers={"X-Monologue-CSRF": ""}).status_code == 200
    assert remote.post("/api/estop_reset", headers={"X-Monologue-Token": "s3cret"}).status_code == 200
    assert controls.calls == [("estop",), ("estop_reset",)]
    ro, controls = client(settings(read_only=True))
    assert ro.post("/api/estop").status_code == 403 and controls.calls == []


def test_page_and_websocket() -> None:
    st = MonitorState()
    c, _ = client(settings(), state=st)
    page = c.get("/")
    assert page.status_code == 200 and 'id="estop"' in page.text and "http" not in page.text.split("<body>")[1]
    assert c.get("/app.js").status_code == 200 and c.get("/style.css").status_code == 200
    assert st.viewers == 0
    with c.websocket_connect(f"ws://127.0.0.1:{PORT}/ws") as ws:
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


def test_settings_lists_and_defaults_of_the_media_and_approval_parameters() -> None:
    s = settings(bag_dirs=["~/bags", ""])
    assert s.camera_topics == ("perception/detections_image", "camera/color/image_raw")
    assert s.bag_dirs == (Path("~/bags").expanduser(),) and s.serve_approvals
    with pytest.raises(ValueError) as e:
        settings(camera_rate=0.0, approval_action="")
    assert "camera_rate" in str(e.value) and "approval_action" in str(e.value)


def test_state_keeps_step_costs_scene_camera_and_approval() -> None:
    st = MonitorState()
    st.on_event(EventView("e1", 0, "SCENE_OBJECTS", "Scene: a red block."))
    rows = [ScoreRow("Robot action: Pick the red block.", 0.7, 1.0, 0.7), ScoreRow("done.", 0.3, 1.0, 0.3)]
    st.on_scores("e1", 1, rows, "done.", StepStats(812, 40, 1.25, 1.5))
    st.on_scores("e1", 1, rows, "done.", StepStats(812, 41, 1.0, 1.2))  # the same step again replaces it
    st.on_scores("e1", 2, rows, "done.", StepStats(830, 12, 0.5, 0.6))
    snap = st.snapshot()
    assert [(x["step"], x["new_tokens"], x["llm_s"]) for x in snap["steps"]] == [(1, 41, 1.0), (2, 12, 0.5)]
    assert snap["steps"][0]["candidates"] == 2 and snap["steps"][0]["chosen"] == "done."
    st.on_event(EventView("e2", 0, "SCENE_OBJECTS", "Scene: nothing."))  # a new episode starts a new table
    assert st.snapshot()["steps"] == []
    v = st.version
    scene = {"frame": "base_link", "source": "oracle", "held": [], "objects": [{"name": "red block", "x": 0.5}]}
    st.on_scene(scene)
    st.on_scene(dict(scene))  # unchanged: no new version
    assert st.version == v + 1 and st.snapshot()["scene"]["objects"][0]["name"] == "red block"
    st.on_camera({"topic": "camera/color/image_raw", "seq": 3, "width": 64, "height": 48, "stamp": 1.0})
    st.on_approval("a1", "Approve this robot motion? (yes/no) pick_place", 30.0)
    snap = st.snapshot()
    assert snap["camera"]["seq"] == 3 and snap["approval"]["request"].startswith("Approve")
    st.clear_approval("other")
    assert st.snapshot()["approval"]
    st.clear_approval("a1")
    assert st.snapshot()["approval"] == {}


def test_camera_frames_become_jpegs_and_bad_frames_are_refused() -> None:
    rgb = np.zeros((48, 64, 3), np.uint8)
    rgb[:, :32] = (255, 0, 0)
    jpg = jpeg_from_image(rgb.tobytes(), 64, 48, "rgb8")
    assert jpg[:3] == b"\xff\xd8\xff"
    from PIL import Image
    img = Image.open(io.BytesIO(jpg))
    assert img.size == (64, 48) and img.getpixel((5, 20))[0] > 200 and img.getpixel((60, 20))[0] < 60
    bgr = jpeg_from_image(rgb[:, :, ::-1].tobytes(), 64, 48, "bgr8")
    assert Image.open(io.BytesIO(bgr)).getpixel((5, 20))[0] > 200  # the same picture
    wide = jpeg_from_image(np.zeros((10, 1280, 3), np.uint8).tobytes(), 1280, 10, "rgb8", max_width=640)
    assert Image.open(io.BytesIO(wide)).size == (640, 5)
    with pytest.raises(ValueError, match="unsupported colour encoding"):
        jpeg_from_image(b"\0" * 100, 10, 5, "16UC1")
    with pytest.raises(ValueError, match="too short"):
        jpeg_from_image(b"\0" * 10, 64, 48, "rgb8")
    c, _ = client(settings(), camera=lambda: None)
    assert c.get("/api/camera.jpg").status_code == 404
    c, _ = client(settings(), camera=lambda: jpg)
    r = c.get("/api/camera.jpg")
    assert r.status_code == 200 and r.headers["content-type"] == "image/jpeg" and r.content == jpg


def test_bag_statistics_from_metadata(tmp_path: Path) -> None:
    fixture = Path(__file__).resolve().parents[3] / "test" / "fixtures" / "bags"
    bags = list_bags([fixture, tmp_path / "missing"])
    assert [b["name"] for b in bags] == ["sim_demo"]
    b = bags[0]
    assert b["storage"] == "mcap" and b["messages"] == 2516 and abs(b["duration_s"] - 43.42052819) < 1e-6
    assert b["size"] == (fixture / "sim_demo" / "sim_demo.mcap").stat().st_size
    assert b["custom_data"]["monologue.robot"] == "sim"
    counts = {t["topic"]: t["messages"] for t in b["topics"]}
    assert counts["/rosout"] == 0 and sum(counts.values()) == 2516
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "metadata.yaml").write_text("rosbag2_bagfile_information: [1, 2\n")
    broken = list_bags([tmp_path])
    assert broken[0]["name"] == "broken" and "unreadable metadata.yaml" in broken[0]["error"]
    c, _ = client(settings(), bag_dirs=(fixture,))
    assert [x["name"] for x in c.get("/api/bags").json()] == ["sim_demo"]


def test_approval_endpoint_needs_control() -> None:
    c, controls = client(settings())
    assert c.post("/api/approval", json={"approve": True}).json()["message"] == "approved"
    assert c.post("/api/approval", json={"approve": False}).json()["message"] == "denied"
    assert controls.calls == [("approve", "True"), ("approve", "False")]
    assert c.post("/api/approval", json={}).status_code == 422
    c, controls = client(settings(read_only=True))
    assert c.post("/api/approval", json={"approve": True}).status_code == 403 and controls.calls == []
