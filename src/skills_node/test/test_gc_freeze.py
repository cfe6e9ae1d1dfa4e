"""The skills node takes its start-up objects out of the garbage collector's reach (a full collection
pauses every thread, the e-stop callback too: docs/reliability.md, R4) and logs long full collections."""
from __future__ import annotations

import gc
import logging
from collections.abc import Iterator

import pytest

from skills_node import node


@pytest.fixture
def frozen() -> Iterator[None]:
    before = list(gc.callbacks)
    try:
        yield
    finally:
        gc.callbacks[:] = before
        gc.unfreeze()


def test_startup_objects_are_frozen_and_long_full_collections_are_logged(
        frozen: None, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    node.freeze_startup_objects(logging.getLogger("test.gc"))
    assert gc.get_freeze_count() > 1000  # the modules imported so far
    watch = gc.callbacks[-1]
    clock = iter([10.0, 10.001, 20.0, 20.0 + node.GC_PAUSE_WARN_S * 5])
    monkeypatch.setattr(node.time, "perf_counter", lambda: next(clock))
    with caplog.at_level(logging.WARNING, logger="test.gc"):
        watch("start", {"generation": 2})
        watch("stop", {"generation": 2})  # 1 ms: not logged
        watch("start", {"generation": 1})  # younger generations are cheap and not timed
        watch("start", {"generation": 2})
        watch("stop", {"generation": 2})  # 100 ms
    assert [r.getMessage() for r in caplog.records] == [
        "a full garbage collection paused the skills node for 100 ms"]
