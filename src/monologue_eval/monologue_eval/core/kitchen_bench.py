"""The kitchen suites of `monologue-bench` (`--suite saycan | im_kitchen`), ROS-free parts: planner
variants as ExecuteInstruction goal options, the skills node's start-state and disturbance parameters of
an episode, the episode plan, the skills chosen in a transcript, and the resumable JSONL store.

Scoring and tables: core/kitchen_report.py; suites and their data: monologue_domain.kitchen.suites.
"""
from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from monologue_domain.kitchen.suites import Instruction, Suite, start_placements

from .kitchen_report import CONDITIONS, IM_VARIANTS, SAYCAN_VARIANTS, KitchenEpisode
from .selection import first_of_groups
from .store import RecordStore, record_from_json

KITCHEN_SUITES = ("saycan", "im_kitchen")
KITCHEN_ROBOT = "sim_kitchen"


@dataclass(frozen=True)
class KitchenVariant:
    """One planner column of SC Table 2 / IM Table 3, as ExecuteInstruction goal options."""

    key: str
    strategy: str  # planner strategy (src/planner_node/planner_node/core/strategies/)
    prompt_profile: str  # config/prompts/<name>.yaml
    use_affordances: bool  # SayCan's scoring x affordance (off = "No VF")
    object_feedback: bool
    success_feedback: bool
    collapse_repeats: bool  # plan scoring merges immediate repeats (IM retries a step after "Success: no")


# SC Table 2: SayCan = LLM scoring x the oracle's affordances; No VF = the same without the value
# functions; Gen. = the LLM writes each step (mapped onto the nearest skill), no affordances.
SAYCAN_SUITE_VARIANTS: dict[str, KitchenVariant] = {v.key: v for v in (
    KitchenVariant("saycan", "saycan", "saycan", True, False, False, False),
    KitchenVariant("no_vf", "saycan", "saycan", False, False, False, False),
    KitchenVariant("generative", "inner_monologue_generative", "saycan", False, False, False, False),
)}
# IM Table 3: SayCan as above; IM = SayCan's scoring with IM's kitchen prompt (IM Listing 3) and
# feedback in the prompt. IM's kitchen planner keeps SayCan's affordances (IM §4.3), so they are on.
IM_SUITE_VARIANTS: dict[str, KitchenVariant] = {v.key: v for v in (
    KitchenVariant("saycan", "saycan", "saycan", True, False, False, False),
    KitchenVariant("im_success", "inner_monologue", "im_kitchen", True, False, True, True),
    KitchenVariant("im_object_success", "inner_monologue", "im_kitchen", True, True, True, True),
)}
SUITE_VARIANTS: dict[str, dict[str, KitchenVariant]] = {"saycan": SAYCAN_SUITE_VARIANTS,
                                                        "im_kitchen": IM_SUITE_VARIANTS}
VARIANT_LABELS: dict[str, dict[str, str]] = {"saycan": SAYCAN_VARIANTS, "im_kitchen": IM_VARIANTS}

# IM §4.3's disturbances ("With Disturbances" rows of IM Table 3). The paper gives no rates; ours: a
# skill silently does nothing with p = 0.2 (reported as success, as a policy would), the held object is
# dropped with p = 0.1 and a person moves an object with p = 0.1 during a skill.
DISTURBANCE_RATES: dict[str, float] = {"failure_rate": 0.2, "drop_rate": 0.1, "move_rate": 0.1}
NO_DISTURBANCES: dict[str, float] = {k: 0.0 for k in DISTURBANCE_RATES}


def suite_conditions(suite: str) -> tuple[str, ...]:
    """The conditions a suite runs under: SayCan's only without disturbances, IM's both."""
    return ("none",) if suite == "saycan" else tuple(CONDITIONS)


@dataclass(frozen=True)
class KitchenSettings:
    """Everything that changes the results; a resumed run must use the same values."""

    suite: str  # key of KITCHEN_SUITES
    llm: str  # "embedded" | "openai" | "expert"
    seed: int
    max_steps: int  # skills per episode before the planner stops
    params: str = ""  # --param planner overrides, core.benchmark.param_text (e.g. planner:llm.expert.error_rate=0.2)

    def validate(self) -> None:
        if self.suite not in KITCHEN_SUITES:
            raise ValueError(f"suite must be one of {list(KITCHEN_SUITES)}, got {self.suite!r}")
        if self.max_steps < 1:
            raise ValueError("max_steps must be >= 1")
        planner_params(self.params)


# planner parameters the kitchen bench sets itself (a --param may not change them)
BENCH_PLANNER_PARAMS = ("transcript_dir", "llm.cassette_mode", "llm.cassette_path", "llm.expert.truth_dir")


def planner_params(params: str) -> dict[str, str]:
    """The planner's --param overrides of a kitchen run; ValueError for another node (the skills node is
    restarted with the instruction's start state per episode) or a parameter the bench sets."""
    from .benchmark import param_overrides

    over = param_overrides(params)
    other = sorted(set(over) - {"planner"})
    if other:
        raise ValueError(f"--param: the kitchen suites take planner parameters only, not {other}")
    mine = over.get("planner", {})
    clash = sorted(set(mine) & set(BENCH_PLANNER_PARAMS))
    if clash:
        raise ValueError(f"--param cannot set planner:{clash}: the bench sets it itself")
    return mine


@dataclass(frozen=True, order=True)
class KitchenKey:
    instruction: str  # Instruction.key, e.g. "nl_single_01"
    variant: str
    condition: str  # key of CONDITIONS
    index: int  # 0-based repetition within its cell

    def __str__(self) -> str:
        return f"{self.instruction} x {self.variant} ({self.condition}) #{self.index}"


def select_instructions(suite: Suite, families: Sequence[str] | None = None,
                        per_family: int | None = None) -> list[Instruction]:
    """The suite's instructions of `families` (all when None), the first `per_family` of each (all when
    None), in suite order; ValueError naming the families on an unknown one."""
    known = [f.key for f in suite.families]
    return first_of_groups(known, known if families is None else families, suite.of_family, per_family,
                           "families", f" of suite {suite.name!r}")


def plan_kitchen(instructions: Sequence[Instruction], variants: Sequence[str], conditions: Sequence[str],
                 episodes: int) -> list[KitchenKey]:
    """Every episode, cell by cell: condition, instruction, variant, then repetition."""
    if episodes < 1:
        raise ValueError("episodes must be >= 1")
    return [KitchenKey(i.key, v, c, n) for c in conditions for i in instructions for v in variants
            for n in range(episodes)]


def kitchen_seed(base_seed: int, key: KitchenKey) -> int:
    """The skills node's `kitchen.seed` of an episode: stable across runs and Python versions, the same
    for every variant (so variants meet the same disturbances when their skills are the same)."""
    digest = hashlib.sha256(f"{base_seed}/{key.instruction}/{key.condition}/{key.index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % 2**31


def _string_list(items: Sequence[str]) -> str:
    # an empty list would not type as a string array on the command line; the node drops "" entries
    return "[" + ", ".join(f"'{c}'" for c in items or [""]) + "]"


def skills_parameters(instr: Instruction, condition: str, seed: int) -> dict[str, str]:
    """The skills node's `kitchen.*` parameters (command-line values) that start the world in the
    instruction's start state under `condition`."""
    if condition not in CONDITIONS:
        raise ValueError(f"unknown condition {condition!r}; choose from {list(CONDITIONS)}")
    rates = DISTURBANCE_RATES if condition == "disturbances" else NO_DISTURBANCES
    params = {
        "kitchen.objects": _string_list(start_placements(instr)),
        "kitchen.robot_location": instr.start.robot_location,
        "kitchen.open_drawers": _string_list(sorted(instr.start.open_containers)),
        "kitchen.seed": str(seed),
    }
    params.update({f"kitchen.{k}": repr(float(v)) for k, v in rates.items()})
    return params


def goal_options(variant: KitchenVariant, max_steps: int, on: int = 1, off: int = 2) -> dict[str, str | int]:
    """ExecuteInstruction goal fields of a variant (on / off: ExecuteInstruction.Goal.OPTION_ON / _OFF);
    Scene and Human feedback are off in every kitchen variant."""
    def opt(flag: bool) -> int:
        return on if flag else off

    return {"strategy": variant.strategy, "prompt_profile": variant.prompt_profile,
            "object_feedback": opt(variant.object_feedback), "success_feedback": opt(variant.success_feedback),
            "scene_feedback": off, "human_feedback": off, "use_affordances": opt(variant.use_affordances),
            "max_steps": max_steps}


def chosen_skills(events: Iterable[tuple[str, str, Mapping[str, Any]]]) -> list[str]:
    """The skills the planner chose, in order, from transcript events (kind name as in TranscriptEvent
    without KIND_, text, data): every ROBOT_ACTION's text, then "done" when it terminated."""
    out: list[str] = []
    for kind, text, data in events:
        if kind == "ROBOT_ACTION":
            out.append(text.strip())
        elif kind == "ROBOT_THOUGHT" and data.get("done") and not data.get("marker"):
            out.append("done")
    return out


def transcript_events(path: Path) -> list[tuple[str, str, dict[str, Any]]]:
    """(kind, text, data) of every event of a transcript file written by the planner (JSON lines;
    `record: event` lines carry the events), for chosen_skills when re-scoring a recorded episode."""
    out: list[tuple[str, str, dict[str, Any]]] = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        if rec.get("record") == "event":
            data = rec.get("data")
            out.append((str(rec.get("kind", "")), str(rec.get("text", "")), data if isinstance(data, dict) else {}))
    return out


@dataclass
class KitchenRecord:
    """One finished kitchen episode: the score and what the bench saw. Times in s (wall clock)."""

    episode: KitchenEpisode
    seed: int  # kitchen.seed
    instruction_text: str
    steps: int
    planner_success: bool
    planner_error: str
    planner_reason: str
    transcript_path: str
    wall_s: float
    setup_s: float
    final_state: dict[str, Any] = field(default_factory=dict)  # robot, holding, objects, open
    started: float = 0.0  # s since the epoch

    @property
    def key(self) -> KitchenKey:
        e = self.episode
        return KitchenKey(e.instruction, e.variant, e.condition, e.index)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> KitchenRecord:
        return record_from_json(cls, KitchenEpisode, data)


class KitchenStore(RecordStore[KitchenRecord]):
    """`<out>/run.json` (settings) and `<out>/episodes.jsonl` (one KitchenRecord per line; core/store.py)."""

    def __init__(self, out_dir: Path, logger: logging.Logger | None = None) -> None:
        super().__init__(out_dir, KitchenRecord.from_json, logger or logging.getLogger("bench.kitchen_store"))


__all__ = ["DISTURBANCE_RATES", "IM_SUITE_VARIANTS", "KITCHEN_ROBOT", "KITCHEN_SUITES", "SAYCAN_SUITE_VARIANTS",
           "SUITE_VARIANTS", "VARIANT_LABELS", "KitchenKey", "KitchenRecord", "KitchenSettings", "KitchenStore",
           "KitchenVariant", "chosen_skills", "goal_options", "kitchen_seed", "plan_kitchen", "select_instructions",
           "skills_parameters", "suite_conditions", "transcript_events"]
