"""ROS wiring shared by the arm backends (rclpy adapter only): the scene description -> ObjectLocator,
the e-stop topic and reset service, robot/status, and the human approval gate over the AskHuman
action. The backend plug-ins (skills_node.robots.mujoco, .ur5e) build the arm and its settings; the
logic lives in core/."""
from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from geometry_msgs.msg import TransformStamped
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool

from monologue_common.actions import ActionClient
from monologue_common.dedicated import DedicatedCallbacks
from monologue_common.qos import LATCHED
from monologue_common.runtime import WaitTimeout, wait_future
from monologue_domain.msgs import scene_objects_from_msg
from monologue_interfaces.action import AskHuman
from monologue_interfaces.msg import RobotStatus, SceneDescription
from monologue_interfaces.srv import ResetEstop

from .core.arm import ArmPort, ArmStatus, RobotMode, SafetyMode, TcpPose, mode_name
from .core.arm_backend import ArmSkillBackend, SceneLocator
from .core.arm_settings import ArmSettings, ArmTf, Transform, flange_in_base
from .core.kinematics import forward_kinematics
from .core.safety import ApprovalGate, SafeArm, is_approval


class AskHumanApproval:
    """ApprovalGate over the AskHuman action: the person answers yes / no in text."""

    def __init__(self, node: Node, action: str, logger: logging.Logger) -> None:
        self._client = ActionClient(node, AskHuman, action, callback_group=ReentrantCallbackGroup())
        self._action = action
        self._log = logger

    def approve(self, request: str, timeout_s: float) -> bool:
        if not self._client.wait_for_server(timeout_sec=min(timeout_s, 2.0)):
            self._log.error("no approval server on %s: motion refused", self._action)
            return False
        goal = AskHuman.Goal()
        goal.question, goal.timeout = f"Approve this robot motion? (yes/no) {request}", float(timeout_s)
        try:
            handle = wait_future(self._client.send_goal_async(goal), timeout_s, "approval goal")
            if not handle.accepted:
                return False
            result = wait_future(handle.get_result_async(), timeout_s, "approval answer").result
        except (WaitTimeout, RuntimeError) as e:
            self._log.warning("approval: %s", e)
            return False
        approved = bool(result.answered) and is_approval(str(result.answer))
        self._log.info("approval %s: %r", "granted" if approved else "denied", str(result.answer))
        return approved


class ArmRosBridge:
    """Everything the skills node adds around an arm (RtdeArm for the UR5e, RosSimArm for the
    simulator): the safety layer, the scene locator, the skill backend, e-stop and robot/status."""

    def __init__(self, node: Node, logger: logging.Logger, name: str, arm: ArmPort,
                 tcp_offset: Sequence[float], s: ArmSettings, frame_id: str) -> None:
        """`name` goes into robot/status `backend`; `tcp_offset` (m, rad) is flange -> TCP."""
        self._node = node
        self._log = logger
        self._name = name
        self._frame_id = frame_id
        self.arm = arm
        gate: ApprovalGate | None = None
        if s.approval_mode != "off":
            gate = AskHumanApproval(node, s.approval_action, logger)
        self._status_pub = node.create_publisher(RobotStatus, "robot/status", LATCHED)
        self._status_lock = threading.Lock()
        offset = TcpPose(*tcp_offset)

        def fk(q: Sequence[float]) -> TcpPose:
            return forward_kinematics(q, offset)

        self.safe_arm = SafeArm(arm, s.limits, logging.getLogger("skills.safety"), forward_kinematics=fk,
                                approval=gate if s.approval_mode == "motion" else None,
                                approval_timeout_s=s.approval_timeout)
        self.locator = SceneLocator(list(s.place_categories), use_place_points=s.use_place_points)
        self.backend = ArmSkillBackend(self.safe_arm, self.locator, s.pick, logger,
                                       skill_approval=gate if s.approval_mode == "skill" else None,
                                       approval_timeout_s=s.approval_timeout)
        # The e-stop on a thread of its own (never queued behind the node's executor or a skill); the
        # reset, which may be slow, on the node's executor: it never delays an e-stop.
        self._estop_thread = DedicatedCallbacks(node, "estop", logger)
        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self._estop_sub = node.create_subscription(Bool, "estop", self._on_estop, reliable,
                                                   callback_group=self._estop_thread.group)
        self._reset_srv = node.create_service(ResetEstop, "estop_reset", self._on_reset,
                                              callback_group=MutuallyExclusiveCallbackGroup())
        self._scene_sub = node.create_subscription(SceneDescription, s.scene_topic, self._on_scene,
                                                   LATCHED, callback_group=ReentrantCallbackGroup())
        self._timer = node.create_timer(1.0 / s.status_rate, self.publish_status)
        self.publish_status()
        self._estop_thread.start()

    def close(self) -> None:
        self._estop_thread.close()
        self._timer.cancel()

    # ----- callbacks ------------------------------------------------------------------------
    def _on_estop(self, msg: Bool) -> None:
        if msg.data:
            self.safe_arm.engage_estop("estop topic")
            self.publish_status()

    def _on_reset(self, _req: ResetEstop.Request, res: ResetEstop.Response) -> ResetEstop.Response:
        was = self.safe_arm.reset_estop()
        res.success = True
        res.message = "e-stop reset" if was else "e-stop was not latched"
        self.publish_status()
        return res

    def _on_scene(self, msg: SceneDescription) -> None:
        self.locator.update(scene_objects_from_msg(msg.objects))

    def publish_status(self) -> None:
        status = self.arm.status()
        msg = RobotStatus()
        msg.header.stamp = self._node.get_clock().now().to_msg()
        msg.header.frame_id = self._frame_id
        msg.backend = self._name
        fill_status(msg, status, self.safe_arm.estop_latched, self.safe_arm.estop_reason)
        if status.connected:
            msg.tcp_pose, msg.joint_positions, msg.holding = _readings(self.arm)
        with self._status_lock:
            self._status_pub.publish(msg)


class ArmTfPublisher:
    """The arm on /tf, for a wrist camera's pose (perception looks it up at each image's stamp):
    base -> flange from the measured TCP pose at `tf.rate`, and the hand-eye calibration as the static
    flange -> camera transform."""

    def __init__(self, node: Node, arm: ArmPort, base_frame: str, tcp_offset: Sequence[float], tf: ArmTf) -> None:
        from tf2_msgs.msg import TFMessage

        self._node, self._arm, self._base, self._tf = node, arm, base_frame, tf
        self._offset = TcpPose(*tcp_offset)
        self._msg = TFMessage
        self._pub = node.create_publisher(TFMessage, "/tf", 100)
        static_qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                                reliability=ReliabilityPolicy.RELIABLE)
        self._static = node.create_publisher(TFMessage, "/tf_static", static_qos)
        now = node.get_clock().now().to_msg()
        self._static.publish(TFMessage(transforms=[
            transform_msg(now, tf.flange_frame, tf.camera_frame, tf.camera_in_flange)]))
        self._timer = node.create_timer(1.0 / tf.rate, self.publish, callback_group=ReentrantCallbackGroup())

    def publish(self) -> None:
        stamp = self._node.get_clock().now().to_msg()
        try:
            tcp = self._arm.tcp_pose()
        except Exception:  # not connected (robot/status says why): no pose to publish
            return
        self._pub.publish(self._msg(transforms=[
            transform_msg(stamp, self._base, self._tf.flange_frame, flange_in_base(tcp, self._offset))]))

    def close(self) -> None:
        self._timer.cancel()


def transform_msg(stamp: object, parent: str, child: str, t: Transform) -> TransformStamped:
    """`parent` -> `child` at `stamp` (m, quaternion x y z w)."""
    msg = TransformStamped()
    msg.header.stamp, msg.header.frame_id, msg.child_frame_id = stamp, parent, child
    (msg.transform.translation.x, msg.transform.translation.y, msg.transform.translation.z) = t[0]
    (msg.transform.rotation.x, msg.transform.rotation.y, msg.transform.rotation.z,
     msg.transform.rotation.w) = t[1]
    return msg


def fill_status(msg: RobotStatus, status: ArmStatus, estop_latched: bool, estop_reason: str) -> None:
    msg.connected = status.connected
    msg.estop_latched, msg.estop_reason = estop_latched, estop_reason
    msg.protective_stop, msg.emergency_stop = status.protective_stop, status.emergency_stop
    msg.robot_mode, msg.robot_mode_name = status.robot_mode, mode_name(RobotMode, status.robot_mode)
    msg.safety_mode, msg.safety_mode_name = status.safety_mode, mode_name(SafetyMode, status.safety_mode)
    msg.ok = status.ok and not estop_latched
    faults = [] if status.ok else [status.describe()]
    if estop_latched:
        faults.insert(0, f"software e-stop latched ({estop_reason})")
    msg.fault = "; ".join(faults)


def _readings(arm: ArmPort) -> tuple[list[float], list[float], bool]:
    """TCP pose, joint positions and holding, or empty values when the robot cannot be read now."""
    try:
        return arm.tcp_pose().as_list(), arm.joint_positions(), arm.holding()
    except Exception:
        return [], [], False
