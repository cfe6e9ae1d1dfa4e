"""Issue 20 R4, short version of monologue_eval/reliability/estop_latency.py: 20 e-stops of a real skills node
over DDS (the fake UR5e behind ur_rtde's API, and the MuJoCo tabletop), each mid-motion. Every one must stop
the arm (stopL / zero commanded velocity) and stay latched until `estop_reset`; the latency is printed, not
asserted (the benchmark measures it on an idle machine)."""
from __future__ import annotations

import pytest

pytestmark = [pytest.mark.system, pytest.mark.slow]
TRIALS = 20


@pytest.fixture(scope="module")
def estop() -> object:
    from monologue_eval.reliability import estop_latency

    return estop_latency


@pytest.mark.parametrize("backend", ["ur5e", "sim"])
def test_every_estop_stops_the_arm_and_latches_until_reset(ros_domain: int, estop, backend: str) -> None:  # type: ignore[no-untyped-def]
    run = estop.run_ur5e if backend == "ur5e" else estop.run_sim
    t = run(TRIALS, progress=print)
    print(f"{t.backend}: {t.summary()}")
    assert t.trials == TRIALS and not t.problems, t.problems
    assert t.stopped == TRIALS and t.latched == TRIALS
    assert len(t.latencies_ms) == TRIALS and all(ms >= 0.0 for ms in t.latencies_ms)
