"""Robot `spot` (and `spot_realsense`): Boston Dynamics Spot through bosdyn-client (settings.py: the
settings, ROS-free; plugin.py: the factory; ros.py: the ROS bridge; core/robot.py: SpotRobot; core/skills.py:
SayCan's kitchen skills; testing/: a fake Spot behind bosdyn-client's gRPC services)."""
from .plugin import PLUGIN

__all__ = ["PLUGIN"]
