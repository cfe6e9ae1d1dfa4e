"""ROS wiring of the arm backends (rclpy adapter only): parameters -> core configs, the scene
description -> ObjectLocator, the e-stop topic and reset service, robot/status, and the human
approval gate over the AskHuman action. The logic lives in core/."""
from __future__ import annotations

import importlib
import logging
import math
import threading
from typing import Any

from rclpy.action import ActionClient
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool

from monologue_common.qos import LATCHED
from monologue_common.runtime import WaitTimeout, wait_future
from monologue_interfaces.action import AskHuman
from monologue_interfaces.msg import RobotStatus, SceneDescription
from monologue_interfaces.srv import ResetEstop

from .core.arm import ArmStatus, RobotMode, SafetyMode, TcpPose, mode_name
from .core.arm_backend import SKILL_RULES, ArmSkillBackend, PickPlaceConfig, SceneEntry, SceneLocator
from .core.kinematics import forward_kinematics
from .core.safety import ApprovalGate, SafeArm, SafetyLimits, is_approval
from .core.ur5e_rtde import EndEffectorIO, RtdeArm, RtdeArmConfig, RtdeFactories, UrPorts, library_factories

APPROVAL_MODES = ("off", "skill", "motion")

# name -> default; units in comments. Read by make_ur5e_backend; overridden by config/robots/ur5e.yaml.
UR5E_PARAMETERS: dict[str, Any] = {
    "ur5e.host": "",  # robot IP address
    "ur5e.rtde_factory": "",  # "" = ur_rtde; "module:function" returning RtdeFactories (tests only)
    "ur5e.probe": True,  # probe dashboard/RTDE/script ports before connecting
    "ur5e.dashboard_port": 29999,
    "ur5e.rtde_port": 30004,
    "ur5e.script_port": 30003,
    "ur5e.connect_timeout": 3.0,  # s
    "ur5e.command_timeout": 3.0,  # s
    "ur5e.monitor_period": 0.01,  # s
    "ur5e.stale_timeout": 0.5,  # s
    "ur5e.reconnect_period": 2.0,  # s, 0 = never
    "ur5e.tcp_offset": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],  # m, rad (flange -> TCP)
    "ur5e.payload_mass": 0.0,  # kg
    "ur5e.payload_cog": [0.0, 0.0, 0.0],  # m
    "ur5e.end_effector.output": "tool",  # tool | standard
    "ur5e.end_effector.pin": 0,
    "ur5e.end_effector.active_high": True,
    "ur5e.end_effector.sense_input": -1,  # digital input bit of a vacuum sensor, -1 = none
    "ur5e.end_effector.sense_active_high": True,
    "ur5e.contact.force": 5.0,  # N
    "ur5e.contact.speed": 0.02,  # m/s
    "ur5e.contact.acceleration": 0.5,  # m/s^2
    "ur5e.contact.margin": 0.05,  # m searched below the expected point
    "ur5e.stop_deceleration": 2.0,  # m/s^2
    "ur5e.hover_height": 0.15,  # m
    "ur5e.orientation": [0.0, math.pi, 0.0],  # rad, TCP rotation vector at pick and place
    "ur5e.speed": 0.25,  # m/s
    "ur5e.acceleration": 0.5,  # m/s^2
    "ur5e.joint_speed": 0.5,  # rad/s
    "ur5e.joint_acceleration": 1.0,  # rad/s^2
    "ur5e.home_joints": [0.0],  # rad; [0.0] = none
    "ur5e.grip_delay": 0.3,  # s
    "ur5e.release_delay": 0.3,  # s
    "ur5e.check_grasp": True,
    "ur5e.return_home": False,  # end pick_place at home_joints (wrist camera sees the table again)
    "safety.workspace_min": [0.25, -0.40, 0.0],  # m, base frame
    "safety.workspace_max": [0.80, 0.40, 0.50],  # m
    "safety.min_height": 0.005,  # m
    "safety.max_speed": 0.5,  # m/s
    "safety.max_acceleration": 1.0,  # m/s^2
    "safety.max_joint_speed": 1.0,  # rad/s
    "safety.max_joint_acceleration": 2.0,  # rad/s^2
    "safety.max_contact_travel": 0.30,  # m
    "safety.joint_min": [-2 * math.pi] * 6,  # rad
    "safety.joint_max": [2 * math.pi] * 6,  # rad
    "safety.skills": ["pick_place", "home"],  # allow-list
    "approval.mode": "off",  # off | skill | motion
    "approval.timeout": 30.0,  # s
    "approval.action": "approve_motion",  # AskHuman action server
    "scene_topic": "scene/description",
    "place_categories": ["bowl", "plate", "location"],
    "use_place_points": True,  # place at perception's IM-R place point of a plate/bowl (else its centre)
    "status_rate": 2.0,  # Hz, robot/status also goes out on every change
}


# The pick-and-place keys of UR5E_PARAMETERS, under `arm.` for the simulator backend (arm/command).
PICK_KEYS = ("hover_height", "orientation", "speed", "acceleration", "contact.speed", "contact.margin", "joint_speed",
             "joint_acceleration", "home_joints", "grip_delay", "release_delay", "check_grasp", "return_home")
SIM_ARM_PARAMETERS: dict[str, Any] = {
    **{f"arm.{k}": UR5E_PARAMETERS[f"ur5e.{k}"] for k in PICK_KEYS},
    "arm.orientation": [math.pi, 0.0, 0.0],  # rad, rotation vector: tool down in the simulator's base_link
    "arm.command_timeout": 5.0,  # s, goal acceptance and suction commands
    "arm.motion_timeout": 60.0,  # s, one motion
    **{k: v for k, v in UR5E_PARAMETERS.items() if not k.startswith("ur5e.")},
}


def declare(node: Node, params: dict[str, Any]) -> None:
    for name, default in params.items():
        if not node.has_parameter(name):
            node.declare_parameter(name, default)


def _floats(node: Node, name: str, count: int | None = None) -> tuple[float, ...]:
    values = tuple(float(v) for v in node.get_parameter(name).value)
    if count is not None and len(values) != count:
        raise ValueError(f"parameter {name} needs {count} values, got {len(values)}")
    return values


def load_factories(spec: str) -> RtdeFactories:
    """ur_rtde, or a "module:function" returning RtdeFactories (the test fake)."""
    if not spec:
        return library_factories()
    module, _, func = spec.partition(":")
    if not module or not func:
        raise ValueError(f"ur5e.rtde_factory must be 'module:function', got {spec!r}")
    factories = getattr(importlib.import_module(module), func)()
    if not isinstance(factories, RtdeFactories):
        raise ValueError(f"{spec} returned {type(factories).__name__}, not RtdeFactories")
    return factories


def read_limits(node: Node) -> SafetyLimits:
    p = node.get_parameter
    wmin, wmax = _floats(node, "safety.workspace_min", 3), _floats(node, "safety.workspace_max", 3)
    allowed = [str(s) for s in p("safety.skills").value]
    rules = {r.name: r for r in SKILL_RULES}
    unknown = [s for s in allowed if s not in rules]
    if unknown:
        raise ValueError(f"safety.skills names unknown skills {unknown}; known: {sorted(rules)}")
    return SafetyLimits(
        workspace_min=(wmin[0], wmin[1], wmin[2]), workspace_max=(wmax[0], wmax[1], wmax[2]),
        min_height=float(p("safety.min_height").value),
        max_speed=float(p("safety.max_speed").value),
        max_acceleration=float(p("safety.max_acceleration").value),
        max_joint_speed=float(p("safety.max_joint_speed").value),
        max_joint_acceleration=float(p("safety.max_joint_acceleration").value),
        max_contact_travel=float(p("safety.max_contact_travel").value),
        joint_min=_floats(node, "safety.joint_min", 6), joint_max=_floats(node, "safety.joint_max", 6),
        skills=tuple(rules[s] for s in allowed),
    )


def read_rtde_config(node: Node) -> RtdeArmConfig:
    p = node.get_parameter
    output = str(p("ur5e.end_effector.output").value)
    if output not in ("tool", "standard"):
        raise ValueError(f"ur5e.end_effector.output must be 'tool' or 'standard', got {output!r}")
    return RtdeArmConfig(
        host=str(p("ur5e.host").value),
        tcp_offset=_floats(node, "ur5e.tcp_offset", 6),
        payload_mass=float(p("ur5e.payload_mass").value),
        payload_cog=_floats(node, "ur5e.payload_cog", 3),
        end_effector=EndEffectorIO(
            output="tool" if output == "tool" else "standard",
            pin=int(p("ur5e.end_effector.pin").value),
            active_high=bool(p("ur5e.end_effector.active_high").value),
            sense_input=int(p("ur5e.end_effector.sense_input").value),
            sense_active_high=bool(p("ur5e.end_effector.sense_active_high").value),
        ),
        contact_force=float(p("ur5e.contact.force").value),
        contact_acceleration=float(p("ur5e.contact.acceleration").value),
        stop_deceleration=float(p("ur5e.stop_deceleration").value),
        monitor_period_s=float(p("ur5e.monitor_period").value),
        command_timeout_s=float(p("ur5e.command_timeout").value),
        connect_timeout_s=float(p("ur5e.connect_timeout").value),
        stale_timeout_s=float(p("ur5e.stale_timeout").value),
        reconnect_period_s=float(p("ur5e.reconnect_period").value),
        probe=bool(p("ur5e.probe").value),
        ports=UrPorts(dashboard=int(p("ur5e.dashboard_port").value), rtde=int(p("ur5e.rtde_port").value),
                      script=int(p("ur5e.script_port").value)),
    )


def read_pick_place(node: Node, prefix: str = "ur5e") -> PickPlaceConfig:
    def p(key: str) -> Any:
        return node.get_parameter(f"{prefix}.{key}").value

    home = _floats(node, f"{prefix}.home_joints")
    orientation = _floats(node, f"{prefix}.orientation", 3)
    return PickPlaceConfig(
        hover_height=float(p("hover_height")),
        orientation=(orientation[0], orientation[1], orientation[2]),
        speed=float(p("speed")),
        acceleration=float(p("acceleration")),
        contact_speed=float(p("contact.speed")),
        contact_margin=float(p("contact.margin")),
        joint_speed=float(p("joint_speed")),
        joint_acceleration=float(p("joint_acceleration")),
        home_joints=home if len(home) == 6 else (),
        grip_delay_s=float(p("grip_delay")),
        release_delay_s=float(p("release_delay")),
        check_grasp=bool(p("check_grasp")),
        return_home=bool(p("return_home")),
    )


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
    """Everything the skills node adds for an arm backend: the UR5e through ur_rtde (it owns the
    RtdeArm), or the simulator through its arm/command action (RosSimArm)."""

    def __init__(self, node: Node, logger: logging.Logger, backend: str = "ur5e") -> None:
        declare(node, UR5E_PARAMETERS if backend == "ur5e" else SIM_ARM_PARAMETERS)
        self._node = node
        self._log = logger
        self._backend = backend
        p = node.get_parameter
        limits = read_limits(node)
        pick = read_pick_place(node, "ur5e" if backend == "ur5e" else "arm")
        mode = str(p("approval.mode").value)
        if mode not in APPROVAL_MODES:
            raise ValueError(f"approval.mode must be one of {APPROVAL_MODES}, got {mode!r}")
        approval_timeout = float(p("approval.timeout").value)
        rate = float(p("status_rate").value)
        if rate <= 0:
            raise ValueError("status_rate must be > 0 Hz")
        gate: ApprovalGate | None = None
        if mode != "off":
            gate = AskHumanApproval(node, str(p("approval.action").value), logger)
        self._status_pub = node.create_publisher(RobotStatus, "robot/status", LATCHED)
        self._status_lock = threading.Lock()
        self.arm: Any
        if backend == "ur5e":
            rtde_config = read_rtde_config(node)
            self.arm = RtdeArm(rtde_config, load_factories(str(p("ur5e.rtde_factory").value)),
                               logging.getLogger("skills.ur5e"), on_status=lambda _s: self.publish_status())
            offset = TcpPose(*rtde_config.tcp_offset)
        else:
            from .sim_arm import RosSimArm

            self.arm = RosSimArm(node, ReentrantCallbackGroup(), float(p("arm.command_timeout").value),
                                 float(p("arm.motion_timeout").value))
            offset = TcpPose(0.0, 0.0, 0.10)  # the simulator's suction-cup lip (tabletop_sim TCP_OFFSET)
        # forward_kinematics (UR DH) agrees with tabletop_sim's base_link for its HOME_Q (checked at start-up:
        # the home TCP must lie in the workspace box)

        def fk(q: Any) -> TcpPose:
            return forward_kinematics(q, offset)

        self.safe_arm = SafeArm(self.arm, limits, logging.getLogger("skills.safety"),
                                forward_kinematics=fk,
                                approval=gate if mode == "motion" else None, approval_timeout_s=approval_timeout)
        self.locator = SceneLocator([str(c) for c in p("place_categories").value],
                                    use_place_points=bool(p("use_place_points").value))
        self.backend = ArmSkillBackend(self.safe_arm, self.locator, pick, logger,
                                       skill_approval=gate if mode == "skill" else None,
                                       approval_timeout_s=approval_timeout)
        estop_group = MutuallyExclusiveCallbackGroup()  # never starved by running skills
        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self._estop_sub = node.create_subscription(Bool, "estop", self._on_estop, reliable,
                                                   callback_group=estop_group)
        self._reset_srv = node.create_service(ResetEstop, "estop_reset", self._on_reset, callback_group=estop_group)
        self._scene_sub = node.create_subscription(SceneDescription, str(p("scene_topic").value), self._on_scene,
                                                   LATCHED, callback_group=ReentrantCallbackGroup())
        self._timer = node.create_timer(1.0 / rate, self.publish_status)
        if backend == "ur5e":
            try:
                self.arm.connect()
            except Exception as e:  # keep serving: status says why, the monitor keeps retrying
                logger.error("UR5e not connected at startup: %s", e)
            self.arm.start_monitor()
        self.publish_status()

    def close(self) -> None:
        if self._backend == "ur5e":
            self.arm.close()

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
        self.locator.update([
            SceneEntry(o.name, o.category,
                       (o.pose.pose.position.x, o.pose.pose.position.y, o.pose.pose.position.z), bool(o.visible),
                       (o.place_point.x, o.place_point.y, o.place_point.z) if o.has_place_point else None)
            for o in msg.objects
        ])

    def publish_status(self) -> None:
        status = self.arm.status()
        msg = RobotStatus()
        msg.header.stamp = self._node.get_clock().now().to_msg()
        msg.header.frame_id = str(self._node.get_parameter("frame_id").value)
        msg.backend = self._backend
        fill_status(msg, status, self.safe_arm.estop_latched, self.safe_arm.estop_reason)
        if status.connected:
            msg.tcp_pose, msg.joint_positions, msg.holding = _readings(self.arm)
        with self._status_lock:
            self._status_pub.publish(msg)


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


def _readings(arm: Any) -> tuple[list[float], list[float], bool]:
    """TCP pose, joint positions and holding, or empty values when the robot cannot be read now."""
    try:
        return arm.tcp_pose().as_list(), arm.joint_positions(), arm.holding()
    except Exception:
        return [], [], False
