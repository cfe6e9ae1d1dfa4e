"""monologue_web: the live web monitor and console (rclpy adapter; the page and the state are in core).

Subscribes to the transcript, the step scores (with tokens and latency), robot/status, the skills'
action feedback, the scene description (top view) and the camera images, and serves the page with
uvicorn in a thread. Control from the page: the `execute_instruction` action, interjections on
`human/input`, answers to the `ask_human` action and approve / deny on the skills node's approval action
(both served only while a page is open), `true` on `estop` and the `estop_reset` service.
"""
from __future__ import annotations

import json
import logging
import os
import queue
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

import uvicorn
from rclpy.action.client import ClientGoalHandle
from rclpy.action.server import ActionServer, CancelResponse, GoalResponse, ServerGoalHandle
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import Image
from std_msgs.msg import Bool

from monologue_common.actions import ActionClient
from monologue_common.params import NODE_OPTIONS, read_settings
from monologue_common.qos import LATCHED, TRANSCRIPT
from monologue_common.runtime import Component, WaitTimeout, call_service, run_node, wait_future
from monologue_interfaces.action import AskHuman, ExecuteInstruction, ExecuteSkill
from monologue_interfaces.msg import HumanInput, RobotStatus, SceneDescription, StepScores, TranscriptEvent
from monologue_interfaces.srv import ResetEstop

from .core.access import Access
from .core.app import ControlError, create_app
from .core.certs import check_tls
from .core.media import jpeg_from_image
from .core.origins import HostPolicy
from .core.settings import LOOPBACK, WILDCARD, WebSettings, settings_from_parameters
from .core.state import EventView, MonitorState, ScoreRow, StepStats

_KINDS = {getattr(TranscriptEvent, n): n[len("KIND_"):] for n in dir(TranscriptEvent) if n.startswith("KIND_")}
_STATUS_FIELDS = ("backend", "ok", "connected", "estop_latched", "estop_reason", "protective_stop",
                  "emergency_stop", "robot_mode_name", "safety_mode_name", "fault", "holding")
T = TypeVar("T")
_SERVE_PERIOD_S = 0.2  # s between checks whether a page is open (the person-facing servers follow it)


ESTOP_MATCH_S = 2.0  # s: how long the E-STOP waits for a skills node to match its publisher


class EstopPublisher(Protocol):
    def publish(self, msg: Bool) -> None: ...
    def get_subscription_count(self) -> int: ...


def send_estop(pub: EstopPublisher, match_s: float) -> str:
    """Publish the e-stop at once; if no skills node is listening yet (discovery still running after a start-up),
    wait for one up to `match_s` s and publish again, else say the robot was NOT stopped: a reliable message sent
    to nobody is lost, and the button must not claim otherwise."""
    pub.publish(Bool(data=True))
    if pub.get_subscription_count() > 0:
        return "e-stop sent on estop"
    deadline = time.monotonic() + match_s
    while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    if pub.get_subscription_count() == 0:
        raise ControlError(f"no skills node listens on estop (none within {match_s:g} s): the robot was NOT "
                           "stopped; use the robot's own e-stop")
    pub.publish(Bool(data=True))
    return "e-stop sent on estop"

class _Waiting(Generic[T]):
    """The request a person is asked (AskHuman: a question or an approval) and the queue its reply
    goes to; a newer request replaces the older one, which then times out."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queues: dict[str, queue.Queue[T]] = {}

    def open(self) -> tuple[str, queue.Queue[T]]:
        rid = uuid.uuid4().hex[:8]
        replies: queue.Queue[T] = queue.Queue(maxsize=1)
        with self._lock:
            self._queues = {rid: replies}
        return rid, replies

    def close(self, rid: str) -> None:
        with self._lock:
            self._queues.pop(rid, None)

    def reply(self, value: T, none_open: str, decided: str) -> None:
        """Hand `value` to the newest open request; ControlError(none_open / decided) if there is none
        or it was already answered."""
        with self._lock:
            pending = list(self._queues.values())
        if not pending:
            raise ControlError(none_open)
        try:
            pending[-1].put_nowait(value)
        except queue.Full as e:
            raise ControlError(decided) from e


class WebNode(Node):
    def __init__(self) -> None:
        super().__init__("web", **NODE_OPTIONS)
        self.settings: WebSettings = read_settings(self, settings_from_parameters)
        s = self.settings
        self.log = logging.getLogger("web")
        self.state = MonitorState(s.max_events)
        subs = MutuallyExclusiveCallbackGroup()
        calls = ReentrantCallbackGroup()
        self.create_subscription(TranscriptEvent, "monologue/transcript", self._on_event, TRANSCRIPT,
                                 callback_group=subs)
        self.create_subscription(StepScores, "monologue/step_scores", self._on_scores, 10, callback_group=subs)
        self.create_subscription(RobotStatus, "robot/status", self._on_status, LATCHED, callback_group=subs)
        self.create_subscription(ExecuteSkill.Impl.FeedbackMessage, "execute_skill/_action/feedback",
                                 self._on_feedback, 10, callback_group=subs)
        self.create_subscription(SceneDescription, "scene/description", self._on_scene, LATCHED, callback_group=subs)
        self._frames: dict[str, tuple[Image, float]] = {}  # topic -> newest image, monotonic s received
        self._frames_lock = threading.Lock()
        self._jpeg: tuple[tuple[str, int], bytes] | None = None
        self._frame_seq = 0
        self._announced = 0.0
        for topic in s.camera_topics:
            self.create_subscription(Image, topic, self._image_callback(topic), qos_profile_sensor_data,
                                     callback_group=subs)
        self._human = self.create_publisher(HumanInput, "human/input", 10)
        self._estop = self.create_publisher(Bool, "estop", QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        self._reset = self.create_client(ResetEstop, "estop_reset", callback_group=calls)
        self._instruct = ActionClient(self, ExecuteInstruction, "execute_instruction", callback_group=calls)
        self._goal: ClientGoalHandle | None = None
        self._goal_lock = threading.Lock()
        self._answers: _Waiting[str] = _Waiting()
        self._approvals: _Waiting[bool] = _Waiting()
        # The robot's questions and the approval gate are served only while a page is open. With nobody
        # watching, the servers do not exist, so another server of the same action (monologue-human, a
        # test's person) is the only one: two servers of one action race, and the first goal response wins.
        self._person_actions = [(name, execute) for serve, name, execute in
                                ((s.serve_ask_human, "ask_human", self._ask),
                                 (s.serve_approvals, s.approval_action, self._approve)) if serve]
        self._person_servers: dict[str, ActionServer] = {}
        self._person_lock = threading.Lock()
        self._asking = 0  # requests being shown in the page now
        self._person_group = calls
        self.create_timer(_SERVE_PERIOD_S, self._serve_while_watched, callback_group=MutuallyExclusiveCallbackGroup())
        family = socket.AF_INET6 if ":" in s.host else socket.AF_INET
        self._sock = socket.socket(family, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._sock.bind((s.host, s.port))
        except OSError as e:  # taken (another graph's console): any free port, logged loudly, not a dead node
            if s.port == 0:
                raise
            self._sock.bind((s.host, 0))
            self.log.warning("port %d is taken (%s); the web monitor uses port %d instead", s.port, e,
                             self._sock.getsockname()[1])
        self.port = int(self._sock.getsockname()[1])
        wildcard = s.host in WILDCARD  # then this machine's names too (getfqdn may ask DNS: only then)
        policy = HostPolicy.build(s.scheme, self.port, s.host, LOOPBACK, wildcard, allowed=s.allowed_hosts,
                                  own_names=(socket.gethostname(), socket.getfqdn()) if wildcard else ())
        access = Access(s, os.environ, policy)
        app = create_app(self.state, self, access, s.transcript_dir, self.log, bag_dirs=s.bag_dirs,
                         camera=self.camera_jpeg)
        if s.tls_cert is not None and s.tls_key is not None:
            check_tls(s.tls_cert, s.tls_key)  # a bad pair stops the node here, not silently in the server thread
        self._server = uvicorn.Server(uvicorn.Config(
            app, log_level="warning", lifespan="off", ssl_certfile=None if s.tls_cert is None else str(s.tls_cert),
            ssl_keyfile=None if s.tls_key is None else str(s.tls_key)))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)
        self._thread.start()
        warning = s.exposure_warning()
        if warning:
            self.log.warning(warning)
        mode = "read-only" if s.read_only else "control on"
        if access.needs_token:
            mode += (", reads and control need $" + s.token_env if access.token_set else
                     f", ${s.token_env} is unset: only the page and E-STOP work")
        self.log.info("web monitor at %s (%s)", s.url(self.port), mode)

    def destroy_node(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=5.0)
        self._sock.close()
        super().destroy_node()  # type: ignore[no-untyped-call]

    # ---- ROS -> state ------------------------------------------------------------------------------
    def _on_event(self, msg: TranscriptEvent) -> None:
        try:
            data = json.loads(msg.data_json or "{}")
        except json.JSONDecodeError:
            data = {}
        stamp = msg.stamp.sec + msg.stamp.nanosec * 1e-9
        self.state.on_event(EventView(msg.episode_id, int(msg.index), _KINDS.get(msg.kind, str(msg.kind)), msg.text,
                                      data if isinstance(data, dict) else {}, stamp))

    def _on_scores(self, msg: StepScores) -> None:
        rows = [ScoreRow(r.candidate, float(r.llm_score), float(r.affordance), float(r.combined)) for r in msg.scores]
        stats = StepStats(int(msg.prompt_tokens), int(msg.new_tokens), float(msg.llm_seconds), float(msg.step_seconds))
        self.state.on_scores(msg.episode_id, int(msg.step), rows, msg.chosen, stats)

    def _on_scene(self, msg: SceneDescription) -> None:
        objects = [{"name": o.name, "category": o.category, "visible": bool(o.visible),
                    "x": o.pose.pose.position.x, "y": o.pose.pose.position.y, "z": o.pose.pose.position.z,
                    "sx": o.size.x, "sy": o.size.y, "sz": o.size.z} for o in msg.objects]
        self.state.on_scene({"frame": msg.header.frame_id, "source": msg.source, "held": list(msg.held_objects),
                             "objects": objects})

    def _image_callback(self, topic: str) -> Callable[[Image], None]:
        return lambda msg: self._on_image(topic, msg)

    def _on_image(self, topic: str, msg: Image) -> None:
        now = time.monotonic()
        with self._frames_lock:
            self._frames[topic] = (msg, now)
            self._frame_seq += 1
            seq = self._frame_seq
            if now - self._announced < 1.0 / self.settings.camera_rate:
                return
            self._announced = now
        picked = self._current_frame()
        if picked is not None:
            t, m = picked
            self.state.on_camera({"topic": t, "seq": seq, "width": int(m.width), "height": int(m.height),
                                  "stamp": m.header.stamp.sec + m.header.stamp.nanosec * 1e-9})

    def _current_frame(self) -> tuple[str, Image] | None:
        """The first configured topic with a fresh frame, else the newest frame of any."""
        with self._frames_lock:
            frames = dict(self._frames)
        now = time.monotonic()
        for topic in self.settings.camera_topics:
            if topic in frames and now - frames[topic][1] <= self.settings.camera_stale_s:
                return topic, frames[topic][0]
        if not frames:
            return None
        topic = max(frames, key=lambda t: frames[t][1])
        return topic, frames[topic][0]

    def camera_jpeg(self) -> bytes | None:
        """The current frame as a JPEG (None before the first frame); encoded once per frame."""
        picked = self._current_frame()
        if picked is None:
            return None
        topic, m = picked
        key = (topic, id(m))
        cached = self._jpeg
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            data = jpeg_from_image(bytes(m.data), int(m.width), int(m.height), m.encoding, int(m.step))
        except ValueError as e:
            self.log.warning("cannot show %s: %s", topic, e)
            return None
        self._jpeg = (key, data)
        return data

    def _serve_while_watched(self) -> None:
        """Create the person-facing action servers when a page opens; destroy them when the last page
        has closed and no request is showing."""
        with self._person_lock:
            watched, busy = self.state.viewers > 0, self._asking > 0
            for name, execute in self._person_actions:
                server = self._person_servers.get(name)
                if watched and server is None:
                    self._person_servers[name] = ActionServer(
                        self, AskHuman, name, execute_callback=execute, callback_group=self._person_group,
                        goal_callback=self._while_watched, cancel_callback=lambda _g: CancelResponse.ACCEPT)
                    self.log.info("a page is open: serving %s", name)
                elif not watched and not busy and server is not None:
                    server.destroy()
                    del self._person_servers[name]
                    self.log.info("no page is open: %s no longer served", name)

    def serving(self) -> list[str]:
        """The person-facing actions served now."""
        with self._person_lock:
            return sorted(self._person_servers)

    def _while_watched(self, _goal: Any) -> GoalResponse:
        return GoalResponse.ACCEPT if self.state.viewers else GoalResponse.REJECT

    def _approve(self, goal: ServerGoalHandle) -> AskHuman.Result:
        return self._ask_person(goal, self._approvals, self.state.on_approval, self.state.clear_approval,
                                lambda ok: "yes" if ok else "no")

    def _on_status(self, msg: RobotStatus) -> None:
        self.state.on_status({f: getattr(msg, f) for f in _STATUS_FIELDS})

    def _on_feedback(self, msg: ExecuteSkill.Impl.FeedbackMessage) -> None:
        self.state.on_skill_state(str(msg.feedback.state_text))

    def _ask(self, goal: ServerGoalHandle) -> AskHuman.Result:
        return self._ask_person(goal, self._answers, self.state.on_question, self.state.clear_question, str)

    def _ask_person(self, goal: ServerGoalHandle, waiting: _Waiting[T], show: Callable[[str, str, float], None],
                    clear: Callable[[str], None], answer: Callable[[T], str]) -> AskHuman.Result:
        """Show the request on the page (the newest one is the one the page answers) and wait for the
        reply, at most the request's timeout (s; the configured one if it gives none)."""
        req: AskHuman.Goal = goal.request
        with self._person_lock:
            self._asking += 1
        rid, replies = waiting.open()
        timeout = float(req.timeout) or self.settings.answer_timeout_s
        show(rid, req.question, timeout)
        try:
            reply = replies.get(timeout=timeout)
            goal.succeed()
            return AskHuman.Result(answered=True, answer=answer(reply))
        except queue.Empty:
            goal.succeed()
            return AskHuman.Result(answered=False, answer="")
        finally:
            waiting.close(rid)
            clear(rid)
            with self._person_lock:
                self._asking -= 1

    # ---- Controls (called from the web server's threads) -------------------------------------------
    def send_instruction(self, text: str, strategy: str) -> str:
        with self._goal_lock:
            if self._goal is not None:
                raise ControlError("an episode sent from this page is still running; cancel it first")
            if not self._instruct.wait_for_server(timeout_sec=self.settings.ros_timeout_s):
                raise ControlError("the planner's execute_instruction action is not available")
            self.state.on_goal("sending", text)
            goal = ExecuteInstruction.Goal(instruction=text, strategy=strategy)
            try:
                handle = wait_future(self._instruct.send_goal_async(goal), self.settings.ros_timeout_s, "goal")
            except (WaitTimeout, RuntimeError) as e:
                self.state.on_goal("failed", str(e))
                raise ControlError(str(e)) from e
            if handle is None or not handle.accepted:
                self.state.on_goal("failed", "the planner rejected the instruction")
                raise ControlError("the planner rejected the instruction (is an episode running?)")
            self._goal = handle
        self.state.on_goal("running", text)
        handle.get_result_async().add_done_callback(self._on_result)
        return f"sent: {text}"

    def _on_result(self, future: Any) -> None:
        with self._goal_lock:
            self._goal = None
        try:
            res = future.result().result
        except Exception as e:  # the planner went away
            self.state.on_goal("failed", str(e))
            return
        state = "succeeded" if res.success else ("canceled" if res.error_code == res.CANCELED else "failed")
        self.state.on_goal(state, f"{res.reason} ({res.steps_taken} skills)")

    def cancel(self) -> str:
        with self._goal_lock:
            handle = self._goal
        if handle is None:
            self.interject("stop")
            return "no goal from this page; asked the running episode to stop"
        try:
            wait_future(handle.cancel_goal_async(), self.settings.ros_timeout_s, "cancel")
        except (WaitTimeout, RuntimeError) as e:
            raise ControlError(f"cancel failed: {e}") from e
        return "cancel requested"

    def interject(self, text: str) -> str:
        msg = HumanInput(kind=HumanInput.KIND_INTERJECTION, text=text)
        msg.stamp = self.get_clock().now().to_msg()
        self._human.publish(msg)
        return f"interjection sent: {text}"

    def answer(self, text: str) -> str:
        self._answers.reply(text, "the robot has no open question", "the question was already answered")
        return f"answered: {text}"

    def approve(self, approved: bool) -> str:
        self._approvals.reply(approved, "nothing is waiting for approval", "that request was already decided")
        return "approved" if approved else "denied"

    def estop(self) -> str:
        return send_estop(self._estop, ESTOP_MATCH_S)

    def estop_reset(self) -> str:
        if not self._reset.wait_for_service(timeout_sec=self.settings.ros_timeout_s):
            raise ControlError("the estop_reset service is not available")
        try:
            res = call_service(self._reset, ResetEstop.Request(), self.settings.ros_timeout_s, "estop_reset")
        except (WaitTimeout, RuntimeError) as e:
            raise ControlError(f"estop_reset failed: {e}") from e
        if res is None or not res.success:
            raise ControlError(f"estop_reset refused: {getattr(res, 'message', '')}")
        return str(res.message)


# The node in an in-process graph (monologue-up container:=true), with the threads main() spins it on.
COMPONENT = Component(WebNode, threads=4)


def main(args: list[str] | None = None) -> None:
    run_node(WebNode, threads=4, args=args)
