"""Event-for-event comparison of a recorded and a replayed transcript (no rclpy).

Compared per event: index, kind, text and the structured data (with a tolerance: floats to it, and the
numbers printed in data strings to it or one unit of their last digit).
Not compared: the episode id and the wall-clock stamp, which differ on every run by design, and data keys
added to the transcript after a recording was made (`ADDED_KEYS`) when the recording lacks them.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .episode import RecordedEvent


@dataclass(frozen=True)
class Divergence:
    """The first event where two transcripts differ."""

    index: int  # position in the transcript, 0-based
    reason: str  # which part differs
    expected: RecordedEvent | None  # None: the replay has more events
    got: RecordedEvent | None  # None: the replay stopped early

    def describe(self) -> str:
        def show(e: RecordedEvent | None) -> str:
            if e is None:
                return "(no event)"
            return f"[{e.kind}] {e.text!r} data={json.dumps(dict(e.data), sort_keys=True, ensure_ascii=False)}"

        return (f"transcripts diverge at event {self.index} ({self.reason}):\n"
                f"  expected: {show(self.expected)}\n"
                f"  got:      {show(self.got)}")


# Data keys events gained after recordings in use were made (a replay of an older bag writes them, the
# recording has none): EPISODE_END's counts of the planner's decisions and of those a rule made alone.
ADDED_KEYS: frozenset[str] = frozenset({"decisions", "single_candidate"})

_NUMBER = re.compile(r"-?\d+(?:\.(\d+))?")


def _equal_text(a: str, b: str, rel_tol: float) -> bool:
    """Texts equal but for the numbers printed in them, each within `rel_tol` or one unit of its last
    printed digit (a distance printed as 0.8 cm in one run and 0.9 cm in the next is the same distance
    measured on another camera frame). Only used when a tolerance is asked for."""
    if a == b:
        return True
    if rel_tol <= 1e-9 or _NUMBER.sub("#", a) != _NUMBER.sub("#", b):
        return False
    for x, y in zip(_NUMBER.finditer(a), _NUMBER.finditer(b)):
        digits = max(len(x.group(1) or ""), len(y.group(1) or ""))
        if not math.isclose(float(x.group(0)), float(y.group(0)), rel_tol=rel_tol, abs_tol=10.0 ** -digits + 1e-12):
            return False
    return True


def _equal(a: Any, b: Any, rel_tol: float) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return _equal_text(a, b, rel_tol)
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or a == b and type(a) is type(b)
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(float(a), float(b), rel_tol=rel_tol, abs_tol=1e-12)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_equal(a[k], b[k], rel_tol) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_equal(x, y, rel_tol) for x, y in zip(a, b))
    return bool(a == b)


def first_divergence(
    expected: Sequence[RecordedEvent],
    got: Sequence[RecordedEvent],
    ignore_data_keys: Collection[str] = (),
    rel_tol: float = 1e-9,
) -> Divergence | None:
    """The first differing event, or None if the transcripts match event for event."""
    for i in range(max(len(expected), len(got))):
        e = expected[i] if i < len(expected) else None
        g = got[i] if i < len(got) else None
        if e is None or g is None:
            return Divergence(i, "the replay has more events" if e is None else "the replay has fewer events",
                              e, g)
        if e.kind != g.kind:
            return Divergence(i, "kind", e, g)
        if e.text != g.text:
            return Divergence(i, "text", e, g)
        ed = {k: v for k, v in e.data.items() if k not in ignore_data_keys}
        gd = {k: v for k, v in g.data.items()
              if k not in ignore_data_keys and (k in e.data or k not in ADDED_KEYS)}
        if not _equal(ed, gd, rel_tol):
            keys = sorted(k for k in set(ed) | set(gd) if not _equal(ed.get(k), gd.get(k), rel_tol))
            return Divergence(i, f"data {keys}", e, g)
        if e.index != g.index:
            return Divergence(i, "index", e, g)
    return None
