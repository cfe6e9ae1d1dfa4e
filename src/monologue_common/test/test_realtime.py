"""SCHED_FIFO for a process's threads (the skills node's e-stop), and a clear warning when refused."""
from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator

import pytest

from monologue_common.core.realtime import apply_fifo, fifo_priority, process_threads


@pytest.fixture
def normal_afterwards() -> Iterator[None]:
    """Put every thread of the test process back to normal scheduling (a FIFO pytest would starve the machine)."""
    yield
    for tid in process_threads():
        try:
            os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
        except ProcessLookupError:
            continue


def _can_set_fifo() -> bool:
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except PermissionError:
        return False
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    return True


@pytest.mark.skipif(not _can_set_fifo(), reason="this user may not set SCHED_FIFO (CI runs as root)")
def test_every_thread_and_later_ones_run_fifo(normal_afterwards: None, caplog: pytest.LogCaptureFixture) -> None:
    release = threading.Event()
    tids: list[int] = []

    def wait() -> None:
        tids.append(threading.get_native_id())
        release.wait(10.0)

    before = threading.Thread(target=wait)
    before.start()
    try:
        with caplog.at_level(logging.INFO):
            assert apply_fifo(7, logging.getLogger("t"))
        assert "SCHED_FIFO priority 7" in caplog.text
        after = threading.Thread(target=wait)  # created by a FIFO thread: inherits it
        after.start()
        while len(tids) < 2:
            threading.Event().wait(0.01)
        assert [fifo_priority(t) for t in tids] == [7, 7]
        assert fifo_priority() == 7
    finally:
        release.set()
        before.join(10.0)


def test_zero_is_off_and_out_of_range_is_refused(normal_afterwards: None) -> None:
    assert not apply_fifo(0, logging.getLogger("t"))
    assert fifo_priority() == 0
    for bad in (-1, 100):
        with pytest.raises(ValueError, match="1..99"):
            apply_fifo(bad, logging.getLogger("t"))


def test_refusal_warns_how_to_allow_it_and_changes_nothing(monkeypatch: pytest.MonkeyPatch,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    def refuse(tid: int, policy: int, param: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "sched_setscheduler", refuse)
    with caplog.at_level(logging.WARNING):
        assert not apply_fifo(40, logging.getLogger("t"))
    assert "rtprio" in caplog.text and "CAP_SYS_NICE" in caplog.text
    assert fifo_priority() == 0
