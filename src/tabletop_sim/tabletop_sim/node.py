"""tabletop_sim: the MuJoCo tabletop as a ROS 2 node that looks like a real UR5e with a RealSense.

Publishes camera images (rgb8 colour, 16UC1 aligned depth in mm, CameraInfo), joint_states, tcp_pose,
suction/holding, /tf and /tf_static, and the ground truth on sim/ground_truth (Statler's domains: their
hidden truth, JSON, on sim/statler_truth, scoring only); serves the arm on the
`arm/command` action (ArmCommand, ur_rtde-like) and the scene on `sim/reset` and `sim/disturb`. rclpy
adapter only: the simulation lives in tabletop_sim.core.
"""
from __future__ import annotations

import os

os.environ.setdefault("MUJOCO_GL", "egl")  # headless rendering; must be set before mujoco is imported

import json  # noqa: E402
import logging  # noqa: E402
import random  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from dataclasses import replace  # noqa: E402
from typing import cast  # noqa: E402

import numpy as np  # noqa: E402
from builtin_interfaces.msg import Time  # noqa: E402
from geometry_msgs.msg import Pose as PoseMsg  # noqa: E402
from geometry_msgs.msg import PoseStamped, TransformStamped  # noqa: E402
from rclpy.action.server import ActionServer, CancelResponse, GoalResponse, ServerGoalHandle  # noqa: E402
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup  # noqa: E402
from rclpy.impl.rcutils_logger import RcutilsLogger  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image, JointState  # noqa: E402
from std_msgs.msg import Bool, Header, String  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402

from monologue_common.core.realtime import apply_fifo  # noqa: E402
from monologue_common.dedicated import DedicatedCallbacks  # noqa: E402
from monologue_common.params import NODE_OPTIONS, parameter_values, warn_unused  # noqa: E402
from monologue_common.qos import LATCHED  # noqa: E402
from monologue_common.runtime import Component, run_node  # noqa: E402
from monologue_domain.expert.channel import write_world  # noqa: E402
from monologue_domain.msgs import scene_to_msg  # noqa: E402
from monologue_domain.scene_spec import layout_scene, make_spec  # noqa: E402
from monologue_domain.statler_domains import TRUTH_TOPIC, DomainTruth, domain_spec  # noqa: E402
from monologue_interfaces.action import ArmCommand  # noqa: E402
from monologue_interfaces.msg import SceneDescription  # noqa: E402
from monologue_interfaces.srv import DisturbSim, ResetSim  # noqa: E402

from .core.arm import ArmController, ArmResult, ProgressFn  # noqa: E402
from .core.camera import CameraFrame, CameraRenderer  # noqa: E402
from .core.config import SimSettings, settings_from_parameters  # noqa: E402
from .core.geometry import Pose, compose, invert  # noqa: E402
from .core.kinematics import HOME_Q, PARK_Q  # noqa: E402
from .core.model import ARM_JOINTS, TCP_OFFSET, wrist_camera_mount  # noqa: E402
from .core.motion import ArmError  # noqa: E402
from .core.runner import SimRunner  # noqa: E402
from .core.world import SimWorld  # noqa: E402

BASE_FRAME = "base_link"
WORLD_FRAME = "world"
OPTICAL_FRAME = "camera_color_optical_frame"
# RealSense convention: camera_link (x forward, y left, z up) -> optical frame (x right, y down, z forward).
LINK_TO_OPTICAL = Pose((0.0, 0.0, 0.0), (-0.5, 0.5, -0.5, 0.5))
IMAGE_QOS = QoSProfile(depth=2, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
TF_QOS = QoSProfile(depth=100, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
TF_STATIC_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                           durability=DurabilityPolicy.TRANSIENT_LOCAL)


class TabletopSimNode(Node):
    def __init__(self) -> None:
        super().__init__("tabletop_sim", **NODE_OPTIONS)
        # Parameters (and their defaults) come from the YAML files only: config/robots/sim.yaml. Integers
        # are fine where a float is expected (`-p camera.rate:=2`): settings_from_parameters checks them all.
        self.settings: SimSettings = settings_from_parameters(parameter_values(self))
        s = self.settings
        self._counts = (s.num_blocks, s.num_bowls)  # sim/reset without counts uses the configured ones
        warn_unused(self, list(s.unused))  # llm.*: config/llm/*.yaml's `/**` block is not the simulator's
        self._start_q = PARK_Q if s.camera_mode == "overhead" else HOME_Q

        layout = layout_scene(s.spec, s.seed)
        self.world = SimWorld(layout, replace(s.world_config(), home_q=self._start_q),
                              logging.getLogger("tabletop_sim.world"))
        self.runner = SimRunner(self.world, s.real_time_factor, logging.getLogger("tabletop_sim.runner")).start()
        self.arm = ArmController(self.world, self.runner, logging.getLogger("tabletop_sim.arm"))
        self.get_logger().info(
            f"scene (seed {s.seed}): {', '.join(o.name for o in layout.objects)}; camera {s.camera_mode} "
            f"{s.image_width}x{s.image_height} at {s.camera_rate:g} Hz; real-time factor {s.real_time_factor:g}")

        self._gt_lock = threading.Lock()
        self._gt_pub = self.create_publisher(SceneDescription, "sim/ground_truth", LATCHED)
        self._truth: DomainTruth | None = DomainTruth.create(s.domain, layout.spec, s.seed)
        self._truth_pub = self.create_publisher(String, TRUTH_TOPIC, LATCHED) if self._truth is not None else None
        self._truth_last = ""
        self._js_pub = self.create_publisher(JointState, "joint_states", 10)
        # The robot state a program polls (ur_rtde getActualTCPPose, the vacuum sensor input).
        self._tcp_pub = self.create_publisher(PoseStamped, "tcp_pose", 10)
        self._holding_pub = self.create_publisher(Bool, "suction/holding", LATCHED)
        self._tf_pub = self.create_publisher(TFMessage, "/tf", TF_QOS)
        self._tf_static_pub = self.create_publisher(TFMessage, "/tf_static", TF_STATIC_QOS)
        self._rgb_pub = self.create_publisher(Image, "camera/color/image_raw", IMAGE_QOS)
        self._rgb_info_pub = self.create_publisher(CameraInfo, "camera/color/camera_info", IMAGE_QOS)
        self._depth_pub = self.create_publisher(Image, "camera/aligned_depth_to_color/image_raw", IMAGE_QOS)
        self._depth_info_pub = self.create_publisher(
            CameraInfo, "camera/aligned_depth_to_color/camera_info", IMAGE_QOS)
        self._seg_pub = self.create_publisher(Image, "sim/segmentation/image_raw", IMAGE_QOS)

        group = ReentrantCallbackGroup()
        self._active_goal: ServerGoalHandle | None = None
        self._action = ActionServer(
            self, ArmCommand, "arm/command",
            execute_callback=self._execute,
            goal_callback=lambda _goal: GoalResponse.ACCEPT,
            cancel_callback=self._cancel,
            callback_group=group,
        )
        # arm/stop: the controller's direct stop input (what stopL is on a UR), on a thread of its own, so a
        # stop is applied between two physics chunks without waiting for this node's executor or for the
        # action server's cancel (the skills node sends both on an e-stop).
        self._stop_thread = DedicatedCallbacks(self, "arm-stop", logging.getLogger("tabletop_sim.stop"))
        self._stop_sub = self.create_subscription(String, "arm/stop", self._on_stop,
                                                  QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE),
                                                  callback_group=self._stop_thread.group)
        self._reset_srv = self.create_service(ResetSim, "sim/reset", self._reset, callback_group=group)
        self._disturb_srv = self.create_service(DisturbSim, "sim/disturb", self._disturb, callback_group=group)
        timers = MutuallyExclusiveCallbackGroup()
        self._gt_timer = self.create_timer(1.0 / s.ground_truth_rate, self.publish_ground_truth,
                                           callback_group=timers)
        self._js_timer = self.create_timer(1.0 / s.joint_state_rate, self._publish_state, callback_group=timers)
        self._optical_from_tool0: Pose | None = None  # wrist camera mount, set by _publish_static_tf
        self._publish_static_tf()
        self.publish_ground_truth()

        self._camera_stop = threading.Event()
        self._camera_error: str | None = None
        self._camera_thread = threading.Thread(target=self._camera_loop, name="sim-camera", daemon=True)
        self._camera_thread.start()
        self._stop_thread.start()

    def get_logger(self) -> RcutilsLogger:
        """Node.get_logger, typed (rclpy leaves it unannotated; mypy's untyped_calls_exclude does not
        cover inherited methods called on a subclass)."""
        return cast(RcutilsLogger, Node.get_logger(self))

    # ----- arm -----------------------------------------------------------------------------------
    def _on_stop(self, msg: String) -> None:
        """arm/stop names the goal to stop (its id in hex): a late stop never stops a later motion."""
        goal = self._active_goal
        if goal is not None and bytes(bytearray(int(b) for b in goal.goal_id.uuid)).hex() == msg.data:
            self.arm.stop()

    def _cancel(self, goal: ServerGoalHandle) -> CancelResponse:
        if goal is self._active_goal:
            self.arm.stop()
        return CancelResponse.ACCEPT

    def _execute(self, goal: ServerGoalHandle) -> ArmCommand.Result:
        req: ArmCommand.Goal = goal.request
        cmd = int(req.command)

        def progress(fraction: float, tcp: Pose) -> None:
            fb = ArmCommand.Feedback()
            fb.tcp_pose, fb.progress = _pose_msg(tcp), float(fraction)
            goal.publish_feedback(fb)

        motion = cmd in (ArmCommand.Goal.MOVE_LINEAR, ArmCommand.Goal.MOVE_JOINTS, ArmCommand.Goal.MOVE_UNTIL_CONTACT)
        if motion and self._active_goal is None:
            self._active_goal = goal
        try:
            result = self._command(cmd, req, progress)
        finally:
            if self._active_goal is goal:
                self._active_goal = None
        self.publish_ground_truth()
        out = ArmCommand.Result()
        out.error_code, out.message = int(result.error), result.message
        out.contact, out.holding = bool(result.contact), bool(result.holding)
        out.tcp_pose = _pose_msg(result.tcp_pose)
        out.joint_positions = [float(v) for v in result.joint_positions]
        if result.error == ArmError.CANCELED and goal.is_cancel_requested:
            goal.canceled()
        elif result.ok:
            goal.succeed()
        else:
            goal.abort()
            self.get_logger().warning(f"arm command {cmd} failed: {result.error.name}: {result.message}")
        return out

    def _command(self, cmd: int, req: ArmCommand.Goal, progress: ProgressFn) -> ArmResult:
        g = ArmCommand.Goal
        if cmd == g.MOVE_LINEAR:
            p, o = req.pose.position, req.pose.orientation
            pose = Pose((p.x, p.y, p.z), (o.x, o.y, o.z, o.w))
            return self.arm.move_linear(pose, req.speed, req.acceleration, progress)
        if cmd == g.MOVE_JOINTS:
            return self.arm.move_joints(list(req.joint_positions), req.speed, req.acceleration, progress)
        if cmd == g.MOVE_UNTIL_CONTACT:
            d = req.direction
            return self.arm.move_until_contact((d.x, d.y, d.z), req.speed, req.max_travel, req.acceleration,
                                               progress)
        if cmd == g.SET_SUCTION:
            return self.arm.set_suction(bool(req.suction_on))
        if cmd == g.STOP:
            return self.arm.stop()
        return self.arm.invalid(f"unknown command {cmd}; see ArmCommand.action")

    # ----- scene services ------------------------------------------------------------------------
    def _reset(self, req: ResetSim.Request, res: ResetSim.Response) -> ResetSim.Response:
        seed = int(req.seed) if req.seed >= 0 else random.SystemRandom().randrange(1_000_000)
        blocks = int(req.num_blocks) if req.num_blocks >= 0 else self._counts[0]
        bowls = int(req.num_bowls) if req.num_bowls >= 0 else self._counts[1]
        try:
            spec = domain_spec(self.settings.domain, make_spec(
                seed, blocks, bowls, bool(req.matching_bowls), tuple(req.block_colors), tuple(req.bowl_colors),
                tuple(req.heavy_blocks)))
            layout = layout_scene(spec, seed)
            truth = DomainTruth.create(self.settings.domain, spec, seed)
        except (ValueError, RuntimeError) as e:
            res.success, res.message, res.seed = False, f"scene not changed: {e}", seed
            return res
        self.world.reset(layout)
        with self._gt_lock:
            self._truth, self._truth_last = truth, ""
        self.publish_ground_truth()
        res.success, res.seed = True, seed
        res.objects = [o.name for o in layout.objects]
        res.message = f"new scene (seed {seed}): {', '.join(res.objects) or 'no objects'}"
        self.get_logger().info(res.message)
        return res

    def _disturb(self, req: DisturbSim.Request, res: DisturbSim.Response) -> DisturbSim.Response:
        try:
            if req.kind == DisturbSim.Request.KNOCK_TOWER:
                res.affected = self.world.knock_tower()
                res.message = f"knocked the tower over: pushed the {', '.join(res.affected)}"
            elif req.kind == DisturbSim.Request.MOVE_OBJECT:
                if req.location:
                    pose = self.world.move_object_to_location(req.object, req.location)
                else:
                    pose = self.world.move_object(req.object, float(req.x), float(req.y))
                res.affected = [req.object]
                x, y, _ = pose.position
                res.message = f"moved the {req.object} to ({x:.3f}, {y:.3f}) m"
            else:
                raise ValueError(f"unknown disturbance kind {req.kind}")
        except (KeyError, ValueError) as e:
            res.success, res.message = False, f"no disturbance: {e.args[0] if e.args else e}"
            return res
        res.success = True
        self.get_logger().info(res.message)
        self.publish_ground_truth()
        return res

    # ----- state publishing ----------------------------------------------------------------------
    def publish_ground_truth(self) -> None:
        scene = self.world.ground_truth(0.0, BASE_FRAME)
        msg = scene_to_msg(scene, stamp=self.get_clock().now().to_msg())
        with self._gt_lock:
            self._gt_pub.publish(msg)
            extra: dict[str, object] = {}
            if self._truth is not None and self._truth_pub is not None:  # settled on the physical poses
                view = self.world.kinematic_view()
                self._truth.settle(view)
                data = self._truth.to_json(view)
                data.pop("revision", None)  # published only when something changed
                extra["statler"] = data
                text = json.dumps(data, ensure_ascii=False)
                if text != self._truth_last:
                    self._truth_last = text
                    self._truth_pub.publish(String(data=text))
            if self.settings.expert_truth_dir:  # llm:=expert: the stand-in's side channel (never the planner's)
                write_world(self.settings.expert_truth_dir, "mujoco", scene.objects, scene.held_objects, extra)

    def _publish_state(self) -> None:
        stamp = self.get_clock().now().to_msg()
        with self.world.lock:
            q = self.world.joint_positions()
            qd = self.world.joint_velocities()
            tool0 = self.world.tool0_pose()
            tcp = self.world.tcp_pose()
            holding = self.world.holding()
        js = JointState()
        js.header.stamp = stamp
        js.name = list(ARM_JOINTS)
        js.position = [float(v) for v in q]
        js.velocity = [float(v) for v in qd]
        self._js_pub.publish(js)
        self._tf_pub.publish(TFMessage(transforms=[_transform(stamp, BASE_FRAME, "tool0", tool0)]))
        self._tcp_pub.publish(PoseStamped(header=Header(stamp=stamp, frame_id=BASE_FRAME), pose=_pose_msg(tcp)))
        self._holding_pub.publish(Bool(data=holding))

    def _publish_static_tf(self) -> None:
        stamp = self.get_clock().now().to_msg()
        tfs = [
            _transform(stamp, WORLD_FRAME, BASE_FRAME, Pose((0.0, 0.0, 0.0))),
            _transform(stamp, "tool0", "tcp", Pose((0.0, 0.0, TCP_OFFSET))),
        ]
        optical = self.world.camera_pose(self.settings.camera_mode)
        if self.settings.camera_mode == "wrist":
            self._optical_from_tool0 = invert(compose(invert(self.world.tool0_pose()), optical))  # the true mount
            # /tf gets the nominal mount: a perturbed one (camera.mount_offset) is for a calibration to find.
            parent, mount = "tool0", Pose.from_matrix(*wrist_camera_mount())
        else:
            parent, mount = WORLD_FRAME, optical
        link = compose(mount, invert(LINK_TO_OPTICAL))
        tfs.append(_transform(stamp, parent, "camera_link", link))
        tfs.append(_transform(stamp, "camera_link", OPTICAL_FRAME, LINK_TO_OPTICAL))
        self._tf_static_pub.publish(TFMessage(transforms=tfs))

    # ----- camera --------------------------------------------------------------------------------
    def _camera_loop(self) -> None:
        """Renders and publishes frames at camera.rate while anyone subscribes (owns the GL context)."""
        s = self.settings
        try:
            renderer = CameraRenderer(self.world, s.camera_mode, s.image_width, s.image_height,
                                      s.pixel_noise_std, seed=s.seed)
        except Exception as e:  # no EGL/OpenGL: keep the rest of the simulator running
            self._camera_error = str(e)
            self.get_logger().error(f"camera disabled: cannot create an OpenGL context ({e}); "
                                    "check MUJOCO_GL (egl needs libEGL and Mesa)")
            return
        period = 1.0 / s.camera_rate
        next_t = time.monotonic()
        try:
            while not self._camera_stop.is_set():
                next_t += period
                wanted = (self._rgb_pub.get_subscription_count() + self._depth_pub.get_subscription_count()
                          + self._rgb_info_pub.get_subscription_count()
                          + self._depth_info_pub.get_subscription_count())
                want_seg = self._seg_pub.get_subscription_count() > 0
                if wanted or want_seg:
                    stamp = self.get_clock().now().to_msg()  # the state the frame shows is read just after
                    frame = renderer.render(segmentation=want_seg)
                    self._publish_frame(frame, stamp)
                delay = next_t - time.monotonic()
                if delay < 0:
                    next_t = time.monotonic()
                self._camera_stop.wait(max(0.0, delay))
        finally:
            renderer.close()

    def _publish_frame(self, frame: CameraFrame, stamp: Time) -> None:
        header = Header(stamp=stamp, frame_id=OPTICAL_FRAME)
        if self._optical_from_tool0 is not None:
            # base_link <- tool0 exactly as rendered, at the image's stamp: a TF lookup at that stamp
            # then gives the camera pose the image was taken from, even while the arm moves.
            tool0 = compose(frame.pose, self._optical_from_tool0)
            self._tf_pub.publish(TFMessage(transforms=[_transform(stamp, BASE_FRAME, "tool0", tool0)]))
        h, w = frame.rgb.shape[:2]
        info = _camera_info(header, frame)
        rgb = Image(header=header, height=h, width=w, encoding="rgb8", is_bigendian=0, step=w * 3)
        rgb.data = frame.rgb.tobytes()
        mm = np.nan_to_num(frame.depth * 1000.0, nan=0.0)
        depth = Image(header=header, height=h, width=w, encoding="16UC1", is_bigendian=0, step=w * 2)
        depth.data = np.clip(np.rint(mm), 0, 65535).astype("<u2").tobytes()
        self._rgb_pub.publish(rgb)
        self._rgb_info_pub.publish(info)
        self._depth_pub.publish(depth)
        self._depth_info_pub.publish(info)
        if frame.segmentation is not None:
            seg = Image(header=header, height=h, width=w, encoding="16UC1", is_bigendian=0, step=w * 2)
            seg.data = np.clip(frame.segmentation, 0, 65535).astype("<u2").tobytes()
            self._seg_pub.publish(seg)

    def destroy_node(self) -> None:
        self._stop_thread.close()
        self._camera_stop.set()
        self._camera_thread.join(timeout=2.0)
        self.world.stop("the simulator is shutting down")
        self.runner.close()
        super().destroy_node()  # type: ignore[no-untyped-call]  # unannotated in rclpy


def _pose_msg(p: Pose) -> PoseMsg:
    msg = PoseMsg()
    msg.position.x, msg.position.y, msg.position.z = p.position
    msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w = p.orientation
    return msg


def _transform(stamp: Time, parent: str, child: str, p: Pose) -> TransformStamped:
    t = TransformStamped()
    t.header.stamp, t.header.frame_id, t.child_frame_id = stamp, parent, child
    t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = p.position
    r = t.transform.rotation
    r.x, r.y, r.z, r.w = p.orientation
    return t


def _camera_info(header: Header, frame: CameraFrame) -> CameraInfo:
    k = frame.intrinsics
    info = CameraInfo(header=header, height=k.height, width=k.width, distortion_model="plumb_bob")
    info.d = [0.0] * 5
    info.k = [k.fx, 0.0, k.cx, 0.0, k.fy, k.cy, 0.0, 0.0, 1.0]
    info.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    info.p = [k.fx, 0.0, k.cx, 0.0, 0.0, k.fy, k.cy, 0.0, 0.0, 0.0, 1.0, 0.0]
    return info


# The node in an in-process graph (monologue-up container:=true), with the threads main() spins it on.
COMPONENT = Component(TabletopSimNode, threads=6)


def _own_process() -> TabletopSimNode:
    """The node in a process of its own: real-time scheduling when `realtime_priority` asks for it (never in a
    process shared with other nodes, container:=true)."""
    node = TabletopSimNode()
    apply_fifo(node.settings.realtime_priority, logging.getLogger("tabletop_sim.node"))
    return node


def main(args: list[str] | None = None) -> None:
    run_node(_own_process, threads=6, args=args)
