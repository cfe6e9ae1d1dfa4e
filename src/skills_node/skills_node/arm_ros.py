"""ROS wiring shared by the arm backends (rclpy adapter only): the scene description -> ObjectLocator,
the e-stop topic and reset service, robot/status, and the human approval gate over the AskHuman
action. The backend plug-ins (skills_node.robots.mujoco, .ur5e) build the arm and its settings; the
logic lives in core/."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from geometry_msgs.msg import TransformStamped
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CameraInfo
from std_msgs.msg import Bool

from monologue_common.actions import ActionClient
from monologue_common.dedicated import DedicatedCallbacks
from monologue_common.qos import LATCHED
from monologue_common.runtime import WaitTimeout, wait_future
from monologue_domain.msgs import scene_objects_from_msg
from monologue_interfaces.action import AskHuman
from monologue_interfaces.msg import RobotStatus, SceneDescription
from monologue_interfaces.srv import ResetEstop

from .core import frames
from .core.arm import ArmPort, ArmStatus, RobotMode, SafetyMode, TcpPose, mode_name
from .core.arm_backend import ArmSkillBackend, SceneLocator
from .core.arm_settings import ArmSettings, ArmTf, flange_in_base
from .core.frames import Transform
from .core.kinematics import forward_kinematics
from .core.safety import ApprovalGate, SafeArm, is_approval


@dataclass(frozen=True)
class CameraWatch:
    """The camera whose absence robot/status reports: CameraInfo on any of `info_topics` within `timeout_s` s."""

    info_topics: tuple[str, ...]
    timeout_s: float


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
                 tcp_offset: Sequence[float], s: ArmSettings, frame_id: str,
                 camera: CameraWatch | None = None) -> None:
        """`name` goes into robot/status `backend`; `tcp_offset` (m, rad) is flange -> TCP; `camera`: report
        "no camera" (ok false: camera perception has no images) when none of its topics had camera_info
        for its timeout."""
        self._node = node
        self._camera = camera
        self._camera_seen = time.monotonic()  # the grace period starts with the node
        self._camera_ever = False
        if camera is not None:
            for topic in camera.info_topics:  # best effort: matches a reliable or a best-effort camera driver
                node.create_subscription(CameraInfo, topic, self._on_camera_info,
                                         QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT),
                                         callback_group=ReentrantCallbackGroup())
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

    def _on_camera_info(self, _msg: CameraInfo) -> None:
        self._camera_seen, self._camera_ever = time.monotonic(), True

    def camera_problem(self) -> str:
        """"no camera: ..." when the watched camera has sent nothing for its timeout, else ""."""
        c = self._camera
        if c is None or time.monotonic() - self._camera_seen <= c.timeout_s:
            return ""
        return (f"no camera: no camera_info on {' or '.join(c.info_topics)} "
                f"{'for' if self._camera_ever else 'within'} {c.timeout_s:g} s (is the camera node up? docs/ur5e.md)")

    def _on_scene(self, msg: SceneDescription) -> None:
        frame = str(msg.header.frame_id)
        if frame and frame != self._frame_id:  # e.g. base_link vs the UR's base: every target would be turned
            self._log.error("scene description in frame %r ignored: this arm takes targets in %r (set perception's "
                            "base_frame to %r)", frame, self._frame_id, self._frame_id)
            return
        self.locator.update(scene_objects_from_msg(msg.objects))

    def publish_status(self) -> None:
        status = self.arm.status()
        msg = RobotStatus()
        msg.header.stamp = self._node.get_clock().now().to_msg()
        msg.header.frame_id = self._frame_id
        msg.backend = self._name
        fill_status(msg, status, self.safe_arm.estop_latched, self.safe_arm.estop_reason)
        camera = self.camera_problem()
        if camera:  # camera perception has no images: the planner waits (its steps would act blind)
            msg.ok = False
            msg.fault = "; ".join(f for f in (msg.fault, camera) if f)
        if status.connected:
            msg.tcp_pose, msg.joint_positions, msg.holding = _readings(self.arm)
        with self._status_lock:
            self._status_pub.publish(msg)


class ArmTfPublisher:
    """The UR arm on /tf under ur_description's frame names (skills_node.core.frames), for a wrist camera's
    pose (perception looks it up at each image's stamp) and for a user's RobotModel display:
    base_link -> base and tool0 -> flange (static), base -> tool0 from the measured TCP pose at `tf.rate`,
    and tool0 -> camera_link (static) from the hand-eye calibration (the optical frame in tool0) and the
    camera driver's camera_link -> optical transform. That one is nominal (frames.OPTICAL_IN_LINK, what our
    RealSense publisher sends) until a driver publishes another one on /tf_static (realsense2_camera's
    carries the colour sensor's offset from camera_link); then tool0 -> camera_link is published again."""

    def __init__(self, node: Node, arm: ArmPort, tcp_offset: Sequence[float], tf: ArmTf,
                 logger: logging.Logger | None = None) -> None:
        from tf2_msgs.msg import TFMessage

        self._node, self._arm, self._tf = node, arm, tf
        self._log = logger or logging.getLogger("skills.tf")
        self._offset = TcpPose(*tcp_offset)
        self._msg = TFMessage
        self._lock = threading.Lock()
        self._optical_in_link = frames.OPTICAL_IN_LINK
        self._pub = node.create_publisher(TFMessage, "/tf", 100)
        static_qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                                reliability=ReliabilityPolicy.RELIABLE)
        self._static = node.create_publisher(TFMessage, "/tf_static", static_qos)
        self._static_edges: dict[str, tuple[str, frames.Transform]] = {}
        if tf.camera_link_frame:  # the camera driver's static camera_link -> ... -> optical chain
            self._static_sub = node.create_subscription(
                TFMessage, "/tf_static", self._on_static,
                QoSProfile(depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                           reliability=ReliabilityPolicy.RELIABLE),
                callback_group=ReentrantCallbackGroup())
        self.publish_static()
        self._timer = node.create_timer(1.0 / tf.rate, self.publish, callback_group=ReentrantCallbackGroup())

    def static_transforms(self) -> list[tuple[str, str, frames.Transform]]:
        """(parent, child, child in parent) of every static transform this publisher sends."""
        with self._lock:
            optical_in_link = self._optical_in_link
        return static_transforms(self._tf, optical_in_link)

    def publish_static(self) -> None:
        """All static transforms in one message: /tf_static keeps one message per publisher."""
        now = self._node.get_clock().now().to_msg()
        self._static.publish(self._msg(transforms=[transform_msg(now, p, c, t)
                                                   for p, c, t in self.static_transforms()]))

    def _on_static(self, msg: object) -> None:
        mine = {c for _, c, _ in self.static_transforms()}
        for t in msg.transforms:  # type: ignore[attr-defined]
            if t.child_frame_id in mine:
                continue
            tr, q = t.transform.translation, t.transform.rotation
            self._static_edges[t.child_frame_id] = (t.header.frame_id, ((tr.x, tr.y, tr.z), (q.x, q.y, q.z, q.w)))
        found = frames.chain(self._static_edges, self._tf.camera_link_frame, self._tf.camera_frame)
        with self._lock:
            if found is None or frames.close(found, self._optical_in_link):
                return
            self._optical_in_link = found
        self._log.info("camera driver's %s -> %s: %s; tool0 -> %s republished", self._tf.camera_link_frame,
                       self._tf.camera_frame, found, self._tf.camera_link_frame)
        self.publish_static()

    def publish(self) -> None:
        stamp = self._node.get_clock().now().to_msg()
        try:
            tcp = self._arm.tcp_pose()
        except Exception:  # not connected (robot/status says why): no pose to publish
            return
        self._pub.publish(self._msg(transforms=[
            transform_msg(stamp, frames.UR_BASE, frames.UR_TOOL0, flange_in_base(tcp, self._offset))]))

    def close(self) -> None:
        self._timer.cancel()


def static_transforms(tf: ArmTf, optical_in_link: frames.Transform = frames.OPTICAL_IN_LINK,
                      ) -> list[tuple[str, str, frames.Transform]]:
    """The UR arm's static transforms (parent, child, child in parent): base_link -> base, tool0 -> flange,
    and the wrist camera: tool0 -> camera_link (or tool0 -> the optical frame when there is no camera_link)."""
    out = [(frames.UR_BASE_LINK, frames.UR_BASE, frames.BASE_IN_BASE_LINK),
           (frames.UR_TOOL0, frames.UR_FLANGE, frames.invert(frames.TOOL0_IN_FLANGE))]
    if tf.camera_link_frame:
        out.append((frames.UR_TOOL0, tf.camera_link_frame, frames.camera_link_in_tool0(tf.camera_in_tool0,
                                                                                      optical_in_link)))
    else:
        out.append((frames.UR_TOOL0, tf.camera_frame, tf.camera_in_tool0))
    return out


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
