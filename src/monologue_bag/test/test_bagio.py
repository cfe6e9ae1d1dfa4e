"""Bags we write open in rosbags (hash-checked) and in the MCAP reference readers, schemas included."""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from rclpy.serialization import serialize_message

from monologue_bag.core.bagio import Bag, BagError, BagWriter, QosSpec
from monologue_common.core.msgdefs import MessageDefinitions

TRANSCRIPT = "monologue_interfaces/msg/TranscriptEvent"
SCENE = "monologue_interfaces/msg/SceneDescription"
IMAGE = "sensor_msgs/msg/Image"
MARKERS = "visualization_msgs/msg/MarkerArray"


def _messages() -> list[tuple[str, str, QosSpec, object]]:
    from sensor_msgs.msg import Image
    from visualization_msgs.msg import Marker, MarkerArray

    from monologue_interfaces.msg import SceneDescription, SceneObject, TranscriptEvent

    scene = SceneDescription(source="ground_truth", objects=[SceneObject(name="red block", category="block")])
    scene.header.frame_id = "base_link"
    scene.objects[0].pose.pose.position.x = 0.42
    image = Image(height=2, width=3, encoding="rgb8", step=9, data=bytes(range(18)))
    image.header.frame_id = "camera_color_optical_frame"
    markers = MarkerArray(markers=[Marker(ns="transcript", id=3, type=Marker.TEXT_VIEW_FACING, text="Success: True")])
    return [
        ("/monologue/transcript", TRANSCRIPT, QosSpec(True, True, 1000),
         TranscriptEvent(episode_id="e1", index=0, kind=3, text="Scene: There is a red block.",
                         data_json='{"objects": ["red block"]}')),
        ("/sim/ground_truth", SCENE, QosSpec(True, True, 1), scene),
        ("/camera/color/image_raw", IMAGE, QosSpec(False, False, 5), image),
        ("/monologue/markers", MARKERS, QosSpec(), markers),
    ]


@pytest.fixture
def bag_dir(tmp_path: Path, definitions: MessageDefinitions, log: logging.Logger) -> Path:
    path = tmp_path / "run"
    path.mkdir()
    (path / "llm_cassette.jsonl").write_text("")  # sidecar written before the recorder starts
    writer = BagWriter(path, definitions, log, compress=True, custom_data={"monologue.robot": "sim"}).open()
    t0 = time.time_ns()
    for i, (topic, type_name, qos, msg) in enumerate(_messages()):
        writer.add_topic(topic, type_name, qos)
        writer.write(topic, t0 + i * 1_000_000, serialize_message(msg))
    writer.add_topic("/monologue/transcript", TRANSCRIPT, QosSpec())  # again: ignored
    writer.close()
    writer.close()  # idempotent
    return path


def test_layout_and_metadata_are_rosbag2_mcap(bag_dir: Path) -> None:
    assert sorted(p.name for p in bag_dir.iterdir()) == ["llm_cassette.jsonl", "metadata.yaml", "run.mcap"]
    info = yaml.safe_load((bag_dir / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["version"] == 9 and info["storage_identifier"] == "mcap"
    assert info["relative_file_paths"] == ["run.mcap"] and info["message_count"] == 4
    topics = {t["topic_metadata"]["name"]: t for t in info["topics_with_message_count"]}
    meta = topics["/monologue/transcript"]["topic_metadata"]
    assert meta["type"] == TRANSCRIPT and meta["serialization_format"] == "cdr"
    assert meta["type_description_hash"].startswith("RIHS01_")
    assert meta["offered_qos_profiles"][0]["durability"] == "transient_local"  # for ros2 bag play
    assert info["custom_data"] == {"monologue.robot": "sim"}


def test_rosbags_reads_back_every_message(bag_dir: Path) -> None:
    with Bag(bag_dir) as bag:
        assert {t: i.type_name for t, i in bag.topics.items()} == {t: ty for t, ty, _q, _m in _messages()}
        assert bag.topics["/sim/ground_truth"].qos == QosSpec(True, True, 1)
        assert bag.topics["/camera/color/image_raw"].qos.reliable is False
        msgs = list(bag.messages())
        assert [m.topic for m in msgs] == [t for t, _ty, _q, _m in _messages()]
        event = bag.decode(msgs[0])
        assert (event.index, event.kind, event.text) == (0, 3, "Scene: There is a red block.")
        scene = bag.decode(msgs[1])
        assert scene.objects[0].name == "red block" and scene.objects[0].pose.pose.position.x == 0.42
        image = bag.decode(msgs[2])
        assert (image.width, image.encoding, bytes(image.data)) == (3, "rgb8", bytes(range(18)))
        assert bag.decode(msgs[3]).markers[0].text == "Success: True"
        assert bag.custom_data == {"monologue.robot": "sim"}
        assert bag.cassette_path.is_file()
        assert list(bag.messages(["/not/recorded"])) == []


def test_types_are_parsed_when_first_decoded_once_per_process_and_a_wrong_type_hash_is_refused(
        bag_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A type's definition is parsed (and its deserializer generated) when a message of it is first decoded,
    once per process, as a replay opens its bag twice; its recorded type hash is checked then, and the
    cache is keyed by the hashes too, so a changed hash is still checked."""
    from collections import OrderedDict

    from monologue_bag.core import bagio

    parsed: list[str] = []
    parse = bagio._types_of

    def counting(c: Any) -> Any:
        parsed.append(c.msgtype)
        return parse(c)

    monkeypatch.setattr(bagio, "_BAG_TYPES", OrderedDict())
    monkeypatch.setattr(bagio, "_types_of", counting)
    texts = []
    for _ in range(2):
        with Bag(bag_dir) as bag:
            texts.append([bag.decode(m).text for m in bag.messages(["/monologue/transcript"])])
    assert parsed == [TRANSCRIPT] and texts == [["Scene: There is a red block."]] * 2
    meta = bag_dir / "metadata.yaml"
    text = meta.read_text()
    digest = yaml.safe_load(text)["rosbag2_bagfile_information"]["topics_with_message_count"][0][
        "topic_metadata"]["type_description_hash"]
    meta.write_text(text.replace(digest, "RIHS01_" + "0" * 64))
    with Bag(bag_dir) as bag:
        message = next(bag.messages(["/monologue/transcript"]))
        with pytest.raises(BagError, match="hash mismatch"):
            bag.decode(message)
    assert parsed == [TRANSCRIPT] * 2


@pytest.mark.parametrize("which", ["written here", "the committed fixture"])
def test_bags_read_as_rosbags_reads_them(bag_dir: Path, which: str) -> None:
    """Bag parses metadata.yaml itself (libyaml; rosbags' ruamel took most of the time to open a small bag):
    topics, hashes, counts, QoS, times and every message in order are what rosbags' AnyReader reads."""
    from rosbags.highlevel import AnyReader

    path = bag_dir if which == "written here" else Path(__file__).resolve().parents[3] / "test/fixtures/bags/sim_demo"
    with Bag(path) as bag, AnyReader([path]) as ref:
        assert {t: (i.type_name, i.count, i.rihs01, i.qos) for t, i in bag.topics.items()} == {
            c.topic: (c.msgtype, c.msgcount, c.digest,
                      QosSpec.from_rosbags(getattr(c.ext, "offered_qos_profiles", []))) for c in ref.connections}
        assert (bag.start_ns, bag.end_ns) == (ref.start_time, ref.end_time)
        assert [(m.topic, m.log_time_ns, m.data) for m in bag.messages()] == [
            (c.topic, t, bytes(raw)) for c, t, raw in ref.messages()]
        some = sorted(bag.topics)[:2]
        assert [(m.topic, m.log_time_ns) for m in bag.messages(some)] == [
            (c.topic, t) for c, t, _raw in ref.messages(connections=[c for c in ref.connections if c.topic in some])]
    (bag_dir / "metadata.yaml").write_text("rosbag2_bagfile_information: [not, a, mapping\n")
    with pytest.raises(BagError, match="cannot open bag"):
        Bag(bag_dir)


def test_mcap_reference_readers_decode_our_schemas(bag_dir: Path) -> None:
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    with open(bag_dir / "run.mcap", "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        summary = reader.get_summary()
        assert summary is not None
        schemas = {s.name: s for s in summary.schemas.values()}
        assert {s.encoding for s in schemas.values()} == {"ros2msg"}
        assert b"MSG: builtin_interfaces/msg/Time" in schemas[TRANSCRIPT].data
        assert b"string data_json" in schemas[TRANSCRIPT].data  # our own interface, embedded
        assert {c.message_encoding for c in summary.channels.values()} == {"cdr"}
        decoded = {c.topic: m for _s, c, _r, m in reader.iter_decoded_messages()}
    assert decoded["/monologue/transcript"].data_json == '{"objects": ["red block"]}'
    assert decoded["/sim/ground_truth"].objects[0].category == "block"
    assert decoded["/camera/color/image_raw"].height == 2
    assert decoded["/monologue/markers"].markers[0].ns == "transcript"


def test_an_existing_bag_is_never_overwritten(bag_dir: Path, definitions: MessageDefinitions,
                                              log: logging.Logger) -> None:
    before = (bag_dir / "run.mcap").read_bytes()
    with pytest.raises(BagError, match="already holds a bag"):
        BagWriter(bag_dir, definitions, log, compress=True).open()
    assert (bag_dir / "run.mcap").read_bytes() == before


def test_writing_unknown_topics_or_after_close_fails(tmp_path: Path, definitions: MessageDefinitions,
                                                      log: logging.Logger) -> None:
    w = BagWriter(tmp_path / "b", definitions, log, compress=True).open()
    with pytest.raises(BagError, match="not added"):
        w.write("/x", 1, b"")
    w.add_topic("/x", TRANSCRIPT, QosSpec())
    with pytest.raises(BagError, match="added as"):
        w.add_topic("/x", SCENE, QosSpec())
    w.close()
    with pytest.raises(BagError, match="closed"):
        w.write("/x", 1, b"")
    with pytest.raises(BagError, match="no metadata.yaml"):
        Bag(tmp_path)
