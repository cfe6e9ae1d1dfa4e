"""monologue-replay's printed figure is the wall time of its whole process, start-up included."""
from __future__ import annotations

import subprocess
import sys

START_UP_S = 0.5  # s the child spends before it imports the replay module


def test_the_printed_time_counts_from_the_process_start_not_from_the_replay() -> None:
    """A process that spends START_UP_S before it imports monologue_eval.replay reports at least that: the
    interpreter's start-up and the imports are part of the figure (a clock started in main() missed them)."""
    code = (f"import time; time.sleep({START_UP_S}); from monologue_eval.replay import process_wall_s; "
            "print(process_wall_s())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert float(out.stdout) >= START_UP_S
