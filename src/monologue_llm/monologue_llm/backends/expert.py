"""Backend `expert`: the expert LLM stand-in for ceiling runs and tests (monologue_llm.expert). It reads a
simulated world's truth from `expert.truth_dir` and refuses to start without one; the graph refuses
`llm:=expert` with a robot that is not simulated."""
from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ..base import LLMBackend
from ..plugin import BackendPlugin, KeySpec

KEYS: dict[str, KeySpec] = {
    "truth_dir": ((str,), ""),  # "" = not set: refused (the graph sets it for a simulated robot)
    "error_rate": ((int, float), 0.0),  # probability of a wrong answer per query
    "slip_share": ((int, float), 0.25),  # share of the wrong generated answers that are format slips
    "seed": ((int,), 0),
    "truth_timeout_s": ((int, float), 10.0),  # s to wait for the simulator's first truth
    "record_path": ((str,), ""),  # JSONL file: every answered query as a training example; "" = off
}


def check(values: Mapping[str, Any]) -> None:
    if not values["truth_dir"]:
        raise ValueError("LLM config: backend 'expert' needs 'expert.truth_dir', the side channel a simulated "
                         "world writes; it is for evaluation and tests with a simulated robot only (llm:=expert)")
    for key in ("error_rate", "slip_share"):
        if not 0.0 <= values[key] <= 1.0:
            raise ValueError(f"LLM config: 'expert.{key}' must be in [0, 1], got {values[key]}")
    if values["truth_timeout_s"] <= 0:
        raise ValueError(f"LLM config: 'expert.truth_timeout_s' must be > 0, got {values['truth_timeout_s']}")


def create(values: Mapping[str, Any], logger: logging.Logger) -> LLMBackend:
    from ..expert.backend import ExpertBackend

    return ExpertBackend(values["truth_dir"], error_rate=float(values["error_rate"]),
                         slip_share=float(values["slip_share"]), seed=values["seed"],
                         truth_timeout_s=float(values["truth_timeout_s"]), logger=logger,
                         record_path=values["record_path"])


PLUGIN = BackendPlugin(KEYS, create, "the expert stand-in: answers from a simulated world's truth (evaluation only)",
                       check, prefix="expert.")
