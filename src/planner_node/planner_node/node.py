"""planner_node: serves ExecuteInstruction with the Inner Monologue loop (rclpy adapter only)."""
from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node

from monologue_common.qos import LATCHED, TRANSCRIPT
from monologue_common.runtime import run_node, to_time
from monologue_interfaces.action import ExecuteInstruction
from monologue_interfaces.msg import DetectionQueries, HumanInput, SkillScore, StepScores, TranscriptEvent

from monologue_llm.base import LLMBackend
from monologue_llm.factory import NODE_PARAMS as LLM_KEYS
from monologue_llm.factory import make_backend_from_params
from .core.monologue import STOP_PHRASES, EpisodeOptions, InnerMonologue, StepRecord
from .core.prompts import load_profile
from monologue_domain.transcript import Event, StoredEpisode, Transcript, find_interrupted, new_episode_id
from .ros_ports import RosHumanAsker, RosRobotStatus, RosScenePort, RosSkillsPort, RosSuccessPort

# inner_monologue: IM loop, the LLM scores admissible lines; inner_monologue_generative: the LLM writes
# each line (IM's sim and real-tabletop mode); saycan: scoring x affordance, no feedback in the prompt.
STRATEGIES = ("inner_monologue", "inner_monologue_generative", "saycan")


class PlannerNode(Node):
    def __init__(self) -> None:
        super().__init__("planner")
        d = self.declare_parameter
        d("strategy", "inner_monologue")
        d("prompt_dir", "")
        d("prompt_profile", "im_sim_object_success")
        d("max_steps", 15)
        d("feedback.object", True)
        d("feedback.success", True)
        d("feedback.human", True)
        d("feedback.scene", False)  # needs a profile with goal_state/progress formats (im_sim_object_scene)
        d("use_affordances", True)
        d("scoring.normalization", "sum")
        d("generation.max_reprompts", 2)
        d("generation.fallback", "score")  # score | fail
        d("generation.max_tokens", 48)
        d("transcript_dir", "~/.ros/monologue/transcripts")
        d("timeouts.service", 10.0)  # s, for services and goal acceptance
        d("timeouts.skill", 120.0)  # s, for one skill to finish
        d("human.stop_phrases", list(STOP_PHRASES))  # interjections that end the episode at once
        d("timeouts.fault_pause", 300.0)  # s, to wait for a faulted robot (robot/status) before failing
        d("timeouts.answer", 60.0)  # s, for a person to answer the robot's question (` and ask:`)
        for k, v in LLM_KEYS.items():
            d(f"llm.{k}", v)

        self._validate()
        prompt_dir = Path(os.path.expanduser(str(self._p("prompt_dir"))))
        self.profile = load_profile(prompt_dir, str(self._p("prompt_profile")))
        self.prompt_dir = prompt_dir
        self.transcript_dir = Path(os.path.expanduser(str(self._p("transcript_dir"))))
        self.transcript_dir.mkdir(parents=True, exist_ok=True)
        for ep in find_interrupted(self.transcript_dir):
            self.get_logger().warning(
                f"interrupted episode {ep.header.get('episode_id', '?')} "
                f"({len(ep.events)} events) in {ep.path}; it was not finished. Send ExecuteInstruction "
                f"with resume_episode={ep.header.get('episode_id', ep.path.stem)!r} (or 'latest') to continue it")

        llm_cfg = {k: self._p(f"llm.{k}") for k in LLM_KEYS}
        self.get_logger().info(f"LLM backend {llm_cfg['backend']} loading ...")
        self.llm: LLMBackend = make_backend_from_params(llm_cfg, logging.getLogger("planner.llm"))
        self.get_logger().info(f"LLM backend {self.llm.name} ready; prompt profile {self.profile.name}")

        ports = ReentrantCallbackGroup()
        svc_t, skill_t = float(self._p("timeouts.service")), float(self._p("timeouts.skill"))
        self.skills = RosSkillsPort(self, ports, svc_t, skill_t)
        self.scene = RosScenePort(self, ports, svc_t)
        self.success = RosSuccessPort(self, ports, svc_t)
        self.robot_status = RosRobotStatus(self, ports)

        self._transcript_pub = self.create_publisher(TranscriptEvent, "monologue/transcript", TRANSCRIPT)
        self._scores_pub = self.create_publisher(StepScores, "monologue/step_scores", 10)
        self._queries_pub = self.create_publisher(DetectionQueries, "perception/queries", LATCHED)
        self._busy = threading.Lock()
        self.inbox = HumanInbox(RosHumanAsker(self, ports, svc_t))
        self._last: tuple[InnerMonologue, Transcript] | None = None
        self._human_sub = self.create_subscription(HumanInput, "human/input", self._on_human, 50,
                                                   callback_group=ports)
        self._action = ActionServer(
            self, ExecuteInstruction, "execute_instruction",
            execute_callback=self._execute,
            goal_callback=self._on_goal,
            cancel_callback=lambda _gh: CancelResponse.ACCEPT,
            callback_group=MutuallyExclusiveCallbackGroup(),
        )

    def _on_human(self, msg: HumanInput) -> None:
        if msg.kind == HumanInput.KIND_QUESTION and not self._busy.locked():
            self._answer_post_task(msg.text)
            return
        if msg.kind not in (HumanInput.KIND_INTERJECTION, HumanInput.KIND_QUESTION):
            self.get_logger().warning(f"unknown human input kind {msg.kind}; ignored: {msg.text!r}")
            return
        if not self.inbox.offer(msg.text, msg.episode_id):
            self.get_logger().warning(f"no episode {msg.episode_id or '(running)'} is running; ignored: {msg.text!r}")

    def _answer_post_task(self, question: str) -> None:
        """IM Fig. 5d: after an episode, answer questions about the scene in text; nothing moves."""
        last = self._last
        if last is None:
            self.get_logger().warning(f"no episode to answer about; ignored: {question!r}")
            return
        monologue, transcript = last
        if not self._busy.acquire(blocking=False):
            return
        try:
            answer = monologue.answer(question, transcript)
            self.get_logger().info(f"post-task question {question!r}: {answer!r}")
        except Exception as e:  # an LLM failure must not take the node down
            self.get_logger().error(f"could not answer {question!r}: {e}")
        finally:
            self._busy.release()

    def _p(self, name: str) -> Any:
        return self.get_parameter(name).value

    def _validate(self) -> None:
        if self._p("strategy") not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {self._p('strategy')!r}")
        if not str(self._p("prompt_dir")):
            raise ValueError("prompt_dir must name the directory of prompt profiles (config/prompts)")
        if int(self._p("max_steps")) < 1:
            raise ValueError("max_steps must be >= 1")
        if self._p("scoring.normalization") not in ("sum", "mean", "softmax"):
            raise ValueError("scoring.normalization must be sum, mean or softmax")
        if self._p("generation.fallback") not in ("score", "fail"):
            raise ValueError("generation.fallback must be score or fail")
        if int(self._p("generation.max_reprompts")) < 0 or int(self._p("generation.max_tokens")) < 1:
            raise ValueError("generation.max_reprompts must be >= 0 and generation.max_tokens >= 1")
        for k in ("timeouts.service", "timeouts.skill", "timeouts.answer", "timeouts.fault_pause", "llm.timeout_s"):
            if float(self._p(k)) <= 0:
                raise ValueError(f"{k} must be > 0 s")

    def _on_goal(self, goal: Any) -> GoalResponse:
        if self._busy.locked():
            self.get_logger().warning("rejecting a new instruction: an episode is running")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def _options(self, g: Any) -> tuple[EpisodeOptions, str]:
        def opt(value: int, param: str) -> bool:
            if value == ExecuteInstruction.Goal.OPTION_ON:
                return True
            if value == ExecuteInstruction.Goal.OPTION_OFF:
                return False
            return bool(self._p(param))

        strategy = g.strategy or str(self._p("strategy"))
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}; available: {STRATEGIES}")
        options = EpisodeOptions(
            object_feedback=opt(g.object_feedback, "feedback.object"),
            success_feedback=opt(g.success_feedback, "feedback.success"),
            human_feedback=opt(g.human_feedback, "feedback.human"),
            scene_feedback=opt(g.scene_feedback, "feedback.scene"),
            use_affordances=opt(g.use_affordances, "use_affordances"),
            max_steps=int(g.max_steps) if g.max_steps > 0 else int(self._p("max_steps")),
            normalization=str(self._p("scoring.normalization")),
            decoding="generate" if strategy == "inner_monologue_generative" else "score",
            max_reprompts=int(self._p("generation.max_reprompts")),
            generation_fallback=str(self._p("generation.fallback")),
            max_tokens=int(self._p("generation.max_tokens")),
            answer_timeout_s=float(self._p("timeouts.answer")),
            fault_pause_s=float(self._p("timeouts.fault_pause")),
            stop_phrases=tuple(str(x) for x in self._p("human.stop_phrases") if str(x).strip()),
        )
        return options, strategy

    def _execute(self, goal: ServerGoalHandle) -> ExecuteInstruction.Result:
        with self._busy:
            return self._run_episode(goal)

    def _run_episode(self, goal: ServerGoalHandle) -> ExecuteInstruction.Result:
        g: Any = goal.request
        try:
            options, strategy = self._options(g)
        except ValueError as e:
            self.get_logger().error(f"invalid goal: {e}")
            goal.abort()
            return ExecuteInstruction.Result(success=False, error_code=ExecuteInstruction.Result.INVALID_GOAL,
                                             reason=str(e))
        stored: StoredEpisode | None = None
        try:
            if g.resume_episode:
                stored = self._interrupted(g.resume_episode)
            profile_name = g.prompt_profile or (stored.header.get("prompt_profile", "") if stored else "")
            profile = self.profile
            if profile_name and profile_name != profile.name:
                profile = load_profile(self.prompt_dir, str(profile_name))
        except ValueError as e:
            self.get_logger().error(f"invalid goal: {e}")
            goal.abort()
            return ExecuteInstruction.Result(success=False, error_code=ExecuteInstruction.Result.INVALID_GOAL,
                                             reason=str(e))
        instruction = g.instruction
        objects = list(dict.fromkeys(o.strip() for o in g.objects if o.strip()))  # unique, in order
        tlog = logging.getLogger("planner.transcript")
        if stored is not None:
            transcript = Transcript.reopen(stored, logger=tlog)
            episode_id, path = transcript.episode_id, stored.path
            instruction = instruction or str(stored.header.get("instruction", ""))
            objects = objects or [str(o) for o in stored.header.get("objects", [])]
        else:
            episode_id = new_episode_id()
            path = self.transcript_dir / f"{episode_id}.jsonl"
            transcript = Transcript(episode_id, path, header={
                "instruction": g.instruction, "strategy": strategy, "prompt_profile": profile.name,
                "options": options.__dict__, "llm": self.llm.name, "objects": objects,
            }, logger=tlog)
        # Perception looks for this task's objects (or, with none named, its configured candidates).
        queries = DetectionQueries(episode_id=episode_id, names=objects)
        queries.header.stamp = self.get_clock().now().to_msg()
        self._queries_pub.publish(queries)

        def publish(event: Event) -> None:
            msg = event_to_msg(event)
            self._transcript_pub.publish(msg)
            if not event.data.get("post_task"):  # post-task answers come after the goal finished
                fb = ExecuteInstruction.Feedback()
                fb.event = msg
                goal.publish_feedback(fb)
            self.get_logger().info(f"[{event.kind.name}] {event.text}")

        transcript.add_listener(publish)
        cancel = threading.Event()
        stop_watch = threading.Event()

        def watch_cancel() -> None:
            while not stop_watch.wait(0.05):
                if goal.is_cancel_requested:
                    cancel.set()
                    return

        threading.Thread(target=watch_cancel, daemon=True).start()
        monologue = InnerMonologue(self.llm, self.skills, self.scene, self.success, profile,
                                   logging.getLogger("planner.monologue"),
                                   on_step=lambda r: self._publish_scores(episode_id, r), human=self.inbox,
                                   robot=self.robot_status)
        if strategy == "saycan":
            options = replace(options, object_feedback=False, success_feedback=False, human_feedback=False,
                              scene_feedback=False)
        self.inbox.open(episode_id)
        try:
            result = monologue.run(instruction, options, transcript, cancel, resume=stored is not None)
        finally:
            self.inbox.close()
            stop_watch.set()
        self._last = (monologue, transcript)
        out = ExecuteInstruction.Result()
        out.success = result.success
        out.error_code = int(result.error)
        out.reason = result.reason
        out.steps_taken = result.steps_taken
        out.transcript = [event_to_msg(e) for e in transcript.events]
        out.transcript_path = str(path)
        if result.error.name == "CANCELED" and goal.is_cancel_requested:
            goal.canceled()
        elif result.success:
            goal.succeed()
        else:
            goal.abort()
        self.get_logger().info(f"episode {episode_id}: {result.error.name}: {result.reason}")
        return out

    def _interrupted(self, which: str) -> StoredEpisode:
        """The interrupted episode `which` (an episode id, or "latest") in transcript_dir."""
        found = find_interrupted(self.transcript_dir)
        if which == "latest":
            if not found:
                raise ValueError(f"no interrupted episode in {self.transcript_dir}")
            return max(found, key=lambda ep: ep.path.stat().st_mtime)
        for ep in found:
            if which in (ep.header.get("episode_id"), ep.path.stem):
                return ep
        raise ValueError(f"no interrupted episode {which!r} in {self.transcript_dir} "
                         f"(interrupted: {[ep.path.stem for ep in found]})")

    def _publish_scores(self, episode_id: str, r: StepRecord) -> None:
        msg = StepScores(episode_id=episode_id, step=r.step, normalization=r.normalization, chosen=r.chosen.text)
        msg.stamp = self.get_clock().now().to_msg()
        msg.scores = [
            SkillScore(candidate=c.text, llm_score=float(c.llm_score), llm_logprob=float(c.llm_logprob),
                       affordance=float(c.affordance), combined=float(c.combined))
            for c in r.candidates
        ]
        self._scores_pub.publish(msg)

    def destroy_node(self) -> None:
        try:
            self.llm.close()
        finally:
            super().destroy_node()


class HumanInbox:
    """The planner's HumanPort: interjections for the running episode (drained at every step
    boundary) and questions to a person through `asker`."""

    def __init__(self, asker: Any = None) -> None:
        self._asker = asker
        self._lock = threading.Lock()
        self._episode = ""
        self._texts: list[str] = []

    def open(self, episode_id: str) -> None:
        with self._lock:
            self._episode, self._texts = episode_id, []

    def close(self) -> None:
        with self._lock:
            self._episode, self._texts = "", []

    def offer(self, text: str, episode_id: str = "") -> bool:
        """Queue `text` if an episode is running and `episode_id` is empty or names it."""
        with self._lock:
            if not self._episode or (episode_id and episode_id != self._episode):
                return False
            self._texts.append(text)
            return True

    def poll(self) -> list[str]:
        with self._lock:
            out, self._texts = self._texts, []
            return out

    def ask(self, question: str, timeout_s: float, cancel: threading.Event) -> str | None:
        if self._asker is None:
            return None
        return self._asker.ask(question, timeout_s, cancel, self._episode)  # type: ignore[no-any-return]


def event_to_msg(e: Event) -> TranscriptEvent:
    return TranscriptEvent(episode_id=e.episode_id, index=e.index, kind=int(e.kind), text=e.text,
                           data_json=json.dumps(dict(e.data), ensure_ascii=False), stamp=to_time(e.stamp))


def main(args: list[str] | None = None) -> None:
    run_node(PlannerNode, threads=4, args=args)
