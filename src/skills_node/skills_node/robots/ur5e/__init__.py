"""Robot `ur5e`: the real UR5e through ur_rtde (plugin.py: settings and factory; core/rtde.py: the arm,
ROS-free; testing/fake_rtde.py: a fake controller behind ur_rtde's API)."""
from .plugin import PLUGIN

__all__ = ["PLUGIN"]
