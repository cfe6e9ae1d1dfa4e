"""`monologue-replay <bag>`: replay a recorded run through the live graph and check its transcript.

    monologue-replay <bag dir> [rate:=1.0] [start_offset:=0.0] [timeout:=600] [log_level:=warn]
                     [record:=<new bag dir>] [container:=true] [--param node:name=value] [--config-dir DIR]
    monologue-replay <bag dir> play_only:=true [loop:=true] [rate:=...]

Starts the replay graph of graph.py (perception, success detector, planner, viz and the bag player
in place of the robot or simulator), with the planner answering from the bag's LLM cassette. The bag
player publishes the recorded sensor topics with their original timing and serves the recorded skill
results and affordances in step with the planner's goals. Every recorded instruction is sent again
and the replayed transcript is compared event for event with the recorded one.

Exit status: 0 if every episode reproduced its transcript, 1 at the first differing event (printed
with the expected and the replayed event), 2 for bad arguments or a bag that cannot be replayed.
With play_only:=true only the sensor topics are played (into a graph you run yourself, or the replay
graph's perception), until the end of the bag or Ctrl-C.

container:=true (the default) runs the graph's nodes in this one process (monologue_bringup.container),
which starts in a fraction of the time of one process per node (container:=false, as monologue-up).
The last line gives the wall time since this process started (interpreter start-up and imports
included, up to the graph's stop; the interpreter's own teardown follows) and the bag's duration
divided by it.
"""
from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from monologue_bringup.graph import REPLAY, params_from_custom_data, parse_launch_args
from monologue_bringup.up import graph_runner, parse_node_params, record_dir_error, run_until_signal

if TYPE_CHECKING:  # generated messages (mypy sees them as Any: rosidl ships no type information)
    from monologue_bag.core.episode import GoalSpec
    from monologue_interfaces.action import ExecuteInstruction
    from monologue_interfaces.msg import SceneDescription, TranscriptEvent

_IMPORTED_AT = time.monotonic()  # s: where process_wall_s falls back to without /proc
RECORD_FLUSH_TIMEOUT_S = 30.0  # s the recorder may take to write the events a replay saw
CAMERA_REL_TOL = 0.01  # relative tolerance of numbers in event data when perception used the camera


def build_goal(spec: GoalSpec) -> ExecuteInstruction.Goal:
    """monologue_bag GoalSpec -> ExecuteInstruction.Goal."""
    from monologue_interfaces.action import ExecuteInstruction

    g = ExecuteInstruction.Goal(instruction=spec.instruction, strategy=spec.strategy,
                                prompt_profile=spec.prompt_profile, max_steps=int(spec.max_steps),
                                objects=list(spec.objects))
    for flag, on in spec.flags.items():
        setattr(g, flag, ExecuteInstruction.Goal.OPTION_ON if on else ExecuteInstruction.Goal.OPTION_OFF)
    return g


def wait_for_perception(timeout_s: float) -> bool:
    """True once perception published a scene description from the played sensor data: only then does
    the planner's first describe_scene have input (DDS discovery can take seconds on a busy machine)."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    from monologue_common.runtime import probe_node
    from monologue_interfaces.msg import SceneDescription

    got: list[SceneDescription] = []
    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
    with probe_node(f"monologue_replay_probe_{os.getpid()}") as (node, executor):
        node.create_subscription(SceneDescription, "scene/description", got.append, latched)
        deadline = time.monotonic() + timeout_s
        while not got and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
        return bool(got)


HOLD_PERIOD_S = 0.2  # s: the player's re-publication period while a skill waits (config/monologue.yaml)


def hold_period_for(rate: float) -> float:
    """The player's hold period for a replay at `rate` (s of real time): the configured 0.2 s up to rate 10,
    shorter above it (down to 0.02 s at rate 100), so a success check waiting for a fresh scene waits as
    long in bag time as at rate 10."""
    return max(0.02, min(HOLD_PERIOD_S, 2.0 / rate))


def replay(
    bag_dir: Path,
    rate: float = 1.0,
    start_offset_s: float = 0.0,
    timeout_s: float = 600.0,
    node_params: dict[str, dict[str, str]] | None = None,
    robot: str = "sim",
    llm: str = "embedded",
    config_dir: Path | None = None,
    record: Path | None = None,
    sink: Callable[[str], None] | None = None,
    say: Callable[[str], None] = print,
    log_level: str = "warn",
    container: bool | None = None,
) -> int:
    """Replay every episode of `bag_dir` (the graph in this process with `container`, else a process per
    node); return the exit status described in the module doc. By default (None) the graph runs in this
    process unless this process already has rclpy initialised (its context is the in-process graph's
    own: it shuts it down). The in-process graph leaves nothing behind in a caller that goes on: once
    stopped, none of its nodes is discoverable."""
    from monologue_bag.core.bagio import Bag, BagError
    from monologue_bag.core.compare import first_divergence
    from monologue_bag.core.episode import event_from_msg, goal_spec, planner_params, read_recording

    from .client import run_episode, wait_until_recorded

    if container is None:
        from rclpy.utilities import ok

        container = not ok()

    try:
        with Bag(bag_dir) as bag:
            recording = read_recording(bag, logging.getLogger("replay"))
            cassette = bag.cassette_path
            recorded_params = params_from_custom_data(bag.custom_data)
    except (BagError, ValueError) as e:
        say(f"== cannot replay {bag_dir}: {e}")
        return 2
    if not cassette.is_file():
        say(f"== cannot replay {bag_dir}: no LLM cassette {cassette.name} next to the bag")
        return 2
    error = record_dir_error(record)
    if error:
        say(f"== {error} to record the replay")
        return 2
    episodes = recording.episodes
    say(f"== replaying {bag_dir}: {len(episodes)} episode(s), {len(recording.skill_calls)} skill calls "
        f"(timed by {recording.skill_timing_source}), {len(recording.affordances)} affordance answers")
    with tempfile.TemporaryDirectory(prefix="monologue_replay_") as tmp:
        params: dict[str, dict[str, str]] = {
            "bag_player": {"bag": str(bag_dir.resolve()), "rate": str(float(rate)),
                           "start_offset": str(float(start_offset_s)), "episode": "true",
                           "hold_period": str(hold_period_for(rate))},
            "planner": {"llm.cassette_mode": "replay", "llm.cassette_path": str(cassette.resolve()),
                        **planner_params(episodes[0])},
        }
        if record is None:
            params["planner"]["transcript_dir"] = str(Path(tmp) / "transcripts")
        else:
            record.mkdir(parents=True, exist_ok=True)
            shutil.copy2(cassette, record / cassette.name)  # a recorded replay can be replayed too
        for node, values in recorded_params.items():  # perceive and judge as the recorded run did
            params.setdefault(node, {}).update(values)
        if recorded_params:
            say(f"== recorded parameters: {recorded_params}")
        for node, values in (node_params or {}).items():
            params.setdefault(node, {}).update(values)
        # Numbers measured from camera images (a success detector's confidence, say) depend by
        # fractions of a millimetre on which frame the replay happened to process: compare them to
        # 1 %. The transcript's text is always compared exactly.
        camera = params.get("perception", {}).get("source") == "camera"
        rel_tol = CAMERA_REL_TOL if camera else 1e-9
        if camera:
            say(f"== perception from camera images: numbers in event data compared to {CAMERA_REL_TOL:.0%}")
        sup = graph_runner(container)(robot, llm, config_dir, params, sink=sink, log_level=log_level, mode=REPLAY,
                                      record=record)
        try:
            sup.start()
            expected: dict[str, int] = {}  # episode id -> transcript events seen, which the bag must hold
            if not wait_for_perception(120.0):
                say(f"== replay failed: perception published no scene within 120 s (exited: {sup.dead()})")
                return 1
            for n, ep in enumerate(episodes, start=1):
                say(f"== episode {n}/{len(episodes)}: {ep.instruction!r} ({len(ep.events)} events recorded)")
                got: list[TranscriptEvent] = []

                def show(msg: TranscriptEvent, got: list[TranscriptEvent] = got) -> None:
                    got.append(msg)
                    say(f"  {msg.text}")

                result, _objects = run_episode(ep.instruction, timeout_s, show, goal=build_goal(goal_spec(ep)),
                                               recorder_ready_s=30.0 if record is not None and n == 1 else 0.0)
                replayed = [event_from_msg(m) for m in result.transcript]
                div = first_divergence(ep.events, replayed, rel_tol=rel_tol)
                if div is not None:
                    if sup.dead():
                        say(f"== nodes exited during the replay: {sup.dead()}")
                    say(f"== REPLAY DIVERGED in episode {ep.episode_id} ({ep.instruction!r}):\n{div.describe()}")
                    return 1
                say(f"== episode {n}: identical transcript ({len(replayed)} events)")
                if record is not None and result.transcript:
                    expected[result.transcript[-1].episode_id] = len(result.transcript)
            if expected:
                counts = wait_until_recorded(expected, RECORD_FLUSH_TIMEOUT_S)
                short = {e: (counts.get(e, 0), n) for e, n in expected.items() if counts.get(e, 0) < n}
                if short:
                    say(f"== the recorder had not written every transcript event within {RECORD_FLUSH_TIMEOUT_S:.0f} s "
                        f"(episode: (written, seen)): {short}")
        except (TimeoutError, RuntimeError) as e:
            say(f"== replay failed: {e}")
            return 1
        finally:
            sup.stop()
    say(f"== replay reproduced all {len(episodes)} episode(s) of {bag_dir}")
    return 0


def play_only(bag_dir: Path, rate: float, start_offset_s: float, loop: bool, node_params: dict[str, dict[str, str]],
              config_dir: Path | None, log_level: str, container: bool = False) -> int:
    """Publish the bag's sensor topics into the replay graph (no episode) until the end or Ctrl-C."""
    params = {"bag_player": {"bag": str(bag_dir.resolve()), "rate": str(float(rate)),
                             "start_offset": str(float(start_offset_s)), "loop": str(loop).lower(),
                             "episode": "false"}}
    for node, values in node_params.items():
        params.setdefault(node, {}).update(values)
    sup = graph_runner(container)(config_dir=config_dir, node_params=params, log_level=log_level, mode=REPLAY,
                                  nodes=["bag_player", "perception", "viz"])
    # the player exits (0) at the bag's end
    return run_until_signal(sup, "monologue-replay", lambda dead: 0 if dead.get("bag_player") == 0 else 1)


def speed(bag_dir: Path, wall_s: float) -> str:
    """", a 43.4 s bag at 20.1x its duration", from the bag's metadata.yaml (empty if it has none: a bag
    whose recorder was killed); read with yaml, not by opening the bag again (that parses every schema)."""
    import yaml

    try:
        info = yaml.load((bag_dir / "metadata.yaml").read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        duration_s = float(info["rosbag2_bagfile_information"]["duration"]["nanoseconds"]) / 1e9
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError):
        return ""
    return f", a {duration_s:.1f} s bag at {duration_s / max(wall_s, 1e-9):.1f}x its duration"


def process_wall_s() -> float:
    """Wall time (s) since this process started, from /proc (interpreter start-up and imports included;
    10 ms resolution); where there is no /proc, since this module was imported."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime
        with open("/proc/uptime", encoding="ascii") as f:
            uptime_s = float(f.read().split()[0])
        return max(uptime_s - start_ticks / os.sysconf("SC_CLK_TCK"), 0.0)
    except (OSError, ValueError, IndexError):
        return time.monotonic() - _IMPORTED_AT


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        values, rest = parse_launch_args(argv, {
            "rate": "1.0", "start_offset": "0.0", "timeout": "600", "log_level": "warn", "record": "",
            "play_only": "false", "loop": "false", "robot": "sim", "llm": "embedded", "container": "true"})
        ap = argparse.ArgumentParser(prog="monologue-replay", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
        ap.add_argument("bag", type=Path, help="rosbag2 directory recorded with record:=<dir>")
        ap.add_argument("--param", action="append", default=[], help="node:name=value parameter override")
        ap.add_argument("--config-dir", type=Path, default=None)
        ns = ap.parse_args(rest)
        node_params = parse_node_params(ns.param)
        rate, offset, timeout = float(values["rate"]), float(values["start_offset"]), float(values["timeout"])
        if rate <= 0 or offset < 0 or timeout <= 0:
            raise ValueError("rate and timeout must be > 0, start_offset >= 0 s")
        if values["container"] not in ("true", "false"):
            raise ValueError(f"container:={values['container']} is not one of ['true', 'false']")
    except ValueError as e:
        print(f"monologue-replay: {e}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if values["play_only"].lower() == "true":
        return play_only(ns.bag, rate, offset, values["loop"].lower() == "true", node_params, ns.config_dir,
                         values["log_level"], values["container"] == "true")
    if values["loop"].lower() == "true":
        print("monologue-replay: loop:=true needs play_only:=true (an episode is replayed once)", file=sys.stderr)
        return 2
    lock = threading.Lock()

    def out(line: str) -> None:
        with lock:
            print(line, flush=True)

    from .client import stop_on_signals

    stop_on_signals()  # SIGINT and SIGTERM stop the graph (replay's `finally`) before this process ends
    try:
        rc = replay(ns.bag, rate, offset, timeout, node_params, values["robot"], values["llm"], ns.config_dir,
                    Path(values["record"]) if values["record"] else None, sink=out, say=out,
                    log_level=values["log_level"], container=values["container"] == "true")
    except KeyboardInterrupt as e:
        out(f"== interrupted ({e or 'SIGINT'}); the graph was stopped")
        return 130
    wall_s = process_wall_s()
    out(f"== {wall_s:.2f} s wall since the process started{speed(ns.bag, wall_s)}"
        f" (rate {rate:g}, {'one process' if values['container'] == 'true' else 'a process per node'})")
    return rc


if __name__ == "__main__":
    sys.exit(main())
