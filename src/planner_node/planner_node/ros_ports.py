"""The planner's ports implemented with rclpy clients. Every wait has a timeout."""
from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import GetParameters
from rclpy.action.client import ClientGoalHandle
from rclpy.callback_groups import CallbackGroup
from rclpy.node import Node
from rclpy.task import Future
from unique_identifier_msgs.msg import UUID

from monologue_common.actions import ActionClient
from monologue_common.qos import LATCHED
from monologue_common.runtime import WaitTimeout, to_time
from monologue_common.runtime import call_service as _call
from monologue_common.runtime import wait_future as _wait
from monologue_interfaces.action import AskHuman, ExecuteSkill
from monologue_interfaces.msg import RobotStatus
from monologue_interfaces.srv import DescribeScene, DetectSuccess, GetAffordances

from .core.ports import PortUnavailable, SceneItem, SkillOption, SkillResult, SuccessReport, Workspace

_ERROR_NAMES = {
    getattr(ExecuteSkill.Result, n): n
    for n in dir(ExecuteSkill.Result)
    if n.isupper() and isinstance(getattr(ExecuteSkill.Result, n), int)
}


def wait_future(future: Future, timeout_s: float, what: str, cancel: threading.Event | None = None,
                keep_on_timeout: bool = False) -> Any:
    """`monologue_common.runtime.wait_future` raising the planner's PortUnavailable."""
    try:
        return _wait(future, timeout_s, what, cancel, keep_on_timeout)
    except (WaitTimeout, RuntimeError) as e:
        raise PortUnavailable(str(e)) from e


def call_service(client: Any, request: Any, timeout_s: float, what: str, resend_after_s: float = 1.0) -> Any:
    """`monologue_common.runtime.call_service` (re-sent if unanswered) raising the planner's PortUnavailable."""
    try:
        return _call(client, request, timeout_s, what, resend_after_s=resend_after_s)
    except (WaitTimeout, RuntimeError) as e:
        raise PortUnavailable(str(e)) from e


def _cancel_late_goal(send: Future, what: str, log: Any) -> None:
    """Done callback of a goal request the planner gave up on: cancel the goal if it was accepted."""
    handle = None if send.cancelled() or send.exception() is not None else send.result()
    if handle is not None and handle.accepted:
        log.warning(f"skill {what} was accepted after the planner gave up on it; cancelling it")
        handle.cancel_goal_async()


class RosSkillsPort:
    def __init__(self, node: Node, group: CallbackGroup, service_timeout_s: float, skill_timeout_s: float) -> None:
        self._node = node
        self._aff = node.create_client(GetAffordances, "get_affordances", callback_group=group)
        self._action = ActionClient(node, ExecuteSkill, "execute_skill", callback_group=group)
        self._service_timeout = service_timeout_s
        self._skill_timeout = skill_timeout_s

    def affordances(self, include_unaffordable: bool = False) -> list[SkillOption]:
        """The afforded skill instances (every instance, with affordance 0 too, if asked: cape)."""
        if not self._aff.wait_for_service(timeout_sec=self._service_timeout):
            raise PortUnavailable(f"get_affordances unavailable after {self._service_timeout:.1f} s")
        req = GetAffordances.Request(include_unaffordable=include_unaffordable)
        res = call_service(self._aff, req, self._service_timeout, "get_affordances")
        if not res.success:
            raise PortUnavailable(f"get_affordances failed: {res.message}")
        return [SkillOption(s.skill, tuple(s.args), float(s.affordance)) for s in res.skills]

    def execute(self, skill: str, args: Sequence[str], cancel: threading.Event) -> SkillResult:
        start = time.time()
        if not self._action.wait_for_server(timeout_sec=self._service_timeout):
            raise PortUnavailable(f"execute_skill unavailable after {self._service_timeout:.1f} s")
        goal = ExecuteSkill.Goal(skill=skill, args=list(args))
        goal_id = UUID(uuid=list(uuid.uuid4().bytes))
        send = self._action.send_goal_async(goal, goal_uuid=goal_id)
        try:
            handle = wait_future(send, self._service_timeout, "execute_skill goal", keep_on_timeout=True)
        except PortUnavailable:
            # The skills node may accept the goal after all (a loaded machine), or has accepted it and the
            # answer was lost: cancel it by id now and on a late acceptance, so no skill runs unwatched.
            log = self._node.get_logger()
            log.warning(f"execute_skill did not answer goal {skill}{list(args)} within "
                        f"{self._service_timeout:.1f} s; cancelling it")
            ClientGoalHandle(self._action, goal_id,
                             ExecuteSkill.Impl.SendGoalService.Response(accepted=True)).cancel_goal_async()
            send.add_done_callback(lambda f: _cancel_late_goal(f, f"{skill}{list(args)}", log))
            raise
        if handle is None or not handle.accepted:
            raise PortUnavailable("execute_skill rejected the goal")
        result_future = handle.get_result_async()
        try:
            wrapped = wait_future(result_future, self._skill_timeout, f"skill {skill}", cancel)
        except PortUnavailable:
            handle.cancel_goal_async()
            return SkillResult(ExecuteSkill.Result.TIMEOUT, "TIMEOUT",
                               f"no result within {self._skill_timeout:.1f} s; cancel sent", "", start, time.time())
        if wrapped is None:  # the episode was cancelled: cancel the skill and wait briefly for it to stop
            wait_future(handle.cancel_goal_async(), self._service_timeout, "skill cancel")
            try:
                wait_future(result_future, self._service_timeout, "cancelled skill")
            except PortUnavailable:
                pass
            return SkillResult(ExecuteSkill.Result.CANCELED, "CANCELED", "cancelled", "", start, time.time())
        r = wrapped.result
        code = int(r.error_code)
        return SkillResult(code, _ERROR_NAMES.get(code, str(code)), r.error_msg, r.failed_precondition,
                           start, time.time())


class RosScenePort:
    def __init__(self, node: Node, group: CallbackGroup, timeout_s: float) -> None:
        self._client = node.create_client(DescribeScene, "describe_scene", callback_group=group)
        self._skill_params = node.create_client(GetParameters, "skills/get_parameters", callback_group=group)
        self._log = node.get_logger()
        self._timeout = timeout_s

    def describe(self) -> list[SceneItem]:
        if not self._client.wait_for_service(timeout_sec=self._timeout):
            raise PortUnavailable(f"describe_scene unavailable after {self._timeout:.1f} s")
        deadline = time.monotonic() + self._timeout
        while True:  # perception may still be waiting for its first camera frame and transform
            # re-sent once, after half the timeout: perception may wait seconds for a fresh camera frame, and
            # every pending request holds one of its executor threads (the frames need one too)
            res = call_service(self._client, DescribeScene.Request(refresh=True), self._timeout, "describe_scene",
                               resend_after_s=self._timeout / 2)
            if res.success or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        if not res.success:
            raise PortUnavailable(f"describe_scene failed: {res.message}")
        return [SceneItem(o.name, o.category, bool(o.visible),
                          (o.pose.pose.position.x, o.pose.pose.position.y, o.pose.pose.position.z),
                          (o.size.x, o.size.y, o.size.z))
                for o in res.scene.objects]

    def workspace(self) -> Workspace | None:
        """The skills node's safety workspace (its parameters safety.workspace_min / workspace_max /
        min_height), or None if it has none (a simulated world without the arm's safety layer)."""
        wait_s = min(self._timeout, 2.0)
        if not self._skill_params.wait_for_service(timeout_sec=wait_s):  # a replay: the bag player serves skills
            self._log.warning(f"skills/get_parameters unavailable after {wait_s:.1f} s: no safety workspace")
            return None
        names = ["safety.workspace_min", "safety.workspace_max", "safety.min_height"]
        res = call_service(self._skill_params, GetParameters.Request(names=names), self._timeout,
                           "skills/get_parameters")
        lo, hi, height = res.values
        if len(lo.double_array_value) != 3 or len(hi.double_array_value) != 3:
            return None
        return Workspace(tuple(lo.double_array_value), tuple(hi.double_array_value),
                         float(height.double_value) if height.type == ParameterType.PARAMETER_DOUBLE else 0.0)


class RosSuccessPort:
    def __init__(self, node: Node, group: CallbackGroup, timeout_s: float) -> None:
        self._client = node.create_client(DetectSuccess, "detect_success", callback_group=group)
        self._timeout = timeout_s

    def detect(self, skill: str, args: Sequence[str], start_s: float, end_s: float) -> SuccessReport:
        if not self._client.wait_for_service(timeout_sec=self._timeout):
            raise PortUnavailable(f"detect_success unavailable after {self._timeout:.1f} s")
        req = DetectSuccess.Request(skill=skill, args=list(args), skill_start=to_time(start_s),
                                    skill_end=to_time(end_s))
        # sent once: the success detector itself waits for camera frames and for perception
        res = wait_future(self._client.call_async(req), self._timeout, "detect_success")
        return SuccessReport(bool(res.success), float(res.confidence), res.explanation)


class RosHumanAsker:
    """Asks a person through the `ask_human` action (served by a human interface, e.g. monologue-human)."""

    def __init__(self, node: Node, group: CallbackGroup, service_timeout_s: float) -> None:
        self._node = node
        self._action = ActionClient(node, AskHuman, "ask_human", callback_group=group)
        self._service_timeout = service_timeout_s

    def ask(self, question: str, timeout_s: float, cancel: threading.Event, episode_id: str = "") -> str | None:
        log = self._node.get_logger()
        if not self._action.wait_for_server(timeout_sec=min(timeout_s, self._service_timeout)):
            log.warning(f"nobody serves ask_human; question unanswered: {question!r}")
            return None
        goal = AskHuman.Goal(question=question, episode_id=episode_id, timeout=float(timeout_s))
        try:
            handle = wait_future(self._action.send_goal_async(goal), self._service_timeout, "ask_human goal")
        except PortUnavailable as e:
            log.warning(f"ask_human: {e}")
            return None
        if handle is None or not handle.accepted:
            log.warning("ask_human rejected the question")
            return None
        result_future = handle.get_result_async()
        try:
            wrapped = wait_future(result_future, timeout_s + self._service_timeout, "answer", cancel)
        except PortUnavailable:
            handle.cancel_goal_async()
            return None
        if wrapped is None:  # episode cancelled
            handle.cancel_goal_async()
            return None
        r = wrapped.result
        return str(r.answer) if r.answered else None


class RosRobotStatus:
    """The skills node's latched `robot/status`. No status ever received counts as able to move
    (backends such as the simulator do not publish one)."""

    def __init__(self, node: Node, group: CallbackGroup) -> None:
        self._cond = threading.Condition()
        self._last: RobotStatus | None = None
        node.create_subscription(RobotStatus, "robot/status", self._on_status, LATCHED, callback_group=group)

    def _on_status(self, msg: RobotStatus) -> None:
        with self._cond:
            self._last = msg
            self._cond.notify_all()

    def fault(self) -> str | None:
        with self._cond:
            m = self._last
        if m is None or m.ok:
            return None
        return m.fault or f"robot not ready (mode {m.robot_mode_name}, safety {m.safety_mode_name})"

    def wait_ok(self, timeout_s: float, cancel: threading.Event) -> str | None:
        deadline = time.monotonic() + timeout_s
        while not cancel.is_set():
            fault = self.fault()
            left = deadline - time.monotonic()
            if fault is None or left <= 0:
                return fault
            with self._cond:
                self._cond.wait(min(left, 0.2))
        return self.fault()
