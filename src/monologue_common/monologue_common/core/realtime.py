"""Real-time scheduling for a process whose reaction time matters (the skills node's e-stop), no rclpy.

A ROS 2 callback runs only when its thread gets a core and the GIL. On a loaded machine (busy processes
at the same priority) the kernel shares the cores fairly, so the e-stop's thread, and any thread of the
process that holds the GIL, waits behind them for tens to hundreds of ms (R4, docs/reliability.md).
The UR ROS driver meets its control period the same way: SCHED_FIFO for its threads when the user may
set it (root, CAP_SYS_NICE, or an `rtprio` limit in /etc/security/limits.conf), and a warning otherwise.

`apply_fifo(priority)` puts every thread of this process under SCHED_FIFO at `priority` (1-99; threads
created later inherit it from their creator). The threads of such a process must block, never spin: a
FIFO thread that busy-loops starves the machine (the kernel's RT throttling, 95% of each second by
default, is the only net).
"""
from __future__ import annotations

import logging
import os
from pathlib import Path

MAX_PRIORITY = 99


def process_threads() -> list[int]:
    """The kernel thread ids of this process."""
    try:
        return sorted(int(p.name) for p in Path("/proc/self/task").iterdir())
    except OSError:
        return [os.getpid()]


def apply_fifo(priority: int, log: logging.Logger) -> bool:
    """SCHED_FIFO at `priority` for every thread of this process; 0 does nothing. False (and one warning
    saying how to allow it) when the system refuses; the process then runs as before."""
    if priority == 0:
        return False
    if not 1 <= priority <= MAX_PRIORITY:
        raise ValueError(f"a real-time priority is 1..{MAX_PRIORITY} (0 = off), got {priority}")
    if not hasattr(os, "sched_setscheduler"):
        log.warning("real-time scheduling is not available on this system; running at normal priority")
        return False
    changed = 0
    for tid in process_threads():
        try:
            os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(priority))
            changed += 1
        except ProcessLookupError:  # the thread ended meanwhile
            continue
        except PermissionError:
            log.warning("SCHED_FIFO priority %d refused: run as a user with an rtprio limit (limits.conf: "
                        "'@realtime - rtprio %d') or CAP_SYS_NICE; running at normal priority, so e-stop "
                        "latency on a loaded machine is not bounded", priority, priority)
            return False
    log.info("real-time scheduling: %d threads at SCHED_FIFO priority %d", changed, priority)
    return True


def fifo_priority(tid: int = 0) -> int:
    """The SCHED_FIFO priority of thread `tid` (0 = the caller), or 0 when it is not a FIFO thread."""
    if not hasattr(os, "sched_getscheduler") or os.sched_getscheduler(tid) != os.SCHED_FIFO:
        return 0
    return int(os.sched_getparam(tid).sched_priority)
