"""R4 (issue 20): e-stop latency over DDS, from `true` on `estop` (std_msgs/Bool) to the arm stopping.

Two real skills nodes, each its own process on an isolated ROS_DOMAIN_ID:
- `ur5e` against the fake UR5e behind ur_rtde's API (skills_node.robots.ur5e.testing.fake_rtde): the latency ends when
  `stopL` (or `stopJ`) reaches the controller: the wall time of the fake's control cycle (2 ms, 500 Hz)
  that took it, never earlier than a real controller would;
- `sim` with the MuJoCo tabletop (tabletop_sim, perception for the scene): the latency ends at the first
  `joint_states` sample (published at 100 Hz here, so up to 10 ms of it is sampling) of the stop: the
  first one with all commanded joint velocities zero after which the arm never moved again before the
  skill ended (a pause between two motions of the pick_place is not a stop).
Every trial starts a pick_place, waits until the arm moves, publishes the e-stop, measures, checks the
latch (robot/status `estop_latched`, a new skill refused with ESTOP_ACTIVE and nothing sent), resets it
(`estop_reset`) and, on the fake UR5e, homes the arm. Target: p99 <= 50 ms, latched until reset. The
first trial starts only once the skills node's `estop` subscription has matched the probe's publisher.
The 1-minute load average is sampled at every trial and reported with the figures (they depend on it).

    python -m monologue_eval.reliability.estop_latency [--trials 200] [--backend ur5e|sim|both]
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monologue_eval.reliability.common import CONFIG, Row

TARGET_P99_MS = 50.0
SKILL_TIMEOUT_S = 30.0
# the fake UR5e's table (name, category, x, y, size in m), as test/test_ur5e_system.py
OBJECTS = (("red block", "block", 0.45, 0.10, 0.04), ("blue plate", "plate", 0.60, 0.15, 0.01))


@dataclass
class Trials:
    """The outcome of the trials on one backend; latencies in ms."""

    backend: str
    trials: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    stopped: int = 0  # trials whose arm stopped
    latched: int = 0  # trials whose latch held (status + a refused skill) until the reset
    wall_s: float = 0.0
    problems: list[str] = field(default_factory=list)
    loads: list[float] = field(default_factory=list)  # 1-minute load average at each trial

    def percentile(self, q: float) -> float:
        """The q-th percentile (nearest rank) in ms; nan without data."""
        if not self.latencies_ms:
            return math.nan
        data = sorted(self.latencies_ms)
        return data[min(len(data) - 1, max(0, math.ceil(q / 100.0 * len(data)) - 1))]

    @property
    def ok(self) -> bool:
        return (self.trials > 0 and self.stopped == self.trials == self.latched
                and self.percentile(99) <= TARGET_P99_MS)

    def summary(self) -> str:
        if not self.latencies_ms:
            return f"no trial stopped ({'; '.join(self.problems[:3])})"
        load = f"; load {min(self.loads):.1f}-{max(self.loads):.1f}" if self.loads else ""
        return (f"p50 {self.percentile(50):.1f} ms, p99 {self.percentile(99):.1f} ms, "
                f"max {max(self.latencies_ms):.1f} ms; stopped {self.stopped}/{self.trials}, "
                f"latched {self.latched}/{self.trials}{load}")


def _wait(what: str, cond: Callable[[], bool], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.002)


class _Probe:
    """A client node spun in a thread: the e-stop publisher, the reset client, the skill client, robot/status,
    joint_states and the scene."""

    def __init__(self) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Bool

        from monologue_common.actions import ActionClient
        from monologue_common.qos import LATCHED
        from monologue_interfaces.action import ExecuteSkill
        from monologue_interfaces.msg import RobotStatus, SceneDescription
        from monologue_interfaces.srv import ResetEstop

        gc.collect()
        gc.freeze()  # what this process built before (other figures' objects): no full collection rescans it
        rclpy.init(args=[])
        self.node = rclpy.create_node(f"estop_probe_{os.getpid()}")
        # one thread: goals are sent on it (_on_executor), so no response is handled while one is being sent
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self.status: list[Any] = []
        self.joints: list[tuple[float, float]] = []  # (stamp s, max |commanded velocity| rad/s)
        self.truth: list[Any] = []
        self.node.create_subscription(RobotStatus, "robot/status", self.status.append, LATCHED)
        self.node.create_subscription(JointState, "joint_states", self._on_joints, 100)
        self.node.create_subscription(SceneDescription, "sim/ground_truth", self.truth.append, LATCHED)
        self.scene_pub = self.node.create_publisher(SceneDescription, "scene/description", LATCHED)
        self.estop_pub = self.node.create_publisher(Bool, "estop", QoSProfile(depth=10,
                                                                              reliability=ReliabilityPolicy.RELIABLE))
        self.skill = ActionClient(self.node, ExecuteSkill, "execute_skill")
        self.reset = self.node.create_client(ResetEstop, "estop_reset")
        self.ExecuteSkill, self.ResetEstop, self.Bool = ExecuteSkill, ResetEstop, Bool
        self._spin = threading.Thread(target=self.executor.spin, daemon=True)
        self._spin.start()

    def wait_ready(self) -> None:
        """Until the skills node serves execute_skill and reports an ok status (at most 60 s each)."""
        assert self.skill.wait_for_server(timeout_sec=60.0), "no execute_skill"
        _wait("robot/status ok", lambda: bool(self.status) and self.status[-1].ok, 60.0)
        # a first e-stop published before discovery matched the skills node's subscription would be lost
        _wait("the skills node's estop subscription", lambda: self.estop_pub.get_subscription_count() > 0, 60.0)

    def _on_joints(self, msg: Any) -> None:
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        self.joints.append((stamp, max((abs(v) for v in msg.velocity), default=0.0)))

    def close(self) -> None:
        from rclpy.utilities import try_shutdown

        self.executor.shutdown()
        self.node.destroy_node()
        try_shutdown()  # a SIGINT / SIGTERM may have shut the context down already
        gc.unfreeze()

    def publish_scene(self) -> None:
        """OBJECTS as perception would report them (the top centre of each cube)."""
        from monologue_domain.msgs import scene_to_msg
        from monologue_domain.scene import Scene, SceneObject

        cubes = tuple(SceneObject(n, c, (x, y, s), (s, s, s)) for n, c, x, y, s in OBJECTS)
        self.scene_pub.publish(scene_to_msg(Scene("base", 0.0, "estop_latency", cubes)))  # ur5e: the controller frame

    def _on_executor(self, fn: Callable[[], Any]) -> Any:
        """`fn()` run on the executor's thread. rclpy 7.1.5's ActionClient registers a request's future only
        after sending the request (no lock): a response handled on another thread in between is dropped
        ("Ignoring unexpected goal response") and the future never completes."""
        task = self.executor.create_task(fn)
        _wait("the executor to send a request", task.done, 10.0)
        return task.result()

    def start_skill(self, skill: str, *args: str) -> Any:
        """Send an ExecuteSkill goal; returns the result future."""
        goal = self.ExecuteSkill.Goal(skill=skill, args=list(args))
        future = self._on_executor(lambda: self.skill.send_goal_async(goal))
        _wait("skill goal acceptance", future.done, 10.0)
        handle = future.result()
        if handle is None or not handle.accepted:
            raise RuntimeError(f"{skill} was not accepted")
        return self._on_executor(handle.get_result_async)

    def run_skill(self, skill: str, *args: str) -> Any:
        result = self.start_skill(skill, *args)
        _wait(f"{skill}'s result", result.done, SKILL_TIMEOUT_S)
        return result.result().result

    def estop(self) -> float:
        """Publish the e-stop; returns its wall time (s). No garbage collection may run between that time
        and the send: a full collection of this process (the driver runs R1's thousands of episodes in it
        first) would be counted as the robot's latency."""
        msg = self.Bool(data=True)
        enabled = gc.isenabled()
        gc.disable()
        try:
            t0 = time.time()
            self.estop_pub.publish(msg)
        finally:
            if enabled:
                gc.enable()
        return t0

    def reset_estop(self) -> None:
        assert self.reset.wait_for_service(timeout_sec=10.0), "no estop_reset service"
        future = self.reset.call_async(self.ResetEstop.Request())
        _wait("estop_reset", future.done, 10.0)
        _wait("robot/status ok after the reset", lambda: bool(self.status) and self.status[-1].ok, 10.0)


class _CommandLog:
    """The fake UR5e's command log (JSON lines: t, cmd, args), read incrementally."""

    def __init__(self, path: Path) -> None:
        self.path, self._pos, self.commands = path, 0, []  # type: ignore[var-annotated]

    def poll(self) -> list[dict[str, Any]]:
        if self.path.exists():
            with self.path.open("r", encoding="utf-8") as f:
                f.seek(self._pos)
                chunk = f.read()
            done = chunk.rfind("\n") + 1
            self._pos += len(chunk[:done].encode("utf-8"))
            self.commands.extend(json.loads(line) for line in chunk[:done].splitlines() if line.strip())
        return self.commands


@contextmanager
def _graph(robot: str, nodes: list[str], params: dict[str, dict[str, str]], env: dict[str, str] | None = None,
           sink: Callable[[str], None] | None = None) -> Iterator[Any]:
    from monologue_bringup.up import Supervisor

    lines: list[str] = []
    sup = Supervisor(robot, "embedded", config_dir=CONFIG, nodes=nodes, node_params=params, env=env,
                     sink=sink or lines.append)
    sup.start()
    try:
        yield sup
    finally:
        sup.stop()


def _check_latched(probe: _Probe, moved: Callable[[], bool], *skill: str) -> str:
    """'' if the latch holds: robot/status says so and a new skill (`skill`: name, args) is refused with
    nothing moving."""
    try:
        _wait("estop_latched on robot/status", lambda: bool(probe.status) and probe.status[-1].estop_latched, 5.0)
    except TimeoutError as e:
        return str(e)
    if moved():
        return "the arm moved after the e-stop"
    result = probe.run_skill(*skill)
    if result.error_code != probe.ExecuteSkill.Result.ESTOP_ACTIVE:
        return f"a skill during the latch ended with error {result.error_code}: {result.error_msg}"
    return "" if not moved() else "the arm moved during the latch"


@contextmanager
def _probing(sup: Any, out: Trials) -> Iterator[_Probe]:
    """A probe of the running graph `sup`; the trials' wall time, and any node that exited, go into `out`."""
    probe = _Probe()
    t_start = time.monotonic()
    try:
        yield probe
    finally:
        out.wall_s = time.monotonic() - t_start
        probe.close()
    if sup.dead():
        out.problems.append(f"nodes exited: {sup.dead()}")


def _each_trial(trials: int, one: Callable[[int], None], label: str, out: Trials,
                progress: Callable[[str], None]) -> None:
    """`one(i)` for i in 0..trials-1, with a progress line every 20 trials."""
    for i in range(trials):
        out.loads.append(os.getloadavg()[0])
        one(i)
        if (i + 1) % 20 == 0:
            progress(f"  {label}: {i + 1}/{trials}: {out.summary()}")


def run_ur5e(trials: int, progress: Callable[[str], None] = print) -> Trials:
    """`trials` e-stops of the skills node's ur5e backend against the fake UR5e (ur_rtde API)."""
    out = Trials("ur5e (fake RTDE): estop -> stopL")
    with tempfile.TemporaryDirectory(prefix="estop_rtde_") as tmp:
        log = _CommandLog(Path(tmp) / "commands.jsonl")
        env = dict(os.environ)
        env["MONOLOGUE_FAKE_RTDE"] = json.dumps({"time_scale": 1.0, "objects": [
            {"name": n, "x": x, "y": y, "size": s} for n, _c, x, y, s in OBJECTS]})
        env["MONOLOGUE_FAKE_RTDE_LOG"] = str(log.path)
        params = {"skills": {"ur5e.rtde_factory": "skills_node.robots.ur5e.testing.fake_rtde:factories_from_env",
                             "ur5e.probe": "false", "ur5e.grip_delay": "0.05", "ur5e.release_delay": "0.05",
                             "status_rate": "10.0", "ur5e.camera.info_topics": "['']"}}  # no camera here
        with _graph("ur5e", ["skills"], params, env) as sup, _probing(sup, out) as probe:
            probe.publish_scene()
            probe.wait_ready()
            _each_trial(trials, lambda _i: _rtde_trial(probe, log, out), "ur5e", out, progress)
    return out


def _rtde_trial(probe: _Probe, log: _CommandLog, out: Trials) -> None:
    out.trials += 1
    n0 = len(log.poll())
    result = probe.start_skill("pick_place", "red block", "blue plate")
    try:
        _wait("the first motion command", lambda: any(c["cmd"] in ("moveL", "moveJ") for c in log.poll()[n0:]), 20.0)
    except TimeoutError as e:
        out.problems.append(str(e))
        return
    time.sleep(random.uniform(0.0, 0.05))  # s: land anywhere in the first motion
    n1 = len(log.poll())
    t0 = probe.estop()
    try:
        _wait("stopL", lambda: any(c["cmd"] in ("stopL", "stopJ") for c in log.poll()[n1:]), 5.0)
    except TimeoutError as e:
        out.problems.append(str(e))
    else:
        stop = next(c for c in log.commands[n1:] if c["cmd"] in ("stopL", "stopJ"))
        out.latencies_ms.append((float(stop["t"]) - t0) * 1000.0)
        out.stopped += 1
    _wait("the interrupted skill's result", result.done, SKILL_TIMEOUT_S)
    n2 = len(log.poll())
    why = _check_latched(probe, lambda: any(c["cmd"] in ("moveL", "moveJ") for c in log.poll()[n2:]), "home")
    if why:
        out.problems.append(why)
    else:
        out.latched += 1
    probe.reset_estop()
    home = probe.run_skill("home")
    if home.error_code != probe.ExecuteSkill.Result.NONE:
        out.problems.append(f"home after the reset: {home.error_msg}")


def run_sim(trials: int, progress: Callable[[str], None] = print) -> Trials:
    """`trials` e-stops of the skills node's sim backend driving the MuJoCo tabletop."""
    out = Trials("sim (MuJoCo): estop -> commanded velocity 0")
    params = {"tabletop_sim": {"joint_state_rate": "100.0", "real_time_factor": "1.0", "sim.seed": "3",
                               "sim.num_blocks": "2", "sim.num_bowls": "2"},
              "skills": {"status_rate": "10.0"}}
    with _graph("sim", ["tabletop_sim", "skills", "perception"], params) as sup, _probing(sup, out) as probe:
        _wait("sim/ground_truth", lambda: bool(probe.truth), 120.0)
        names = [(o.name, o.category) for o in probe.truth[-1].objects]
        blocks = [n for n, c in names if c == "block"]
        bowls = [n for n, c in names if c == "bowl"]
        probe.wait_ready()
        _each_trial(trials, lambda i: _sim_trial(probe, blocks[i % len(blocks)], bowls[i % len(bowls)], out), "sim",
                    out, progress)
    return out


def _sim_trial(probe: _Probe, block: str, bowl: str, out: Trials) -> None:
    out.trials += 1
    n0 = len(probe.joints)
    result = probe.start_skill("pick_place", block, bowl)
    try:
        _wait("the arm moving", lambda: any(v > 1e-6 for _t, v in probe.joints[n0:]), 20.0)
    except TimeoutError as e:
        out.problems.append(str(e))
        _wait("the skill's result", result.done, SKILL_TIMEOUT_S)
        return
    time.sleep(random.uniform(0.0, 0.05))  # s: land anywhere in the first motion
    t0 = probe.estop()
    try:
        _wait("zero commanded velocity", lambda: stop_sample(probe.joints[n0:], t0) is not None, 5.0)
    except TimeoutError as e:
        out.problems.append(str(e))
    _wait("the interrupted skill's result", result.done, SKILL_TIMEOUT_S)
    sample = stop_sample(probe.joints[n0:], t0)  # now that the skill has ended: no later motion can follow
    if sample is not None:
        out.latencies_ms.append((sample - t0) * 1000.0)
        out.stopped += 1
    n1 = len(probe.joints)
    why = _check_latched(probe, lambda: any(v > 0.0 for _t, v in probe.joints[n1:]), "pick_place", block, bowl)
    if why:
        out.problems.append(why)
    else:
        out.latched += 1
    probe.reset_estop()


def stop_sample(joints: list[tuple[float, float]], t0: float) -> float | None:
    """The stamp (s) of the stop in `joints` ((stamp s, max |commanded velocity| rad/s) in order): the first
    sample at or after `t0` with zero velocity after which no sample shows motion; None if the arm has
    not stopped (yet). A zero sample between two motions of a skill is not the stop."""
    stop: float | None = None
    for t, v in joints:
        if t < t0:
            continue
        if v != 0.0:
            stop = None
        elif stop is None:
            stop = t
    return stop


def own_ros_domain() -> None:
    """A ROS_DOMAIN_ID of this process's own (not env.sh's shared 42), localhost discovery."""
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    if os.environ.get("ROS_DOMAIN_ID", "42") == "42":
        os.environ["ROS_DOMAIN_ID"] = str(random.Random(os.getpid()).randrange(100, 200))


def rows(trials: int = 200, backends: tuple[str, ...] = ("ur5e", "sim"),
         progress: Callable[[str], None] = print) -> list[Row]:
    """R4's table rows (needs the built workspace and a free ROS_DOMAIN_ID: set one of your own)."""
    own_ros_domain()
    runs = {"ur5e": run_ur5e, "sim": run_sim}
    out = []
    for name in backends:
        t = runs[name](trials, progress)
        details = "; ".join(sorted(set(t.problems))[:5])
        out.append(Row("R4", f"e-stop latency, {t.backend}", f"p99 <= {TARGET_P99_MS:.0f} ms over {trials}, "
                       "latched until reset", t.summary(), t.ok, t.wall_s, details))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--backend", choices=("ur5e", "sim", "both"), default="both")
    ns = ap.parse_args(argv)
    backends = ("ur5e", "sim") if ns.backend == "both" else (ns.backend,)
    result = rows(ns.trials, backends)
    for r in result:
        extra = f" {r.details}" if r.details else ""
        print(f"{r.figure} {r.what}: {r.measured} [{r.verdict}] ({r.wall_s:.0f} s){extra}")
    return 0 if all(r.ok for r in result) else 1


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["TARGET_P99_MS", "Trials", "main", "rows", "run_sim", "run_ur5e", "stop_sample"]
