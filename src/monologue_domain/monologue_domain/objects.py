"""The ground-truth state of one object, as every simulator and task reward sees it (no rclpy).

`ObjectState` is the domain `SceneObject` (monologue_domain.scene): a simulator's ground truth is a
scene object with its colour, segmentation id and `heavy` filled in. The name is kept for the
simulators' and tasks' signatures.
"""
from __future__ import annotations

from .scene import SceneObject

ObjectState = SceneObject

__all__ = ["ObjectState"]
