"""A short, thread-safe history of stamped items (scene descriptions, camera images); no rclpy."""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class StampedHistory(Generic[T]):
    """The newest item always, and older ones at most one per `period_s` (by stamp), `size` of them.

    `at_or_before(t)` gives the latest arrival stamped at or before t (the state at a skill's start);
    `wait_after(t, timeout_s)` blocks until the newest arrival is stamped after t (a fresh
    observation). An item stamped before the last kept one (ROS time jumped back: a restarted
    simulator, a looped bag) is kept, so the new timeline fills the history at once.
    """

    def __init__(self, size: int, period_s: float = 0.0) -> None:
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        if period_s < 0:
            raise ValueError(f"period_s must be >= 0, got {period_s}")
        self.period_s = period_s
        self._kept: deque[tuple[float, T]] = deque(maxlen=size)
        self._newest: tuple[float, T] | None = None
        self._cond = threading.Condition()

    def add(self, stamp: float, item: T) -> None:
        with self._cond:
            newest = (stamp, item)
            if not self._kept or not 0 <= stamp - self._kept[-1][0] < self.period_s:
                self._kept.append(newest)
            self._newest = newest
            self._cond.notify_all()

    def _all(self) -> list[tuple[float, T]]:
        """Everything held, in arrival order."""
        items = list(self._kept)
        if self._newest is not None and (not items or items[-1] is not self._newest):
            items.append(self._newest)
        return items

    def at_or_before(self, t: float) -> tuple[float, T] | None:
        """(stamp, item) of the latest arrival stamped at or before t (s), else None."""
        with self._cond:
            for stamp, item in reversed(self._all()):
                if stamp <= t:
                    return stamp, item
        return None

    def wait_after(self, t: float, timeout_s: float) -> tuple[float, T] | None:
        """(stamp, item) of the newest arrival once it is stamped after t (s), waiting up to
        `timeout_s` (s); None on timeout."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._newest is None or self._newest[0] <= t:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)
            return self._newest

    def span(self) -> tuple[float, float] | None:
        """(earliest, latest) stamp held, else None."""
        with self._cond:
            stamps = [s for s, _ in self._all()]
        return (min(stamps), max(stamps)) if stamps else None
