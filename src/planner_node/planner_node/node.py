"""planner_node: serves ExecuteInstruction with a planner strategy (rclpy adapter only).

Everything that decides what an episode does lives in core (core.runner, core.strategies); this
module translates goals, goal handles, transcript events and step records to and from messages.
"""
from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import cast

from rclpy.action.server import ActionServer, CancelResponse, GoalResponse, ServerGoalHandle
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.impl.rcutils_logger import RcutilsLogger
from rclpy.node import Node
from rclpy.publisher import Publisher
from std_msgs.msg import String

from monologue_common.params import NODE_OPTIONS, parameter_values, warn_unused
from monologue_common.qos import LATCHED, TRANSCRIPT
from monologue_common.runtime import Component, run_node, to_time
from monologue_domain.transcript import Event
from monologue_interfaces.action import ExecuteInstruction
from monologue_interfaces.msg import (
    DetectionQueries,
    HumanInput,
    SkillScore,
    StepScores,
    TranscriptEvent,
)
from monologue_llm.factory import make_backend_from_params

from .core import strategies
from .core.episode import EpisodeError, StepRecord
from .core.role_llm import close_role_backends
from .core.runner import EpisodeOutcome, EpisodeRunner, GoalRequest, PreparedEpisode
from .core.settings import PlannerSettings, settings_from_parameters
from .core.strategy import Publication
from .ros_ports import RosHumanAsker, RosRobotStatus, RosScenePort, RosSkillsPort, RosSuccessPort

_Goal = ExecuteInstruction.Goal


# message kinds a strategy's Publication may name -> (message type, message from the rendered text)
MESSAGE_KINDS: dict[str, tuple[type[String], Callable[[str], String]]] = {
    "string": (String, lambda text: String(data=text)),
}


def _option(value: int) -> bool | None:
    """An ExecuteInstruction OPTION_* value: True, False, or None for the node's default."""
    if value == _Goal.OPTION_ON:
        return True
    if value == _Goal.OPTION_OFF:
        return False
    return None


def goal_request(g: ExecuteInstruction.Goal) -> GoalRequest:
    """The core's view of an ExecuteInstruction goal."""
    return GoalRequest(
        instruction=str(g.instruction), strategy=str(g.strategy), prompt_profile=str(g.prompt_profile),
        object_feedback=_option(g.object_feedback), success_feedback=_option(g.success_feedback),
        scene_feedback=_option(g.scene_feedback), human_feedback=_option(g.human_feedback),
        use_affordances=_option(g.use_affordances), max_steps=int(g.max_steps),
        resume_episode=str(g.resume_episode), objects=tuple(str(o) for o in g.objects))


def event_to_msg(e: Event) -> TranscriptEvent:
    return TranscriptEvent(episode_id=e.episode_id, index=e.index, kind=int(e.kind), text=e.text,
                           data_json=json.dumps(dict(e.data), ensure_ascii=False), stamp=to_time(e.stamp))


def result_msg(outcome: EpisodeOutcome) -> ExecuteInstruction.Result:
    r = outcome.result
    out = ExecuteInstruction.Result()
    out.success = r.success
    out.error_code = int(r.error)
    out.reason = r.reason
    out.steps_taken = r.steps_taken
    out.transcript = [event_to_msg(e) for e in outcome.events]
    out.transcript_path = str(outcome.path) if outcome.path is not None else ""
    return out


class PlannerNode(Node):
    def __init__(self) -> None:
        super().__init__("planner", **NODE_OPTIONS)
        self.settings: PlannerSettings = settings_from_parameters(parameter_values(self))
        warn_unused(self, list(self.settings.unused))
        s = self.settings

        self.get_logger().info(f"LLM backend {s.llm.get('backend')} loading ...")
        llm = make_backend_from_params(s.llm, logging.getLogger("planner.llm"))
        ports = ReentrantCallbackGroup()
        try:
            self.runner = EpisodeRunner(
                s, llm,
                skills=RosSkillsPort(self, ports, s.service_timeout_s, s.skill_timeout_s),
                scene=RosScenePort(self, ports, s.service_timeout_s),
                success=RosSuccessPort(self, ports, s.service_timeout_s),
                robot=RosRobotStatus(self, ports),
                asker=RosHumanAsker(self, ports, s.service_timeout_s),
                logger=logging.getLogger("planner"))
        except Exception:
            llm.close()
            raise
        for ep in self.runner.interrupted():
            self.get_logger().warning(
                f"interrupted episode {ep.header.get('episode_id', '?')} "
                f"({len(ep.events)} events) in {ep.path}; it was not finished. Send ExecuteInstruction "
                f"with resume_episode={ep.header.get('episode_id', ep.path.stem)!r} (or 'latest') to continue it")
        self.get_logger().info(f"LLM backend {llm.name} ready; strategy {s.strategy}, "
                               f"prompt profile {self.runner.profile.name}")
        # the static preamble into the LLM's prompt cache, beside start-up (an episode waits for it)
        threading.Thread(target=self._prefill, name="planner-prefill", daemon=True).start()

        self._transcript_pub = self.create_publisher(TranscriptEvent, "monologue/transcript", TRANSCRIPT)
        self._scores_pub = self.create_publisher(StepScores, "monologue/step_scores", 10)
        self._queries_pub = self.create_publisher(DetectionQueries, "perception/queries", LATCHED)
        # what strategies declare beyond the transcript (e.g. Statler's planner/world_state)
        self._strategy_pubs = [self._strategy_publisher(p) for p in strategies.publications()]
        self._human_sub = self.create_subscription(HumanInput, "human/input", self._on_human, 50,
                                                   callback_group=ports)
        self._action = ActionServer(
            self, ExecuteInstruction, "execute_instruction",
            execute_callback=self._execute,
            goal_callback=self._on_goal,
            cancel_callback=lambda _gh: CancelResponse.ACCEPT,
            callback_group=MutuallyExclusiveCallbackGroup(),
        )

    def _strategy_publisher(self, p: Publication) -> tuple[Publisher, Publication, Callable[[str], String]]:
        """A publisher for a strategy's declared topic."""
        if p.kind not in MESSAGE_KINDS:
            raise ValueError(f"publication {p.topic}: unknown message kind {p.kind!r}; known: {sorted(MESSAGE_KINDS)}")
        msg_type, make = MESSAGE_KINDS[p.kind]
        return self.create_publisher(msg_type, p.topic, LATCHED if p.latched else 10), p, make

    def get_logger(self) -> RcutilsLogger:
        """Node.get_logger, typed (rclpy leaves it unannotated; mypy's untyped_calls_exclude does not
        cover inherited methods called on a subclass)."""
        return cast(RcutilsLogger, Node.get_logger(self))

    def _on_human(self, msg: HumanInput) -> None:
        if msg.kind not in (HumanInput.KIND_INTERJECTION, HumanInput.KIND_QUESTION):
            self.get_logger().warning(f"unknown human input kind {msg.kind}; ignored: {msg.text!r}")
            return
        self.runner.human_input(str(msg.text), str(msg.episode_id), question=msg.kind == HumanInput.KIND_QUESTION)

    def _on_goal(self, goal: ExecuteInstruction.Goal) -> GoalResponse:
        if self.runner.busy:
            self.get_logger().warning("rejecting a new instruction: an episode is running")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def _execute(self, goal: ServerGoalHandle) -> ExecuteInstruction.Result:
        request: ExecuteInstruction.Goal = goal.request

        def on_start(p: PreparedEpisode) -> None:
            # Perception looks for this task's objects (or, with none named, its configured candidates).
            queries = DetectionQueries(episode_id=p.episode_id, names=list(p.objects))
            queries.header.stamp = self.get_clock().now().to_msg()
            self._queries_pub.publish(queries)

        def on_event(event: Event) -> None:
            msg = event_to_msg(event)
            self._transcript_pub.publish(msg)
            for pub, publication, make in self._strategy_pubs:
                if publication.select(event):
                    pub.publish(make(publication.render(event)))
            if not event.data.get("post_task"):  # post-task answers come after the goal finished
                fb = ExecuteInstruction.Feedback()
                fb.event = msg
                goal.publish_feedback(fb)
            self.get_logger().info(f"[{event.kind.name}] {event.text}")

        outcome = self.runner.execute(goal_request(request), cancel_requested=lambda: bool(goal.is_cancel_requested),
                                      on_start=on_start, on_event=on_event, on_step=self._publish_scores)
        error = outcome.result.error
        if error == EpisodeError.CANCELED and goal.is_cancel_requested:
            goal.canceled()
        elif outcome.result.success:
            goal.succeed()
        else:
            goal.abort()
        if outcome.transcript is None:
            self.get_logger().error(f"invalid goal: {outcome.result.reason}")
        else:
            self.get_logger().info(f"episode {outcome.episode_id}: {error.name}: {outcome.result.reason}")
        return result_msg(outcome)

    def _publish_scores(self, episode_id: str, r: StepRecord) -> None:
        msg = StepScores(episode_id=episode_id, step=r.step, normalization=r.normalization, chosen=r.chosen.text,
                         prompt_tokens=max(0, int(r.prompt_tokens)), new_tokens=max(0, int(r.new_tokens)),
                         llm_seconds=float(r.llm_s), step_seconds=float(r.step_s))
        msg.stamp = self.get_clock().now().to_msg()
        msg.scores = [
            SkillScore(candidate=c.text, llm_score=float(c.llm_score), llm_logprob=float(c.llm_logprob),
                       affordance=float(c.affordance), combined=float(c.combined))
            for c in r.candidates
        ]
        self._scores_pub.publish(msg)

    def _prefill(self) -> None:
        try:
            self.runner.prefill()
        except Exception as e:  # a cache warm-up only: the first step evaluates the preamble instead
            self.get_logger().warning(f"prefilling the prompt preamble failed: {e}")

    def destroy_node(self) -> None:
        try:
            self.runner.llm.close()
            close_role_backends()  # strategies' own role LLMs (statler.writer_llm, multitalk.analyzer_llm)
        finally:
            super().destroy_node()  # type: ignore[no-untyped-call]  # unannotated in rclpy


# The node in an in-process graph (monologue-up container:=true), with the threads main() spins it on.
COMPONENT = Component(PlannerNode, threads=4)


def main(args: list[str] | None = None) -> None:
    run_node(PlannerNode, threads=4, args=args)
