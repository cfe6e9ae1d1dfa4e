"""The Foxglove bridge as a real process over DDS: a websocket client speaking the Foxglove protocol
(the SDK's server names it `foxglove.sdk.v1`; the messages are those of `foxglove.websocket.v1`) gets
the transcript channel advertised as CDR with its ros2msg schema, subscribes, and receives a
TranscriptEvent published before it connected (latched: replayed to the late client) and one published
while it is subscribed, each decoding with rclpy's deserializer to the published text."""
from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.system]
TOPIC = "/monologue/transcript"


def _until(cond: Any, timeout_s: float, what: str, log: list[str]) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}\n" + "\n".join(log[-40:]))


def _next_text(ws: Any, op: str, deadline: float) -> dict[str, Any]:
    """The next text message with `op`, skipping others (binary ones included)."""
    while time.monotonic() < deadline:
        msg = ws.recv(timeout=max(0.01, deadline - time.monotonic()))
        if isinstance(msg, str) and json.loads(msg).get("op") == op:
            return dict(json.loads(msg))
    raise TimeoutError(op)


def _next_binary(ws: Any, deadline: float) -> bytes:
    while time.monotonic() < deadline:
        msg = ws.recv(timeout=max(0.01, deadline - time.monotonic()))
        if isinstance(msg, bytes):
            return msg
    raise TimeoutError("message data")


def test_a_foxglove_client_receives_the_transcript(ros_domain: int) -> None:
    import rclpy
    from rclpy.serialization import deserialize_message
    from websockets.sync.client import connect

    from monologue_bringup.up import Supervisor
    from monologue_common.qos import TRANSCRIPT
    from monologue_interfaces.msg import TranscriptEvent
    from monologue_web.core.foxglove_server import SUBPROTOCOL

    lines: list[str] = []
    sup = Supervisor(config_dir=REPO / "config", nodes=["foxglove_bridge"], sink=lines.append,
                     node_params={"foxglove_bridge": {"port": "0", "discovery_period": "0.2"}})
    rclpy.init()
    node = rclpy.create_node("foxglove_probe")
    pub = node.create_publisher(TranscriptEvent, "monologue/transcript", TRANSCRIPT)
    first = TranscriptEvent(episode_id="fox-1", index=0, kind=TranscriptEvent.KIND_SCENE_OBJECTS,
                            text="Scene: There is a red block and a 蓝色 bowl.", data_json="{}")
    pub.publish(first)  # before the bridge exists: it must get this from the latched history
    sup.start()
    try:
        found = _until(lambda: next((re.search(r"Foxglove server on ws://127\.0\.0\.1:(\d+)", ln)
                                     for ln in lines if "Foxglove server on" in ln), None), 30.0, "the bridge", lines)
        port = int(found.group(1))
        _until(lambda: any(f"bridging {TOPIC}" in ln for ln in lines), 30.0, "the transcript channel", lines)
        with connect(f"ws://127.0.0.1:{port}", subprotocols=[SUBPROTOCOL], compression=None,
                     open_timeout=10) as ws:
            deadline = time.monotonic() + 20.0
            info = _next_text(ws, "serverInfo", deadline)
            assert info["name"] == "inner_monologue"
            channel: dict[str, Any] = {}
            while not channel:
                adv = _next_text(ws, "advertise", deadline)
                channel = next((c for c in adv["channels"] if c["topic"] == TOPIC), {})
            assert channel["encoding"] == "cdr"
            assert channel["schemaEncoding"] == "ros2msg"
            assert channel["schemaName"] == "monologue_interfaces/msg/TranscriptEvent"
            assert "string episode_id" in channel["schema"]
            assert "MSG: builtin_interfaces/msg/Time" in channel["schema"]
            ws.send(json.dumps({"op": "subscribe", "subscriptions": [{"id": 7, "channelId": channel["id"]}]}))

            def event(frame: bytes) -> Any:
                assert frame[0] == 1 and int.from_bytes(frame[1:5], "little") == 7  # message data, our subscription
                return deserialize_message(frame[13:], TranscriptEvent)

            late = event(_next_binary(ws, deadline))
            assert (late.episode_id, late.index, late.text) == ("fox-1", 0, first.text)
            pub.publish(TranscriptEvent(episode_id="fox-1", index=1, kind=TranscriptEvent.KIND_HUMAN_INSTRUCTION,
                                        text="Human: Put the red block in the 蓝色 bowl.", data_json="{}"))
            live = event(_next_binary(ws, deadline))
            assert (live.index, live.text) == (1, "Human: Put the red block in the 蓝色 bowl.")
    finally:
        node.destroy_node()
        rclpy.shutdown()
        codes = sup.stop()
    assert all(c in (0, -2, -15, 130) for c in codes.values()), f"{codes}\n" + "\n".join(lines[-40:])
