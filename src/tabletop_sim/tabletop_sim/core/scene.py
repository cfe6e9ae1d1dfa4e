"""Scene content of the simulated tabletop (IM §4.1), defined once in monologue_domain and re-exported.

The world's constants (colours, RGB, sizes, workspace, named locations) are monologue_domain.tabletop's;
the scene spec and layout sampler are monologue_domain.scene_spec's, shared with the kinematic world
(same seed, same colours and positions). New code imports from monologue_domain directly.
"""
from __future__ import annotations

from monologue_domain.scene_spec import (
    ObjectPlacement,
    SceneLayout,
    SceneSpec,
    layout_scene,
    make_spec,
    random_spec,
    resolve_location,
    sample_positions,
)
from monologue_domain.tabletop import (
    BLOCK_SIZE,
    BOWL_DIAMETER,
    BOWL_FLOOR,
    BOWL_HEIGHT,
    COLOR_RGB,
    COLORS,
    LOCATIONS,
    MAX_BLOCKS,
    MAX_BOWLS,
    MIN_SEPARATION,
    WORKSPACE_X,
    WORKSPACE_Y,
)

__all__ = [
    "BLOCK_SIZE", "BOWL_DIAMETER", "BOWL_FLOOR", "BOWL_HEIGHT", "COLOR_RGB", "COLORS", "LOCATIONS", "MAX_BLOCKS",
    "MAX_BOWLS", "MIN_SEPARATION", "WORKSPACE_X", "WORKSPACE_Y", "ObjectPlacement", "SceneLayout", "SceneSpec",
    "layout_scene", "make_spec", "random_spec", "resolve_location", "sample_positions",
]
