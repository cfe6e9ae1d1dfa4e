"""Message definitions for bag schemas, read from installed interface files (no rclpy).

rosbag2 and Foxglove need every channel's schema as `ros2msg` text: the type's own definition,
then each type it depends on after a separator line and a `MSG: pkg/kind/Name` line. This module
builds that text from what `rosidl` installs under `share/<pkg>/`:

* `msg/<Name>.msg`, `srv/<Name>.srv`, `action/<Name>.action`: the source text, used verbatim (with
  comments and constants) for messages and for the request/response/goal/result/feedback parts;
* `<kind>/<Name>.json`: the type description and RIHS01 hashes of every type derived from the file
  (e.g. `ExecuteSkill_FeedbackMessage`, `GetAffordances_Event`), used for the dependency graph, the
  hashes, and the text of the derived wrapper types that have no source file.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SEPARATOR = "=" * 80
KINDS = ("msg", "srv", "action")
# Derived type suffix -> index of the `---` section of the source file it is, or None if generated.
_SUFFIXES: dict[str, tuple[tuple[str, int | None], ...]] = {
    "msg": (("", 0),),
    "srv": (("_Request", 0), ("_Response", 1), ("_Event", None)),
    "action": (
        ("_SendGoal_Request", None), ("_SendGoal_Response", None), ("_SendGoal_Event", None),
        ("_GetResult_Request", None), ("_GetResult_Response", None), ("_GetResult_Event", None),
        ("_FeedbackMessage", None), ("_Goal", 0), ("_Result", 1), ("_Feedback", 2),
    ),
}
# type_description_interfaces/msg/FieldType: base ids; +48 fixed array, +96 bounded, +144 unbounded sequence.
_PRIMITIVES = {
    1: "", 2: "int8", 3: "uint8", 4: "int16", 5: "uint16", 6: "int32", 7: "uint32", 8: "int64", 9: "uint64",
    10: "float32", 11: "float64", 12: "float64", 13: "char", 14: "wchar", 15: "bool", 16: "byte",
    17: "string", 18: "wstring", 19: "string", 20: "wstring", 21: "string", 22: "wstring",
}
_NESTED_IDS = (1, 49, 97, 145)

ShareLookup = Callable[[str], Path]
"""Package name -> its installed share directory; raises KeyError if the package is unknown."""


class DefinitionError(Exception):
    """A type name is malformed or its interface files are not installed."""


@dataclass(frozen=True)
class TypeDefinition:
    """The schema of one message type as rosbag2 stores it."""

    name: str  # pkg/kind/Name
    text: str  # ros2msg: own definition, then the dependencies
    rihs01: str  # "RIHS01_<sha256>" type hash from the installed type description
    dependencies: tuple[str, ...]  # every nested type, depth first, each once


def split_type(name: str) -> tuple[str, str, str]:
    """`pkg/kind/Name` -> (pkg, kind, Name); raises DefinitionError if malformed."""
    parts = name.split("/")
    if len(parts) != 3 or parts[1] not in KINDS or not all(parts):
        raise DefinitionError(f"type name {name!r} is not of the form <package>/<msg|srv|action>/<Name>")
    return parts[0], parts[1], parts[2]


def _interface(kind: str, name: str) -> tuple[str, int | None]:
    """The interface file base name a (derived) type comes from, and its section index."""
    for suffix, section in _SUFFIXES[kind]:
        if suffix and name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)], section
        if not suffix:
            return name, section
    raise DefinitionError(f"{kind} type {name!r} is none of the types derived from a .{kind} file")


def sections(text: str) -> list[str]:
    """Split .srv/.action text at its `---` lines."""
    out: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.strip() == "---":
            out.append([])
        else:
            out[-1].append(line)
    return ["\n".join(lines).strip("\n") for lines in out]


_BARE_TYPE = re.compile(r"^(\s*)([A-Z][A-Za-z0-9_]*)(\[[^\]]*\])?(\s+)")


def qualify(text: str, pkg: str) -> str:
    """Prefix bare type names (same-package messages) with `pkg/`, as the section no longer lives in
    `pkg/msg`: a `.srv` section refers to `SkillAffordance`, meaning `pkg/msg/SkillAffordance`."""
    return "\n".join(_BARE_TYPE.sub(lambda m: f"{m[1]}{pkg}/{m[2]}{m[3] or ''}{m[4]}", line)
                     for line in text.splitlines())


def _field_line(field: Mapping[str, Any]) -> str:
    t = field["type"]
    tid = int(t["type_id"])
    base, kind = tid % 48 or 48, tid // 48
    if tid in _NESTED_IDS:
        base = 1
    if base == 1:
        # msg types the usual way; derived srv/action types fully qualified, which rosbags, mcap_ros2
        # and Foxglove resolve against the `MSG:` line of the same name
        pkg, nested_kind, name = split_type(str(t["nested_type_name"]))
        type_str = f"{pkg}/{name}" if nested_kind == "msg" else f"{pkg}/{nested_kind}/{name}"
    elif base in _PRIMITIVES:
        type_str = _PRIMITIVES[base]
        if base in (19, 20, 21, 22) and int(t["string_capacity"]) > 0:
            type_str += f"<={int(t['string_capacity'])}"
    else:
        raise DefinitionError(f"field {field['name']!r} has unknown type id {tid}")
    cap = int(t["capacity"])
    suffix = {0: "", 1: f"[{cap}]", 2: f"[<={cap}]", 3: "[]"}[min(kind, 3)]
    return f"{type_str}{suffix} {field['name']}"


def _nested(fields: Sequence[Mapping[str, Any]]) -> list[str]:
    out = []
    for f in fields:
        name = str(f["type"].get("nested_type_name", ""))
        if name and name not in out:
            out.append(name)
    return out


class MessageDefinitions:
    """Builds and caches TypeDefinitions from installed interface files."""

    def __init__(self, share: ShareLookup) -> None:
        self._share = share
        self._files: dict[Path, str] = {}
        self._descriptions: dict[tuple[str, str, str], tuple[dict[str, list[Any]], dict[str, str]]] = {}
        self._cache: dict[str, TypeDefinition] = {}

    def _read(self, path: Path) -> str:
        if path not in self._files:
            try:
                self._files[path] = path.read_text(encoding="utf-8")
            except OSError as e:
                raise DefinitionError(f"cannot read interface file {path}: {e}") from e
        return self._files[path]

    def _dir(self, pkg: str, kind: str) -> Path:
        try:
            return Path(self._share(pkg)) / kind
        except (KeyError, LookupError) as e:
            raise DefinitionError(f"interface package {pkg!r} is not installed") from e

    def _description(self, pkg: str, kind: str, base: str) -> tuple[dict[str, list[Any]], dict[str, str]]:
        key = (pkg, kind, base)
        if key not in self._descriptions:
            path = self._dir(pkg, kind) / f"{base}.json"
            try:
                doc = json.loads(self._read(path))
                msg = doc["type_description_msg"]
                fields = {str(d["type_name"]): list(d["fields"])
                          for d in [msg["type_description"], *msg["referenced_type_descriptions"]]}
                hashes = {str(h["type_name"]): str(h["hash_string"]) for h in doc["type_hashes"]}
            except (ValueError, KeyError, TypeError) as e:
                raise DefinitionError(f"malformed type description {path}: {e}") from e
            self._descriptions[key] = (fields, hashes)
        return self._descriptions[key]

    def _own(self, type_name: str) -> tuple[str, list[str], str]:
        """(own definition text, nested type names, hash) of one type."""
        pkg, kind, name = split_type(type_name)
        base, section = _interface(kind, name)
        fields, hashes = self._description(pkg, kind, base)
        if type_name not in fields:
            raise DefinitionError(f"{type_name} is not described in {pkg}/{kind}/{base}.json")
        if section is None:
            text = "\n".join(_field_line(f) for f in fields[type_name])
        else:
            parts = sections(self._read(self._dir(pkg, kind) / f"{base}.{kind}"))
            if section >= len(parts):
                raise DefinitionError(f"{pkg}/{kind}/{base}.{kind} has no section {section}")
            text = parts[section] if kind == "msg" else qualify(parts[section], pkg)
        return text.strip("\n"), _nested(fields[type_name]), hashes.get(type_name, "")

    def get(self, type_name: str) -> TypeDefinition:
        """The schema of `type_name` (e.g. `sensor_msgs/msg/Image`), dependencies included."""
        if type_name in self._cache:
            return self._cache[type_name]
        own, _nested_names, digest = self._own(type_name)
        order: list[str] = []

        def visit(name: str) -> None:
            for dep in self._own(name)[1]:
                if dep not in order and dep != type_name:
                    order.append(dep)
                    visit(dep)

        visit(type_name)
        parts = [own]
        for dep in order:
            parts.append(f"{SEPARATOR}\nMSG: {dep}\n{self._own(dep)[0]}")
        result = TypeDefinition(type_name, "\n".join(parts) + "\n", digest, tuple(order))
        self._cache[type_name] = result
        return result
