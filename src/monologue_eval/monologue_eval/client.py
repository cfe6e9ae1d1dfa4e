"""The evaluation tools' ROS client: one ExecuteInstruction goal to a running graph, and the world after it.

Used by `monologue-demo` (its own graph or a running one), `monologue-bench` and `monologue-replay`.
"""
from __future__ import annotations

import itertools
import logging
import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from monologue_domain.objects import ObjectState

if TYPE_CHECKING:  # generated messages (mypy sees them as Any: rosidl ships no type information)
    from monologue_interfaces.action import ExecuteInstruction
    from monologue_interfaces.msg import SceneDescription, SceneObject, TranscriptEvent

GROUND_TRUTH_TOPIC = "sim/ground_truth"  # the simulator's (or kinematic tabletop's) exact world
SCENE_TOPIC = "scene/description"  # what perception sees (every robot)
_CLIENT_IDS = itertools.count()  # one node name per run_episode call (rosout wants unique names)
GOAL_RESPONSE_GRACE_S = 5.0  # s: after this long without a goal response, the server's status may answer
RESULT_RESPONSE_GRACE_S = 5.0  # s: after this long with the goal finished and no result, the result is asked again
FINISHED = frozenset({4, 5, 6})  # action_msgs/GoalStatus: SUCCEEDED, CANCELED, ABORTED


def run_episode(
    instruction: str,
    timeout_s: float,
    print_event: Callable[[TranscriptEvent], None] = print,
    ready_timeout_s: float = 180.0,
    goal: ExecuteInstruction.Goal | None = None,
    goal_options: Mapping[str, object] | None = None,
    fallback_scene: bool = False,
    recorder_ready_s: float = 0.0,
    recorded_topics: Sequence[str] = (),
) -> tuple[ExecuteInstruction.Result, list[SceneObject]]:
    """Send one ExecuteInstruction goal (`goal`, or one with just `instruction`) to a running graph;
    return (result, final world objects).

    `goal_options` sets further goal fields (strategy, prompt_profile, *_feedback, max_steps, ...).
    The final world is the first `sim/ground_truth` message after the result, or the last one before
    it when none comes within 5 s (a simulator that publishes only on change). With `fallback_scene`,
    a graph without ground truth (a real robot) is judged from perception's last scene description.
    With `recorder_ready_s` > 0 (s), the goal waits until the bag recorder records every topic it should
    that this client sees published (recorder_ready), and every topic of `recorded_topics` whether or not
    this client has discovered its publisher yet, so a recording holds the episode from its start."""
    from unique_identifier_msgs.msg import UUID

    from monologue_common.actions import ActionClient
    from monologue_common.qos import LATCHED
    from monologue_common.runtime import probe_node
    from monologue_interfaces.action import ExecuteInstruction
    from monologue_interfaces.msg import SceneDescription

    with probe_node(f"monologue_eval_{os.getpid()}_{next(_CLIENT_IDS)}") as (node, executor):
        truth: list[SceneDescription] = []
        seen: list[SceneDescription] = []
        received: list[int] = []

        def on_feedback(fb: ExecuteInstruction.Impl.FeedbackMessage) -> None:
            received.append(fb.feedback.event.index)
            print_event(fb.feedback.event)

        node.create_subscription(SceneDescription, GROUND_TRUTH_TOPIC, truth.append, LATCHED)
        if fallback_scene:
            node.create_subscription(SceneDescription, SCENE_TOPIC, seen.append, LATCHED)
        client = ActionClient(node, ExecuteInstruction, "execute_instruction")
        if not client.wait_for_server(timeout_sec=ready_timeout_s):
            raise TimeoutError(f"planner's execute_instruction not available after {ready_timeout_s:.0f} s")
        if recorder_ready_s > 0:
            missing = recorder_ready(node, executor, recorder_ready_s, recorded_topics)
            if missing:
                logging.getLogger("monologue_eval").warning(
                    f"the recorder does not record {missing} after {recorder_ready_s:.0f} s; starting anyway")
        goal = goal if goal is not None else ExecuteInstruction.Goal(instruction=instruction)
        for name, value in (goal_options or {}).items():
            if not hasattr(goal, name):
                raise ValueError(f"ExecuteInstruction goals have no field {name!r}")
            setattr(goal, name, value)
        goal_id = UUID(uuid=list(uuid.uuid4().bytes))
        send = client.send_goal_async(goal, feedback_callback=on_feedback, goal_uuid=goal_id)
        # the action server is discovered as soon as the planner has created it; the planner answers once its
        # node spins, which on a loaded machine can be well after that (model loading): wait as for the server.
        # A goal response can also be lost (DDS drops a service response to a client the server has not yet
        # discovered) while the goal runs: after GOAL_RESPONSE_GRACE_S the server's status list is taken as
        # the answer.
        handle = None
        deadline = time.monotonic() + ready_timeout_s
        grace = time.monotonic() + GOAL_RESPONSE_GRACE_S
        while handle is None and time.monotonic() < deadline:
            executor.spin_until_future_complete(send, timeout_sec=0.5)
            handle = send.result() if send.done() else None
            if handle is None and time.monotonic() > grace:
                handle = client.goal_handle_from_status(goal_id)
                if handle is not None:
                    logging.getLogger("monologue_eval").warning(
                        "the planner's goal response was lost; its status shows the goal: following it")
        if handle is None:
            raise RuntimeError(f"the planner did not answer the instruction within {ready_timeout_s:.0f} s")
        if not handle.accepted:
            raise RuntimeError("the planner rejected the instruction")
        result_future = handle.get_result_async()
        deadline = time.monotonic() + timeout_s
        ended: float | None = None  # s (monotonic), when the server's status first showed the goal finished
        while not result_future.done():
            if time.monotonic() > deadline:
                handle.cancel_goal_async()
                executor.spin_once(timeout_sec=1.0)
                raise TimeoutError(f"episode did not finish within {timeout_s:.0f} s; cancelled")
            executor.spin_once(timeout_sec=0.1)
            # A result response can be lost too (Fast DDS: "failed to send response (timeout)" on a loaded
            # machine): once the status shows the goal finished and no result came, ask for it again.
            if client.last_status(goal_id) in FINISHED and not result_future.done():
                ended = ended or time.monotonic()
                if time.monotonic() - ended > RESULT_RESPONSE_GRACE_S:
                    logging.getLogger("monologue_eval").warning(
                        "the planner's result response was lost; its status shows the goal finished: asking again")
                    result_future = handle.get_result_async()
                    ended = time.monotonic()
        result = result_future.result().result
        before, before_seen = len(truth), len(seen)
        end = time.monotonic() + 5.0  # s; feedback may still be in flight after the result
        while time.monotonic() < end and (len(received) < len(result.transcript) or (
                len(truth) == before and not (fallback_scene and not truth and len(seen) > before_seen))):
            executor.spin_once(timeout_sec=0.1)
        if truth:
            return result, list(truth[-1].objects)
        return result, list(seen[-1].objects) if seen else []


RECORDER_PROGRESS_TOPIC = "recorder/progress"  # monologue_bag's recorder: transcript events written per episode


def recorder_ready(node: Any, executor: Any, timeout_s: float, required: Sequence[str] = ()) -> list[str]:
    """Wait (at most `timeout_s`, s) until the bag recorder's progress lists, as recorded, every topic
    that matches its patterns and that `node` sees published by another node, and every `required` topic
    (absolute names; `node` may not have discovered their publishers yet). The recorder discovers
    topics by polling; a topic it finds late loses what was published before (a latched topic keeps
    only its last messages). Returns the topics still missing ([] when ready)."""
    import json

    from std_msgs.msg import String

    from monologue_bag.core.recording import TopicSelection
    from monologue_common.qos import LATCHED

    progress: list[dict[str, Any]] = []
    sub = node.create_subscription(String, RECORDER_PROGRESS_TOPIC, lambda m: progress.append(json.loads(m.data)),
                                   LATCHED)
    deadline = time.monotonic() + timeout_s
    missing: list[str] = ["(no recorder progress)"]
    try:
        while time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
            if not progress or not progress[-1].get("patterns"):
                continue
            last = progress[-1]
            wanted = TopicSelection(list(last["patterns"])).wanted(t for t, _ in node.get_topic_names_and_types())
            published = [t for t in wanted if any(i.node_name not in ("recorder", node.get_name())
                                                   for i in node.get_publishers_info_by_topic(t))]
            needed = set(published) | set(TopicSelection(list(last["patterns"])).wanted(required))
            missing = sorted(needed - set(last.get("topics", [])))
            if not missing:
                break
        return missing
    finally:
        node.destroy_subscription(sub)


def wait_until_recorded(expected: Mapping[str, int], timeout_s: float) -> dict[str, int]:
    """Wait until the bag recorder reports at least `expected[episode_id]` transcript events written for
    every episode (the events a client saw), at most `timeout_s` (s). Returns the recorder's last counts:
    stop the graph only after this, or its last events may still be in flight to the recorder."""
    import json

    from std_msgs.msg import String

    from monologue_common.qos import LATCHED
    from monologue_common.runtime import probe_node

    counts: dict[str, int] = {}

    def on_progress(msg: String) -> None:
        counts.update(json.loads(msg.data).get("transcript", {}))

    with probe_node(f"monologue_eval_recorded_{os.getpid()}_{next(_CLIENT_IDS)}") as (node, executor):
        node.create_subscription(String, RECORDER_PROGRESS_TOPIC, on_progress, LATCHED)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and any(counts.get(e, 0) < n for e, n in expected.items()):
            executor.spin_once(timeout_sec=0.1)
        return dict(counts)


def stop_on_signals() -> None:
    """SIGINT and SIGTERM raise KeyboardInterrupt in the main thread, so a benchmark loop stops (and its
    graph is stopped by the `finally` that started it) instead of going on with a shut-down ROS context."""
    import signal

    def interrupt(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)


def planner_available(timeout_s: float) -> bool:
    """True if a planner's execute_instruction action server appears on this ROS domain within `timeout_s` s."""
    from monologue_common.actions import ActionClient
    from monologue_common.runtime import probe_node
    from monologue_interfaces.action import ExecuteInstruction

    with probe_node(f"monologue_eval_probe_{os.getpid()}_{next(_CLIENT_IDS)}") as (node, _executor):
        return bool(ActionClient(node, ExecuteInstruction, "execute_instruction").wait_for_server(
            timeout_sec=timeout_s))


def world_states(objects: Sequence[SceneObject]) -> list[ObjectState]:
    """SceneObject messages -> ObjectState (positions and sizes in m, base frame)."""
    return [
        ObjectState(o.name, o.category, (o.pose.pose.position.x, o.pose.pose.position.y,
                                         o.pose.pose.position.z),
                    (o.size.x, o.size.y, o.size.z), color=o.name.rsplit(" ", 1)[0])
        for o in objects
    ]
