"""Judge `clip`: a CLIP image-text score before and after the skill, on camera images."""
from __future__ import annotations

import math
from collections.abc import Mapping

from ..judging import (
    Context,
    ImageTextScorer,
    JudgePlugin,
    JudgeTools,
    PickPlaceJudge,
    SceneEntry,
    Verdict,
)


class ClipBeforeAfterDetector(PickPlaceJudge):
    """CLIP image-text score of "the <object> in/on the <target>" before and after the skill: the
    skill succeeded if the score rose by more than `threshold` (CLIP logit units). A zero-shot
    stand-in for IM's fine-tuned CLIP success classifier (IM:L826-858)."""

    name = "clip"
    CONTAINERS = ("bowl", "plate", "container", "box", "basket")

    def __init__(self, scorer: ImageTextScorer, threshold: float,
                 template: str = "a photo of the {obj} {rel} the {target}") -> None:
        self.scorer, self.threshold, self.template = scorer, threshold, template

    def text(self, obj: str, target: str, category: str) -> str:
        rel = "in" if category in self.CONTAINERS else "on"
        return self.template.format(obj=obj, rel=rel, target=target)

    def pick_place(self, obj_name: str, target_name: str, scene: Mapping[str, SceneEntry], ctx: Context) -> Verdict:
        if ctx.image_before is None or ctx.image_after is None:
            return Verdict(False, 0.0, "no camera images from before and after the skill", self.name)
        target = scene.get(target_name)
        text = self.text(obj_name, target_name, target.category if target is not None else "")
        try:
            before = self.scorer.score(ctx.image_before, [text])[0]
            after = self.scorer.score(ctx.image_after, [text])[0]
        except Exception as e:  # a model error must not crash the service: the verdict says why
            return Verdict(False, 0.0, f"CLIP scoring failed: {type(e).__name__}: {e}", self.name)
        delta = after - self.threshold - before
        confidence = 1.0 / (1.0 + math.exp(-abs(delta)))
        return Verdict(delta > 0, confidence,
                       f'CLIP score of "{text}" {before:.2f} -> {after:.2f} (needs a rise > {self.threshold:.2f})',
                       self.name)



def _create(tools: JudgeTools) -> ClipBeforeAfterDetector:
    assert tools.scorer is not None  # make_judge checks (needs_images)
    return ClipBeforeAfterDetector(tools.scorer, tools.param("clip_threshold"))


PLUGIN = JudgePlugin(_create, "CLIP score of \"the X in/on the Y\" rises from before to after the skill",
                     needs_images=True)
