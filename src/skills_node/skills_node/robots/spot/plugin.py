"""Backend `spot`: builds SpotRobot (core/robot.py), SayCan's kitchen skills (core/skills.py) and the ROS bridge
(ros.py) from the settings (settings.py). Credentials come only from the environment (BOSDYN_CLIENT_USERNAME /
BOSDYN_CLIENT_PASSWORD). Bring-up: docs/spot.md."""
from __future__ import annotations

from skills_node.plugin import BackendHandle, BackendHost, BackendPlugin

from .core.skills import SceneBuffer, SpotKitchenSkills
from .settings import SpotBackendSettings, read


def create(host: BackendHost, s: SpotBackendSettings) -> BackendHandle:
    from .core.robot import SpotCredentials, SpotFault, SpotRobot, SpotSettings
    from .ros import SpotRosBridge

    log = host.logger("skills.spot")
    assert isinstance(s.robot, SpotSettings)
    bridges: list[SpotRosBridge] = []  # the fault callback may fire before the bridge exists

    def on_fault(_fault: SpotFault) -> None:
        if bridges:
            bridges[0].publish_status()

    robot = SpotRobot(s.robot, SpotCredentials.from_env(), log, on_fault=on_fault)
    robot.connect()  # raises SpotFault (nothing left held) when Spot cannot be reached: the node exits
    try:
        scene = SceneBuffer()
        bridge = SpotRosBridge(host.node, log, robot, scene, s, host.frame_id)
        bridges.append(bridge)
        backend = SpotKitchenSkills(robot, s.skills, scene, log, approval=bridge.approval,
                                    approval_timeout_s=s.approval_timeout, on_change=bridge.publish_status)
        bridge.attach(backend)
        try:
            backend.anchor()  # the kitchen frame: Spot stands at spot.start_location now
        except SpotFault as e:  # anchored at the first query that can read odometry
            log.error("Spot's odometry: %s", e)
        bridge.start_posture()
    except BaseException:
        robot.close()
        raise

    def close() -> None:
        try:
            bridge.close()
        finally:
            robot.close()

    return BackendHandle(backend, close)


PLUGIN = BackendPlugin("spot", read, create, "Boston Dynamics Spot through bosdyn-client (SayCan's kitchen skills)")
