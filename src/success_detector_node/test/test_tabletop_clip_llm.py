"""Real-tabletop place rule (3 cm stacking / 10 cm sorting), CLIP before/after and LLM judge."""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from monologue_domain.robots import node_parameters
from monologue_llm.base import (
    CandidateScore,
    LLMUnavailableError,
    ScoreResult,
    ScoringUnsupportedError,
)
from success_detector_node.core.judges.clip import ClipBeforeAfterDetector
from success_detector_node.core.judges.llm_judge import LlmJudgeDetector
from success_detector_node.core.judges.tabletop import TabletopPlaceDetector
from success_detector_node.core.judging import Context, SceneEntry, make_judge
from success_detector_node.core.settings import settings_from_parameters

CONFIG = Path(__file__).resolve().parents[3] / "config"


def scene(*entries: SceneEntry) -> dict[str, SceneEntry]:
    return {e.name: e for e in entries}


# The real robot's configuration (IM §4.2: 3 cm stacking, 10 cm sorting), as the node builds it.
UR5E = settings_from_parameters(node_parameters(CONFIG, "success_detector", ["monologue.yaml", "robots/ur5e.yaml"]))
D = make_judge(UR5E.judge, UR5E.judge_params())
BLUE = SceneEntry("blue block", "block", (0.50, 0.10, 0.02))
PLATE = SceneEntry("red plate", "plate", (0.60, -0.10, 0.01), place_point=(0.62, -0.13, 0.01))


@pytest.mark.parametrize(("dx", "ok"), [(0.0, True), (0.025, True), (0.035, False), (0.08, False)])
def test_stacking_threshold_is_3cm(dx: float, ok: bool) -> None:
    after = scene(SceneEntry("red block", "block", (0.50 + dx, 0.10, 0.06)), BLUE)
    v = D.detect("pick_place", ["red block", "blue block"], after, Context(before=scene(BLUE)))
    assert v.success is ok and "stacking" in v.explanation
    assert 0.5 <= v.confidence <= 1.0


@pytest.mark.parametrize(("dx", "ok"), [(0.0, True), (0.035, True), (0.09, True), (0.11, False)])
def test_sorting_threshold_is_10cm_from_the_place_point(dx: float, ok: bool) -> None:
    # Distances are measured from the plate's place point, not its centre.
    after = scene(SceneEntry("red block", "block", (0.62 + dx, -0.13, 0.03)), PLATE)
    v = D.detect("pick_place", ["red block", "red plate"], after, Context(before=scene(PLATE)))
    assert v.success is ok and "sorting" in v.explanation


def test_place_point_comes_from_before_the_action() -> None:
    """After stacking, the target (covered) may be remembered elsewhere; the intended point is the
    one at the skill's start."""
    moved = SceneEntry("blue block", "block", (0.40, 0.10, 0.02), visible=False)
    after = scene(SceneEntry("red block", "block", (0.50, 0.10, 0.06)), moved)
    assert D.detect("pick_place", ["red block", "blue block"], after, Context(before=scene(BLUE))).success
    assert not D.detect("pick_place", ["red block", "blue block"], after).success


def test_failures_missing_held_or_undetected() -> None:
    after = scene(BLUE)
    assert not D.detect("pick_place", ["red block", "blue block"], after).success
    red = SceneEntry("red block", "block", (0.50, 0.10, 0.06))
    held = D.detect("pick_place", ["red block", "blue block"], scene(red, BLUE), Context(held=("red block",)))
    assert not held.success and "gripper" in held.explanation
    hidden = scene(SceneEntry("red block", "block", (0.50, 0.10, 0.06), visible=False), BLUE)
    assert not D.detect("pick_place", ["red block", "blue block"], hidden).success
    assert not D.detect("open", ["drawer"], after).success


def test_thresholds_are_configurable_through_the_factory() -> None:
    det = make_judge("tabletop", {"stack_tolerance_m": 0.05, "sort_tolerance_m": 0.2})
    after = scene(SceneEntry("red block", "block", (0.54, 0.10, 0.06)), BLUE)
    assert det.detect("pick_place", ["red block", "blue block"], after).success
    with pytest.raises(ValueError):
        TabletopPlaceDetector(stack_tolerance_m=0.0, sort_tolerance_m=0.10)
    with pytest.raises(ValueError, match="scorer"):
        make_judge("clip", {})
    with pytest.raises(ValueError, match="LLM"):
        make_judge("llm_judge", {})


class RednessScorer:
    """An ImageTextScorer whose score is the fraction of red pixels in the image's centre
    (where the place target is in these images), times 10."""

    def score(self, image: np.ndarray, texts: Sequence[str]) -> list[float]:
        h, w = image.shape[:2]
        c = image[h // 4: 3 * h // 4, w // 4: 3 * w // 4].astype(int)
        red = (c[..., 0] > 150) & (c[..., 1] < 80) & (c[..., 2] < 80)
        return [10.0 * float(red.mean()) for _ in texts]


def test_clip_before_after_rise_against_threshold() -> None:
    empty = np.full((48, 64, 3), 128, np.uint8)
    placed = empty.copy()
    placed[18:30, 26:38] = (200, 20, 20)
    det = ClipBeforeAfterDetector(RednessScorer(), threshold=0.5)
    bowl = scene(SceneEntry("blue bowl", "bowl", (0.5, 0.0, 0.02)))
    v = det.detect("pick_place", ["red block", "blue bowl"], bowl, Context(image_before=empty, image_after=placed))
    assert v.success and "in the blue bowl" in v.explanation
    v = det.detect("pick_place", ["red block", "blue bowl"], bowl, Context(image_before=placed, image_after=placed))
    assert not v.success
    assert not det.detect("pick_place", ["red block", "blue bowl"], bowl).success   # no images


class BrokenScorer:
    def score(self, image: np.ndarray, texts: Sequence[str]) -> list[float]:
        raise RuntimeError("CUDA out of memory")


def test_clip_scorer_error_is_a_failed_verdict() -> None:
    img = np.zeros((8, 8, 3), np.uint8)
    det = ClipBeforeAfterDetector(BrokenScorer(), threshold=0.5)
    v = det.detect("pick_place", ["red block", "blue bowl"], {}, Context(image_before=img, image_after=img))
    assert not v.success and v.confidence == 0.0 and "CLIP scoring failed" in v.explanation
    assert "out of memory" in v.explanation


def test_clip_detector_runs_on_a_real_clip_model_dir(tmp_path: Path) -> None:
    """The CLIP judge with monologue_vision's ClipScorer on a tiny random CLIP saved to disk."""
    pytest.importorskip("transformers")
    from monologue_vision.clip import ClipScorer
    from monologue_vision.tiny_models import tiny_clip

    d = tiny_clip(tmp_path / "clip")
    det = make_judge("clip", {"clip_threshold": -1e9}, scorer=ClipScorer(str(d)))
    img = np.zeros((480, 640, 3), np.uint8)
    v = det.detect("pick_place", ["a", "b"], {}, Context(image_before=img, image_after=img))
    assert v.success and math.isfinite(v.confidence)   # equal images: rise 0 > -1e9


@dataclass
class _Gen:
    text: str


class ScriptedLlm:
    """Records prompts; answers from a list (an LLM backend at the process boundary)."""

    def __init__(self, answers: list[str]) -> None:
        self.answers, self.prompts = answers, []

    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64) -> _Gen:
        self.prompts.append(prompt)
        a = self.answers.pop(0)
        if a == "raise":
            raise ConnectionError("server down")
        return _Gen(a)


def test_llm_judge_generates_with_a_backend_that_cannot_score() -> None:
    llm = ScriptedLlm([" Yes, it is.", " no", " maybe", "raise"])
    det = LlmJudgeDetector(llm)
    after = scene(SceneEntry("red block", "block", (0.5, 0.1, 0.06)), BLUE)
    ctx = Context(before=scene(SceneEntry("red block", "block", (0.3, 0.0, 0.02)), BLUE))
    v = det.detect("pick_place", ["red block", "blue block"], after, ctx)
    assert v.success and v.confidence == 0.7 and v.explanation == "LLM judge answered yes (generated)"
    assert "place it on the blue block" in llm.prompts[0] and "x=0.30 m" in llm.prompts[0]
    assert not det.detect("pick_place", ["red block", "blue block"], after, ctx).success
    v = det.detect("pick_place", ["red block", "blue block"], after, ctx)
    assert not v.success and v.confidence == 0.0 and "maybe" in v.explanation
    v = det.detect("pick_place", ["red block", "blue block"], after, ctx)
    assert not v.success and "server down" in v.explanation


class ScoringLlm(ScriptedLlm):
    """Scores " yes"/" no" with given log-probs (None: ScoringUnsupportedError, an exception: raised)."""

    def __init__(self, logprobs: list[tuple[float, float] | None | Exception], answers: Sequence[str] = ()) -> None:
        super().__init__(list(answers))
        self.logprobs, self.scored = logprobs, []

    def score(self, prompt: str, candidates: Sequence[str]) -> ScoreResult:
        self.scored.append((prompt, tuple(candidates)))
        lp = self.logprobs.pop(0)
        if lp is None:
            raise ScoringUnsupportedError("no logprobs")
        if isinstance(lp, Exception):
            raise lp
        return ScoreResult(tuple(CandidateScore(c, v, 1, (v,)) for c, v in zip(candidates, lp)), 10, 10, 0.01)


def test_llm_judge_scores_yes_against_no_and_normalises_the_confidence() -> None:
    llm = ScoringLlm([(math.log(0.6), math.log(0.2)), (math.log(0.1), math.log(0.3))])
    det = LlmJudgeDetector(llm)
    after = scene(SceneEntry("red block", "block", (0.5, 0.1, 0.06)), BLUE)
    v = det.detect("pick_place", ["red block", "blue block"], after)
    assert v.success and v.confidence == pytest.approx(0.75)
    assert v.explanation == "LLM judge answered yes (scored: p(yes)=0.75, p(no)=0.25)"
    assert llm.scored[0][1] == (" yes", " no") and llm.scored[0][0].endswith("Answer yes or no.\nAnswer:")
    v = det.detect("pick_place", ["red block", "blue block"], after)
    assert not v.success and v.confidence == pytest.approx(0.75) and "answered no" in v.explanation
    assert llm.prompts == []   # never generated


def test_llm_judge_falls_back_to_generation_once_scoring_is_unsupported() -> None:
    llm = ScoringLlm([None], answers=[" no", " yes"])
    det = LlmJudgeDetector(llm)
    v = det.detect("pick_place", ["red block", "blue block"], scene(BLUE))
    assert not v.success and v.explanation == "LLM judge answered no (generated)"
    v = det.detect("pick_place", ["red block", "blue block"], scene(BLUE))
    assert v.success and len(llm.scored) == 1 and len(llm.prompts) == 2   # scoring not retried


def test_llm_judge_backend_errors_are_failed_verdicts() -> None:
    llm = ScoringLlm([LLMUnavailableError("server down after 3 retries"), (0.0, 0.0)])
    det = LlmJudgeDetector(llm)
    v = det.detect("pick_place", ["red block", "blue block"], scene(BLUE))
    assert not v.success and v.confidence == 0.0 and v.detector == "llm_judge"
    assert v.explanation == "LLM judge failed: LLMUnavailableError: server down after 3 retries"
    v = det.detect("pick_place", ["red block", "blue block"], scene(BLUE))   # still scoring; a tie is "no"
    assert not v.success and v.confidence == pytest.approx(0.5) and "scored" in v.explanation


@pytest.mark.llm
@pytest.mark.slow
def test_llm_judge_with_the_planner_llama_cpp_backend() -> None:
    """The planner's real backend satisfies the CandidateScorer Protocol: the judge scores " yes"
    against " no" (no free text to parse)."""
    pytest.importorskip("llama_cpp")
    from monologue_llm.llama_cpp_backend import LlamaCppBackend
    from monologue_llm.model_files import embedded_model_path

    backend = LlamaCppBackend(embedded_model_path(), n_ctx=1024)
    try:
        v = LlmJudgeDetector(backend).detect(
            "pick_place", ["red block", "blue block"],
            scene(SceneEntry("red block", "block", (0.5, 0.1, 0.06)), BLUE))
    finally:
        backend.close()
    assert v.detector == "llm_judge"
    assert re.fullmatch(r"LLM judge answered (yes|no) \(scored: p\(yes\)=[01]\.\d\d, p\(no\)=[01]\.\d\d\)",
                        v.explanation), v.explanation
    assert 0.5 <= v.confidence <= 1.0
