"""Wait for files, then run a command in this process (the launch file's prefix for nodes of a dry run, which
start only once the fakes serve):

    python3 -m monologue_bringup.wait_ready --timeout 60 FILE... -- COMMAND ARGS...
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path


def wait_for_files(files: Sequence[Path], timeout_s: float, poll_s: float = 0.05) -> list[Path]:
    """Wait until every file exists, at most `timeout_s` (s); returns the missing ones."""
    deadline = time.monotonic() + timeout_s
    while True:
        missing = [f for f in files if not f.exists()]
        if not missing or time.monotonic() >= deadline:
            return missing
        time.sleep(poll_s)


def main(argv: Sequence[str] | None = None) -> int:  # noqa: RET503 - execvp does not return
    args = list(sys.argv[1:] if argv is None else argv)
    if "--" not in args:
        print("usage: wait_ready [--timeout S] FILE... -- COMMAND ARGS...", file=sys.stderr)
        return 2
    split = args.index("--")
    head, command = args[:split], args[split + 1:]
    timeout_s = 60.0
    if head[:1] == ["--timeout"]:
        timeout_s, head = float(head[1]), head[2:]
    missing = wait_for_files([Path(f) for f in head], timeout_s)
    if missing:
        print(f"wait_ready: {[str(m) for m in missing]} did not appear within {timeout_s:g} s (a fake did not "
              "start; see its output)", file=sys.stderr)
        return 1
    if not command:
        return 0
    os.execvp(command[0], command)  # never returns


if __name__ == "__main__":
    sys.exit(main())
