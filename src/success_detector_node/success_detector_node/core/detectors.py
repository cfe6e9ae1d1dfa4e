"""Success detectors over a scene description (plain data; no rclpy).

Strategies: the IM sim geometric rule, the IM real-tabletop place rule, a CLIP image-text
before/after score, and an LLM/VLM judge. Every one returns success, confidence and explanation.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, cast

import numpy as np
from numpy.typing import NDArray

from monologue_domain.scene import SceneObject
from monologue_llm.base import ScoreResult, ScoringUnsupportedError, normalize_scores

SceneEntry = SceneObject  # one object or location as a detector sees it; m, base frame


@dataclass(frozen=True)
class Context:
    """Evidence beyond the post-action scene, for detectors that compare before and after."""

    before: Mapping[str, SceneEntry] | None = None   # scene at the skill's start
    image_before: NDArray[np.uint8] | None = None    # HxWx3 RGB at the skill's start
    image_after: NDArray[np.uint8] | None = None     # HxWx3 RGB after the skill
    held: tuple[str, ...] = ()                        # objects in the gripper after the skill


@dataclass(frozen=True)
class Verdict:
    success: bool
    confidence: float  # [0, 1]
    explanation: str
    detector: str


class SuccessDetector(Protocol):
    name: str

    def detect(self, skill: str, args: Sequence[str], scene: Mapping[str, SceneEntry],
               context: Context | None = None) -> Verdict: ...


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


def _pick_place_args(skill: str, args: Sequence[str]) -> tuple[str, str] | None:
    if skill != "pick_place" or len(args) != 2:
        return None
    return args[0], args[1]


class SimGeometricDetector:
    """IM sim rule (IM:L698-702): the picked object is within `xy_tolerance_m` (x-y) of the place
    target and higher than it; the height test is skipped when the target is a location."""

    name = "sim_geometric"

    def __init__(self, xy_tolerance_m: float) -> None:
        if xy_tolerance_m <= 0:
            raise ValueError("xy_tolerance_m must be > 0")
        self.xy_tolerance_m = xy_tolerance_m

    def detect(self, skill: str, args: Sequence[str], scene: Mapping[str, SceneEntry],
               context: Context | None = None) -> Verdict:
        if skill != "pick_place" or len(args) != 2:
            return Verdict(False, 0.0, f"no rule for {skill}({', '.join(args)})", self.name)
        obj_name, target_name = args
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


class TabletopPlaceDetector:
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

    def detect(self, skill: str, args: Sequence[str], scene: Mapping[str, SceneEntry],
               context: Context | None = None) -> Verdict:
        pp = _pick_place_args(skill, args)
        if pp is None:
            return Verdict(False, 0.0, f"no rule for {skill}({', '.join(args)})", self.name)
        obj_name, target_name = pp
        ctx = context or Context()
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


class ImageTextScorer(Protocol):
    """Image-text similarity, e.g. CLIP logits (monologue_vision.clip.ClipScorer)."""

    def score(self, image: NDArray[np.uint8], texts: Sequence[str]) -> list[float]: ...


class ClipBeforeAfterDetector:
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

    def detect(self, skill: str, args: Sequence[str], scene: Mapping[str, SceneEntry],
               context: Context | None = None) -> Verdict:
        pp = _pick_place_args(skill, args)
        if pp is None:
            return Verdict(False, 0.0, f"no rule for {skill}({', '.join(args)})", self.name)
        ctx = context or Context()
        if ctx.image_before is None or ctx.image_after is None:
            return Verdict(False, 0.0, "no camera images from before and after the skill", self.name)
        target = scene.get(pp[1])
        text = self.text(pp[0], pp[1], target.category if target is not None else "")
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


class GenerationLike(Protocol):
    @property
    def text(self) -> str: ...


class TextGenerator(Protocol):
    """The planner's LLM backend interface (monologue_llm.base.LLMBackend.generate)."""

    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64) -> GenerationLike: ...


class CandidateScorer(TextGenerator, Protocol):
    """A backend that can also score given continuations (planner_node's LLMBackend.score); it may
    raise ScoringUnsupportedError, and the judge then generates."""

    def score(self, prompt: str, candidates: Sequence[str]) -> ScoreResult: ...


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
                  if _pick_place_args(skill, args) else f"{skill}({', '.join(args)})")
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


STRATEGIES = ("sim_geometric", "tabletop", "clip", "llm_judge", "kitchen", "skill_result")


def _param(params: Mapping[str, float], key: str, strategy: str) -> float:
    if key not in params:
        raise ValueError(f"strategy {strategy!r} needs the parameter {key!r}")
    return float(params[key])


def make_detector(strategy: str, params: Mapping[str, float], scorer: ImageTextScorer | None = None,
                  llm: TextGenerator | CandidateScorer | None = None) -> SuccessDetector:
    """Build a detector by name from its `params` (xy_tolerance_m; stack_tolerance_m and
    sort_tolerance_m; clip_threshold: no defaults here, they come from the node's settings); raises
    ValueError on an unknown strategy, a missing parameter or a missing collaborator."""
    if strategy == "sim_geometric":
        return SimGeometricDetector(_param(params, "xy_tolerance_m", strategy))
    if strategy == "tabletop":
        return TabletopPlaceDetector(_param(params, "stack_tolerance_m", strategy),
                                     _param(params, "sort_tolerance_m", strategy))
    if strategy == "clip":
        if scorer is None:
            raise ValueError("strategy 'clip' needs an image-text scorer (a CLIP model path)")
        return ClipBeforeAfterDetector(scorer, _param(params, "clip_threshold", strategy))
    if strategy == "llm_judge":
        if llm is None:
            raise ValueError("strategy 'llm_judge' needs an LLM backend")
        return LlmJudgeDetector(llm)
    if strategy == "skill_result":
        return SkillResultDetector()
    if strategy == "kitchen":
        from .kitchen import KitchenDetector  # the symbolic kitchen's rules (monologue_domain.kitchen.judge)

        return KitchenDetector()
    raise ValueError(f"unknown success detector strategy {strategy!r}; known: {list(STRATEGIES)}")
