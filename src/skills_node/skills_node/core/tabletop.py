"""Compatibility re-export: the kinematic tabletop world lives in monologue_domain.kinematic_world,
the scene sampler in monologue_domain.scene_spec and the world's constants in monologue_domain.tabletop.
Import from there in new code."""
from __future__ import annotations

from monologue_domain.kinematic_world import KinematicObject, PlaceNoise, TabletopWorld, world_with
from monologue_domain.scene_spec import SceneSpec, random_spec
from monologue_domain.tabletop import (
    BLOCK_SIZE,
    BOWL_DIAMETER,
    BOWL_FLOOR,
    BOWL_HEIGHT,
    COLORS,
    CORNERS,
    LOCATIONS,
    MIN_SEPARATION,
    SIDES,
    STACK_XY_TOLERANCE,
    WORKSPACE_X,
    WORKSPACE_Y,
)

__all__ = [
    "BLOCK_SIZE", "BOWL_DIAMETER", "BOWL_FLOOR", "BOWL_HEIGHT", "COLORS", "CORNERS", "LOCATIONS", "MIN_SEPARATION",
    "SIDES", "STACK_XY_TOLERANCE", "WORKSPACE_X", "WORKSPACE_Y", "KinematicObject", "PlaceNoise", "SceneSpec",
    "TabletopWorld", "random_spec", "world_with",
]
