"""rosbag2 directories in MCAP storage: write raw CDR messages of any topics, read them back (no rclpy).

Writing goes through `rosbags` (pure Python), which produces the `metadata.yaml` + `<name>.mcap`
layout that `ros2 bag info/play` and Foxglove open. Schemas come from MessageDefinitions (the
installed interface files), so our own interfaces are self-describing in the bag.

A bag directory may also hold sidecar files next to the bag: the planner's LLM cassette
(CASSETTE_FILE) and its transcript files (TRANSCRIPTS_DIR).
"""
from __future__ import annotations

import contextlib
import functools
import logging
import struct
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

import yaml
from rosbags.interfaces import (
    Connection,
    ConnectionExtRosbag2,
    MessageDefinition,
    MessageDefinitionFormat,
    Qos,
    QosDurability,
    QosHistory,
    QosLiveliness,
    QosReliability,
    QosTime,
)
from rosbags.rosbag2 import Reader, Writer
from rosbags.rosbag2.enums import CompressionFormat, CompressionMode, StoragePlugin
from rosbags.rosbag2.errors import WriterError
from rosbags.rosbag2.metadata import ReaderMetadata, parse_qos
from rosbags.rosbag2.reader import DirectoryReader
from rosbags.rosbag2.storage_mcap import McapReader
from rosbags.rosbag2.storage_mcap import decompress as mcap_decompress
from rosbags.typesys import Stores, get_types_from_idl, get_types_from_msg, get_typestore

from monologue_common.core.msgdefs import MessageDefinitions

from .layout import CASSETTE_FILE, TRANSCRIPTS_DIR, bag_files_in

_NEVER = QosTime(sec=2147483647, nsec=4294967295)  # rosbag2's "infinite" duration


class BagError(Exception):
    """A bag cannot be written or read."""


@dataclass(frozen=True)
class QosSpec:
    """The publisher QoS recorded with a topic, so that `ros2 bag play` offers the same."""

    reliable: bool = True
    transient_local: bool = False
    depth: int = 10

    def to_rosbags(self) -> Qos:
        return Qos(
            history=QosHistory.KEEP_LAST,
            depth=self.depth,
            reliability=QosReliability.RELIABLE if self.reliable else QosReliability.BEST_EFFORT,
            durability=QosDurability.TRANSIENT_LOCAL if self.transient_local else QosDurability.VOLATILE,
            deadline=_NEVER,
            lifespan=_NEVER,
            liveliness=QosLiveliness.AUTOMATIC,
            liveliness_lease_duration=_NEVER,
            avoid_ros_namespace_conventions=False,
        )

    @classmethod
    def from_rosbags(cls, profiles: Sequence[Any]) -> QosSpec:
        """The most permissive offer: reliable/transient-local only if every publisher was."""
        if not profiles:
            return cls()
        return cls(
            reliable=all(p.reliability == QosReliability.RELIABLE for p in profiles),
            transient_local=all(p.durability == QosDurability.TRANSIENT_LOCAL for p in profiles),
            depth=max(int(p.depth) for p in profiles) or 10,
        )


class _DirWriter(Writer):
    """rosbags' Writer, but the directory may already exist (sidecar files are written into it first)."""

    def __init__(self, path: Path) -> None:
        # Writer.__init__ refuses an existing path; give it one that cannot exist, then point it at ours.
        super().__init__(path / "\0absent", version=Writer.VERSION_LATEST, storage_plugin=StoragePlugin.MCAP)
        self.path = path
        self.metapath = path / "metadata.yaml"

    def open(self) -> None:
        existing = bag_files_in(self.path)
        if existing:
            raise WriterError(f"{self.path} already holds a bag ({existing[0].name}); not overwriting")
        self.path.mkdir(mode=0o755, parents=True, exist_ok=True)
        self.storage = self.STORAGE_PLUGINS[self.storage_plugin](self.path, self.compression_mode)


class BagWriter:
    """Writes serialized (CDR) messages into a rosbag2 MCAP directory; thread-safe."""

    def __init__(
        self,
        path: Path,
        definitions: MessageDefinitions,
        logger: logging.Logger,
        compress: bool,
        custom_data: Mapping[str, str] | None = None,
    ) -> None:
        self.path = Path(path)
        self._defs = definitions
        self._log = logger
        self._lock = threading.Lock()
        self._writer = _DirWriter(self.path)
        if compress:  # zstd-compressed chunks, as `ros2 bag record --compression-mode storage` would not do
            self._writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
        for k, v in (custom_data or {}).items():
            self._writer.set_custom_data(k, v)
        self._connections: dict[str, Connection] = {}
        self.counts: dict[str, int] = {}
        self._open = False

    def open(self) -> BagWriter:
        try:
            self._writer.open()
        except WriterError as e:
            raise BagError(str(e)) from e
        self._open = True
        return self

    @property
    def topics(self) -> dict[str, str]:
        """Topic -> type of every topic added so far."""
        with self._lock:
            return {t: c.msgtype for t, c in self._connections.items()}

    def add_topic(self, topic: str, type_name: str, qos: QosSpec) -> None:
        """Register a topic (once); its schema is built from the installed interface files."""
        definition = self._defs.get(type_name)
        with self._lock:
            if not self._open:
                raise BagError("the bag is not open")
            if topic in self._connections:
                if self._connections[topic].msgtype != type_name:
                    raise BagError(f"topic {topic} was added as {self._connections[topic].msgtype}, not {type_name}")
                return
            self._connections[topic] = self._writer.add_connection(
                topic, type_name, msgdef=definition.text, rihs01=definition.rihs01,
                offered_qos_profiles=[qos.to_rosbags()])
            self.counts[topic] = 0

    def write(self, topic: str, log_time_ns: int, data: bytes) -> None:
        """Append one serialized message received at `log_time_ns` (ns since the epoch)."""
        with self._lock:
            if not self._open:
                raise BagError("the bag is closed")
            conn = self._connections.get(topic)
            if conn is None:
                raise BagError(f"topic {topic} was not added")
            self._writer.write(conn, log_time_ns, data)
            self.counts[topic] += 1

    def flush(self) -> bool:
        """Put the messages buffered so far into the file (rosbags keeps the open MCAP chunk in memory
        until 1 MiB), so a recorder killed later still leaves them readable (Bag reads a bag that was
        never closed). True if anything was written."""
        with self._lock:
            storage = self._writer.storage if self._open else None
            chunk = getattr(storage, "chunk", None)
            if storage is None or chunk is None or not chunk.msgs:
                return False
            storage.close_chunk()  # type: ignore[attr-defined]  # rosbags' McapWriter
            storage.bio.flush()  # type: ignore[attr-defined]
            return True

    def close(self) -> None:
        """Finish the MCAP file and write metadata.yaml; idempotent."""
        with self._lock:
            if not self._open:
                return
            self._open = False
            self._writer.close()
        self._log.info("bag %s closed: %d messages on %d topics", self.path, sum(self.counts.values()),
                       len(self.counts))


@dataclass(frozen=True)
class TopicInfo:
    name: str
    type_name: str
    count: int
    qos: QosSpec
    rihs01: str = ""  # type hash of the definition the bag was recorded with ("" if the bag has none)


@dataclass(frozen=True)
class BagMessage:
    topic: str
    type_name: str
    log_time_ns: int  # ns since the epoch, when the recorder received it
    data: bytes  # serialized CDR, as published


_MCAP_MAGIC = b"\x89MCAP0\r\n"
_OP_FOOTER, _OP_CHUNK, _OP_MESSAGE, _OP_DATA_END = 0x02, 0x06, 0x05, 0x0F


def _chunk_messages(data: bytes, start: int, end: int) -> Iterator[tuple[int, int, bytes]]:
    """(log time ns, channel id, serialized message) of every message in the MCAP chunks of data[start:end]."""
    pos = start
    while pos + 9 <= end:
        op, (length,) = data[pos], struct.unpack_from("<Q", data, pos + 1)
        body = pos + 9
        pos = body + length
        if op != _OP_CHUNK:
            continue
        _t0, _t1, size, crc = struct.unpack_from("<QQQI", data, body)
        (clen,) = struct.unpack_from("<I", data, body + 28)
        compression = data[body + 32: body + 32 + clen].decode()
        (rlen,) = struct.unpack_from("<Q", data, body + 32 + clen)
        at = body + 40 + clen
        records = mcap_decompress(data[at: at + rlen], compression, size, crc)
        i = 0
        while i + 9 <= len(records):
            rop, (rsize,) = records[i], struct.unpack_from("<Q", records, i + 1)
            if rop == _OP_MESSAGE:
                channel, _seq, log_time, _pub = struct.unpack_from("<HIQQ", records, i + 9)
                yield log_time, channel, records[i + 9 + 22: i + 9 + rsize]
            i += 9 + rsize


def _finished_copy(mcap: Path, into: Path) -> None:
    """Write into the directory `into` a complete rosbag2 bag with every record of `mcap`, an MCAP file
    whose writer never finished it (a killed recorder): the records up to the last complete one, then
    DataEnd and a footer without summary, read back and re-written so that metadata.yaml is right."""
    data = mcap.read_bytes()
    if not data.startswith(_MCAP_MAGIC):
        raise BagError(f"{mcap} is not an MCAP file")
    end = pos = len(_MCAP_MAGIC)
    while pos + 9 <= len(data):
        op, (length,) = data[pos], struct.unpack_from("<Q", data, pos + 1)
        if op in (_OP_DATA_END, _OP_FOOTER) or pos + 9 + length > len(data):
            break  # a finished file's summary section, or the record the kill cut
        end = pos = pos + 9 + length
    fixed = into / "cut.mcap"
    fixed.write_bytes(data[:end] + bytes([_OP_DATA_END]) + struct.pack("<QI", 4, 0)
                      + bytes([_OP_FOOTER]) + struct.pack("<QQQI", 20, 0, 0, 0) + _MCAP_MAGIC)
    reader = McapReader(fixed)  # the schemas and channels (rosbags scans the chunks for them)
    reader.open()
    try:
        writer = Writer(into / "bag", version=Writer.VERSION_LATEST, storage_plugin=StoragePlugin.MCAP)
        writer.open()
        # the MCAP file has every definition but not the type hashes (metadata.yaml had them): derive them
        store = get_typestore(Stores.EMPTY)
        for c in reader.connections:
            store.register(get_types_from_msg(c.msgdef.data, c.msgtype))
        conns = {c.id: writer.add_connection(
            c.topic, c.msgtype, typestore=store,
            offered_qos_profiles=list(getattr(c.ext, "offered_qos_profiles", []))) for c in reader.connections}
        # rosbags reads an MCAP file without a summary only if its messages are in time order across chunks,
        # which a recorder writing publishers' send times is not: read the chunks here, in time order
        for t, channel, raw in sorted(_chunk_messages(data, len(_MCAP_MAGIC), end), key=lambda m: m[0]):
            if channel in conns:
                writer.write(conns[channel], t, raw)
        writer.close()
    finally:
        reader.close()
        fixed.unlink()


_SEP = "=" * 80 + "\n"
_DefinitionsKey = tuple[tuple[str, str, str, str], ...]


def _types_of(c: Connection) -> dict[str, Any]:
    """The types of one connection's definition (its own type and every type it uses)."""
    if c.msgdef.format == MessageDefinitionFormat.MSG:
        return dict(get_types_from_msg(c.msgdef.data, c.msgtype))
    types: dict[str, Any] = {}
    if c.msgdef.data.startswith(f"{_SEP}IDL: "):
        for part in c.msgdef.data.split(_SEP)[1:]:
            types.update(get_types_from_idl(part.split("\n", 1)[1]))
    else:
        types.update(get_types_from_idl(c.msgdef.data))
    return types


class BagTypes:
    """A bag's message types from its own definitions, as rosbags' AnyReader builds them, but each type
    parsed and registered when a message of it is first decoded, and its recorded RIHS01 type hash
    checked then (BagError if it differs). Parsing every definition and generating its deserializer
    was most of the time it took to open a small bag, for types a replay never decodes. Thread-safe."""

    def __init__(self, connections: Sequence[Connection]) -> None:
        self._defined = {c.msgtype: c for c in connections if c.msgdef.format != MessageDefinitionFormat.NONE}
        self._store = get_typestore(Stores.EMPTY)
        self._ready: set[str] = set()
        self._lock = threading.Lock()

    def deserialize(self, data: bytes, msgtype: str) -> Any:
        if msgtype not in self._ready:
            self._register(msgtype)
        return self._store.deserialize_cdr(data, msgtype)

    def _register(self, msgtype: str) -> None:
        with self._lock:
            if msgtype in self._ready:
                return
            c = self._defined.get(msgtype)
            if c is None:
                raise BagError(f"the bag holds no definition of {msgtype}")
            try:
                self._store.register(_types_of(c))
                have = self._store.hash_rihs01(msgtype) if c.digest else ""
            except Exception as e:  # rosbags' parser raises several types for a broken definition
                raise BagError(f"cannot read the bag's definition of {msgtype}: {e}") from e
            if c.digest and have != c.digest:
                raise BagError(f"message type {msgtype!r} hash mismatch {have} != {c.digest}")
            self._ready.add(msgtype)


_BAG_TYPES: OrderedDict[_DefinitionsKey, BagTypes] = OrderedDict()
_BAG_TYPES_LOCK = threading.Lock()
BAG_TYPES_KEPT = 8  # BagTypes this process keeps (one per distinct set of definitions)


def bag_types(connections: Sequence[Connection]) -> BagTypes:
    """The BagTypes of these connections' definitions, one per process for the same definitions: a
    replay opens its bag twice (the replay tool, then the bag player; in one process with
    container:=true), and the second finds the types parsed and the deserializers generated."""
    key = tuple(sorted({(c.msgtype, c.msgdef.format.name, c.msgdef.data, str(c.digest)) for c in connections}))
    with _BAG_TYPES_LOCK:
        types = _BAG_TYPES.get(key)
        if types is None:
            types = _BAG_TYPES[key] = BagTypes(connections)
            while len(_BAG_TYPES) > BAG_TYPES_KEPT:
                _BAG_TYPES.popitem(last=False)
        _BAG_TYPES.move_to_end(key)
        return types


class _McapDirectory(DirectoryReader):
    """rosbags' reader of a rosbag2 directory, with metadata.yaml parsed by libyaml: rosbags parses it with
    ruamel in pure Python, most of the time it takes to open a small bag (twice per replay). Only for
    the layout the recorder writes (metadata version <= 9, MCAP files, no file compression); _open_reader
    gives rosbags' own reader every other bag. The fields are rosbags' (DirectoryReader.open)."""

    def __init__(self, path: Path, meta: Mapping[str, Any]) -> None:
        super().__init__(path)
        self._meta = meta

    def open(self) -> None:
        self.stack = contextlib.ExitStack()
        try:
            m = self._meta
            paths = [self.path / PurePath(x).name for x in m["relative_file_paths"]]
            missing = [str(x) for x in paths if not x.exists()]
            if missing:
                raise BagError(f"some bag files are missing: {missing}")
            self.connections = []
            for i, x in enumerate(m["topics_with_message_count"]):
                t = x["topic_metadata"]
                profiles = t.get("offered_qos_profiles", [])
                if isinstance(profiles, str):  # older bags: a YAML document in a string
                    profiles = yaml.load(profiles, Loader=_YAML_LOADER) or []
                if t["serialization_format"] != "cdr":
                    raise BagError(f"serialization format {t['serialization_format']!r} is not supported")
                self.connections.append(Connection(
                    id=i + 1, topic=t["name"], msgtype=t["type"],
                    msgdef=MessageDefinition(MessageDefinitionFormat.NONE, ""),
                    digest=t.get("type_description_hash", ""), msgcount=x["message_count"],
                    ext=ConnectionExtRosbag2(serialization_format=t["serialization_format"],
                                             offered_qos_profiles=parse_qos(profiles)),
                    owner=self))
            count = int(m["message_count"])
            start, duration = int(m["starting_time"]["nanoseconds_since_epoch"]), int(m["duration"]["nanoseconds"])
            self.metadata = ReaderMetadata(
                duration=duration + 1 if count else 0, start_time=start if count else 2**63 - 1,
                end_time=start + duration + 1 if count else 0, message_count=count, compression_format=None,
                compression_mode=None, ros_distro=m.get("ros_distro"), custom=m.get("custom_data"))
            self.files = list(m.get("files", []))
            self.storages = []
            for path in paths:
                storage = McapReader(path)
                storage.open()
                self.stack.callback(storage.close)
                self.storages.append(storage)
            for i, conn in enumerate(self.connections):
                msgdef = next((y.msgdef for x in self.storages for y in x.connections
                               if y.msgtype == conn.msgtype and y.msgdef.format != MessageDefinitionFormat.NONE), None)
                if msgdef is not None:
                    self.connections[i] = conn._replace(msgdef=msgdef)
        except BaseException:
            with contextlib.suppress(Exception):
                self.close()
            raise


_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when PyYAML was built with it


def _open_reader(source: Path) -> Reader | _McapDirectory:
    """An open reader of the rosbag2 directory `source`: _McapDirectory for the layout the recorder
    writes, rosbags' Reader for any other."""
    meta_path = source / "metadata.yaml"
    try:
        info = yaml.load(meta_path.read_text(encoding="utf-8"), Loader=_YAML_LOADER)["rosbag2_bagfile_information"]
        ours = (int(info["version"]) <= 9 and info["storage_identifier"] == "mcap"
                and str(info.get("compression_mode", "") or "").lower() in ("", "none"))
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError):
        ours = False  # rosbags' reader says what is wrong with it
    reader: Reader | _McapDirectory = _McapDirectory(source, info) if ours else Reader(source)
    reader.open()
    return reader


def _decode(types: BagTypes, msg: BagMessage) -> Any:
    return types.deserialize(msg.data, msg.type_name)


class Bag:
    """A recorded rosbag2 directory, read with rosbags (definitions from the bag itself).

    A bag whose recorder was killed (no metadata.yaml, an MCAP file without its summary) is read up to
    the last chunk the recorder flushed, from a finished copy in a temporary directory (logged)."""

    def __init__(self, path: Path, logger: logging.Logger | None = None) -> None:
        self.path = Path(path)
        self._copy: tempfile.TemporaryDirectory[str] | None = None
        source = self.path
        if not (self.path / "metadata.yaml").is_file():
            mcaps = sorted(self.path.glob("*.mcap")) if self.path.is_dir() else []
            if len(mcaps) != 1:
                raise BagError(f"{self.path} is not a rosbag2 directory (no metadata.yaml)")
            self._copy = tempfile.TemporaryDirectory(prefix="monologue_bag_")
            try:
                _finished_copy(mcaps[0], Path(self._copy.name))
            except Exception as e:  # a file cut inside its header, a foreign file, ...
                self._copy.cleanup()
                raise BagError(f"cannot read the unfinished bag {self.path}: {e}") from e
            source = Path(self._copy.name) / "bag"
            (logger or logging.getLogger("monologue_bag")).warning(
                "%s was not finished (no metadata.yaml: the recorder was killed?); reading what it flushed", mcaps[0])
        try:
            self._reader = _open_reader(source)
        except Exception as e:  # rosbags raises several types for corrupt or foreign bags
            if self._copy is not None:
                self._copy.cleanup()
            raise BagError(f"cannot open bag {self.path}: {e}") from e
        self._types = bag_types(self._reader.connections)
        self.topics: dict[str, TopicInfo] = {}
        for c in self._reader.connections:
            profiles = getattr(c.ext, "offered_qos_profiles", [])
            digest = c.digest if str(c.digest).startswith("RIHS01_") else ""
            self.topics[c.topic] = TopicInfo(c.topic, c.msgtype, c.msgcount, QosSpec.from_rosbags(profiles), digest)

    def __enter__(self) -> Bag:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._reader.close()
        if self._copy is not None:
            self._copy.cleanup()

    @property
    def start_ns(self) -> int:
        return int(self._reader.metadata.start_time if isinstance(self._reader, _McapDirectory)
                   else self._reader.start_time)

    @property
    def end_ns(self) -> int:
        return int(self._reader.metadata.end_time if isinstance(self._reader, _McapDirectory)
                   else self._reader.end_time)

    @property
    def custom_data(self) -> dict[str, str]:
        """The `custom_data` of metadata.yaml (who recorded, with which robot and LLM, ...)."""
        if not (self.path / "metadata.yaml").is_file():
            return {}  # an unfinished bag: metadata.yaml is written when the recording ends
        meta = yaml.load((self.path / "metadata.yaml").read_text(encoding="utf-8"), Loader=_YAML_LOADER)
        info = meta.get("rosbag2_bagfile_information", {}) if isinstance(meta, dict) else {}
        return {str(k): str(v) for k, v in (info.get("custom_data") or {}).items()}

    def messages(self, topics: Iterable[str] | None = None) -> Iterator[BagMessage]:
        """Messages in log-time order, optionally only of `topics` (unknown topics are ignored)."""
        wanted = None if topics is None else set(topics)
        conns = [c for c in self._reader.connections if wanted is None or c.topic in wanted]
        if not conns:
            return
        for conn, t, raw in self._reader.messages(connections=conns):
            yield BagMessage(conn.topic, conn.msgtype, int(t), bytes(raw))

    def decode(self, msg: BagMessage) -> Any:
        """The message as a rosbags dataclass (attribute access like the ROS message)."""
        return _decode(self._types, msg)

    def decoder(self) -> Callable[[BagMessage], Any]:
        """decode(), still usable after the bag is closed (it needs only the bag's type definitions)."""
        return functools.partial(_decode, self._types)

    def decoded(self, topic: str) -> list[tuple[int, Any]]:
        """(log time in ns, decoded message) of every message on `topic`; [] if not recorded."""
        return [(m.log_time_ns, self.decode(m)) for m in self.messages([topic])]

    @property
    def cassette_path(self) -> Path:
        return self.path / CASSETTE_FILE

    @property
    def transcripts_dir(self) -> Path:
        return self.path / TRANSCRIPTS_DIR
