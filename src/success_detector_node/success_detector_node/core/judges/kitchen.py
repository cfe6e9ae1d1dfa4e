"""Judge `kitchen`: a symbolic kitchen skill judged on the scene description after it
(no rclpy). The kitchen's ground truth (and an oracle's copy of it) encodes who holds what, where
each object is and which drawers are open (monologue_domain.kitchen.scene); the rule per skill is
monologue_domain.kitchen.judge ("engineered success detectors can operate on ground-truth state in
simulation", IM §3.3).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from monologue_domain.kitchen.judge import judge
from monologue_domain.kitchen.scene import state_from_scene

from ..judging import Context, JudgePlugin, SceneEntry, Verdict


class KitchenDetector:
    name = "kitchen"

    def detect(self, skill: str, args: Sequence[str], scene: Mapping[str, SceneEntry],
               context: Context | None = None) -> Verdict:
        try:
            state = state_from_scene(scene.values())
        except ValueError as e:
            return Verdict(False, 0.0, str(e), self.name)
        ok, why = judge(skill, args, state)
        return Verdict(ok, 1.0, why, self.name)


PLUGIN = JudgePlugin(lambda tools: KitchenDetector(),
                     "the symbolic kitchen's rule per skill (monologue_domain.kitchen.judge)")

__all__ = ["KitchenDetector", "PLUGIN"]
