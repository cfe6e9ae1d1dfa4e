"""ArmPort over the simulator's `arm/command` action (rclpy adapter only).

The sim backend of the skills node runs the same ArmSkillBackend + SafeArm as the UR5e backend; only
this class differs from RtdeArm. Poses are TCP poses in base_link: rotation vectors here,
quaternions on the wire (tool down = rotation vector (pi, 0, 0) = quaternion (1, 0, 0, 0)).
"""
from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Sequence

from geometry_msgs.msg import Pose, PoseStamped, Vector3
from rclpy.action.client import ClientGoalHandle
from rclpy.callback_groups import CallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, String

from monologue_common.actions import ActionClient
from monologue_common.qos import LATCHED
from monologue_common.runtime import WaitTimeout, wait_future
from monologue_interfaces.action import ArmCommand
from skills_node.core.arm import ArmFault, ArmStatus, FaultKind, MotionInterrupted, RobotMode, SafetyMode, TcpPose
from skills_node.core.kinematics import rotvec_to_quaternion

UR_JOINTS = ("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
             "wrist_3_joint")


def quat_to_rotvec(x: float, y: float, z: float, w: float) -> tuple[float, float, float]:
    """Quaternion (x, y, z, w) -> rotation vector (rad), angle in [0, pi]."""
    n = math.sqrt(x * x + y * y + z * z + w * w) or 1.0
    x, y, z, w = x / n, y / n, z / n, w / n
    if w < 0:
        x, y, z, w = -x, -y, -z, -w
    s = math.sqrt(max(0.0, 1.0 - w * w))
    if s < 1e-12:
        return (0.0, 0.0, 0.0)
    angle = 2.0 * math.atan2(s, w)
    return (x / s * angle, y / s * angle, z / s * angle)


def goal_key(uuid: Iterable[int]) -> str:
    """An action goal's id (unique_identifier_msgs/UUID.uuid: 16 bytes) as hex, as `arm/stop` names it."""
    return bytes(bytearray(int(b) for b in uuid)).hex()


def to_pose(p: TcpPose) -> Pose:
    msg = Pose()
    msg.position.x, msg.position.y, msg.position.z = p.x, p.y, p.z
    q = rotvec_to_quaternion(p.rx, p.ry, p.rz)
    msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w = q
    return msg


def from_pose(m: Pose) -> TcpPose:
    r = quat_to_rotvec(m.orientation.x, m.orientation.y, m.orientation.z, m.orientation.w)
    return TcpPose(m.position.x, m.position.y, m.position.z, *r)


class RosSimArm:
    """ArmPort implemented by goals to tabletop_sim's `arm/command`; every wait is bounded."""

    def __init__(self, node: Node, group: CallbackGroup, command_timeout_s: float, motion_timeout_s: float) -> None:
        """Timeouts in s: `command_timeout_s` for goal acceptance and suction, `motion_timeout_s` per motion."""
        self._node = node
        self._client = ActionClient(node, ArmCommand, "arm/command", callback_group=group)
        # the simulator's direct stop input (as stopL on a UR), naming the goal it stops (a late message can
        # never stop a later motion): applied at once, not through the action server's cancel
        self._stop_pub = node.create_publisher(String, "arm/stop", QoSProfile(depth=10,
                                                                              reliability=ReliabilityPolicy.RELIABLE))
        self._command_timeout = command_timeout_s
        self._motion_timeout = motion_timeout_s
        self._lock = threading.Lock()
        self._goal: ClientGoalHandle | None = None  # handle of the running goal, for stop()
        self._stopped = threading.Event()
        self._tcp: TcpPose | None = None
        self._q: list[float] = []
        self._holding = False
        self._seen = False
        node.create_subscription(PoseStamped, "tcp_pose", self._on_tcp, 10, callback_group=group)
        node.create_subscription(JointState, "joint_states", self._on_joints, 10, callback_group=group)
        node.create_subscription(Bool, "suction/holding", self._on_holding, LATCHED, callback_group=group)

    # ---- topics --------------------------------------------------------------------------------
    def _on_tcp(self, msg: PoseStamped) -> None:
        self._tcp = from_pose(msg.pose)

    def _on_joints(self, msg: JointState) -> None:
        pos = dict(zip(msg.name, msg.position))
        if all(j in pos for j in UR_JOINTS):
            self._q = [float(pos[j]) for j in UR_JOINTS]

    def _on_holding(self, msg: Bool) -> None:
        self._holding = bool(msg.data)

    # ---- ArmPort -------------------------------------------------------------------------------
    def move_linear(self, pose: TcpPose, speed: float, acceleration: float) -> None:
        self._send(ArmCommand.Goal(command=ArmCommand.Goal.MOVE_LINEAR, pose=to_pose(pose), speed=speed,
                                   acceleration=acceleration))

    def move_joints(self, q: Sequence[float], speed: float, acceleration: float) -> None:
        self._send(ArmCommand.Goal(command=ArmCommand.Goal.MOVE_JOINTS, joint_positions=[float(x) for x in q],
                                   speed=speed, acceleration=acceleration))

    def move_until_contact(self, direction: tuple[float, float, float], speed: float, max_travel: float) -> bool:
        d = Vector3(x=float(direction[0]), y=float(direction[1]), z=float(direction[2]))
        r = self._send(ArmCommand.Goal(command=ArmCommand.Goal.MOVE_UNTIL_CONTACT, direction=d, speed=speed,
                                       max_travel=max_travel))
        return bool(r.contact)

    def set_suction(self, on: bool) -> None:
        self._send(ArmCommand.Goal(command=ArmCommand.Goal.SET_SUCTION, suction_on=on), motion=False)

    def holding(self) -> bool:
        return self._holding

    def stop(self) -> None:
        self._stopped.set()
        with self._lock:
            goal = self._goal
        if goal is not None:
            self._stop_pub.publish(String(data=goal_key(goal.goal_id.uuid)))  # first: the cancel is slower
            goal.cancel_goal_async()

    def tcp_pose(self) -> TcpPose:
        if self._tcp is None:
            raise ArmFault(FaultKind.CONNECTION_LOST, "no tcp_pose from the simulator yet")
        return self._tcp

    def joint_positions(self) -> list[float]:
        if not self._q:
            raise ArmFault(FaultKind.CONNECTION_LOST, "no joint_states from the simulator yet")
        return list(self._q)

    def status(self) -> ArmStatus:
        # discovery can lag the node's start: wait (bounded) until the simulator's server was seen once
        if not self._seen:
            self._seen = self._client.wait_for_server(timeout_sec=self._command_timeout)
        connected = self._seen and self._client.server_is_ready()
        return ArmStatus(
            robot_mode=int(RobotMode.RUNNING if connected else RobotMode.DISCONNECTED),
            # the simulator clears a protective stop with the next command, so it only fails that command
            safety_mode=int(SafetyMode.NORMAL), protective_stop=False, emergency_stop=False, connected=connected,
            detail="" if connected else "the simulator's arm/command is not available")

    # ---- internals -----------------------------------------------------------------------------
    def _send(self, goal: ArmCommand.Goal, motion: bool = True) -> ArmCommand.Result:
        if motion:
            self._stopped.clear()
        if not self._client.wait_for_server(timeout_sec=self._command_timeout):
            raise ArmFault(FaultKind.CONNECTION_LOST, f"arm/command unavailable after {self._command_timeout:.1f} s")
        try:
            handle = wait_future(self._client.send_goal_async(goal), self._command_timeout, "arm/command goal")
            if handle is None or not handle.accepted:
                raise ArmFault(FaultKind.COMMAND_FAILED, "the simulator rejected the command")
            with self._lock:
                self._goal = handle if motion else self._goal
            try:
                wrapped = wait_future(handle.get_result_async(),
                                      self._motion_timeout if motion else self._command_timeout, "arm/command")
            finally:
                with self._lock:
                    if motion:
                        self._goal = None
        except WaitTimeout as e:
            raise ArmFault(FaultKind.TIMEOUT, str(e)) from e
        r = wrapped.result
        if r.tcp_pose is not None and (r.tcp_pose.orientation.w or r.tcp_pose.orientation.x):
            self._tcp = from_pose(r.tcp_pose)
        if len(r.joint_positions) == 6:
            self._q = [float(x) for x in r.joint_positions]
        self._holding = bool(r.holding)
        code = int(r.error_code)
        if code == ArmCommand.Result.ERROR_NONE:
            return r
        if code == ArmCommand.Result.ERROR_CANCELED or self._stopped.is_set():
            raise MotionInterrupted(r.message or "stopped")
        if code == ArmCommand.Result.ERROR_PROTECTIVE_STOP:
            raise ArmFault(FaultKind.PROTECTIVE_STOP, r.message)
        if code == ArmCommand.Result.ERROR_TIMEOUT:
            raise ArmFault(FaultKind.TIMEOUT, r.message)
        raise ArmFault(FaultKind.COMMAND_FAILED, r.message or f"arm/command error {code}")
