"""Robot `sim_household`: CAPE's household as a symbolic world inside the skills node (plugin.py reads the
settings and builds the backend, core.py is the backend on the symbolic worlds' base)."""
from .plugin import PLUGIN

__all__ = ["PLUGIN"]
