"""Schemas for bags: own text verbatim, dependencies after `MSG:` lines, hashes from rosidl's JSON."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from monologue_common.core.msgdefs import SEPARATOR, DefinitionError, MessageDefinitions, qualify, sections


def _field(name: str, type_id: int, nested: str = "", capacity: int = 0) -> dict[str, object]:
    return {"name": name, "type": {"type_id": type_id, "capacity": capacity, "string_capacity": 0,
                                   "nested_type_name": nested}, "default_value": ""}


@pytest.fixture
def share(tmp_path: Path) -> MessageDefinitions:
    """A fake install: pkg_a/msg/Point.msg, pkg_b/srv/Find.srv (response holds Point[])."""
    (tmp_path / "pkg_a" / "msg").mkdir(parents=True)
    (tmp_path / "pkg_b" / "srv").mkdir(parents=True)
    (tmp_path / "pkg_a" / "msg" / "Point.msg").write_text("# a point\nfloat64 x  # m\nfloat64 y\n")
    (tmp_path / "pkg_a" / "msg" / "Point.json").write_text(json.dumps({
        "type_description_msg": {"type_description": {"type_name": "pkg_a/msg/Point", "fields": [
            _field("x", 11), _field("y", 11)]}, "referenced_type_descriptions": []},
        "type_hashes": [{"type_name": "pkg_a/msg/Point", "hash_string": "RIHS01_aa"}]}))
    (tmp_path / "pkg_b" / "srv" / "Find.srv").write_text("string name\n---\nuint8 OK=0\npkg_a/Point[] hits\nKind k\n")
    point = {"type_name": "pkg_a/msg/Point", "fields": [_field("x", 11), _field("y", 11)]}
    req = {"type_name": "pkg_b/srv/Find_Request", "fields": [_field("name", 17)]}
    res = {"type_name": "pkg_b/srv/Find_Response", "fields": [_field("hits", 49 + 96, "pkg_a/msg/Point"),
                                                              _field("k", 1, "pkg_a/msg/Point")]}
    event = {"type_name": "pkg_b/srv/Find_Event", "fields": [
        _field("request", 97, "pkg_b/srv/Find_Request", 1), _field("response", 97, "pkg_b/srv/Find_Response", 1),
        _field("gid", 51, capacity=16)]}
    (tmp_path / "pkg_b" / "srv" / "Find.json").write_text(json.dumps({
        "type_description_msg": {"type_description": {"type_name": "pkg_b/srv/Find", "fields": []},
                                 "referenced_type_descriptions": [point, req, res, event]},
        "type_hashes": [{"type_name": "pkg_b/srv/Find_Event", "hash_string": "RIHS01_ee"}]}))

    def lookup(pkg: str) -> Path:
        if not (tmp_path / pkg).is_dir():
            raise KeyError(pkg)
        return tmp_path / pkg

    return MessageDefinitions(lookup)


def test_message_text_is_the_source_file_with_its_hash(share: MessageDefinitions) -> None:
    d = share.get("pkg_a/msg/Point")
    assert d.text == "# a point\nfloat64 x  # m\nfloat64 y\n"
    assert d.rihs01 == "RIHS01_aa" and d.dependencies == ()


def test_service_sections_are_qualified_and_dependencies_follow(share: MessageDefinitions) -> None:
    d = share.get("pkg_b/srv/Find_Response")
    own, dep = d.text.split(SEPARATOR + "\n")
    assert own == "uint8 OK=0\npkg_a/Point[] hits\npkg_b/Kind k\n"  # a bare name is the package's own msg
    assert "MSG: pkg_a/msg/Point" in dep and "float64 x" in dep
    assert d.dependencies == ("pkg_a/msg/Point",)


def test_derived_wrapper_types_are_generated_from_the_description(share: MessageDefinitions) -> None:
    d = share.get("pkg_b/srv/Find_Event")
    own = d.text.split(SEPARATOR)[0]
    assert own.splitlines() == ["pkg_b/srv/Find_Request[<=1] request", "pkg_b/srv/Find_Response[<=1] response",
                                "uint8[16] gid"]
    assert d.dependencies == ("pkg_b/srv/Find_Request", "pkg_b/srv/Find_Response", "pkg_a/msg/Point")
    assert d.text.count("MSG: pkg_a/msg/Point") == 1 and d.rihs01 == "RIHS01_ee"


def test_bad_names_and_missing_packages_are_clear_errors(share: MessageDefinitions) -> None:
    with pytest.raises(DefinitionError, match="form"):
        share.get("pkg_a/Point")
    with pytest.raises(DefinitionError, match="not installed"):
        share.get("nope/msg/Thing")
    with pytest.raises(DefinitionError, match="cannot read"):
        share.get("pkg_a/msg/Missing")


def test_helpers() -> None:
    assert sections("a\n---\nb\n---\nc") == ["a", "b", "c"]
    assert qualify("Foo[] a  # x\nuint8 B=1\n  Bar b", "p") == "p/Foo[] a  # x\nuint8 B=1\n  p/Bar b"


@pytest.mark.parametrize("type_name", [
    "monologue_interfaces/msg/TranscriptEvent", "monologue_interfaces/msg/SceneDescription",
    "monologue_interfaces/msg/AffordanceReport", "action_msgs/msg/GoalStatusArray",
    "monologue_interfaces/action/ExecuteSkill_FeedbackMessage", "sensor_msgs/msg/Image",
    "visualization_msgs/msg/MarkerArray",
])
def test_installed_definitions_hash_like_rosbags_computes(definitions: MessageDefinitions, type_name: str) -> None:
    """rosbags re-derives the RIHS01 hash from our text: equal means the text is complete and exact."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    d = definitions.get(type_name)
    store = get_typestore(Stores.EMPTY)
    store.register(get_types_from_msg(d.text, type_name))
    assert d.rihs01.startswith("RIHS01_")
    assert store.hash_rihs01(type_name) == d.rihs01
