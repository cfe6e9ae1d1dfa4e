"""The observable state of a symbolic kitchen / household world: what goal predicates and success
checks read (the world model itself lives next to this module)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

HELD = "robot"  # object_locations value of an object the robot holds


@dataclass(frozen=True)
class KitchenState:
    """A snapshot of the world. Names are the natural-language names used in prompts ("coke",
    "far counter", "top drawer")."""

    robot_location: str  # a location name, e.g. "initial position", "table", "user"
    holding: str | None  # the object the robot holds, None when its hand is empty
    object_locations: Mapping[str, str] = field(default_factory=dict)  # object -> location, container or HELD
    open_containers: frozenset[str] = frozenset()  # openable things that are open, e.g. {"top drawer"}
    states: Mapping[str, frozenset[str]] = field(default_factory=dict)  # object -> extra states ("on", "dirty")
    # Places the robot has been at during the episode, in any order: empty until it first moves, then its
    # start and every place since (where it is now included). Recorded by the worlds and goals.apply and
    # carried in the ground truth, so `visited(L)` goals can be checked on the final state alone.
    visited: frozenset[str] = frozenset()

    @property
    def places_visited(self) -> frozenset[str]:
        """`visited` with the robot's current place."""
        return self.visited | {self.robot_location}

    def location_of(self, obj: str) -> str:
        """Where `obj` is (HELD when the robot holds it); KeyError naming the known objects if unknown."""
        try:
            return self.object_locations[obj]
        except KeyError:
            raise KeyError(f"unknown object {obj!r}; known: {sorted(self.object_locations)}") from None
