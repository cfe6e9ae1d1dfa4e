"""Transcript: append-only events, JSONL persistence, interrupted-episode detection, UTF-8."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from monologue_domain.transcript import EventKind, Transcript, find_interrupted, load_episode


def test_events_are_indexed_persisted_and_published(tmp_path: Path) -> None:
    path = tmp_path / "ep.jsonl"
    seen = []
    t = Transcript("ep1", path, header={"instruction": "stack"})
    t.add_listener(seen.append)
    t.append(EventKind.HUMAN_INSTRUCTION, "Human: Stack the blocks.")
    t.append(EventKind.ROBOT_ACTION, "Robot action: Pick the red block and place it on the blue block.",
             {"skill": "pick_place"})
    assert [e.index for e in t.events] == [0, 1]
    assert [e.index for e in seen] == [0, 1]
    ep = load_episode(path)
    assert ep.header["instruction"] == "stack"
    assert [e.text for e in ep.events] == [e.text for e in t.events]
    assert ep.interrupted
    t.end({"success": True})
    assert not load_episode(path).interrupted
    with pytest.raises(RuntimeError):
        t.append(EventKind.ERROR, "late")


def test_utf8_round_trip(tmp_path: Path) -> None:
    t = Transcript("ep2", tmp_path / "ep.jsonl")
    t.append(EventKind.HUMAN_INTERJECTION, "Human: 把所有的积木放进蓝色的碗里")
    raw = (tmp_path / "ep.jsonl").read_text(encoding="utf-8")
    assert "把所有的积木" in raw
    assert load_episode(tmp_path / "ep.jsonl").events[0].text.endswith("碗里")


def test_crash_mid_write_loses_only_the_partial_line(tmp_path: Path) -> None:
    path = tmp_path / "ep.jsonl"
    t = Transcript("ep3", path)
    t.append(EventKind.HUMAN_INSTRUCTION, "Human: a.")
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"record": "event", "episode_id": "ep3", "ind')
    found = find_interrupted(tmp_path)
    assert len(found) == 1 and [e.text for e in found[0].events] == ["Human: a."]


def test_listener_errors_do_not_lose_events(tmp_path: Path) -> None:
    t = Transcript("ep4", tmp_path / "ep.jsonl")

    def broken(_e: object) -> None:
        raise RuntimeError("boom")

    t.add_listener(broken)
    t.append(EventKind.SUCCESS, "Success: True")
    assert len(load_episode(tmp_path / "ep.jsonl").events) == 1


def test_prompt_lines_exclude_errors() -> None:
    t = Transcript("ep5")
    t.append(EventKind.HUMAN_INSTRUCTION, "Human: a.")
    t.append(EventKind.ERROR, "Skill error")
    t.append(EventKind.SUCCESS, "Success: False")
    assert t.prompt_lines() == ["Human: a.", "Success: False"]
    assert json.loads(json.dumps(t.events[0].to_json()))["kind"] == "HUMAN_INSTRUCTION"
