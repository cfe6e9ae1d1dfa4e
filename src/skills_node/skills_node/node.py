"""skills_node: serves ExecuteSkill and GetAffordances over a skill backend (rclpy adapter only)."""
from __future__ import annotations

import logging
import random
import threading
from typing import Any

from geometry_msgs.msg import PoseStamped, Vector3
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from monologue_common.qos import LATCHED, latched
from monologue_common.runtime import run_node
from monologue_interfaces.action import ExecuteSkill
from monologue_interfaces.msg import AffordanceReport, SceneDescription, SceneObject, SkillAffordance
from monologue_interfaces.srv import GetAffordances

from .core.backend import SimBackend, SkillBackend
from .core.tabletop import PlaceNoise, SceneSpec, TabletopWorld, random_spec
from .core.types import ObjectState, SkillState

# kinematic: the in-process tabletop (fast, for planner mechanics); sim: the physics simulator
# (tabletop_sim) through arm/command; ur5e: the real arm through ur_rtde.
BACKENDS = ("kinematic", "sim", "ur5e")


class SkillsNode(Node):
    def __init__(self) -> None:
        super().__init__("skills")
        self.declare_parameter("backend", "sim")
        self.declare_parameter("frame_id", "base_link")
        self.declare_parameter("ground_truth_rate", 5.0)  # Hz
        self.declare_parameter("sim.seed", -1)  # -1: random
        self.declare_parameter("sim.num_blocks", 3)
        self.declare_parameter("sim.num_bowls", 3)
        self.declare_parameter("sim.matching_bowls", True)
        self.declare_parameter("sim.block_colors", [""])  # explicit colours override random ones
        self.declare_parameter("sim.bowl_colors", [""])
        self.declare_parameter("sim.heavy_blocks", [""])  # colours of blocks too heavy to lift
        self.declare_parameter("sim.place_noise_std", 0.0)  # m
        self.declare_parameter("sim.phase_duration", 0.1)  # s per motion phase
        self.declare_parameter("sim.completed_affordance", 0.0)

        self._frame = str(self.get_parameter("frame_id").value)
        self._arm_bridge: Any = None  # ArmRosBridge for arm backends
        self._gt_pub = self.create_publisher(SceneDescription, "sim/ground_truth", LATCHED)
        self._gt_lock = threading.Lock()
        # Every get_affordances answer, for bags (actions and services cannot be recorded on Jazzy).
        self._aff_pub = self.create_publisher(AffordanceReport, "skills/affordances", latched(100))
        self.backend = self._make_backend()
        group = ReentrantCallbackGroup()
        self._action = ActionServer(
            self, ExecuteSkill, "execute_skill",
            execute_callback=self._execute,
            goal_callback=lambda _goal: GoalResponse.ACCEPT,
            cancel_callback=lambda _gh: CancelResponse.ACCEPT,
            callback_group=group,
        )
        self._srv = self.create_service(GetAffordances, "get_affordances", self._affordances, callback_group=group)
        rate = float(self.get_parameter("ground_truth_rate").value)
        if rate <= 0:
            raise ValueError("ground_truth_rate must be > 0 Hz")
        self._timer = self.create_timer(1.0 / rate, self._publish_ground_truth)
        self._publish_ground_truth()

    def _make_backend(self) -> SkillBackend:
        kind = str(self.get_parameter("backend").value)
        if kind not in BACKENDS:
            raise ValueError(f"unknown skills backend {kind!r}; available: {BACKENDS}")
        if kind in ("ur5e", "sim"):
            from .arm_ros import ArmRosBridge  # imports ur_rtde only for these backends

            self._arm_bridge = ArmRosBridge(self, logging.getLogger(f"skills.{kind}"), kind)
            return self._arm_bridge.backend  # type: ignore[no-any-return]
        p = self.get_parameter
        seed = int(p("sim.seed").value)
        if seed < 0:
            seed = random.SystemRandom().randrange(1_000_000)
        blocks = tuple(c for c in p("sim.block_colors").value if c)
        bowls = tuple(c for c in p("sim.bowl_colors").value if c)
        heavy = tuple(c for c in p("sim.heavy_blocks").value if c)
        if blocks or bowls:
            spec = SceneSpec(blocks, bowls, heavy)
        else:
            spec = random_spec(seed, int(p("sim.num_blocks").value), int(p("sim.num_bowls").value),
                               bool(p("sim.matching_bowls").value))
            spec = SceneSpec(spec.block_colors, spec.bowl_colors, heavy)
        noise = float(p("sim.place_noise_std").value)
        if noise < 0:
            raise ValueError("sim.place_noise_std must be >= 0 m")
        world = TabletopWorld.from_spec(
            spec, seed, place_noise=PlaceNoise(noise),
            completed_affordance=float(p("sim.completed_affordance").value),
            logger=logging.getLogger("skills.tabletop"),
        )
        self.get_logger().info(
            f"sim scene (seed {seed}): {', '.join(o.name for o in world.objects)}")
        return SimBackend(world, logging.getLogger("skills.sim"), float(p("sim.phase_duration").value),
                          on_change=self._publish_ground_truth)

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
        req: Any = goal.request
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
        if self._arm_bridge is not None:
            self._arm_bridge.close()
        super().destroy_node()

    def _publish_ground_truth(self) -> None:
        states = self.backend.ground_truth()
        if states is None:
            return
        msg = SceneDescription()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = self._frame
        msg.source = "ground_truth"
        msg.objects = [_to_msg(s, msg.header) for s in states]
        with self._gt_lock:
            self._gt_pub.publish(msg)


def _to_msg(s: ObjectState, header: Any) -> SceneObject:
    pose = PoseStamped()
    pose.header = header
    pose.pose.position.x, pose.pose.position.y, pose.pose.position.z = (float(v) for v in s.position)
    pose.pose.orientation.w = 1.0
    return SceneObject(
        name=s.name, category=s.category, pose=pose,
        size=Vector3(x=float(s.size[0]), y=float(s.size[1]), z=float(s.size[2])),
        visible=True, confidence=1.0, segmentation_id=int(s.segmentation_id),
    )


def main(args: list[str] | None = None) -> None:
    run_node(SkillsNode, threads=4, args=args)
