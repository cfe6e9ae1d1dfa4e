"""Validated settings of the viz node, from its ROS parameters (defaults only in config/monologue.yaml,
section `viz`; see monologue_common.core.settings). No rclpy here."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from monologue_common.core.settings import ParamReader

from .markers import ViewConfig


@dataclass(frozen=True)
class VizSettings:
    view: ViewConfig
    unused: tuple[str, ...] = ()       # parameters set but not read


def settings_from_parameters(params: Mapping[str, object]) -> VizSettings:
    """Check every parameter of the viz node; ValueError listing all problems at once."""
    r = ParamReader(params, "viz")
    anchor = r.numbers("anchor", 3)
    view = ViewConfig(
        frame_id=r.string("frame_id", nonempty=True),
        lines=r.integer("lines", 1),
        line_height_m=r.number("line_height", 0.0, low_open=True),
        text_size_m=r.number("text_size", 0.0, low_open=True),
        anchor=(anchor[0], anchor[1], anchor[2]) if len(anchor) == 3 else (0.0, 0.0, 0.0),
        lifetime_s=r.number("lifetime", 0.0),
    )
    r.finish()
    # not read: rclpy's own parameters, and the shared llm block of config/llm/*.yaml (`/**`)
    return VizSettings(view, tuple(r.unused(("use_sim_time", "start_type_description_service", "llm"))))
