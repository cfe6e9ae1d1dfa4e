"""The history page tells a running episode of a live planner from an interrupted one."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from monologue_domain.transcript import EventKind, Transcript
from monologue_web.core.history import list_episodes

_WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from monologue_domain.transcript import EventKind, Transcript
    t = Transcript("live", Path(sys.argv[1]))
    t.append(EventKind.HUMAN_INSTRUCTION, "stack the blocks")
    print("running", flush=True)
    sys.stdin.readline()
""")


def test_a_live_planners_episode_is_running_and_a_dead_ones_is_interrupted(tmp_path: Path) -> None:
    dead = Transcript("dead", tmp_path / "dead.jsonl")
    dead.append(EventKind.HUMAN_INSTRUCTION, "put the blocks in the bowl")
    dead.close()  # as if its process had died
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path / "live.jsonl")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "running"
        rows = {r["episode_id"]: r for r in list_episodes(tmp_path)}
        assert (rows["live"]["ended"], rows["live"]["running"]) == (False, True)
        assert (rows["dead"]["ended"], rows["dead"]["running"]) == (False, False)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert not {r["episode_id"]: r for r in list_episodes(tmp_path)}["live"]["running"]
