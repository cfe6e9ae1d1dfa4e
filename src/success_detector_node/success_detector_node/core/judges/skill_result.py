"""Judge `skill_result`: the skill's own report, for robots with no sensor path to check it."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..judging import Context, JudgePlugin, SceneEntry, Verdict


class SkillResultDetector:
    """For robots with no sensor path to check a skill yet (e.g. Spot's navigation before its cameras are
    wired): success is only asked after the skill itself finished without error, so the verdict is that
    report, said plainly and with low confidence; nothing is inferred from the (empty) scene."""

    name = "skill_result"
    CONFIDENCE = 0.5  # no independent evidence

    def detect(self, skill: str, args: Sequence[str], scene: Mapping[str, SceneEntry],
               context: Context | None = None) -> Verdict:
        call = f"{skill}({', '.join(args)})"
        return Verdict(True, self.CONFIDENCE, f"{call}: the skill reported success; nothing checked it", self.name)


PLUGIN = JudgePlugin(lambda tools: SkillResultDetector(), "the skill's own report (no sensor check)")
