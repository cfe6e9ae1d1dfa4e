"""Backend `ur5e`: the real UR5e through ur_rtde (RtdeArm), behind the safety layer.

Parameters (config/robots/ur5e.yaml): `ur5e.*` (connection, tool, end effector, contact, the
primitive), `safety.*`, `approval.*`, `scene_topic`, `place_categories`, `use_place_points`,
`status_rate`. `ur5e.rtde_factory` "" = ur_rtde; "module:function" returning RtdeFactories is for
tests only (skills_node.robots.ur5e.testing.fake_rtde). Bring-up: docs/ur5e.md.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from monologue_common.core.settings import ParamReader
from skills_node.core.arm_settings import ArmSettings, ArmTf, read_arm, read_tf
from skills_node.core.frames import UR_BASE
from skills_node.core.safety import SafetyLimits
from skills_node.plugin import BackendHandle, BackendHost, BackendPlugin

from .core.rtde import EndEffectorIO, RtdeArmConfig, RtdeFactories, UrPorts, library_factories


@dataclass(frozen=True)
class Ur5eSettings:
    arm: ArmSettings
    rtde: RtdeArmConfig
    rtde_factory: str  # "" = ur_rtde; "module:function" (tests only)
    tf: ArmTf  # base -> tool0, the fixed UR frames and the wrist camera's hand-eye calibration on /tf
    camera_info_topics: tuple[str, ...]  # robot/status says "no camera" without camera_info on any; () = no check
    camera_timeout: float  # s
    calibration_file: str = ""  # monologue-calibrate's file; "" = ~/.ros/monologue/calibration/ur5e.yaml


def load_hand_eye(tf: ArmTf, calibration_file: str, robot: str = "ur5e") -> tuple[ArmTf, bool, str]:
    """(tf with the calibrated hand-eye, True, message) from monologue-calibrate's file, or (tf with the
    nominal ur5e.hand_eye, False, why) when the file is missing, malformed or for other frames."""
    from dataclasses import replace

    from monologue_vision.calibration.store import PARENT_FRAME, default_calibration_path, read_calibration

    path = Path(calibration_file).expanduser() if calibration_file else default_calibration_path(robot)
    if not path.is_file():
        return tf, False, (f"no hand-eye calibration at {path}: using the nominal ur5e.hand_eye (good to a few "
                           "cm); run monologue-calibrate robot:=ur5e")
    try:
        cal = read_calibration(path)
    except ValueError as e:
        return tf, False, f"{e}: using the nominal ur5e.hand_eye"
    if cal.parent_frame != PARENT_FRAME or cal.child_frame != tf.camera_frame:
        return tf, False, (f"{path} calibrates {cal.parent_frame} -> {cal.child_frame}, not {PARENT_FRAME} -> "
                           f"{tf.camera_frame}: using the nominal ur5e.hand_eye")
    message = (f"hand-eye calibration {path} ({cal.date.date()}, {cal.method}, {cal.samples} samples, residual "
               f"{cal.residuals.get('translation_rms_mm', float('nan')):.1f} mm)")
    return replace(tf, camera_in_tool0=(cal.translation, cal.rotation)), True, message


def read(r: ParamReader) -> Ur5eSettings | None:
    arm = read_arm(r, "ur5e")
    tf = read_tf(r, "ur5e")
    output = r.string("ur5e.end_effector.output", ("tool", "standard"))
    factory = r.string("ur5e.rtde_factory")
    camera_topics = tuple(t for t in r.strings("ur5e.camera.info_topics") if t.strip())
    camera_timeout = r.number("ur5e.camera.timeout", low=0.0, low_open=True)  # s
    r.check(not factory or (":" in factory and all(factory.partition(":")[::2])),
            f"ur5e.rtde_factory: must be '' or 'module:function', got {factory!r}")

    def port(name: str) -> int:
        return r.integer(f"ur5e.{name}", low=1, high=65535)

    make = partial(RtdeArmConfig,  # built after the error check below
        host=r.string("ur5e.host", nonempty=True),
        tcp_offset=r.numbers("ur5e.tcp_offset", 6),  # m, rad
        payload_mass=r.number("ur5e.payload_mass", low=0.0),  # kg
        payload_cog=r.numbers("ur5e.payload_cog", 3),  # m
        end_effector=EndEffectorIO(
            output="tool" if output == "tool" else "standard",
            pin=r.integer("ur5e.end_effector.pin", low=0, high=7),
            active_high=r.boolean("ur5e.end_effector.active_high"),
            sense_input=r.integer("ur5e.end_effector.sense_input", low=-1, high=17),
            sense_active_high=r.boolean("ur5e.end_effector.sense_active_high")),
        contact_force=r.number("ur5e.contact.force", low=0.0, low_open=True),  # N
        contact_acceleration=r.number("ur5e.contact.acceleration", low=0.0, low_open=True),  # m/s^2
        stop_deceleration=r.number("ur5e.stop_deceleration", low=0.0, low_open=True),  # m/s^2
        monitor_period_s=r.number("ur5e.monitor_period", low=0.0, low_open=True),
        command_timeout_s=r.number("ur5e.command_timeout", low=0.0, low_open=True),
        connect_timeout_s=r.number("ur5e.connect_timeout", low=0.0, low_open=True),
        stale_timeout_s=r.number("ur5e.stale_timeout", low=0.0, low_open=True),
        reconnect_period_s=r.number("ur5e.reconnect_period", low=0.0),  # s, 0 = never
        probe=r.boolean("ur5e.probe"),
        ports=UrPorts(dashboard=port("dashboard_port"), rtde=port("rtde_port"), script=port("script_port")),
    )
    if arm is None or r.errors:
        return None
    try:
        rtde = make()
    except ValueError as e:
        r.check(False, f"ur5e: {e}")
        return None
    for problem in limit_problems(rtde, arm.limits):
        r.check(False, problem)
    if r.errors:
        return None
    calibration = r.string("ur5e.hand_eye.calibration_file") if r.has("ur5e.hand_eye.calibration_file") else ""
    return Ur5eSettings(arm, rtde, factory, tf, camera_topics, camera_timeout, calibration)


def limit_problems(rtde: RtdeArmConfig, limits: SafetyLimits) -> list[str]:
    """What RtdeArm sends on its own (not through SafeArm) against the safety limits.

    The contact move's acceleration is a motion like any other: at most `safety.max_acceleration`.
    Stops are exempt from the acceleration limits but must decelerate at least as hard: a stop (cancel,
    e-stop, fault) must end the motion as fast as the controller allows, never slower than a commanded
    motion's own ramp down (UR's External Control script, which the ROS 2 driver runs, stops with
    stopj(4.0 rad/s^2) whatever the trajectory's limits; ur_rtde's stopL defaults to 10 m/s^2).
    docs/reliability.md, "Safety findings", says why.
    """
    out = []
    if rtde.contact_acceleration > limits.max_acceleration:
        out.append(f"ur5e.contact.acceleration: {rtde.contact_acceleration:g} m/s^2 exceeds "
                   f"safety.max_acceleration {limits.max_acceleration:g} m/s^2")
    for name, value, floor, limit in (
            ("ur5e.stop_deceleration", rtde.stop_deceleration, limits.max_acceleration, "safety.max_acceleration"),
            ("the contact stop deceleration", rtde.contact_stop_deceleration, limits.max_acceleration,
             "safety.max_acceleration"),
            ("the stopJ deceleration", rtde.stop_joint_deceleration, limits.max_joint_acceleration,
             "safety.max_joint_acceleration")):
        if value < floor:
            out.append(f"{name}: {value:g} must be at least {limit} ({floor:g}): a stop must not take longer "
                       "than a commanded motion's own ramp down")
    return out


def load_factories(spec: str) -> RtdeFactories:
    """ur_rtde, or a "module:function" returning RtdeFactories (the test fake)."""
    if not spec:
        return library_factories()
    module, _, func = spec.partition(":")
    factories = getattr(importlib.import_module(module), func)()
    if not isinstance(factories, RtdeFactories):
        raise ValueError(f"{spec} returned {type(factories).__name__}, not RtdeFactories")
    return factories


def create(host: BackendHost, s: Ur5eSettings) -> BackendHandle:
    from skills_node.arm_ros import ArmRosBridge, ArmTfPublisher, CameraWatch

    from .core.rtde import RtdeArm

    log = host.logger("skills.ur5e")
    bridges: list[ArmRosBridge] = []  # the status callback may fire before the bridge exists

    def on_status(_status: object) -> None:
        if bridges:
            bridges[0].publish_status()

    arm = RtdeArm(s.rtde, load_factories(s.rtde_factory), log, on_status=on_status)
    camera = CameraWatch(s.camera_info_topics, s.camera_timeout) if s.camera_info_topics else None
    bridge = ArmRosBridge(host.node, log, "ur5e", arm, s.rtde.tcp_offset, s.arm, UR_BASE, camera)  # ur_rtde's frame
    bridges.append(bridge)
    try:
        arm.connect()
    except Exception as e:  # keep serving: robot/status says why, the monitor keeps retrying
        log.error("UR5e not connected at startup: %s", e)
    arm.start_monitor()
    bridge.publish_status()
    arm_tf, calibrated, message = load_hand_eye(s.tf, s.calibration_file)
    (log.info if calibrated else log.warning)(message)
    try:
        tf: ArmTfPublisher | None = ArmTfPublisher(host.node, arm, s.rtde.tcp_offset, arm_tf, log)
    except ImportError as e:  # tf2_msgs is not on PyPI: a pip-only install without the workspace's copy
        tf = None
        log.error("no /tf for the wrist camera (%s): perception needs its static_camera_pose", e)

    def close() -> None:
        if tf is not None:
            tf.close()
        bridge.close()
        arm.close()

    return BackendHandle(bridge.backend, close)


PLUGIN = BackendPlugin("ur5e", read, create, "the real UR5e through ur_rtde")
