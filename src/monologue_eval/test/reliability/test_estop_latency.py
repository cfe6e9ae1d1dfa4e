"""R4's measurement (issue 32): the simulator's stop is the zero-velocity sample after which the arm never
moved again, not a pause between two motions of the pick_place (which ended a trial early before), and the
figures carry the machine's load."""
from __future__ import annotations

from monologue_eval.reliability.estop_latency import Trials, stop_sample


def test_a_pause_between_two_motions_is_not_the_stop() -> None:
    # stamp s, max |commanded velocity| rad/s: moving, a pause at 1.02 (between two moves), moving, stopped at 1.06
    joints = [(0.99, 0.3), (1.01, 0.3), (1.02, 0.0), (1.03, 0.0), (1.04, 0.2), (1.05, 0.2), (1.06, 0.0), (1.07, 0.0)]
    assert stop_sample(joints, 1.0) == 1.06


def test_samples_before_the_estop_do_not_count() -> None:
    joints = [(0.90, 0.0), (0.95, 0.3), (1.01, 0.3), (1.02, 0.0)]
    assert stop_sample(joints, 1.0) == 1.02


def test_an_arm_still_moving_has_not_stopped() -> None:
    assert stop_sample([(1.01, 0.0), (1.02, 0.4)], 1.0) is None
    assert stop_sample([], 1.0) is None


def test_the_summary_states_the_load() -> None:
    t = Trials("sim", trials=2, latencies_ms=[3.0, 40.0], stopped=2, latched=2, loads=[4.2, 5.7])
    assert "p99 40.0 ms" in t.summary() and "load 4.2-5.7" in t.summary()


def test_no_garbage_collection_runs_between_the_estop_time_and_its_send() -> None:
    import gc

    from monologue_eval.reliability.estop_latency import _Probe

    seen: list[bool] = []

    class Publisher:
        def publish(self, _msg: object) -> None:
            seen.append(gc.isenabled())

    probe = _Probe.__new__(_Probe)  # the publishing part only: no ROS graph
    probe.estop_pub, probe.Bool = Publisher(), lambda data: data  # type: ignore[assignment]
    assert gc.isenabled()
    probe.estop()
    assert seen == [False] and gc.isenabled()
