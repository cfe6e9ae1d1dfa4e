"""The office kitchen's fixed layout: SayCan's objects, locations, drawers and their default placements (no rclpy).

Kept apart from the world model (kitchen.world) so the scene encoding (kitchen.scene) can read it without
importing the world back.
"""
from __future__ import annotations

import re

# The 15 objects of SayCan's chain-of-thought prompt (SC Listing 3) and their kinds.
OBJECTS: dict[str, str] = {
    "7up": "drink", "apple": "fruit", "tea": "drink", "multigrain chips": "snack",
    "kettle chips": "snack", "jalapeno chips": "snack", "rice chips": "snack", "coke": "drink",
    "grapefruit soda": "drink", "pepsi": "drink", "redbull": "drink", "energy bar": "snack",
    "lime soda": "drink", "sponge": "sponge", "water bottle": "drink",
}
USER = "user"  # "bring it to you" goes here
START = "initial position"
DRAWERS_LOCATION = "drawers"  # where the drawers are ("go to the drawers", SC Listing 2)
# SC §3.4's five locations plus the start and the drawers of the drawer case study (SC §4.2).
LOCATIONS = ("close counter", "far counter", "table", "trash", USER, START, DRAWERS_LOCATION)
NAV_TARGETS = ("close counter", "far counter", "table", "trash", DRAWERS_LOCATION)  # go_to arguments
DRAWERS = ("top drawer",)
SURFACES = ("close counter", "far counter", "table")  # where a person may move an object to

# A plausible mock-kitchen layout (SC Fig. 1 shows drinks and snacks on the counters and table).
DEFAULT_PLACEMENTS: dict[str, str] = {
    "coke": "far counter", "pepsi": "far counter", "7up": "far counter", "lime soda": "far counter",
    "grapefruit soda": "far counter", "tea": "far counter", "water bottle": "far counter",
    "redbull": "close counter", "apple": "close counter", "sponge": "close counter",
    "energy bar": "close counter", "multigrain chips": "table", "kettle chips": "table",
    "jalapeno chips": "table", "rice chips": "table",
}


_INSTANCE = re.compile(r"^(?P<type>.+?)#[1-9][0-9]*$")


def object_type(name: str) -> str:
    """'coke#2' -> 'coke': several copies of one object are instances `<object>#<n>`; skills name the
    object type ("pick up the coke") and act on an instance (as kitchen.vocabulary)."""
    m = _INSTANCE.match(name)
    return m.group("type") if m else name
