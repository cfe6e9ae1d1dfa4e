"""The ground-truth state of one object, as every simulator and task reward sees it (no rclpy)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ObjectState:
    """Ground-truth state of one object or named location; positions in metres, base frame."""

    name: str
    category: str  # "block", "bowl" or "location"
    position: tuple[float, float, float]
    size: tuple[float, float, float]
    color: str = ""
    segmentation_id: int = -1
    properties: dict[str, str] = field(default_factory=dict)
