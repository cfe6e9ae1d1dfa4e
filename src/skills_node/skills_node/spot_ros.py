"""ROS wiring of the `spot` backend (rclpy adapter only), mirroring arm_ros.ArmRosBridge: robot/status from
SpotRobot.status(), the `estop` topic (latches the skills and cuts Spot's software e-stop) and the
`estop_reset` service (releases it and restores the start posture). The skills live in backends/spot.py,
the robot in core/spot.py."""
from __future__ import annotations

import logging
import threading

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool

from monologue_common.qos import LATCHED
from monologue_interfaces.msg import RobotStatus
from monologue_interfaces.srv import ResetEstop

from .backends.spot import SpotBackendSettings, SpotSkillBackend
from .core.spot import SpotFault, SpotRobot, SpotStatus


class SpotRosBridge:
    """robot/status, estop and estop_reset around a SpotRobot and its SpotSkillBackend."""

    def __init__(self, node: Node, logger: logging.Logger, robot: SpotRobot, backend: SpotSkillBackend,
                 s: SpotBackendSettings, frame_id: str) -> None:
        self._node = node
        self._log = logger
        self._robot = robot
        self._backend = backend
        self._s = s
        self._frame_id = frame_id
        self._status_lock = threading.Lock()
        self._status_pub = node.create_publisher(RobotStatus, "robot/status", LATCHED)
        estop_group = MutuallyExclusiveCallbackGroup()  # never starved by running skills or status reads
        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self._estop_sub = node.create_subscription(Bool, "estop", self._on_estop, reliable,
                                                   callback_group=estop_group)
        self._reset_srv = node.create_service(ResetEstop, "estop_reset", self._on_reset, callback_group=estop_group)
        self._timer = node.create_timer(1.0 / s.status_rate, self.publish_status,
                                        callback_group=MutuallyExclusiveCallbackGroup())
        self.publish_status()

    def close(self) -> None:
        self._timer.cancel()

    def start_posture(self) -> None:
        """Power on and stand as configured; a failure is logged and shows on robot/status (no raise)."""
        try:
            if self._s.power_on_at_start:
                self._robot.power_on()
            if self._s.stand_at_start:
                self._robot.stand()
        except SpotFault as e:
            self._log.error("Spot start posture: %s", e)
        self.publish_status()

    # ----- callbacks ------------------------------------------------------------------------
    def _on_estop(self, msg: Bool) -> None:
        if not msg.data:
            return
        self._backend.estop_reason = "estop topic"
        self._backend.estop_latched = True
        try:
            self._robot.estop_cut()
        except SpotFault as e:  # not connected: the robot's own endpoint timeout stops it
            self._log.error("could not cut Spot's software e-stop: %s", e)
        self.publish_status()

    def _on_reset(self, _req: ResetEstop.Request, res: ResetEstop.Response) -> ResetEstop.Response:
        was = self._backend.estop_latched
        try:
            if was:
                self._robot.estop_release()
        except SpotFault as e:
            res.success, res.message = False, f"could not release Spot's software e-stop: {e}"
            self.publish_status()
            return res
        self._backend.estop_latched, self._backend.estop_reason = False, ""
        res.success = True
        res.message = "e-stop reset" if was else "e-stop was not latched"
        if was:
            self.start_posture()
        self.publish_status()
        return res

    def publish_status(self) -> None:
        status = self._robot.status()
        msg = RobotStatus()
        msg.header.stamp = self._node.get_clock().now().to_msg()
        msg.header.frame_id = self._frame_id
        msg.backend = "spot"
        fill_spot_status(msg, status, self._backend.estop_latched, self._backend.estop_reason)
        with self._status_lock:
            self._status_pub.publish(msg)


def fill_spot_status(msg: RobotStatus, status: SpotStatus, estop_latched: bool, estop_reason: str) -> None:
    """RobotStatus from a SpotStatus, as arm_ros.fill_status does for an ArmStatus. The UR mode numbers
    stay 0; their names carry Spot's state (MOTORS_OFF / SITTING / STANDING; NORMAL / ESTOPPED /
    BEHAVIOR_FAULT). protective_stop = a behaviour fault, emergency_stop = any e-stop of the robot."""
    msg.connected = status.connected
    msg.estop_latched, msg.estop_reason = estop_latched, estop_reason
    msg.protective_stop, msg.emergency_stop = bool(status.behavior_faults), status.estopped
    msg.robot_mode, msg.safety_mode = 0, 0
    msg.robot_mode_name = ("DISCONNECTED" if not status.connected else "MOTORS_OFF" if not status.powered
                           else "STANDING" if status.standing else "SITTING")
    msg.safety_mode_name = ("ESTOPPED" if status.estopped else "BEHAVIOR_FAULT" if status.behavior_faults
                            else "NORMAL")
    msg.ok = status.ok and not estop_latched
    faults = [] if status.ok else [status.describe()]
    if estop_latched:
        faults.insert(0, f"software e-stop latched ({estop_reason})")
    msg.fault = "; ".join(faults)
    msg.holding = False
