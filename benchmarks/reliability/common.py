"""What every figure module shares: the table row, the repository paths and the source trees on
sys.path (the ROS-free core packages, as pytest.ini's pythonpath; no built workspace needed)."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "config"
PROMPTS = CONFIG / "prompts"
SOURCE_PACKAGES = ("monologue_llm", "monologue_domain", "monologue_vision", "planner_node", "perception_node",
                   "skills_node", "success_detector_node", "monologue_bringup", "monologue_eval",
                   "monologue_common", "tabletop_sim", "monologue_bag", "monologue_viz", "monologue_web")


def use_source_tree() -> None:
    """Put src/<package> first on sys.path (idempotent)."""
    for name in reversed(SOURCE_PACKAGES):
        path = str(REPO / "src" / name)
        if path not in sys.path:
            sys.path.insert(0, path)


use_source_tree()


@dataclass(frozen=True)
class Row:
    """One line of the table: `measured` against `target`; `ok` None = not measured."""

    figure: str
    what: str
    target: str
    measured: str
    ok: bool | None
    wall_s: float = 0.0
    details: str = ""

    @property
    def verdict(self) -> str:
        return "not measured" if self.ok is None else "pass" if self.ok else "FAIL"
