"""The tabletop world of IM §4.1, defined once for every simulator, task and skill backend.

Frame: the robot's base (`base_link`), x forward (away from the robot, the "top" of the table), y to
the robot's left, z up; the table top is the plane z = 0. Every length is in metres. A block's
position is its centre, a bowl's the centre of its base.
"""
from __future__ import annotations

COLORS: tuple[str, ...] = (
    "blue", "red", "green", "orange", "yellow", "purple", "pink", "cyan", "brown", "gray",
)
# Linear RGB in [0, 1] (Ravens' utils.COLORS, the Tableau 10 palette; the IM sim was built on Ravens).
COLOR_RGB: dict[str, tuple[float, float, float]] = {
    "blue": (78 / 255, 121 / 255, 167 / 255),
    "red": (255 / 255, 87 / 255, 89 / 255),
    "green": (89 / 255, 169 / 255, 79 / 255),
    "orange": (242 / 255, 142 / 255, 43 / 255),
    "yellow": (237 / 255, 201 / 255, 72 / 255),
    "purple": (176 / 255, 122 / 255, 161 / 255),
    "pink": (255 / 255, 157 / 255, 167 / 255),
    "cyan": (118 / 255, 183 / 255, 178 / 255),
    "brown": (156 / 255, 117 / 255, 95 / 255),
    "gray": (186 / 255, 176 / 255, 172 / 255),
}
# Statler's disinfector (../shared/papers/statler.txt §IV-A): a bowl-shaped container named DISINFECTOR,
# drawn in DISINFECTOR_RGB (not one of the 10 object colours, so no block or bowl can share it).
DISINFECTOR = "disinfector"
DISINFECTOR_COLOR = "white"
DISINFECTOR_RGB = (0.93, 0.93, 0.93)

BLOCK_SIZE = 0.04  # m, cube edge
BOWL_DIAMETER = 0.12  # m, outer diameter at the rim
BOWL_HEIGHT = 0.05  # m
BOWL_FLOOR = 0.005  # m, height of the bowl's inner floor above the table
# Statler's covers (S §V, the real-robot domain and the cup game): an upside-down cup, a hollow cylinder
# closed at the top (where the suction cup grips it), that hides a block under it.
CUP_DIAMETER = 0.08  # m, outer diameter
CUP_HEIGHT = 0.07  # m, from its rim (on the table) to its closed top
CUP_WALL = 0.004  # m, wall and top thickness
MIN_SEPARATION = 0.15  # m, between any two object centres at scene creation (IM §4.1)
STACK_XY_TOLERANCE = 0.04  # m, x-y distance under which one object counts as on another
MAX_BLOCKS = 4  # IM §4.1: up to 4 blocks ...
MAX_BOWLS = 3  # ... and up to 3 bowls

# Workspace on the table (m): objects are sampled inside it; locations sit on its edges and centre.
WORKSPACE_X = (0.30, 0.70)
WORKSPACE_Y = (-0.30, 0.30)
LOCATIONS: dict[str, tuple[float, float]] = {
    "top left corner": (0.70, 0.30),
    "top side": (0.70, 0.0),
    "top right corner": (0.70, -0.30),
    "left side": (0.50, 0.30),
    "middle": (0.50, 0.0),
    "right side": (0.50, -0.30),
    "bottom left corner": (0.30, 0.30),
    "bottom side": (0.30, 0.0),
    "bottom right corner": (0.30, -0.30),
}
CORNERS: tuple[str, ...] = tuple(n for n in LOCATIONS if n.endswith("corner"))
SIDES: tuple[str, ...] = tuple(n for n in LOCATIONS if n.endswith("side"))
