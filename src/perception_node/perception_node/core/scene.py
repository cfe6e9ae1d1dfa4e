"""Scene descriptions as plain data, and the oracle source that builds them from ground truth."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from monologue_domain.scene import Scene, SceneObject


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


__all__ = ["OracleSceneSource", "Scene", "SceneObject"]
