"""Issue 20 R3: a bag whose recorder was killed (SIGKILL: no metadata.yaml, no MCAP summary, the last
chunk cut) is readable up to the recorder's last flush (the system test kills a real recorder:
test/test_faults_system.py)."""
from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

import pytest
from rclpy.serialization import serialize_message

from monologue_bag.core.bagio import Bag, BagError, BagWriter, QosSpec
from monologue_common.core.msgdefs import MessageDefinitions

TOPIC, TYPE = "/monologue/transcript", "monologue_interfaces/msg/TranscriptEvent"


def _event(i: int) -> bytes:
    from monologue_interfaces.msg import TranscriptEvent

    return bytes(serialize_message(TranscriptEvent(episode_id="e1", index=i, kind=1, text=f"Robot action: {i}.")))


def _killed_copy(src: Path, dst: Path, size: int | None = None) -> Path:
    """The directory as a SIGKILL would leave it: the files as they are now (the MCAP cut to `size` bytes)."""
    dst.mkdir()
    for p in src.iterdir():
        data = p.read_bytes()
        (dst / p.name).write_bytes(data[:size] if p.suffix == ".mcap" and size is not None else data)
    return dst


@pytest.mark.parametrize("compress", [False, True])
def test_a_killed_recorder_leaves_every_flushed_message_readable(
        tmp_path: Path, definitions: MessageDefinitions, log: logging.Logger, compress: bool,
        caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "run"
    writer = BagWriter(path, definitions, log, compress=compress, custom_data={"monologue.robot": "sim"}).open()
    writer.add_topic(TOPIC, TYPE, QosSpec(True, True, 1000))
    t0 = time.time_ns()
    for i in range(3):
        writer.write(TOPIC, t0 + i, _event(i))
    assert writer.flush() and not writer.flush()  # nothing new: nothing written
    first = (path / "run.mcap").stat().st_size
    for i in range(3, 5):  # send times from another publisher can be older than what is in the file
        writer.write(TOPIC, t0 - i, _event(i))
    assert writer.flush()
    writer.write(TOPIC, t0 + 5, _event(5))  # still in memory when the recorder dies
    killed = _killed_copy(path, tmp_path / "killed")
    assert not (killed / "metadata.yaml").exists()
    with caplog.at_level(logging.WARNING), Bag(killed) as bag:
        got = [m.index for _t, m in bag.decoded(TOPIC)]
        assert bag.topics[TOPIC].qos.transient_local and bag.custom_data == {}
        assert bag.topics[TOPIC].rihs01 == definitions.get(TYPE).rihs01  # derived again from the definition
    assert got == [4, 3, 0, 1, 2]  # in time order
    assert "was not finished" in caplog.text
    assert not (killed / "metadata.yaml").exists()  # reading changes nothing in the bag directory
    # a kill in the middle of writing a chunk loses that chunk only
    cut = _killed_copy(path, tmp_path / "cut", size=first + 40)
    with Bag(cut) as bag:
        assert [m.index for _t, m in bag.decoded(TOPIC)] == [0, 1, 2]
    writer.close()
    with Bag(path) as bag:  # the finished bag has everything
        assert [m.index for _t, m in bag.decoded(TOPIC)] == [4, 3, 0, 1, 2, 5]


def test_an_unfinished_bag_cut_inside_its_header_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.mcap").write_bytes(b"\x89MC")
    with pytest.raises(BagError, match="cannot read the unfinished bag"):
        Bag(tmp_path / "run")
    shutil.rmtree(tmp_path / "run")
    (tmp_path / "run").mkdir()
    with pytest.raises(BagError, match="no metadata.yaml"):
        Bag(tmp_path / "run")
