"""Validated settings of the success detector node, from its ROS parameters (defaults only in
config/monologue.yaml; the `llm.*` block in config/llm/*.yaml, shared with the planner). No rclpy here."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from monologue_common.core.settings import ParamReader

from .detectors import STRATEGIES


@dataclass(frozen=True)
class ClipSettings:
    """Strategy `clip`: CLIP score before/after on camera images."""

    model_path: str                    # local transformers CLIP directory (nothing is downloaded)
    threshold: float                   # CLIP logit units the score must rise by
    image_topic: str                   # rgb8/bgr8 sensor_msgs/Image
    buffer_size: int                   # images kept, for the one at a skill's start
    buffer_period: float               # s between kept images (the newest is always kept)


@dataclass(frozen=True)
class SuccessSettings:
    strategy: str                      # one of detectors.STRATEGIES
    xy_tolerance: float                # m, sim_geometric
    stack_tolerance: float             # m, tabletop: onto a block
    sort_tolerance: float              # m, tabletop: into a plate, bowl or location
    scene_timeout: float               # s, describe_scene and (clip) a fresh camera image
    clip: ClipSettings
    llm: Mapping[str, object] = field(default_factory=dict)  # the llm.* block (strategy llm_judge only)
    unused: tuple[str, ...] = ()       # parameters set but not read

    def detector_params(self) -> dict[str, float]:
        """The `params` of detectors.make_detector."""
        return {"xy_tolerance_m": self.xy_tolerance, "stack_tolerance_m": self.stack_tolerance,
                "sort_tolerance_m": self.sort_tolerance, "clip_threshold": self.clip.threshold}


def settings_from_parameters(params: Mapping[str, object]) -> SuccessSettings:
    """Check every parameter of the success detector; ValueError listing all problems at once.
    The `llm.*` block is read (and checked by monologue_llm.factory) only for strategy llm_judge."""
    r = ParamReader(params, "success_detector")
    strategy = r.string("strategy", STRATEGIES)
    clip_model = r.string("clip.model_path")
    r.check(strategy != "clip" or bool(clip_model.strip()),
            "clip.model_path: strategy clip needs a local transformers CLIP directory")
    clip = ClipSettings(
        model_path=clip_model,
        threshold=r.number("clip.threshold"),
        image_topic=r.string("clip.image_topic", nonempty=True),
        buffer_size=r.integer("clip.buffer_size", 1),
        buffer_period=r.number("clip.buffer_period", 0.0),
    )
    llm: dict[str, object] = {}
    if strategy == "llm_judge":
        llm = r.section("llm")
        r.check(bool(llm), "llm.*: strategy llm_judge needs the llm block (config/llm/<llm>.yaml)")
    s = SuccessSettings(
        strategy=strategy,
        xy_tolerance=r.number("xy_tolerance", 0.0, low_open=True),
        stack_tolerance=r.number("stack_tolerance", 0.0, low_open=True),
        sort_tolerance=r.number("sort_tolerance", 0.0, low_open=True),
        scene_timeout=r.number("scene_timeout", 0.0, low_open=True),
        clip=clip,
        llm=llm,
    )
    r.finish()
    ignore: tuple[str, ...] = ("use_sim_time", "start_type_description_service")  # rclpy's own
    if strategy != "llm_judge":
        ignore += ("llm",)  # the shared block of config/llm/*.yaml reaches every node (`/**`)
    return replace(s, unused=tuple(r.unused(ignore)))
