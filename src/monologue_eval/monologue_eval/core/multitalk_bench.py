"""The MultiTalk benchmark, ROS-free part: one row per (variant, scene) from the episode's transcript,
and the table (multitalk_bench.py runs the episodes through the graph).

Variants: `full` (strategy multitalk, the whole pipeline), `no_analyzer` (multitalk.ablation
no_analyzer: Planner + Simulator, M Fig. 4) and `im` (inner_monologue, the baseline on the same
scenes). Per episode: task success (the matching-bowls reward on the final world), the planner's
outcome, and from the MultiTalk summary event the plans accepted, Analyzer rounds and rejections,
question rounds, simulator rejections, re-prompts after unreadable answers and Planner rounds.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

VARIANTS: tuple[str, ...] = ("full", "no_analyzer", "im")
LABELS: dict[str, str] = {"full": "MultiTalk (full)", "no_analyzer": "MultiTalk, Planner + Simulator",
                          "im": "Inner Monologue"}
COUNTS: tuple[str, ...] = ("plans_accepted", "analyzer_rounds", "analyzer_rejections", "question_rounds",
                           "simulator_rejections", "reprompts", "planner_rounds")


def planner_params(variant: str) -> dict[str, str]:
    """The planner's parameters for a variant (strategy, ablation)."""
    if variant == "im":
        return {"strategy": "inner_monologue"}
    if variant in ("full", "no_analyzer"):
        return {"strategy": "multitalk", "multitalk.ablation": variant}
    raise ValueError(f"unknown variant {variant!r}; choose from {list(VARIANTS)}")


@dataclass(frozen=True)
class Row:
    """One episode of one variant on one scene."""

    variant: str
    seed: int  # the scene's seed
    success: bool  # the world satisfies the task
    planner_error: str  # the planner's outcome code name (NONE, PLANNING_FAILED, ...)
    skills: int  # skills executed
    counts: Mapping[str, int]  # COUNTS (MultiTalk variants; empty for im)
    seconds: float  # wall time of the episode

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "counts": dict(self.counts)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Row:
        return cls(str(d["variant"]), int(d["seed"]), bool(d["success"]), str(d["planner_error"]),
                   int(d["skills"]), {str(k): int(v) for k, v in dict(d.get("counts", {})).items()},
                   float(d.get("seconds", 0.0)))


def summary_counts(events: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """The counts of the MultiTalk summary event among the transcript events' data ({} if none)."""
    for data in events:
        if data.get("multitalk") == "summary":
            return {k: int(v) for k, v in dict(data.get("counts", {})).items()}
    return {}


def table(rows: Sequence[Row], llm: str, params: Sequence[str] = ()) -> str:
    """Markdown: per variant the task success and the mean counts per episode; `params`: the run's
    non-default parameters (`node:name=value`, e.g. the Planner's decoding or the expert's error rate)."""
    given = f"; {', '.join(params)}" if params else ""
    lines = [f"MultiTalk benchmark (llm {llm}{given}): matching-bowls scenes on sim_kinematic; counts are means per "
             "episode",
             "",
             "| variant | episodes | success | plans accepted | Analyzer rounds | Analyzer rejections | "
             "question rounds | simulator rejections | re-prompts | Planner rounds | skills |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for v in VARIANTS:
        mine = [r for r in rows if r.variant == v]
        if not mine:
            continue
        n = len(mine)
        means = ["-" if v == "im" else f"{sum(r.counts.get(k, 0) for r in mine) / n:.1f}" for k in COUNTS]
        ok = sum(r.success for r in mine)
        skills = sum(r.skills for r in mine) / n
        lines.append(f"| {LABELS[v]} | {n} | {ok}/{n} | " + " | ".join(means) + f" | {skills:.1f} |")
    errors: dict[str, dict[str, int]] = {}
    for r in rows:
        errors.setdefault(r.variant, {}).setdefault(r.planner_error, 0)
        errors[r.variant][r.planner_error] += 1
    outcomes = [f"{LABELS[v]}: " + ", ".join(f"{k} {c}" for k, c in sorted(errors[v].items()))
                for v in VARIANTS if v in errors]
    lines += ["", "Planner outcomes: " + "; ".join(outcomes)]
    return "\n".join(lines) + "\n"
