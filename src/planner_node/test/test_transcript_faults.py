"""Issue 20 R3 at the core: a full disk while the transcript is written, and a transcript whose last line
was cut by a crash (kinematic tabletop, scripted LLM; the system tests are in test/test_faults_system.py)."""
from __future__ import annotations

import errno
import json
import logging
from pathlib import Path
from typing import IO, Any

import pytest

from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.transcript import Event, EventKind, Transcript, TranscriptWriteError, load_episode
from planner_node.core.episode import EpisodeError
from planner_node.core.runner import GoalRequest

TASK = "Put the blocks in their matching bowls."


class _FullDisk:
    """A file whose disk fills up: the write of a line containing `fill_on` stores half of it, then raises
    ENOSPC (as write(2) does); every later write fails at once."""

    def __init__(self, real: IO[str], state: dict[str, bool], fill_on: str) -> None:
        self._real, self._state, self._fill_on = real, state, fill_on

    def write(self, text: str) -> int:
        if self._state["full"] or self._fill_on in text:
            if not self._state["full"]:
                self._real.write(text[: len(text) // 2])
                self._state["full"] = True
            raise OSError(errno.ENOSPC, "No space left on device")
        return self._real.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def __enter__(self) -> _FullDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self._real.close()


def test_a_full_disk_stops_the_episode_before_the_robot_moves_and_says_why(
        make_runner, scripted, world_ports, monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
        caplog: pytest.LogCaptureFixture) -> None:
    state = {"full": False}
    real_open = Transcript._open_append
    monkeypatch.setattr(Transcript, "_open_append",
                        lambda self: _FullDisk(real_open(self), state, '"kind": "ROBOT_ACTION"'))
    world = TabletopWorld.random(4, num_blocks=2, num_bowls=2, matching_bowls=True)
    before = world.snapshot()
    ports = world_ports(world)
    published: list[Event] = []
    out = make_runner(scripted(scripted.matching_bowls), ports).execute(GoalRequest(TASK), on_event=published.append)
    # the episode stopped at the first event it could not record, and says why
    assert out.result.error == EpisodeError.INTERNAL_ERROR and not out.result.success
    assert "No space left on device" in out.result.reason and str(out.path) in out.result.reason
    kinds = [e.kind for e in published]
    assert kinds[-3:] == [EventKind.ROBOT_ACTION, EventKind.ERROR, EventKind.EPISODE_END]
    assert "No space left on device" in published[-2].text and published[-1].data["error"] == "INTERNAL_ERROR"
    assert [e.index for e in published] == list(range(len(published)))
    # the robot did not move the step it could not record
    assert ports.executed == [] and world.snapshot() == before
    # the file holds every event before the failure, gapless; the half-written line is skipped with a warning
    assert out.path is not None
    with caplog.at_level(logging.WARNING):
        stored = load_episode(out.path)
    assert [e.text for e in stored.events] == [e.text for e in published[:-3]]
    assert [e.index for e in stored.events] == list(range(len(stored.events)))
    assert stored.interrupted and "not a complete record" in caplog.text


def test_a_full_disk_at_the_start_refuses_the_episode_with_the_reason(
        make_runner, scripted, world_ports, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    state = {"full": True}
    real_open = Transcript._open_append
    monkeypatch.setattr(Transcript, "_open_append", lambda self: _FullDisk(real_open(self), state, ""))
    ports = world_ports(TabletopWorld.random(4, num_blocks=2, num_bowls=2, matching_bowls=True))
    out = make_runner(scripted(scripted.matching_bowls), ports).execute(GoalRequest(TASK))
    assert out.result.error == EpisodeError.INTERNAL_ERROR and "No space left on device" in out.result.reason
    assert ports.executed == []


def test_only_the_first_write_failure_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = Transcript("ep", tmp_path / "ep.jsonl")
    t.append(EventKind.HUMAN_INSTRUCTION, "Human: a.")
    state = {"full": False}
    real_open = Transcript._open_append
    monkeypatch.setattr(Transcript, "_open_append", lambda self: _FullDisk(real_open(self), state, "Robot"))
    with pytest.raises(TranscriptWriteError) as err:
        t.append(EventKind.ROBOT_ACTION, "Robot action: x.")
    assert err.value.errno == errno.ENOSPC
    t.append(EventKind.ERROR, "Episode ended: no space")  # kept in memory, not written, no raise
    t.end({"success": False})
    assert [e.text for e in t.events] == ["Human: a.", "Robot action: x.", "Episode ended: no space"]
    assert [e.text for e in load_episode(tmp_path / "ep.jsonl").events] == ["Human: a."]


def test_a_line_cut_by_a_crash_is_skipped_with_a_warning_and_the_resumed_episode_loses_nothing(
        make_runner, scripted, world_ports, tmp_path: Path,  # type: ignore[no-untyped-def]
        caplog: pytest.LogCaptureFixture) -> None:
    world = TabletopWorld.random(4, num_blocks=2, num_bowls=2, matching_bowls=True)
    ports = world_ports(world)
    runner = make_runner(scripted(scripted.matching_bowls), ports)
    path = tmp_path / "transcripts" / "crashed.jsonl"
    t = Transcript("crashed", path, header={"episode_id": "crashed", "instruction": TASK,
                                            "prompt_profile": "im_sim_object_success"})
    t.append(EventKind.HUMAN_INSTRUCTION, f"Human: {TASK}")
    t.append(EventKind.HUMAN_INTERJECTION, "Human: 请把蓝色的积木放进碗里")
    before = [e.to_json() for e in t.events]
    line = Event("crashed", 2, EventKind.HUMAN_INTERJECTION, "Human: 先放红色的积木").to_json()
    raw = json.dumps(line, ensure_ascii=False).encode("utf-8")
    with open(path, "ab") as f:  # the crash cut the line inside a multi-byte character
        f.write(raw[: raw.index("红".encode()) + 1])
    with caplog.at_level(logging.WARNING):
        out = runner.execute(GoalRequest(resume_episode="latest"))
    assert "line 4 is not a complete record" in caplog.text
    assert out.result.success, out.result.reason
    stored = load_episode(path)
    after = [e.to_json() for e in stored.events]
    assert after[: len(before)] == before  # nothing before the cut line is lost or changed
    assert [e["index"] for e in after] == list(range(len(after)))  # no gap, no duplicate
    assert after[len(before)]["text"] == "Resumed after an interruption, 0 steps in"
    assert "先放红色" not in path.read_text(encoding="utf-8", errors="replace")
    assert stored.end is not None and stored.events[-1].kind == EventKind.EPISODE_END
    assert ports.executed and all(world.is_on(a, b) for _s, (a, b) in ports.executed)
