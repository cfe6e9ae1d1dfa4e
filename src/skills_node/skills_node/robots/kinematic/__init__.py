"""Robot `sim_kinematic`: the in-process kinematic tabletop (plugin.py: settings and factory; core/: the
backend, ROS-free)."""
from .plugin import PLUGIN

__all__ = ["PLUGIN"]
