"""Judge `hand_camera`: a kitchen skill judged on what a camera on the gripper saw (Spot's hand camera, or a
RealSense on its arm), through perception's scene (no rclpy).

Perception runs on the hand camera (robot table `perception: camera`, `camera: skills`) and publishes the
scene in Spot's odometry frame; its object memory marks an object that is in view but no longer detected as
not visible. The rules are the UR5e's (judge `tabletop`): the held object seen in the gripper, the object at
the target location, here for SayCan's kitchen skills:

- pick_up(o): held by perception's account (`held_objects`) -> success; o seen after the skill where it lay
  before it (within `tolerance_m`, x-y and z) -> FAILURE, the grasp left it there; o seen away from where it
  lay (in the gripper) -> success; o lay in view before and is no longer detected -> success (taken);
- put_down(o), put_in_drawer(o, d): o still held -> failure; o seen out of the gripper -> success;
- find(o): o seen -> success.

Where perception has no view (the object was never seen, or a skill with no visual effect: go_to, stand,
sit, the drawers, bring_to_user), the verdict is the skill's own report (the detector asks only after the
skill finished without error), labelled as such: explanation "skill report (no camera check): ...",
detector `hand_camera/skill_report`, confidence 0.5 (as judge `skill_result`).

The camera moves with the skill, so the plug-in asks for a scene captured after the skill ended
(`JudgePlugin.fresh_scene`): a refresh may otherwise answer with a frame taken during the last arm motion,
when the object's place was out of view and perception's memory still held it as seen.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from monologue_domain.kitchen.vocabulary import object_type

from ..judging import Context, JudgePlugin, SceneEntry, Verdict

FALLBACK = "skill_report"  # suffix of the detector name of a verdict that is the skill's own report


def _instances(name: str, scene: Mapping[str, SceneEntry] | None) -> list[SceneEntry]:
    """The non-location entries that are `name` or an instance of it ("coke" matches "coke 2")."""
    return [e for n, e in (scene or {}).items()
            if not e.is_location and (n == name or object_type(n) == name)]


class HandCameraDetector:
    name = "hand_camera"
    CONFIDENCE_FALLBACK = 0.5  # no independent evidence (as skill_result)

    def __init__(self, tolerance_m: float) -> None:
        if not (math.isfinite(tolerance_m) and tolerance_m > 0.0):
            raise ValueError("tolerance_m must be > 0")
        self.tolerance_m = tolerance_m  # m: an object seen within this of where it lay has not moved

    def detect(self, skill: str, args: Sequence[str], scene: Mapping[str, SceneEntry],
               context: Context | None = None) -> Verdict:
        ctx = context or Context()
        call = f"{skill}({', '.join(args)})"
        if skill == "pick_up" and len(args) == 1:
            return self._pick(call, args[0], scene, ctx)
        if skill in ("put_down", "put_in_drawer") and args:
            return self._release(call, args[0], scene, ctx)
        if skill == "find" and len(args) == 1:
            seen = [e for e in _instances(args[0], scene) if e.visible]
            if seen:
                return Verdict(True, 0.9, f"{call}: the {args[0]} is seen at {_at(seen[0])}", self.name)
            return self._fallback(call, f"the {args[0]} is not in view")
        return self._fallback(call, "no visual rule for this skill")

    def _pick(self, call: str, obj: str, scene: Mapping[str, SceneEntry], ctx: Context) -> Verdict:
        if any(obj == h or object_type(h) == obj for h in ctx.held):
            return Verdict(True, 1.0, f"{call}: perception sees the {obj} held in the gripper", self.name)
        before = [e for e in _instances(obj, ctx.before) if e.visible]
        after = _instances(obj, scene)
        seen = [e for e in after if e.visible]
        for b in before:
            for a in seen:
                d = math.dist(a.position[:2], b.position[:2])
                if d < self.tolerance_m and abs(a.position[2] - b.position[2]) < self.tolerance_m:
                    return Verdict(False, 0.9, f"{call}: the {obj} is still where it lay before the pick "
                                   f"({d * 100:.1f} cm away, seen after the skill): the grasp left it there",
                                   self.name)
        if seen and before:
            return Verdict(True, 0.8, f"{call}: the {obj} is seen away from where it lay, at {_at(seen[0])} "
                           "(in the gripper)", self.name)
        if before and after and not any(a.visible for a in after):
            return Verdict(True, 0.7, f"{call}: the {obj} is no longer seen where it lay (taken)", self.name)
        why = "it was not seen before the pick" if not before else f"no sight of the {obj} after the pick"
        return self._fallback(call, why)

    def _release(self, call: str, obj: str, scene: Mapping[str, SceneEntry], ctx: Context) -> Verdict:
        if any(obj == h or object_type(h) == obj for h in ctx.held):
            return Verdict(False, 1.0, f"{call}: perception sees the {obj} still in the gripper", self.name)
        seen = [e for e in _instances(obj, scene) if e.visible]
        if seen:
            return Verdict(True, 0.7, f"{call}: the {obj} is seen out of the gripper at {_at(seen[0])}", self.name)
        return self._fallback(call, f"the {obj} is not in view after the skill")

    def _fallback(self, call: str, why: str) -> Verdict:
        return Verdict(True, self.CONFIDENCE_FALLBACK,
                       f"skill report (no camera check): {call} finished without error; {why}",
                       f"{self.name}/{FALLBACK}")


def _at(e: SceneEntry) -> str:
    x, y, z = e.position
    return f"({x:.2f}, {y:.2f}, {z:.2f}) m"


PLUGIN = JudgePlugin(lambda tools: HandCameraDetector(tools.param("sort_tolerance_m")),
                     "a camera on the gripper (Spot): held object seen, object left behind, else the skill's "
                     "own report, labelled", fresh_scene=True)

__all__ = ["FALLBACK", "HandCameraDetector", "PLUGIN"]
