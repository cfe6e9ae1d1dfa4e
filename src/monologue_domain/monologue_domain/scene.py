"""The scene as plain data: one `SceneObject` per object or named location, and a `Scene` of them.

These mirror monologue_interfaces/msg/SceneObject and SceneDescription (converted by
`monologue_domain.msgs`, the only place that knows the message layout), plus ground-truth extras a
simulator knows and no message carries (colour, heavy). Positions and sizes in metres, in the
scene's frame (normally the robot base, `base_link`); the table top is z = 0.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

Vec3 = tuple[float, float, float]  # x, y, z; metres unless said otherwise
Quaternion = tuple[float, float, float, float]  # x, y, z, w (ROS order), unit
IDENTITY: Quaternion = (0.0, 0.0, 0.0, 1.0)
LOCATION = "location"  # the category of a named table location ("top left corner")


@dataclass(frozen=True)
class SceneObject:
    """One object or named location of a scene.

    `position` is the object's centre (a bowl's: the centre of its base; a location's: its point on
    the table), m; `size` its axis-aligned extent, m (zero for locations); `place_point` where things
    are put onto it (IM-R plate/bowl place point, m), None = `position`.
    """

    name: str  # natural-language name used in prompts: "red block", "top left corner"
    category: str  # "block", "bowl", "location", or a detector label
    position: Vec3
    size: Vec3 = (0.0, 0.0, 0.0)
    visible: bool = True  # detected now; False: remembered but occluded or out of view
    confidence: float = 1.0  # detection confidence in [0, 1]; 1.0 for ground truth and locations
    segmentation_id: int = -1  # simulator segmentation id, -1 when not applicable
    place_point: Vec3 | None = None
    color: str = ""  # colour name (ground truth only; "" when unknown)
    orientation: Quaternion = IDENTITY
    heavy: bool = False  # ground truth only: too heavy for the suction cup

    @property
    def is_location(self) -> bool:
        return self.category == LOCATION

    @property
    def target_point(self) -> Vec3:
        """Where to put things onto this object: its place point if it has one, else its position (m)."""
        return self.place_point if self.place_point is not None else self.position


@dataclass(frozen=True)
class Scene:
    """What the robot knows about the scene at one time (a SceneDescription)."""

    frame: str  # frame of every position, normally "base_link"
    stamp_s: float  # time of the observation, seconds since the epoch
    source: str  # producer: "ground_truth", "oracle", "owlvit", ...
    objects: tuple[SceneObject, ...] = field(default_factory=tuple)
    held_objects: tuple[str, ...] = ()  # names of objects the end effector holds

    def visible_names(self, include_locations: bool = False) -> list[str]:
        return [o.name for o in self.objects if o.visible and (include_locations or not o.is_location)]

    def occluded_names(self) -> list[str]:
        """Objects seen before but not visible now (IM Listing 2 "Occluded objects are [...]")."""
        return [o.name for o in self.objects if not o.visible and not o.is_location]

    def by_name(self) -> dict[str, SceneObject]:
        return {o.name: o for o in self.objects}


def color_of(name: str) -> str:
    """The colour word(s) of an object name: "red block" -> "red" ("" for a one-word name)."""
    return name.rsplit(" ", 1)[0] if " " in name else ""


def without_locations(objects: Iterable[SceneObject]) -> list[SceneObject]:
    return [o for o in objects if not o.is_location]


__all__ = ["IDENTITY", "LOCATION", "Quaternion", "Scene", "SceneObject", "Vec3", "color_of", "without_locations"]
