"""skills_node: serves ExecuteSkill and GetAffordances over a skill backend (rclpy adapter only)."""
from __future__ import annotations

import gc
import logging
import threading
import time
from typing import Any, cast

from rclpy.action.server import ActionServer, CancelResponse, GoalResponse, ServerGoalHandle
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.impl.rcutils_logger import RcutilsLogger
from rclpy.node import Node
from rclpy.publisher import Publisher

from monologue_common.core.realtime import apply_fifo
from monologue_common.params import NODE_OPTIONS, parameter_values, warn_unused
from monologue_common.qos import LATCHED, latched
from monologue_common.runtime import Component, run_node
from monologue_domain.expert.channel import write_world
from monologue_domain.msgs import scene_object_to_msg
from monologue_interfaces.action import ExecuteSkill
from monologue_interfaces.msg import AffordanceReport, SceneDescription, SkillAffordance
from monologue_interfaces.srv import GetAffordances

from .core.types import SkillState
from .plugin import BackendHandle, settings_from_parameters

GC_PAUSE_WARN_S = 0.02  # s: a longer full garbage collection (it pauses every thread, the e-stop too) is logged


def freeze_startup_objects(log: logging.Logger) -> None:
    """Move everything built at start-up (modules, the node, the backend) out of the garbage collector's
    reach (gc.freeze), so a full collection later scans only newer objects: measured 43-93 ms -> 0.1 ms
    for the skills node's ~37,000 start-up objects on a loaded 2-core machine. Full collections that still
    take longer than GC_PAUSE_WARN_S are logged (they delay an e-stop as much)."""
    gc.collect()
    gc.freeze()
    started: list[float] = []

    def watch(phase: str, info: dict[str, Any]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            started[:] = [time.perf_counter()]
        elif started:
            took = time.perf_counter() - started[0]
            if took > GC_PAUSE_WARN_S:
                log.warning("a full garbage collection paused the skills node for %.0f ms", took * 1000.0)

    gc.callbacks.append(watch)


class SkillsNode(Node):
    """The backend is the plug-in the `backend` parameter names (the robot table's skills_backend)."""

    def __init__(self, own_process: bool = False) -> None:
        super().__init__("skills", **NODE_OPTIONS)
        settings, unused = settings_from_parameters(parameter_values(self))
        warn_unused(self, unused)
        self.settings = settings
        self._frame = settings.frame_id
        self._gt_pub: Publisher | None = None  # sim/ground_truth: only a simulated world (an oracle's source)
        self._gt_lock = threading.Lock()
        # Every get_affordances answer, for bags (actions and services cannot be recorded on Jazzy).
        self._aff_pub = self.create_publisher(AffordanceReport, "skills/affordances", latched(100))
        self._handle: BackendHandle = settings.plugin.create(self, settings.backend_settings)
        self.backend = self._handle.backend
        group = ReentrantCallbackGroup()
        self._action = ActionServer(
            self, ExecuteSkill, "execute_skill",
            execute_callback=self._execute,
            goal_callback=lambda _goal: GoalResponse.ACCEPT,
            cancel_callback=lambda _gh: CancelResponse.ACCEPT,
            callback_group=group,
        )
        self._srv = self.create_service(GetAffordances, "get_affordances", self._affordances, callback_group=group)
        if self.backend.ground_truth() is not None:  # a simulated world: publish its ground truth
            self._gt_pub = self.create_publisher(SceneDescription, "sim/ground_truth", LATCHED)
            self._timer = self.create_timer(1.0 / settings.ground_truth_rate, self.publish_ground_truth)
            self.publish_ground_truth()
        freeze_startup_objects(logging.getLogger("skills.node"))
        # Last, once the node's threads exist (later ones inherit it): the e-stop must not wait behind other
        # processes for a core (docs/reliability.md, R4). Never in a shared process (container:=true),
        # whose other nodes (the LLM) compute for seconds.
        if own_process:
            apply_fifo(settings.realtime_priority, logging.getLogger("skills.node"))
        elif settings.realtime_priority:
            self.get_logger().warning("realtime_priority is ignored in a process shared with other nodes")

    def get_logger(self) -> RcutilsLogger:
        """Node.get_logger, typed (rclpy leaves it unannotated; mypy's untyped_calls_exclude does not
        cover inherited methods called on a subclass)."""
        return cast(RcutilsLogger, Node.get_logger(self))

    # ---- BackendHost ---------------------------------------------------------------------------
    @property
    def node(self) -> Node:
        return self

    @property
    def frame_id(self) -> str:
        return self._frame

    def logger(self, name: str) -> logging.Logger:
        return logging.getLogger(name)

    def _affordances(self, req: GetAffordances.Request, res: GetAffordances.Response) -> GetAffordances.Response:
        try:
            affs = self.backend.affordances(bool(req.include_unaffordable))
        except Exception as e:  # report, never crash the service
            res.success, res.message = False, f"affordances failed: {e}"
            self._report(req, res)
            return res
        res.success = True
        res.skills = [
            SkillAffordance(skill=a.skill, args=list(a.args), description=a.description,
                            affordance=float(a.affordance))
            for a in affs
        ]
        res.objects = self.backend.objects()
        res.locations = self.backend.locations()
        self._report(req, res)
        return res

    def _report(self, req: GetAffordances.Request, res: GetAffordances.Response) -> None:
        msg = AffordanceReport(include_unaffordable=bool(req.include_unaffordable), success=res.success,
                               message=res.message, skills=res.skills, objects=res.objects,
                               locations=res.locations)
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = self._frame
        self._aff_pub.publish(msg)

    def _execute(self, goal: ServerGoalHandle) -> ExecuteSkill.Result:
        req: ExecuteSkill.Goal = goal.request
        cancel = threading.Event()
        done = threading.Event()

        def watch_cancel() -> None:
            while not done.wait(0.02):
                if goal.is_cancel_requested:
                    cancel.set()
                    return

        threading.Thread(target=watch_cancel, daemon=True).start()

        def feedback(state: SkillState, text: str) -> None:
            fb = ExecuteSkill.Feedback()
            fb.state, fb.state_text = int(state), text
            goal.publish_feedback(fb)

        self.get_logger().info(f"execute {req.skill}({', '.join(req.args)})")
        try:
            outcome = self.backend.execute(str(req.skill), list(req.args), feedback, cancel)
        finally:
            done.set()
        result = ExecuteSkill.Result()
        result.error_code = int(outcome.error)
        result.error_msg = outcome.message
        result.failed_precondition = outcome.failed_precondition
        result.duration = float(outcome.duration_s)
        if outcome.error.name == "CANCELED" and goal.is_cancel_requested:
            goal.canceled()
        elif outcome.ok:
            goal.succeed()
        else:
            goal.abort()
        if not outcome.ok:
            self.get_logger().warning(f"{req.skill} failed: {outcome.error.name}: {outcome.message}")
        return result

    def destroy_node(self) -> None:
        self._handle.close()
        super().destroy_node()  # type: ignore[no-untyped-call]  # unannotated in rclpy

    def publish_ground_truth(self) -> None:
        """sim/ground_truth from a simulated world's backend (nothing on real hardware)."""
        if self._gt_pub is None:  # still being built, or real hardware
            return
        states = self.backend.ground_truth()
        if states is None:
            return
        msg = SceneDescription()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = self._frame
        msg.source = "ground_truth"
        msg.objects = [scene_object_to_msg(s, msg.header) for s in states]
        with self._gt_lock:
            self._gt_pub.publish(msg)
            if self.settings.expert_truth_dir:  # llm:=expert: the stand-in's side channel (never the planner's)
                extra = getattr(self.backend, "expert_extra", None)
                write_world(self.settings.expert_truth_dir, self.settings.backend, states,
                            extra=extra() if callable(extra) else None)


# The node in an in-process graph (monologue-up container:=true), with the threads main() spins it on.
COMPONENT = Component(SkillsNode, threads=4)


def main(args: list[str] | None = None) -> None:
    run_node(lambda: SkillsNode(own_process=True), threads=4, args=args)
