"""Marker descriptions for RViz: transcript lines, the current skill, scene objects (no rclpy).

The node turns MarkerSpec into visualization_msgs/Marker. Every update is a complete array for its
namespaces: markers that disappear are sent once with action DELETE, so RViz never shows stale text.
"""
from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from monologue_domain.scene import SceneObject

Vec3 = tuple[float, float, float]
RGBA = tuple[float, float, float, float]

NS_TRANSCRIPT = "transcript"
NS_SKILL = "current_skill"
NS_OBJECTS = "scene_objects"
NS_LABELS = "scene_labels"
ADD, DELETE = "add", "delete"
TEXT, CUBE, CYLINDER = "text", "cube", "cylinder"

_KIND_COLORS: dict[str, RGBA] = {
    "HUMAN_INSTRUCTION": (1.0, 1.0, 1.0, 1.0), "HUMAN_INTERJECTION": (1.0, 1.0, 1.0, 1.0),
    "HUMAN_ANSWER": (1.0, 1.0, 1.0, 1.0), "ROBOT_ACTION": (0.3, 0.9, 0.3, 1.0),
    "ROBOT_THOUGHT": (1.0, 0.9, 0.3, 1.0), "ROBOT_QUESTION": (1.0, 0.9, 0.3, 1.0),
    "SCENE_OBJECTS": (0.4, 0.8, 1.0, 1.0), "SCENE_PROGRESS": (0.4, 0.8, 1.0, 1.0),
    "SUCCESS": (0.3, 0.9, 0.3, 1.0), "ERROR": (1.0, 0.3, 0.3, 1.0), "EPISODE_END": (0.8, 0.8, 0.8, 1.0),
}
_FAILED: RGBA = (1.0, 0.3, 0.3, 1.0)
_NAMED_COLORS: dict[str, tuple[float, float, float]] = {
    "red": (0.9, 0.1, 0.1), "green": (0.1, 0.7, 0.2), "blue": (0.1, 0.3, 0.9), "yellow": (0.95, 0.85, 0.1),
    "orange": (1.0, 0.55, 0.0), "purple": (0.55, 0.2, 0.7), "pink": (1.0, 0.5, 0.7), "cyan": (0.0, 0.8, 0.8),
    "brown": (0.55, 0.35, 0.15), "gray": (0.5, 0.5, 0.5), "grey": (0.5, 0.5, 0.5), "white": (0.95, 0.95, 0.95),
    "black": (0.1, 0.1, 0.1),
}


@dataclass(frozen=True)
class MarkerSpec:
    ns: str
    id: int
    action: str  # ADD | DELETE
    type: str = TEXT  # TEXT | CUBE | CYLINDER
    frame_id: str = ""
    position: Vec3 = (0.0, 0.0, 0.0)  # m, in frame_id
    scale: Vec3 = (0.0, 0.0, 0.0)  # m; text markers use scale z as the text height
    color: RGBA = (1.0, 1.0, 1.0, 1.0)
    text: str = ""
    lifetime_s: float = 0.0  # s; 0 = until replaced or deleted


@dataclass(frozen=True)
class ViewConfig:
    """The viz node's parameters (values: config/monologue.yaml, section `viz`)."""

    frame_id: str
    lines: int  # transcript rows shown
    line_height_m: float  # m between rows
    text_size_m: float  # m, text height
    anchor: Vec3  # m, the newest row, in frame_id
    lifetime_s: float  # s, 0 = until replaced or deleted
    wrap_chars: int = 70  # characters per row

    def validate(self) -> None:
        if not self.frame_id:
            raise ValueError("frame_id must not be empty")
        if self.lines < 1 or self.wrap_chars < 10:
            raise ValueError("lines must be >= 1 and wrap_chars >= 10")
        if self.line_height_m <= 0 or self.text_size_m <= 0 or self.lifetime_s < 0:
            raise ValueError("line_height and text_size must be > 0 m, lifetime >= 0 s")


class TranscriptView:
    """The last transcript rows of the running episode and the skill being executed."""

    def __init__(self, config: ViewConfig) -> None:
        config.validate()
        self.cfg = config
        self._episode = ""
        self._rows: list[tuple[str, RGBA]] = []
        self._shown_ids: set[int] = set()
        self._skill = ""
        self._skill_state = ""
        self._skill_shown = False

    def on_event(self, episode_id: str, index: int, kind: str, text: str, data: Mapping[str, object]) -> None:
        if episode_id != self._episode:
            self._episode, self._rows, self._skill, self._skill_state = episode_id, [], "", ""
        color = _FAILED if kind == "SUCCESS" and data.get("success") is False else _KIND_COLORS.get(
            kind, (1.0, 1.0, 1.0, 1.0))
        for row in textwrap.wrap(text, self.cfg.wrap_chars) or [""]:
            self._rows.append((row, color))
        self._rows = self._rows[-self.cfg.lines:]
        if kind == "ROBOT_ACTION":
            skill, args = str(data.get("skill", "")), data.get("args", [])
            arg_list = [str(a) for a in args] if isinstance(args, list | tuple) else []
            self._skill, self._skill_state = f"{skill}({', '.join(arg_list)})", "started"
        elif kind in ("SUCCESS", "ERROR", "EPISODE_END", "ROBOT_THOUGHT"):
            self._skill, self._skill_state = "", ""

    def on_skill_state(self, state_text: str) -> None:
        if self._skill:
            self._skill_state = state_text

    def markers(self) -> list[MarkerSpec]:
        """The full update: one ADD per row shown, DELETE for rows no longer shown, the skill line."""
        cfg = self.cfg
        out: list[MarkerSpec] = []
        x, y, z0 = cfg.anchor
        n = len(self._rows)
        ids = set(range(n))
        for i, (row, color) in enumerate(self._rows):
            z = z0 + (n - 1 - i) * cfg.line_height_m  # oldest at the top, newest at the anchor
            out.append(MarkerSpec(NS_TRANSCRIPT, i, ADD, TEXT, cfg.frame_id, (x, y, z),
                                  (0.0, 0.0, cfg.text_size_m), color, row, cfg.lifetime_s))
        out += [MarkerSpec(NS_TRANSCRIPT, i, DELETE, frame_id=cfg.frame_id) for i in sorted(self._shown_ids - ids)]
        self._shown_ids = ids
        if self._skill:
            top = z0 + max(n, 1) * cfg.line_height_m + cfg.text_size_m
            out.append(MarkerSpec(NS_SKILL, 0, ADD, TEXT, cfg.frame_id, (x, y, top),
                                  (0.0, 0.0, cfg.text_size_m * 1.4), (0.3, 0.9, 0.3, 1.0),
                                  f"executing {self._skill}: {self._skill_state}", cfg.lifetime_s))
            self._skill_shown = True
        elif self._skill_shown:
            out.append(MarkerSpec(NS_SKILL, 0, DELETE, frame_id=cfg.frame_id))
            self._skill_shown = False
        return out


SceneItem = SceneObject  # name, category, position (m, object centre in frame_id), size (m, extent)


class SceneView:
    """Cubes for blocks, cylinders for bowls, a label over each; stable ids per object name."""

    def __init__(self, lifetime_s: float) -> None:
        """lifetime_s: s each marker lives, 0 = until replaced or deleted (the node's `lifetime`)."""
        self._ids: dict[str, int] = {}
        self._shown: set[int] = set()
        self._lifetime = lifetime_s

    def markers(self, frame_id: str, items: Sequence[SceneItem]) -> list[MarkerSpec]:
        out: list[MarkerSpec] = []
        shown: set[int] = set()
        for item in items:
            if item.category == "location":
                continue
            mid = self._ids.setdefault(item.name, len(self._ids))
            shown.add(mid)
            r, g, b = _NAMED_COLORS.get(item.name.split(" ", 1)[0].lower(), (0.6, 0.6, 0.6))
            shape = CYLINDER if item.category == "bowl" else CUBE
            size = tuple(max(s, 0.005) for s in item.size)
            scale: Vec3 = (size[0], size[1], size[2])
            out.append(MarkerSpec(NS_OBJECTS, mid, ADD, shape, frame_id, item.position, scale,
                                  (r, g, b, 0.9), "", self._lifetime))
            label = (item.position[0], item.position[1], item.position[2] + scale[2] / 2 + 0.03)
            out.append(MarkerSpec(NS_LABELS, mid, ADD, TEXT, frame_id, label, (0.0, 0.0, 0.02),
                                  (1.0, 1.0, 1.0, 1.0), item.name, self._lifetime))
        for gone in sorted(self._shown - shown):
            out += [MarkerSpec(NS_OBJECTS, gone, DELETE, frame_id=frame_id),
                    MarkerSpec(NS_LABELS, gone, DELETE, frame_id=frame_id)]
        self._shown = shown
        return out
