"""Judge `llm_judge`: a language model answers yes or no from the scene before and after, as text."""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import cast

from monologue_llm.base import ScoringUnsupportedError, normalize_scores

from ..judging import (
    CandidateScorer,
    Context,
    JudgePlugin,
    JudgeTools,
    SceneEntry,
    TextGenerator,
    Verdict,
    pick_place_args,
)


def _describe(scene: Mapping[str, SceneEntry]) -> str:
    rows = []
    for e in scene.values():
        x, y, z = e.position
        state = "" if e.visible else " (not visible)"
        rows.append(f"- {e.name} ({e.category}) at x={x:.2f} m, y={y:.2f} m, z={z:.2f} m{state}")
    return "\n".join(rows) or "- nothing"


class LlmJudgeDetector:
    """Asks a language model whether the action worked, from the scene before and after as text
    (or, with a VLM backend, whatever its prompt carries).

    With a backend that scores (`score(prompt, candidates)`), the answer is the better of " yes" and
    " no" after the prompt and the confidence its probability normalised over the two: a small model
    ranks fixed strings sensibly where its free text wanders. A backend without scoring (no `score`,
    or it raises ScoringUnsupportedError) generates instead; the answer must then start with yes or
    no, and the confidence is the fixed `confidence`. Any other backend error gives a failed verdict
    that says why.
    """

    name = "llm_judge"
    PROMPT = (
        "A robot arm tried to {action}.\n"
        "Objects before the action:\n{before}\n"
        "Objects after the action:\n{after}\n"
        "Did the robot succeed? Answer yes or no.\nAnswer:"
    )
    ANSWERS = (" yes", " no")

    def __init__(self, llm: TextGenerator | CandidateScorer, max_tokens: int = 4, confidence: float = 0.7) -> None:
        self.llm, self.max_tokens, self.confidence = llm, max_tokens, confidence
        self.scoring = callable(getattr(llm, "score", None))  # cleared when the backend says it cannot

    def prompt(self, skill: str, args: Sequence[str], scene: Mapping[str, SceneEntry],
               context: Context | None = None) -> str:
        ctx = context or Context()
        action = (f"pick up the {args[0]} and place it on the {args[1]}"
                  if pick_place_args(skill, args) else f"{skill}({', '.join(args)})")
        return self.PROMPT.format(action=action, before=_describe(ctx.before or {}), after=_describe(scene))

    def detect(self, skill: str, args: Sequence[str], scene: Mapping[str, SceneEntry],
               context: Context | None = None) -> Verdict:
        prompt = self.prompt(skill, args, scene, context)
        try:
            if self.scoring:
                try:
                    return self._by_score(prompt)
                except ScoringUnsupportedError:
                    self.scoring = False
            return self._by_generation(prompt)
        except Exception as e:  # a backend error must not crash the service: the verdict says why
            return Verdict(False, 0.0, f"LLM judge failed: {type(e).__name__}: {e}", self.name)

    def _by_score(self, prompt: str) -> Verdict:
        result = cast(CandidateScorer, self.llm).score(prompt, self.ANSWERS)
        if len(result.scores) != len(self.ANSWERS):
            raise ValueError(f"the backend scored {len(result.scores)} candidates, expected {len(self.ANSWERS)}")
        p_yes, p_no = normalize_scores(result.scores, "sum")
        yes = p_yes > p_no
        return Verdict(yes, max(p_yes, p_no),
                       f"LLM judge answered {'yes' if yes else 'no'} (scored: p(yes)={p_yes:.2f}, p(no)={p_no:.2f})",
                       self.name)

    def _by_generation(self, prompt: str) -> Verdict:
        answer = self.llm.generate(prompt, stop=["\n"], max_tokens=self.max_tokens).text
        m = re.match(r"\s*(yes|no)\b", answer, re.IGNORECASE)
        if m is None:
            return Verdict(False, 0.0, f"LLM judge gave no yes/no answer: {answer.strip()[:40]!r}", self.name)
        word = m.group(1).lower()
        return Verdict(word == "yes", self.confidence, f"LLM judge answered {word} (generated)", self.name)



def _create(tools: JudgeTools) -> LlmJudgeDetector:
    assert tools.llm is not None  # make_judge checks (needs_llm)
    return LlmJudgeDetector(tools.llm)


PLUGIN = JudgePlugin(_create, "an LLM answers yes/no from the scene before and after (the llm.* block)",
                     needs_llm=True)
