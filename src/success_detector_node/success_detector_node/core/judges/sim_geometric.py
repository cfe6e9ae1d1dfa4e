"""Judge `sim_geometric`: Inner Monologue's simulated tabletop rule (IM:L698-702)."""
from __future__ import annotations

import math
from collections.abc import Mapping

from ..judging import Context, JudgePlugin, PickPlaceJudge, SceneEntry, Verdict


class SimGeometricDetector(PickPlaceJudge):
    """IM sim rule (IM:L698-702): the picked object is within `xy_tolerance_m` (x-y) of the place
    target and higher than it; the height test is skipped when the target is a location."""

    name = "sim_geometric"

    def __init__(self, xy_tolerance_m: float) -> None:
        if xy_tolerance_m <= 0:
            raise ValueError("xy_tolerance_m must be > 0")
        self.xy_tolerance_m = xy_tolerance_m

    def pick_place(self, obj_name: str, target_name: str, scene: Mapping[str, SceneEntry], ctx: Context) -> Verdict:
        obj, target = scene.get(obj_name), scene.get(target_name)
        if obj is None or target is None:
            missing = obj_name if obj is None else target_name
            return Verdict(False, 0.5, f"the {missing} is not in the scene description", self.name)
        d = math.hypot(obj.position[0] - target.position[0], obj.position[1] - target.position[1])
        if d >= self.xy_tolerance_m:
            return Verdict(
                False, 1.0,
                f"the {obj_name} is {d * 100:.1f} cm (x-y) from the {target_name}; "
                f"needs < {self.xy_tolerance_m * 100:.1f} cm",
                self.name,
            )
        if target.category != "location" and obj.position[2] <= target.position[2]:
            return Verdict(False, 1.0, f"the {obj_name} is not higher than the {target_name}", self.name)
        return Verdict(True, 1.0, f"the {obj_name} is {d * 100:.1f} cm (x-y) from the {target_name}", self.name)


PLUGIN = JudgePlugin(lambda tools: SimGeometricDetector(tools.param("xy_tolerance_m")),
                     "IM sim: the object within xy_tolerance (x-y) of the target and above it")
