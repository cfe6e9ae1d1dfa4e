"""bag_player: plays a recorded bag into a live graph, standing in for the robot or simulator.

* Publishes the configured sensor topics (names or fnmatch patterns) of the bag with their original
  timing and QoS (rate factor, start offset, loop).
* With `episode: true` it also serves what the skills node served in the recording:
  `get_affordances` (recorded answers) and the `execute_skill` action (recorded results). Playback
  stops at each recorded skill's start until the planner sends that goal, then plays through the
  skill and returns its recorded result, so perception sees the post-skill state when asked.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rclpy.action.server import ActionServer, CancelResponse, GoalResponse, ServerGoalHandle
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.duration import Duration
from rclpy.serialization import serialize_message
from rclpy.utilities import try_shutdown

from monologue_common.core.msgdefs import DefinitionError, MessageDefinitions
from monologue_common.params import NODE_OPTIONS, parameter_values, warn_unused
from monologue_common.qos import latched
from monologue_common.runtime import Component, TypedNode, run_node, to_time
from monologue_interfaces.action import ExecuteSkill
from monologue_interfaces.msg import AffordanceReport, SkillAffordance
from monologue_interfaces.srv import GetAffordances

from .core.bagio import Bag, BagMessage, QosSpec
from .core.episode import read_recording
from .core.recording import TopicSelection
from .core.replay import RecordedSkills
from .core.settings import player_settings_from_parameters
from .core.timeline import NS, Playback
from .rostypes import message_class, qos_profile, share_dir, to_message

ACK_TIMEOUT_S = 2.0  # s: longest wait for subscribers to acknowledge a skill's messages before its result


class PlayerNode(TypedNode):
    def __init__(self) -> None:
        super().__init__("bag_player", **NODE_OPTIONS)
        s = self.settings = player_settings_from_parameters(parameter_values(self))
        warn_unused(self, list(s.unused))
        path = Path(os.path.expanduser(s.bag))
        opts = s.playback
        self._episode = s.episode
        self._skill_timeout = s.skill_timeout
        selection = TopicSelection(list(s.topics))
        log = logging.getLogger("bag_player")

        with Bag(path) as bag:
            topics = selection.wanted(bag.topics)
            if not topics:
                self.get_logger().warning(f"none of {selection.patterns} is in {path}; publishing nothing")
            messages = list(bag.messages(topics))
            self._converted: dict[int, bytes] = {}  # id(BagMessage) -> its data re-encoded in the installed type
            self._stale = self._stale_topics(bag, topics, messages)
            self._decode = bag.decoder()
            start_ns = bag.start_ns
            recording = read_recording(bag, log) if self._episode else None
            qos = {t: bag.topics[t].qos for t in topics}
            types = {t: bag.topics[t].type_name for t in topics}
        self._pubs = {t: self.create_publisher(message_class(types[t]), t, qos_profile(player_qos(qos[t])))
                      for t in topics}
        self.skills: RecordedSkills | None = None
        limit: int | None = None
        group = ReentrantCallbackGroup()
        if recording is not None:
            self.skills = RecordedSkills(recording.skill_calls, recording.affordances, log)
            limit = self.skills.limit_ns()
            first = limit if limit is not None else start_ns
            if opts.start_offset_s * NS > first - start_ns:
                raise ValueError(f"bag_player: start_offset {opts.start_offset_s} s skips recorded skills "
                                 f"(the first starts at {(first - start_ns) / NS:.2f} s)")
            self._aff_pub = self.create_publisher(AffordanceReport, "skills/affordances", latched(100))
            self._srv = self.create_service(GetAffordances, "get_affordances", self._affordances,
                                            callback_group=group)
            self._action = ActionServer(self, ExecuteSkill, "execute_skill", execute_callback=self._execute,
                                        goal_callback=lambda _g: GoalResponse.ACCEPT,
                                        cancel_callback=lambda _g: CancelResponse.ACCEPT, callback_group=group)
            self.get_logger().info(
                f"episode replay: {len(recording.episodes)} episode(s), {len(recording.skill_calls)} skill calls "
                f"(timed by {recording.skill_timing_source}), {len(recording.affordances)} affordance answers")
        self.playback = Playback(messages, start_ns, opts, self._publish, log, limit_ns=limit)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self.get_logger().info(f"playing {len(messages)} messages on {topics} from {path} at rate {opts.rate}")

    def _stale_topics(self, bag: Bag, topics: list[str], messages: list[BagMessage]) -> dict[str, Any]:
        """Topics recorded with an older definition of their type (another type hash than the installed
        one) -> the installed message class. Their messages are re-encoded field by field into the
        installed type when first published (_publish): an old bag keeps replaying after an interface
        gains fields (they take their defaults). Converting all of them here took most of the player's
        start-up; the first message of each is converted now, so a bag that cannot be converted still
        fails at start-up."""
        defs = MessageDefinitions(share_dir)
        stale: dict[str, Any] = {}
        for t in topics:
            info = bag.topics[t]
            try:
                current = defs.get(info.type_name).rihs01
            except DefinitionError as e:
                raise ValueError(f"bag_player: {t} has type {info.type_name}, which is not installed: {e}") from e
            if info.rihs01 and info.rihs01 != current:
                stale[t] = message_class(info.type_name)
                self.get_logger().warning(
                    f"{t}: recorded with another definition of {info.type_name} ({info.rihs01[:15]}..., installed "
                    f"{current[:15]}...); converting its {info.count} messages field by field")
        for t in stale:
            first = next((m for m in messages if m.topic == t), None)
            if first is not None:
                self._convert(first, stale[t], bag.decode)
        return stale

    def _convert(self, m: BagMessage, cls: Any, decode: Callable[[BagMessage], Any]) -> bytes:
        data = self._converted.get(id(m))
        if data is None:
            try:
                data = serialize_message(to_message(decode(m), cls))
            except Exception as e:  # rosbags, the converter and rclpy's serializer raise several types
                raise ValueError(f"bag_player: cannot convert a recorded {m.type_name} on {m.topic}: {e}") from e
            self._converted[id(m)] = data  # the playback keeps `m` (the id stays its own)
        return data

    def _publish(self, m: BagMessage) -> None:
        cls = self._stale.get(m.topic)
        self._pubs[m.topic].publish(m.data if cls is None else self._convert(m, cls, self._decode))

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                wake = self.playback.tick(time.monotonic())
            except Exception as e:  # a publisher error must not silently stop the replay
                self.get_logger().error(f"playback failed: {e}")
                return
            if self.playback.finished and not self._episode:
                self.get_logger().info(f"end of bag: {self.playback.published} messages published")
                try_shutdown()
                return
            self._wake.wait(max(0.0, min(wake - time.monotonic(), 0.5)))
            self._wake.clear()

    def _allow(self, limit_ns: int | None) -> None:
        self.playback.allow(limit_ns, time.monotonic())
        self._wake.set()

    def _affordances(self, req: GetAffordances.Request, res: GetAffordances.Response) -> GetAffordances.Response:
        assert self.skills is not None
        answer = self.skills.affordances()
        if answer is None:
            res.success, res.message = False, "replay: no recorded get_affordances answer left"
            return res
        res.success, res.message = answer.success, answer.message
        res.skills = [SkillAffordance(skill=s, args=list(a), description=d, affordance=float(aff))
                      for s, a, d, aff in answer.skills]
        res.objects, res.locations = list(answer.objects), list(answer.locations)
        report = AffordanceReport(include_unaffordable=bool(req.include_unaffordable), success=res.success,
                                  message=res.message, skills=res.skills, objects=res.objects,
                                  locations=res.locations)
        report.header.stamp = to_time(time.time())
        self._aff_pub.publish(report)
        return res

    def _execute(self, goal: ServerGoalHandle) -> ExecuteSkill.Result:
        assert self.skills is not None
        req: ExecuteSkill.Goal = goal.request
        result = ExecuteSkill.Result()
        outcome = self.skills.begin(str(req.skill), list(req.args))
        call = outcome.call
        if call is not None:
            self._allow(call.end_ns)
            budget = (call.end_ns - call.start_ns) / NS / self.playback_rate + self._skill_timeout
            if not self.playback.wait_reached(call.end_ns, budget):
                self.get_logger().error(f"playback did not reach the end of {call.skill} within {budget:.0f} s")
            self._wait_acked(ACK_TIMEOUT_S)
            self.skills.finish(call)
            self._allow(self.skills.limit_ns())
            result.duration = float((call.end_ns - call.start_ns) / NS)
        result.error_code = outcome.error_code
        result.error_msg = outcome.error_msg
        result.failed_precondition = outcome.failed_precondition
        if result.error_code == ExecuteSkill.Result.CANCELED and goal.is_cancel_requested:
            goal.canceled()
        elif result.error_code == ExecuteSkill.Result.NONE:
            goal.succeed()
        else:
            goal.abort()
        self.get_logger().info(f"replayed {req.skill}({', '.join(req.args)}): error_code {result.error_code}")
        return result

    def _wait_acked(self, timeout_s: float) -> None:
        """Until every subscriber has acknowledged what was played so far (at most `timeout_s` s in all):
        the result goes out only then, so a success check that follows it cannot be answered from a
        pre-skill message still in flight (as `ros2 bag play --wait-for-all-acked`)."""
        deadline = time.monotonic() + timeout_s
        for topic, pub in self._pubs.items():
            left = deadline - time.monotonic()
            if left <= 0 or not pub.wait_for_all_acked(Duration(nanoseconds=int(left * 1e9))):
                self.get_logger().warning(f"{topic}: not every subscriber acknowledged within {timeout_s:g} s")
                return

    @property
    def playback_rate(self) -> float:
        return self.settings.playback.rate

    def destroy_node(self) -> None:
        self._stop.set()
        self._wake.set()
        super().destroy_node()  # type: ignore[no-untyped-call]  # unannotated in rclpy


def player_qos(recorded: QosSpec) -> QosSpec:
    """Reliable and transient local, which every subscriber accepts (a bag recorded while the publisher
    was not yet discovered may say volatile for a latched topic); history depth as recorded for latched
    topics (several /tf_static messages), 10 for streams."""
    return QosSpec(reliable=True, transient_local=True, depth=recorded.depth if recorded.transient_local else 10)


# The node in an in-process graph (monologue-up container:=true), with the threads main() spins it on.
COMPONENT = Component(PlayerNode, threads=4)


def main(args: list[str] | None = None) -> None:
    run_node(PlayerNode, threads=4, args=args)
