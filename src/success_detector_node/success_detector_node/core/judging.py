"""The success judges' interface and registry (plain data; no rclpy).

A judge is the rule that decides whether a skill succeeded, from the scene description after it and
the evidence in `Context`; it returns a `Verdict` (success, confidence, explanation). Judges are
plug-ins of the registry `JUDGES` (kind "judges"): the built-ins are the modules of
`success_detector_node.core.judges` (one module per judge, named as the judge, each defining `PLUGIN`),
and the node's parameter `judge` may also name an entry point (group `monologue.judges`) or a dotted
module path on PYTHONPATH that defines `PLUGIN`. Adding one: docs/perception.md ("Success detection").
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from monologue_common.core.registry import Registry
from monologue_domain.scene import SceneObject
from monologue_llm.base import ScoreResult

SceneEntry = SceneObject  # one object or location as a judge sees it; m, base frame


@dataclass(frozen=True)
class Context:
    """Evidence beyond the post-action scene, for judges that compare before and after."""

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


class Judge(Protocol):
    """A success rule: `detect` never raises for a model or backend error (the verdict says why)."""

    name: str

    def detect(self, skill: str, args: Sequence[str], scene: Mapping[str, SceneEntry],
               context: Context | None = None) -> Verdict: ...


def pick_place_args(skill: str, args: Sequence[str]) -> tuple[str, str] | None:
    """(object, target) of a pick_place call, None for any other skill."""
    if skill != "pick_place" or len(args) != 2:
        return None
    return args[0], args[1]


def no_rule(skill: str, args: Sequence[str], judge: str) -> Verdict:
    """The verdict of a judge that has no rule for this skill."""
    return Verdict(False, 0.0, f"no rule for {skill}({', '.join(args)})", judge)


class PickPlaceJudge:
    """Base of the judges that have a rule for pick_place(object, target) only: any other skill gets a
    failed verdict that says so."""

    name: str

    def detect(self, skill: str, args: Sequence[str], scene: Mapping[str, SceneEntry],
               context: Context | None = None) -> Verdict:
        pp = pick_place_args(skill, args)
        if pp is None:
            return no_rule(skill, args, self.name)
        return self.pick_place(pp[0], pp[1], scene, context or Context())

    def pick_place(self, obj_name: str, target_name: str, scene: Mapping[str, SceneEntry], ctx: Context) -> Verdict:
        """The verdict on pick_place(obj_name, target_name)."""
        raise NotImplementedError


class ImageTextScorer(Protocol):
    """Image-text similarity, e.g. CLIP logits (monologue_vision.clip.ClipScorer)."""

    def score(self, image: NDArray[np.uint8], texts: Sequence[str]) -> list[float]: ...


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


@dataclass(frozen=True)
class JudgeTools:
    """What `JudgePlugin.create` gets: the judge's name, the node's numeric `params` (xy_tolerance_m;
    stack_tolerance_m and sort_tolerance_m; clip_threshold: no defaults here, they come from the node's
    settings) and the collaborators the plug-in asked for."""

    name: str
    params: Mapping[str, float]
    scorer: ImageTextScorer | None = None
    llm: TextGenerator | CandidateScorer | None = None

    def param(self, key: str) -> float:
        if key not in self.params:
            raise ValueError(f"judge {self.name!r} needs the parameter {key!r}")
        return float(self.params[key])


@dataclass(frozen=True)
class JudgePlugin:
    """A judge as the registry holds it: how to build it and what the node must give it."""

    create: Callable[[JudgeTools], Judge]
    description: str
    needs_images: bool = False         # an image-text scorer (clip.model_path) and camera images (clip.image_topic)
    needs_llm: bool = False            # an LLM backend from the llm.* block (config/llm/<llm>.yaml)
    # the scene must come from a frame captured after the skill ended (a camera that moves with the skill,
    # e.g. on the gripper): the node asks for fresh scenes until one is, within scene_timeout
    fresh_scene: bool = False


JUDGES: Registry[JudgePlugin] = Registry("judges", package="success_detector_node.core.judges",
                                         attribute="PLUGIN", describe=lambda p: p.description)


def make_judge(name: str, params: Mapping[str, float], scorer: ImageTextScorer | None = None,
               llm: TextGenerator | CandidateScorer | None = None) -> Judge:
    """Build the judge called `name` from its `params` (see JudgeTools); raises ValueError on an
    unknown judge (UnknownPluginError, listing the known ones), a missing parameter or a missing
    collaborator."""
    plugin = JUDGES.get(name)
    if plugin.needs_images and scorer is None:
        raise ValueError(f"judge {name!r} needs an image-text scorer (a CLIP model path)")
    if plugin.needs_llm and llm is None:
        raise ValueError(f"judge {name!r} needs an LLM backend")
    return plugin.create(JudgeTools(name, params, scorer, llm))
