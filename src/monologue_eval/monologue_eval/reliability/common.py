"""What every figure module shares: the table row and the repository paths (the figures read the
source tree's config/ and test/ fixtures; run them with the workspace on the path: `. scripts/env.sh`)."""
from __future__ import annotations

import argparse
import logging
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


def sampling_args(doc: str, count: str, default: int, only: str) -> argparse.Namespace:
    """The command line of a figure script that samples: `--<count>` (how many), `--seed` and `--only`
    (help text `only`); the parsed arguments. Logging is quietened to CRITICAL: the printout is the result."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument(f"--{count}", type=int, default=default)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default="", help=only)
    args = ap.parse_args()
    logging.basicConfig(level=logging.CRITICAL)
    return args
