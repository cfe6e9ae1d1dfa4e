"""Judge `tabletop`: Inner Monologue's real-tabletop place rule (IM:L757-766: 3 cm stacking, 10 cm sorting)."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ..judging import Context, JudgePlugin, PickPlaceJudge, SceneEntry, Verdict


class TabletopPlaceDetector(PickPlaceJudge):
    """IM real tabletop rule (IM:L757-766): the x-y distance in the base frame between the object's
    centre after the action and the intended place point is under `stack_tolerance_m` (3 cm) when
    stacking onto a block and under `sort_tolerance_m` (10 cm) when sorting into a plate, bowl or
    location ("objects may roll around until contact with the plate boundary").

    The intended place point is the target's place point (or centre) in the scene at the skill's
    start (`context.before`), else in the current scene (the memory keeps a covered target).
    """

    name = "tabletop"

    def __init__(self, stack_tolerance_m: float, sort_tolerance_m: float,
                 stack_categories: Sequence[str] = ("block",)) -> None:
        if stack_tolerance_m <= 0 or sort_tolerance_m <= 0:
            raise ValueError("stack_tolerance_m and sort_tolerance_m must be > 0")
        self.stack_tolerance_m, self.sort_tolerance_m = stack_tolerance_m, sort_tolerance_m
        self.stack_categories = tuple(stack_categories)

    def pick_place(self, obj_name: str, target_name: str, scene: Mapping[str, SceneEntry], ctx: Context) -> Verdict:
        if obj_name in ctx.held:
            return Verdict(False, 1.0, f"the {obj_name} is still in the gripper", self.name)
        obj = scene.get(obj_name)
        if obj is None or not obj.visible:
            why = "not in the scene description" if obj is None else "not detected after the action"
            return Verdict(False, 0.6, f"the {obj_name} is {why}", self.name)
        target = (ctx.before or {}).get(target_name) or scene.get(target_name)
        if target is None:
            return Verdict(False, 0.5, f"the {target_name} is not in the scene description", self.name)
        place = target.place_point or target.position
        stacking = target.category in self.stack_categories
        tol = self.stack_tolerance_m if stacking else self.sort_tolerance_m
        d = math.hypot(obj.position[0] - place[0], obj.position[1] - place[1])
        ok = d < tol
        confidence = 0.5 + 0.5 * min(1.0, abs(d - tol) / tol)
        kind = "stacking" if stacking else "sorting"
        return Verdict(ok, confidence,
                       f"the {obj_name} is {d * 100:.1f} cm (x-y) from the place point on the {target_name}; "
                       f"{kind} needs < {tol * 100:.0f} cm", self.name)


PLUGIN = JudgePlugin(lambda tools: TabletopPlaceDetector(tools.param("stack_tolerance_m"),
                                                         tools.param("sort_tolerance_m")),
                     "IM real tabletop: the object near the place point (3 cm stacking, 10 cm sorting)")
