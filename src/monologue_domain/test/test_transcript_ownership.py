"""Two graphs sharing a transcript directory: a running episode of another process is not "interrupted";
once that process dies, it is (the kernel drops its lock)."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from monologue_domain.transcript import (
    EventKind,
    StoredEpisode,
    Transcript,
    find_interrupted,
    load_episode,
    running_in_another_process,
)

_WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from monologue_domain.transcript import EventKind, Transcript
    t = Transcript("other", Path(sys.argv[1]))
    t.append(EventKind.HUMAN_INSTRUCTION, "stack the blocks")
    print("running", flush=True)
    sys.stdin.readline()  # until the test lets go (or kills this process)
    if sys.argv[2] == "end":
        t.end({"outcome": "success"})
    print("done", flush=True)
    sys.stdin.readline()
""")


def _start_writer(path: Path, how: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(path), how], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "running"
    return proc


def _ids(found: list[StoredEpisode]) -> list[str]:
    return [ep.path.stem for ep in found]


def test_another_processes_running_episode_is_not_interrupted_until_that_process_dies(tmp_path: Path) -> None:
    proc = _start_writer(tmp_path / "other.jsonl", "kill")
    try:
        assert running_in_another_process(tmp_path / "other.jsonl")
        assert find_interrupted(tmp_path) == []
        with pytest.raises(ValueError, match="still running in another process"):
            Transcript.reopen(load_episode(tmp_path / "other.jsonl"))
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert not running_in_another_process(tmp_path / "other.jsonl")
    assert _ids(find_interrupted(tmp_path)) == ["other"]
    resumed = Transcript.reopen(load_episode(tmp_path / "other.jsonl"))
    resumed.append(EventKind.ROBOT_ACTION, "robot action: pick up the red block")
    resumed.end({"outcome": "success"})
    assert find_interrupted(tmp_path) == []


def test_an_ended_episode_of_a_live_process_is_neither_running_nor_interrupted(tmp_path: Path) -> None:
    proc = _start_writer(tmp_path / "other.jsonl", "end")
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "done"
        assert not running_in_another_process(tmp_path / "other.jsonl")
        assert find_interrupted(tmp_path) == []
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_this_processes_own_unended_episode_still_reads_as_interrupted_and_close_lets_go(tmp_path: Path) -> None:
    t = Transcript("mine", tmp_path / "mine.jsonl")
    t.append(EventKind.HUMAN_INSTRUCTION, "put the blocks in the bowl")
    assert _ids(find_interrupted(tmp_path)) == ["mine"]  # a process knows its own episodes
    t.close()
    assert not running_in_another_process(tmp_path / "mine.jsonl")
    assert _ids(find_interrupted(tmp_path)) == ["mine"]
