"""`monologue-demo`: bring up the simulated graph with the embedded LLM, run one instruction on a
random scene, print the monologue live, and exit 0 if the world ends up as asked.

    monologue-demo [seed:=N] [blocks:=2|3|4] [llm:=embedded|openai] [instruction:="..."] [timeout:=600]
                   [record:=<bag dir>] [robot:=sim|sim_kinematic] [perception:=oracle|camera]
                   [--param node:name=value ...]

The scene (its seed, and 2 or 3 blocks unless `blocks` is given) is random and printed, so a run can
be repeated with `seed:=N blocks:=M`. record:=<dir> records the run into a rosbag2 MCAP directory with
the LLM cassette next to it; `monologue-replay <dir>` replays it, `monologue-bag-info <dir>` shows it.
"""
from __future__ import annotations

import itertools
import os
import random
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from monologue_bag.core.layout import bag_files_in

from .graph import parse_launch_args, scene_node
from .up import Supervisor, parse_node_params

DEFAULT_INSTRUCTION = "Put the blocks in their matching bowls."
# perception:=camera: objects located from the simulator's RGB-D images (boxes from the oracle detector,
# 3D from depth, TF and open3d); success judged from those positions with IM's real-tabletop x-y rule.
CAMERA_PERCEPTION: dict[str, dict[str, str]] = {
    "perception": {"source": "camera", "detector": "oracle", "refresh_timeout": "8.0"},
    "success_detector": {"strategy": "tabletop"},
}
_CLIENT_IDS = itertools.count()  # one node name per run_episode call (rosout wants unique names)


def run_episode(
    instruction: str,
    timeout_s: float,
    print_event: Any = print,
    ready_timeout_s: float = 180.0,
    goal: Any = None,
    goal_options: Mapping[str, Any] | None = None,
) -> tuple[Any, list[Any]]:
    """Send one ExecuteInstruction goal (`goal`, or one with just `instruction`) to a running graph;
    return (result, final ground truth).

    `goal_options` sets further goal fields (strategy, prompt_profile, *_feedback, max_steps, ...).
    The final ground truth is the first `sim/ground_truth` message after the result, or the last one
    before it when none comes within 5 s (a simulator that publishes only on change)."""
    import rclpy
    from rclpy.action import ActionClient
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    from monologue_interfaces.action import ExecuteInstruction
    from monologue_interfaces.msg import SceneDescription

    own_context = not rclpy.ok()
    if own_context:
        rclpy.init(args=[])  # not sys.argv: its key:=value arguments are not ROS remappings
    node = rclpy.create_node(f"monologue_demo_{os.getpid()}_{next(_CLIENT_IDS)}")
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    truth: list[Any] = []
    received: list[int] = []

    def on_feedback(fb: Any) -> None:
        received.append(fb.feedback.event.index)
        print_event(fb.feedback.event)

    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                         reliability=ReliabilityPolicy.RELIABLE)
    node.create_subscription(SceneDescription, "sim/ground_truth", lambda m: truth.append(m), latched)
    client = ActionClient(node, ExecuteInstruction, "execute_instruction")
    try:
        if not client.wait_for_server(timeout_sec=ready_timeout_s):
            raise TimeoutError(f"planner's execute_instruction not available after {ready_timeout_s:.0f} s")
        goal = goal if goal is not None else ExecuteInstruction.Goal(instruction=instruction)
        for name, value in (goal_options or {}).items():
            if not hasattr(goal, name):
                raise ValueError(f"ExecuteInstruction goals have no field {name!r}")
            setattr(goal, name, value)
        send = client.send_goal_async(goal, feedback_callback=on_feedback)
        executor.spin_until_future_complete(send, timeout_sec=30.0)
        handle = send.result()
        if handle is None or not handle.accepted:
            raise RuntimeError("the planner rejected the instruction")
        result_future = handle.get_result_async()
        deadline = time.monotonic() + timeout_s
        while not result_future.done():
            if time.monotonic() > deadline:
                handle.cancel_goal_async()
                executor.spin_once(timeout_sec=1.0)
                raise TimeoutError(f"episode did not finish within {timeout_s:.0f} s; cancelled")
            executor.spin_once(timeout_sec=0.1)
        result = result_future.result().result
        before = len(truth)
        end = time.monotonic() + 5.0  # s; feedback may still be in flight after the result
        while (len(truth) == before or len(received) < len(result.transcript)) and time.monotonic() < end:
            executor.spin_once(timeout_sec=0.1)
        return result, truth[-1].objects if truth else []
    finally:
        node.destroy_node()
        if own_context:
            rclpy.shutdown()


def world_states(objects: Sequence[Any]) -> list[Any]:
    from skills_node.core.types import ObjectState

    return [
        ObjectState(o.name, o.category, (o.pose.pose.position.x, o.pose.pose.position.y,
                                         o.pose.pose.position.z),
                    (o.size.x, o.size.y, o.size.z), color=o.name.rsplit(" ", 1)[0])
        for o in objects
    ]


def main(argv: Sequence[str] | None = None) -> int:
    from monologue_domain.tasks import matching_bowls_done

    argv = list(sys.argv[1:] if argv is None else argv)
    values, rest = parse_launch_args(argv, {
        "robot": "sim", "llm": "embedded", "seed": "-1", "instruction": DEFAULT_INSTRUCTION,
        "timeout": "600", "log_level": "warn", "blocks": "0", "record": "", "perception": "oracle",
    })
    extra = [rest[i + 1] for i, a in enumerate(rest[:-1]) if a == "--param"]
    unexpected = [a for i, a in enumerate(rest) if a != "--param" and (i == 0 or rest[i - 1] != "--param")]
    if unexpected or len(extra) * 2 != len(rest):
        print(f"unexpected arguments: {unexpected or rest}\n{__doc__}", file=sys.stderr)
        return 2
    try:
        overrides = parse_node_params(extra)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    seed = int(values["seed"])
    if seed < 0:
        seed = random.SystemRandom().randrange(100_000)
    blocks = int(values["blocks"]) or random.Random(seed).choice((2, 3))
    if not 1 <= blocks <= 4:
        print("blocks must be 1-4 (IM §4.1 scenes hold at most 4 blocks)", file=sys.stderr)
        return 2
    transcripts = Path(os.environ.get("MONOLOGUE_RUNS_DIR", tempfile.gettempdir())) / "monologue_demo"
    record = Path(values["record"]).expanduser() if values["record"] else None
    if record is not None and bag_files_in(record):
        print(f"== {record} already holds a bag; choose a new directory", file=sys.stderr)
        return 2
    print(f"== Inner Monologue demo: robot={values['robot']} llm={values['llm']} "
          f"scene seed={seed} blocks={blocks}")
    print(f"== instruction: {values['instruction']}")
    lock = threading.Lock()

    def node_log(line: str) -> None:
        with lock:
            print(line, flush=True)

    node_params = {
        scene_node(values["robot"]): {"sim.seed": str(seed), "sim.num_blocks": str(blocks),
                   "sim.num_bowls": str(max(blocks, 3) if blocks <= 3 else 3),
                   "sim.matching_bowls": "true" if blocks <= 3 else "false"},
    }
    if record is None:  # a recorded run keeps its transcript files next to the bag
        node_params["planner"] = {"transcript_dir": str(transcripts)}
    if values["perception"] not in ("oracle", "camera"):
        print("perception must be oracle or camera", file=sys.stderr)
        return 2
    if values["perception"] == "camera":  # scene and success from the camera images (oracle boxes, depth, open3d)
        for node, params in CAMERA_PERCEPTION.items():
            node_params.setdefault(node, {}).update(params)
    for node, params in overrides.items():  # --param node:name=value wins
        node_params.setdefault(node, {}).update(params)
    sup = Supervisor(values["robot"], values["llm"], node_params=node_params, sink=node_log,
                     log_level=values["log_level"], record=record)
    t0 = time.monotonic()
    try:
        sup.start()

        def show(event: Any) -> None:
            with lock:
                print(f"  {event.text}", flush=True)

        print("== monologue:")
        result, objects = run_episode(values["instruction"], float(values["timeout"]), show)
    except (TimeoutError, RuntimeError) as e:
        print(f"== demo failed: {e}", file=sys.stderr)
        return 1
    finally:
        codes = sup.stop()
    if values["instruction"] == DEFAULT_INSTRUCTION:
        done = matching_bowls_done(world_states(objects)) if objects else False
    else:  # no reward function for free-form instructions: trust the planner
        done = bool(result.success)
    print(f"== planner: {'success' if result.success else 'failure'} ({result.reason}); "
          f"{result.steps_taken} skills in {time.monotonic() - t0:.1f} s")
    print(f"== world state satisfies the instruction: {done}")
    print(f"== transcript: {result.transcript_path}")
    if record is not None:
        print(f"== bag: {record} (monologue-bag-info {record}; monologue-replay {record})")
    crashed = {n: c for n, c in codes.items() if c not in (0, -2, 130)}
    if crashed:
        print(f"== nodes exited with errors: {crashed}", file=sys.stderr)
    return 0 if (result.success and done) else 1


if __name__ == "__main__":
    sys.exit(main())
