"""What every figure module shares: the table row and the repository paths (the figures read the
source tree's config/ and test/ fixtures; run them with the workspace on the path: `. scripts/env.sh`)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# src/monologue_eval/monologue_eval/reliability/common.py -> the repository (symlinked installs resolve here too)
REPO = Path(__file__).resolve().parents[4]
CONFIG = REPO / "config"
PROMPTS = CONFIG / "prompts"


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
