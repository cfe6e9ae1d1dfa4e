"""Validated settings of the success detector node, from its ROS parameters (defaults only in
config/monologue.yaml; the `llm.*` block in config/llm/*.yaml, shared with the planner). No rclpy here."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from monologue_common.core.registry import UnknownPluginError
from monologue_common.core.settings import ParamReader

from .judging import JUDGES, JudgePlugin


@dataclass(frozen=True)
class ClipSettings:
    """Judge `clip` (and any judge that needs images): CLIP score before/after on camera images."""

    model_path: str                    # local transformers CLIP directory (nothing is downloaded)
    threshold: float                   # CLIP logit units the score must rise by
    image_topic: str                   # rgb8/bgr8 sensor_msgs/Image
    buffer_size: int                   # images kept, for the one at a skill's start
    buffer_period: float               # s between kept images (the newest is always kept)


@dataclass(frozen=True)
class SuccessSettings:
    judge: str                         # a judge of judging.JUDGES (name or dotted module path)
    needs_images: bool                 # the judge needs a CLIP scorer and camera images (clip)
    needs_llm: bool                    # the judge needs an LLM backend (llm_judge)
    xy_tolerance: float                # m, sim_geometric
    stack_tolerance: float             # m, tabletop: onto a block
    sort_tolerance: float              # m, tabletop: into a plate, bowl or location
    scene_timeout: float               # s, describe_scene and (clip) a fresh camera image
    clip: ClipSettings
    llm: Mapping[str, object] = field(default_factory=dict)  # the llm.* block (judges that need an LLM only)
    unused: tuple[str, ...] = ()       # parameters set but not read

    def judge_params(self) -> dict[str, float]:
        """The `params` of judging.make_judge."""
        return {"xy_tolerance_m": self.xy_tolerance, "stack_tolerance_m": self.stack_tolerance,
                "sort_tolerance_m": self.sort_tolerance, "clip_threshold": self.clip.threshold}


def _judge_plugin(r: ParamReader) -> tuple[str, JudgePlugin | None]:
    """The `judge` parameter and its plug-in (None, with the error recorded, if unknown). The old name
    of the parameter, `strategy`, is an error that names the new one."""
    if r.has("strategy"):
        r.read.add("strategy")
        r.check(False, f"strategy: renamed to `judge` (the success rule: {' | '.join(JUDGES.names())}); "
                       f"set judge:={r.params['strategy']} instead (config/robots.yaml `success:` sets it)")
    name = r.string("judge", nonempty=True)
    if not name.strip():
        return name, None
    try:
        return name, JUDGES.get(name)
    except UnknownPluginError as e:
        r.check(False, f"judge: {e}")
        return name, None


def settings_from_parameters(params: Mapping[str, object]) -> SuccessSettings:
    """Check every parameter of the success detector; ValueError listing all problems at once.
    The `llm.*` block is read (and checked by monologue_llm.factory) only for a judge that needs an LLM
    (llm_judge), `clip.model_path` must be set for one that needs images (clip)."""
    r = ParamReader(params, "success_detector")
    judge, plugin = _judge_plugin(r)
    needs_images = plugin is not None and plugin.needs_images
    needs_llm = plugin is not None and plugin.needs_llm
    clip_model = r.string("clip.model_path")
    r.check(not needs_images or bool(clip_model.strip()),
            f"clip.model_path: judge {judge} needs a local transformers CLIP directory")
    clip = ClipSettings(
        model_path=clip_model,
        threshold=r.number("clip.threshold"),
        image_topic=r.string("clip.image_topic", nonempty=True),
        buffer_size=r.integer("clip.buffer_size", 1),
        buffer_period=r.number("clip.buffer_period", 0.0),
    )
    llm: dict[str, object] = {}
    if needs_llm:
        llm = r.section("llm")
        r.check(bool(llm), f"llm.*: judge {judge} needs the llm block (config/llm/<llm>.yaml)")
    s = SuccessSettings(
        judge=judge,
        needs_images=needs_images,
        needs_llm=needs_llm,
        xy_tolerance=r.number("xy_tolerance", 0.0, low_open=True),
        stack_tolerance=r.number("stack_tolerance", 0.0, low_open=True),
        sort_tolerance=r.number("sort_tolerance", 0.0, low_open=True),
        scene_timeout=r.number("scene_timeout", 0.0, low_open=True),
        clip=clip,
        llm=llm,
    )
    r.finish()
    ignore: tuple[str, ...] = ("use_sim_time", "start_type_description_service")  # rclpy's own
    if not needs_llm:
        ignore += ("llm",)  # the shared block of config/llm/*.yaml reaches every node (`/**`)
    return replace(s, unused=tuple(r.unused(ignore)))
