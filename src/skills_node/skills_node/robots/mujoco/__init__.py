"""Robot `sim`: the MuJoCo tabletop (tabletop_sim) driven like the real UR5e (plugin.py: settings and
factory; sim_arm.py: the arm over tabletop_sim's `arm/command` action, rclpy)."""
from .plugin import PLUGIN

__all__ = ["PLUGIN"]
