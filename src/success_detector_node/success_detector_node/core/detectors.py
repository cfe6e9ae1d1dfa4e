"""Success detectors over a scene description (plain data; no rclpy)."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class SceneEntry:
    """One object or location as the detector sees it; position in metres in the base frame."""

    name: str
    category: str
    position: tuple[float, float, float]
    visible: bool = True


@dataclass(frozen=True)
class Verdict:
    success: bool
    confidence: float  # [0, 1]
    explanation: str
    detector: str


class SuccessDetector(Protocol):
    name: str

    def detect(self, skill: str, args: Sequence[str], scene: Mapping[str, SceneEntry]) -> Verdict: ...


class SimGeometricDetector:
    """IM sim rule (IM:L698-702): the picked object is within `xy_tolerance_m` (x-y) of the place
    target and higher than it; the height test is skipped when the target is a location."""

    name = "sim_geometric"

    def __init__(self, xy_tolerance_m: float = 0.04) -> None:
        if xy_tolerance_m <= 0:
            raise ValueError("xy_tolerance_m must be > 0")
        self.xy_tolerance_m = xy_tolerance_m

    def detect(self, skill: str, args: Sequence[str], scene: Mapping[str, SceneEntry]) -> Verdict:
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


def make_detector(strategy: str, params: Mapping[str, float]) -> SuccessDetector:
    """Build a detector by name; raises ValueError on an unknown strategy."""
    if strategy == "sim_geometric":
        return SimGeometricDetector(float(params.get("xy_tolerance_m", 0.04)))
    raise ValueError(f"unknown success detector strategy {strategy!r}; known: ['sim_geometric']")
