"""The Foxglove bridge's ROS-free core: settings, topic selection, channel specs (ros2msg schemas), the
history of latched topics, and the foxglove-sdk server replaying that history to a late client."""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest

from monologue_common.core.msgdefs import SEPARATOR, DefinitionError, MessageDefinitions
from monologue_common.core.settings import parameters_from_files
from monologue_common.interfaces import installed_definitions
from monologue_web.core.foxglove_channels import (
    NS,
    History,
    TopicSelection,
    channel_spec,
    foxglove_settings_from_parameters,
    history_depth,
    parse_pattern_values,
)

REPO = Path(__file__).resolve().parents[3]
PARAMS: dict[str, object] = {
    "host": "127.0.0.1", "port": 0, "name": "test", "topics": ["/monologue/transcript", "camera/*"],
    "max_rates": ["/camera/*/image_raw=5.0"], "history": ["/monologue/transcript=1000"], "default_history": 1,
    "depth": 10, "discovery_period": 0.5, "message_backlog": 64,
}


@pytest.fixture(scope="module")
def definitions() -> MessageDefinitions:
    """Definitions from the installed interface packages (needs `. scripts/env.sh`)."""
    return installed_definitions()


# ---- settings -------------------------------------------------------------------------------------


def test_the_configured_section_is_valid_and_binds_loopback() -> None:
    params = parameters_from_files([REPO / "config" / "monologue.yaml"], "foxglove_bridge")
    s = foxglove_settings_from_parameters(params)
    assert (s.host, s.port, s.local) == ("127.0.0.1", 8765, True)
    assert s.unused == ()
    assert {"/monologue/transcript", "/monologue/step_scores", "/tf", "/tf_static", "/robot/status",
            "/camera/color/image_raw", "/camera/color/camera_info", "/sim/ground_truth"} <= set(s.topics)
    assert s.history["/monologue/transcript"] == 1000
    assert s.url() == "ws://127.0.0.1:8765" and s.url(4242) == "ws://127.0.0.1:4242"


def test_settings_list_every_problem_at_once() -> None:
    bad = {**PARAMS, "port": 70000, "topics": [""], "max_rates": ["/camera/*=fast"], "history": ["/tf_static=1.5"]}
    with pytest.raises(ValueError) as e:
        foxglove_settings_from_parameters(bad)
    text = str(e.value)
    for part in ("port", "topics", "max_rates", "history"):
        assert part in text, text


def test_topics_are_normalized_and_other_hosts_are_not_local() -> None:
    s = foxglove_settings_from_parameters({**PARAMS, "host": "0.0.0.0"})
    assert s.topics == ("/monologue/transcript", "/camera/*")
    assert not s.local and s.url(1) == "ws://0.0.0.0:1"
    assert foxglove_settings_from_parameters({**PARAMS, "host": "::1"}).url(2) == "ws://[::1]:2"


def test_pattern_values_parse_and_refuse_nonsense() -> None:
    assert parse_pattern_values(["camera/*=2.5", ""], "max_rates") == {"/camera/*": 2.5}
    assert parse_pattern_values(["/tf_static=20"], "history", integer=True) == {"/tf_static": 20.0}
    for item in ("/a", "=3", "/a=0", "/a=-1", "/a=x"):
        with pytest.raises(ValueError):
            parse_pattern_values([item], "max_rates")


# ---- topic selection, history --------------------------------------------------------------------


def test_selection_matches_names_and_patterns_and_limits_rates() -> None:
    sel = TopicSelection(["/monologue/transcript", "/camera/*/image_raw", "tf"], {"/camera/*": 2.0})
    available = ["/tf", "/camera/color/image_raw", "/camera/color/camera_info", "/monologue/transcript",
                 "/monologue/transcript_extra", "/rosout"]
    assert sel.wanted(available) == ["/camera/color/image_raw", "/monologue/transcript", "/tf"]
    t0 = 10 * NS
    assert sel.admit("/camera/color/image_raw", t0)
    assert not sel.admit("/camera/color/image_raw", t0 + NS // 4)  # 2 Hz: 0.5 s apart
    assert sel.admit("/camera/color/image_raw", t0 + NS // 2)
    assert all(sel.admit("/tf", t0) for _ in range(3))  # no limit
    with pytest.raises(ValueError):
        TopicSelection([" "])


def test_history_depth_only_for_latched_topics() -> None:
    s = foxglove_settings_from_parameters(PARAMS)
    assert history_depth("/monologue/transcript", True, s) == 1000
    assert history_depth("/robot/status", True, s) == 1
    assert history_depth("/monologue/transcript", False, s) == 0


def test_history_keeps_the_last_messages_per_topic() -> None:
    h = History()
    h.configure("/a", 2)
    for i in range(4):
        h.add("/a", bytes([i]), i)
        h.add("/volatile", bytes([i]), i)  # not configured: not kept
    assert h.messages("/a") == [(b"\x02", 2), (b"\x03", 3)]
    assert h.messages("/volatile") == []
    h.configure("/a", 0)
    assert h.messages("/a") == []


# ---- channel specs: ros2msg schemas ---------------------------------------------------------------


def test_transcript_channel_is_cdr_with_its_ros2msg_schema(definitions: MessageDefinitions) -> None:
    spec = channel_spec("/monologue/transcript", "monologue_interfaces/msg/TranscriptEvent", definitions,
                        transient_local=True, history=1000)
    assert (spec.message_encoding, spec.schema_encoding) == ("cdr", "ros2msg")
    text = spec.schema.decode("utf-8")
    assert "string episode_id" in text and "uint8 KIND_EPISODE_END=10" in text
    assert f"{SEPARATOR}\nMSG: builtin_interfaces/msg/Time\n" in text  # the nested stamp's definition
    assert spec.history == 1000
    assert spec.metadata == {"ros_type": "monologue_interfaces/msg/TranscriptEvent", "durability": "transient_local"}


def test_nested_types_each_get_one_msg_block(definitions: MessageDefinitions) -> None:
    spec = channel_spec("/tf", "tf2_msgs/msg/TFMessage", definitions)
    text = spec.schema.decode("utf-8")
    for dep in ("geometry_msgs/msg/TransformStamped", "std_msgs/msg/Header", "geometry_msgs/msg/Transform",
                "geometry_msgs/msg/Vector3", "geometry_msgs/msg/Quaternion", "builtin_interfaces/msg/Time"):
        assert text.count(f"MSG: {dep}\n") == 1, dep
    assert spec.history == 0 and spec.metadata["durability"] == "volatile"


def test_unknown_types_are_refused(definitions: MessageDefinitions) -> None:
    with pytest.raises(DefinitionError):
        channel_spec("/x", "no_such_pkg/msg/Nothing", definitions)


# ---- the foxglove-sdk server: advertise, live messages, history replayed to a late client ----------


def _binary(ws: object, count: int, timeout_s: float = 5.0) -> list[bytes]:
    """The next `count` binary frames (message data), skipping text ones; fewer if `timeout_s` (s) passes."""
    out: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < count and time.monotonic() < deadline:
        try:
            msg = ws.recv(timeout=max(0.01, deadline - time.monotonic()))  # type: ignore[attr-defined]
        except TimeoutError:
            break
        if isinstance(msg, bytes):
            out.append(msg)
    return out


def _frames(got: list[bytes]) -> list[tuple[int, int, int, bytes]]:
    """Binary message data: opcode 1, subscription id (u32 LE), log time (u64 LE, ns), payload."""
    return [(m[0], int.from_bytes(m[1:5], "little"), int.from_bytes(m[5:13], "little"), m[13:]) for m in got]


def test_a_late_client_gets_the_kept_messages_then_live_ones(definitions: MessageDefinitions) -> None:
    from websockets.sync.client import ClientConnection, connect

    from monologue_web.core.foxglove_server import SUBPROTOCOL, FoxgloveServer

    def channels_of(ws: ClientConnection) -> dict[str, dict[str, object]]:
        deadline = time.monotonic() + 5
        out: dict[str, dict[str, object]] = {}
        while len(out) < 2 and time.monotonic() < deadline:
            msg = ws.recv(timeout=5)
            if isinstance(msg, str) and json.loads(msg)["op"] == "advertise":
                out.update({c["topic"]: c for c in json.loads(msg)["channels"]})
        return out

    def subscribe(ws: ClientConnection, channels: dict[str, dict[str, object]]) -> None:
        ws.send(json.dumps({"op": "subscribe", "subscriptions": [
            {"id": 1, "channelId": channels["/latched"]["id"]}, {"id": 2, "channelId": channels["/volatile"]["id"]}]}))

    server = FoxgloveServer("127.0.0.1", 0, "unit", logging.getLogger("test.foxglove"))
    url = f"ws://127.0.0.1:{server.port}"
    try:
        assert server.port > 0
        latched = channel_spec("/latched", "std_msgs/msg/String", definitions, transient_local=True, history=2)
        volatile = channel_spec("/volatile", "std_msgs/msg/String", definitions)
        assert server.advertise(latched) and server.advertise(volatile) and not server.advertise(volatile)
        for i in range(3):
            server.publish("/latched", f"old{i}".encode(), (i + 1) * NS)
        server.publish("/volatile", b"missed", NS)
        server.publish("/unknown", b"ignored", NS)
        with connect(url, subprotocols=[SUBPROTOCOL], compression=None, open_timeout=5) as first:
            channels = channels_of(first)
            assert channels["/latched"]["schemaEncoding"] == "ros2msg"
            assert channels["/latched"]["encoding"] == "cdr"
            assert channels["/latched"]["schemaName"] == "std_msgs/msg/String"
            subscribe(first, channels)
            got_first = _binary(first, 2)
            # a second client joins: the kept messages go to it alone, not again to the first
            with connect(url, subprotocols=[SUBPROTOCOL], compression=None, open_timeout=5) as second:
                subscribe(second, channels_of(second))
                got_second = _binary(second, 2)
                server.publish("/volatile", b"live", 5 * NS)
                got_first += _binary(first, 1)
                got_second += _binary(second, 1)
        expected = [(1, 1, 2 * NS, b"old1"), (1, 1, 3 * NS, b"old2"), (1, 2, 5 * NS, b"live")]
        assert _frames(got_first) == expected
        assert _frames(got_second) == expected
    finally:
        server.stop()


# ---- the layout file ------------------------------------------------------------------------------


def _leaves(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    assert isinstance(node, dict) and node["direction"] in ("row", "column"), node
    return _leaves(node["first"]) + _leaves(node["second"])


def test_the_layout_shows_bridged_topics_in_every_panel() -> None:
    import fnmatch
    import re

    layout = json.loads((REPO / "config" / "foxglove_layout.json").read_text(encoding="utf-8"))
    panels = _leaves(layout["layout"])
    assert sorted(panels) == sorted(layout["configById"]) and len(set(panels)) == len(panels)
    assert {p.split("!")[0] for p in panels} >= {"3D", "Image", "RawMessages", "Plot", "Table", "Indicator"}
    bridged = foxglove_settings_from_parameters(
        parameters_from_files([REPO / "config" / "monologue.yaml"], "foxglove_bridge")).topics
    text = json.dumps(layout["configById"])
    used = set(re.findall(r'"(/[a-z_/]+?)(?:\.[a-z_\[\]:.]+)?"', text)) - {"/move_base_simple/goal", "/clicked_point",
                                                                          "/initialpose"}
    assert {"/monologue/transcript", "/monologue/step_scores", "/robot/status", "/camera/color/image_raw",
            "/monologue/markers"} <= used
    assert [t for t in used if not any(fnmatch.fnmatchcase(t, p) for p in bridged)] == []
