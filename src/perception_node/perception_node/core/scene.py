"""Scene descriptions as plain data, and the oracle source that builds them from ground truth."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class SceneObject:
    """One object or named location; position in metres, size in metres, in `frame`."""

    name: str
    category: str
    position: tuple[float, float, float]
    size: tuple[float, float, float] = (0.0, 0.0, 0.0)
    visible: bool = True
    confidence: float = 1.0
    segmentation_id: int = -1
    # Where to put things onto this object (m, `frame`): the IM-R plate/bowl place point; None = position.
    place_point: tuple[float, float, float] | None = None


@dataclass(frozen=True)
class Scene:
    frame: str
    stamp_s: float  # time of the observation, seconds since the epoch
    source: str
    objects: tuple[SceneObject, ...] = field(default_factory=tuple)
    held_objects: tuple[str, ...] = ()

    def visible_names(self, include_locations: bool = False) -> list[str]:
        return [
            o.name for o in self.objects
            if o.visible and (include_locations or o.category != "location")
        ]

    def occluded_names(self) -> list[str]:
        """Objects seen before but not visible now (IM Listing 2 "Occluded objects are [...]")."""
        return [o.name for o in self.objects if not o.visible and o.category != "location"]


class OracleSceneSource:
    """IM sim's Object feedback "from simulator state for simplicity" (IM:L692-696).

    Ground truth passes through unchanged except for the source label; every object is visible.
    """

    source = "oracle"

    def __init__(self, include_locations: bool = True) -> None:
        self.include_locations = include_locations

    def describe(self, ground_truth: Scene) -> Scene:
        objects: Iterable[SceneObject] = ground_truth.objects
        if not self.include_locations:
            objects = [o for o in objects if o.category != "location"]
        return replace(
            ground_truth,
            source=self.source,
            objects=tuple(replace(o, visible=True, confidence=1.0) for o in objects),
        )


def names(objects: Sequence[SceneObject]) -> list[str]:
    return [o.name for o in objects]
