"""`monologue-bench --suite cape`, ROS-free parts: CAPE's household tasks (the paper's six Spot tasks x
two scenes, and generated ones) with ground-truth programs, the planner variants (CAPE's methods and
its baselines), what an episode recorded (the attempts from the transcript, the final state), its
metrics, and the resumable JSONL store.

Metrics (CAPE §IV, C l.161-171; requirements_statler_cape_multitalk.md §2.3), per episode:
- the plan: per step index the last attempted grounded action (CAPE's corrections and re-samples
  replace a failed step; Huang's open loop and SayCan keep it);
- %Exec: every plan step ran (no precondition or skill error left in the plan);
- %Aff: the fraction of plan steps that ran, averaged over the plans that are not entirely
  executable (CAPE: "in cases where the entire plan is not afforded execution");
- LCS: longest common subsequence of the plan and the ground-truth program, in % of the longer one
  (Puig et al.'s normalisation);
- %GS: the state attributes (location, grabbed, open, turned on; the robot's place and posture)
  that match between the final state and the ground-truth program's final state, over the union
  of the objects of both;
- Steps: plan length; Corrections: corrective re-prompts or re-samples (attempts after a failure at
  the same step);
- precondition errors by CAPE difficulty level (1-4), each resolved or not: an error at step i is
  resolved when step i then ran (the plan progressed to step i+1 with step i executed) before the
  next error (CAPE C l.204); an open-loop plan that only moves on does not resolve it.
- Goal (ours, in place of CAPE's human %Correct): the task's goal atoms hold on the final state.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from monologue_domain.kitchen.household import (
    SCENES,
    Atom,
    atom_text,
    generate_tasks,
    goal_holds,
    household_text,
    parse_atom,
    reference_program,
    run_program,
    start_with,
)
from monologue_domain.kitchen.skills import PROPOSITIONS
from monologue_domain.kitchen.state import HELD, KitchenState

from .selection import first_of_groups
from .store import RecordStore, record_from_json

CAPE_SUITE = "cape"
CAPE_ROBOT = "sim_household"
TASK_SETS = ("paper", "generated")


@dataclass(frozen=True)
class CapeVariant:
    """One method row of CAPE Tables I-II as planner parameters and goal options."""

    key: str
    label: str
    strategy: str  # "cape" or "saycan"
    method: str  # planner.cape.method ("" for SayCan)
    affordances: str  # household.affordances: "perfect" | "noisy"
    group: str  # "Baselines" | "CAPE: Zero-Shot (Z)" | "CAPE: Few-Shot (F)"


CAPE_VARIANTS: dict[str, CapeVariant] = {v.key: v for v in (
    CapeVariant("huang", "Huang et al. [3]", "cape", "huang", "perfect", "Baselines"),
    CapeVariant("resampling", "Re-sampling", "cape", "resampling", "perfect", "Baselines"),
    CapeVariant("saycan_perfect", "SayCan (Perfect)", "saycan", "", "perfect", "Baselines"),
    CapeVariant("saycan_noisy", "SayCan (Noisy)", "saycan", "", "noisy", "Baselines"),
    CapeVariant("Z_S", "Success Only (Z_S)", "cape", "Z_S", "perfect", "CAPE: Zero-Shot (Z)"),
    CapeVariant("Z_I", "Implicit Cause (Z_I)", "cape", "Z_I", "perfect", "CAPE: Zero-Shot (Z)"),
    CapeVariant("Z_E", "Explicit Cause (Z_E)", "cape", "Z_E", "perfect", "CAPE: Zero-Shot (Z)"),
    CapeVariant("Z_E+S_g", "Explicit Cause (Z_E + S_g)", "cape", "Z_E+S_g", "perfect", "CAPE: Zero-Shot (Z)"),
    CapeVariant("F_E", "Explicit Cause (F_E)", "cape", "F_E", "perfect", "CAPE: Few-Shot (F)"),
    CapeVariant("F_E+S_g", "Explicit Cause (F_E + S_g)", "cape", "F_E+S_g", "perfect", "CAPE: Few-Shot (F)"),
)}

# CAPE Tables I (VirtualHome, 700) and II (Spot, 12), verbatim: variant -> metric -> value (None = N/A).
PAPER_METRICS = ("correct", "exec", "aff", "gs", "lcs", "kappa", "steps", "corrections")
_T1 = {
    "huang": (38.15, 72.52, 87.72, 95.54, 20.80, 0.47, 7.21, None),
    "resampling": (38.89, 76.43, 75.24, 95.65, 23.45, 0.45, 6.87, 7.67),
    "saycan_perfect": (28.89, 100.00, 100.00, 94.17, 22.98, 0.33, 7.56, None),
    "saycan_noisy": (22.59, 97.33, 99.89, 94.68, 19.43, 0.46, 5.97, None),
    "Z_S": (41.11, 97.57, 90.46, 95.49, 23.79, 0.38, 7.68, 1.08),
    "Z_I": (42.22, 97.86, 90.05, 95.64, 23.20, 0.51, 7.48, 0.93),
    "Z_E": (42.59, 98.29, 91.69, 95.69, 23.48, 0.45, 8.16, 0.72),
    "Z_E+S_g": (48.52, 98.57, 91.28, 96.23, 23.30, 0.35, 8.81, 1.31),
    "F_E": (47.04, 98.57, 92.29, 96.05, 24.20, 0.41, 8.69, 0.89),
    "F_E+S_g": (49.63, 96.29, 90.93, 96.29, 23.47, 0.39, 9.35, 1.82),
}
_T2 = {
    "huang": (16.67, 41.64, 56.46, 66.03, 26.77, 0.28, 2.40, None),
    "resampling": (13.33, 75.00, 47.98, 67.33, 32.92, 0.71, 4.60, 13.19),
    "saycan_perfect": (28.33, 83.33, 83.33, 68.02, 41.13, 0.26, 6.80, None),
    "saycan_noisy": (16.67, 66.67, 79.13, 67.54, 38.36, 0.22, 6.80, None),
    "Z_S": (18.33, 75.00, 43.05, 66.02, 32.45, 0.28, 3.04, 2.25),
    "Z_I": (20.00, 75.00, 52.37, 66.25, 32.44, 0.32, 3.14, 1.83),
    "Z_E": (31.67, 100.00, 79.69, 69.18, 48.12, 0.11, 6.30, 1.91),
    "Z_E+S_g": (23.33, 100.00, 79.04, 69.85, 46.68, 0.12, 6.30, 1.73),
    "F_E": (45.00, 100.00, 81.36, 77.91, 65.07, 0.23, 11.70, 2.91),
    "F_E+S_g": (50.00, 100.00, 80.70, 77.40, 69.77, 0.12, 11.30, 2.90),
}
PAPER_TABLES: dict[str, dict[str, dict[str, float | None]]] = {
    "paper": {v: dict(zip(PAPER_METRICS, row)) for v, row in _T2.items()},  # Table II: Spot, 6 tasks x 2 scenes
    "generated": {v: dict(zip(PAPER_METRICS, row)) for v, row in _T1.items()},  # Table I: VirtualHome
}
PAPER_TABLE_NAMES = {"paper": "CAPE Table II (Spot, 6 tasks x 2 scenes = 12)",
                     "generated": "CAPE Table I (VirtualHome, 100 tasks x 7 scenes = 700)"}


# ---- tasks ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CapeTask:
    """One benchmark task in one scene, with its ground-truth program (skill, args)."""

    key: str  # e.g. "paper_phone_lab", "gen_lab_03"
    text: str
    scene: str  # key of household.SCENES
    source: str  # "paper" | "generated"
    goal: tuple[Atom, ...]
    reference: tuple[tuple[str, tuple[str, ...]], ...]
    held: str = ""  # held at the start
    standing: bool = False  # starts standing (else sitting)

    def start(self) -> KitchenState:
        return start_with(SCENES[self.scene]()[1], self.held, self.standing)

    def reference_texts(self) -> list[str]:
        return [household_text(s, a) for s, a in self.reference]

    def reference_final(self) -> KitchenState:
        return run_program(SCENES[self.scene]()[0], self.start(), self.reference)


def _task(key: str, text: str, scene: str, source: str, goal: Sequence[Atom], held: str = "",
          standing: bool = False) -> CapeTask:
    sc, start = SCENES[scene]()
    ref = reference_program(sc, start_with(start, held, standing), goal)
    return CapeTask(key, text, scene, source, tuple(goal), tuple(ref), held, standing)


def demonstration_tasks(prompt_dir: Path, name: str) -> list[str]:
    """The tasks of a CAPE demonstration file (demonstrations and correction examples)."""
    raw = yaml.safe_load((Path(prompt_dir) / f"{name}.yaml").read_text(encoding="utf-8")) or {}
    return [str(d["task"]) for d in (raw.get("demonstrations") or []) + (raw.get("corrections") or [])]


@dataclass(frozen=True)
class CapeSuite:
    """config/benchmarks/cape.yaml, loaded: the tasks and the suite-wide settings."""

    title: str
    demonstrations: str
    prompt_profile: str
    noisy_flip: float
    tasks: tuple[CapeTask, ...]

    def by_key(self) -> dict[str, CapeTask]:
        return {t.key: t for t in self.tasks}

    def of_source(self, source: str) -> list[CapeTask]:
        return [t for t in self.tasks if t.source == source]


def load_cape_suite(config_dir: Path) -> CapeSuite:
    """Load config/benchmarks/cape.yaml; the paper tasks get reference programs from their goals, the
    generated ones are drawn (disjoint from the demonstration file's tasks); ValueError on a problem."""
    path = Path(config_dir) / "benchmarks" / f"{CAPE_SUITE}.yaml"
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected a mapping")
    demos = str(raw.get("demonstrations", ""))
    tasks: list[CapeTask] = []
    for t in raw.get("paper_tasks") or []:
        for scene, atoms in (t.get("goals") or {}).items():
            if scene not in SCENES:
                raise ValueError(f"{path}: task {t.get('key')}: unknown scene {scene!r}")
            goal = [parse_atom(a) for a in atoms]
            tasks.append(_task(f"paper_{t['key']}_{scene}", str(t["text"]), scene, "paper", goal))
    gen = raw.get("generated") or {}
    exclude = demonstration_tasks(Path(config_dir) / "prompts", demos) + [t.text for t in tasks]
    for g in generate_tasks(list(gen.get("scenes") or []), int(gen.get("per_scene", 0)), int(gen.get("seed", 0)),
                            exclude):
        tasks.append(_task(g.key, g.text, g.scene, "generated", g.goal, g.held, g.standing))
    flip = float(raw.get("noisy_flip", 0.06))
    if not 0.0 <= flip <= 1.0:
        raise ValueError(f"{path}: noisy_flip must be in [0, 1]")
    return CapeSuite(str(raw.get("title", "CAPE")), demos, str(raw.get("prompt_profile", "household")), flip,
                     tuple(tasks))


def select_tasks(suite: CapeSuite, sets: Sequence[str], limit: int | None = None) -> list[CapeTask]:
    """The tasks of `sets` ("paper", "generated"), the first `limit` of each (all when None)."""
    return first_of_groups(TASK_SETS, sets, suite.of_source, limit, "task sets")


# ---- settings, keys, parameters -------------------------------------------------------------------
@dataclass(frozen=True)
class CapeSettings:
    """Everything that changes the results; a resumed run must use the same values."""

    suite: str
    llm: str
    seed: int
    max_steps: int
    params: str = ""  # --param planner:name=value overrides (core/benchmark.py param_text)

    def validate(self) -> None:
        if self.suite != CAPE_SUITE:
            raise ValueError(f"suite must be {CAPE_SUITE!r}")
        if self.max_steps < 1:
            raise ValueError("max_steps must be >= 1")


@dataclass(frozen=True, order=True)
class CapeKey:
    variant: str  # first: the planner is restarted per variant
    task: str
    index: int

    def __str__(self) -> str:
        return f"{self.task} x {self.variant} #{self.index}"


def plan_cape(tasks: Sequence[CapeTask], variants: Sequence[str], episodes: int) -> list[CapeKey]:
    """Every episode, variant by variant (one planner start per variant), then task, then repetition."""
    if episodes < 1:
        raise ValueError("episodes must be >= 1")
    bad = [v for v in variants if v not in CAPE_VARIANTS]
    if bad:
        raise ValueError(f"unknown variants {bad}; choose from {list(CAPE_VARIANTS)}")
    return [CapeKey(v, t.key, n) for v in variants for t in tasks for n in range(episodes)]


def _string_list(items: Sequence[str]) -> str:
    return "[" + ", ".join(f"'{c}'" for c in items or [""]) + "]"


def skills_parameters(task: CapeTask, variant: CapeVariant, seed: int, noisy_flip: float) -> dict[str, str]:
    """The skills node's `household.*` parameters (command-line values) of an episode."""
    return {
        "household.scene": task.scene,
        "household.objects": _string_list([f"{task.held}@{HELD}"] if task.held else []),
        "household.sitting": "false" if task.standing else "true",
        "household.seed": str(seed),
        "household.affordances": variant.affordances,
        "household.affordance_flip": repr(float(noisy_flip)),
        "household.skill_duration": "0.05",
    }


def planner_parameters(variant: CapeVariant, demonstrations: str) -> dict[str, str]:
    """The planner's parameters of a variant (it is restarted per variant): strategy and CAPE method."""
    params = {"strategy": variant.strategy}
    if variant.strategy == "cape":
        params.update({"cape.method": variant.method, "cape.demonstrations": demonstrations})
    return params


def goal_options(variant: CapeVariant, prompt_profile: str, max_steps: int, on: int = 1,
                 off: int = 2) -> dict[str, str | int]:
    """ExecuteInstruction goal fields: no feedback in the prompt; SayCan uses the affordances."""
    return {"strategy": variant.strategy, "prompt_profile": prompt_profile, "object_feedback": off,
            "success_feedback": off, "scene_feedback": off, "human_feedback": off,
            "use_affordances": on if variant.strategy == "saycan" else off, "max_steps": max_steps}


# ---- what an episode did --------------------------------------------------------------------------
@dataclass(frozen=True)
class AttemptRec:
    """One executed attempt: a grounded action sent to the skills node, and whether it ran."""

    step: int
    skill: str
    args: tuple[str, ...]
    text: str
    ok: bool
    proposition: str = ""  # the violated precondition ("" if it ran, or another failure)
    difficulty: int = 0  # CAPE's level 1-4 of the proposition (0: none / not a precondition)


def _proposition(line: str) -> str:
    head = line.split(":", 1)[0].strip() if ":" in line else ""
    return head if head in PROPOSITIONS else ""


def attempts_from_events(events: Iterable[tuple[str, str, Mapping[str, Any]]]) -> list[AttemptRec]:
    """The attempts of an episode from its transcript events (kind without KIND_, text, data): every
    ROBOT_ACTION is an attempt (its `step`, else the count so far), failed when an ERROR with an
    `error_name` follows before the next ROBOT_ACTION (cape and saycan transcripts alike)."""
    out: list[dict[str, Any]] = []
    for kind, text, data in events:
        if kind == "ROBOT_ACTION":
            step = data.get("step")
            out.append({"step": int(step) if isinstance(step, int) else len(out) + 1,
                        "skill": str(data.get("skill", "")), "args": tuple(str(a) for a in data.get("args") or ()),
                        "text": text.strip(), "ok": True, "proposition": "", "difficulty": 0})
        elif kind == "ERROR" and out and data.get("error_name") and out[-1]["ok"]:
            last = out[-1]
            last["ok"] = False
            prop = str(data.get("proposition") or "") or _proposition(str(data.get("failed_precondition") or ""))
            last["proposition"] = prop
            last["difficulty"] = PROPOSITIONS[prop][0] if prop in PROPOSITIONS else 0
    return [AttemptRec(**a) for a in out]


def plan_of(attempts: Sequence[AttemptRec]) -> list[AttemptRec]:
    """Per step index, the last attempt (the plan after corrections and re-samples), in step order."""
    last: dict[int, AttemptRec] = {}
    for a in attempts:
        last[a.step] = a
    return [last[k] for k in sorted(last)]


def corrections_of(attempts: Sequence[AttemptRec]) -> int:
    """Attempts that re-tried a step after a failure (corrective re-prompts or re-samples)."""
    seen: set[int] = set()
    n = 0
    for a in attempts:
        if a.step in seen:
            n += 1
        seen.add(a.step)
    return n


@dataclass(frozen=True)
class ErrorRec:
    step: int
    proposition: str
    difficulty: int
    resolved: bool


def errors_of(attempts: Sequence[AttemptRec]) -> list[ErrorRec]:
    """Every precondition error (an attempt refused with a known proposition), resolved when an attempt
    at the same step ran before the next error (CAPE C l.204: the plan reached step i+1)."""
    out: list[ErrorRec] = []
    for i, a in enumerate(attempts):
        if a.ok or not a.proposition:
            continue
        resolved = False
        for b in attempts[i + 1:]:
            if not b.ok:
                break
            if b.step == a.step:
                resolved = True
                break
        out.append(ErrorRec(a.step, a.proposition, a.difficulty, resolved))
    return out


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two sequences."""
    if not a or not b:
        return 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def lcs_percent(plan: Sequence[str], reference: Sequence[str]) -> float:
    """LCS in % of the longer program (0 when both are empty)."""
    n = max(len(plan), len(reference))
    return 100.0 * lcs_length(plan, reference) / n if n else 0.0


def state_attributes(state: KitchenState, objects: Iterable[str]) -> dict[tuple[str, str], str]:
    """The attributes %GS compares: per object location, grabbed, open, turned on; the robot's place
    and posture. Objects missing from the state read as absent."""
    out: dict[tuple[str, str], str] = {}
    for o in objects:
        where = state.object_locations.get(o, "<absent>")
        out[(o, "location")] = where
        out[(o, "grabbed")] = str(where == HELD)
        out[(o, "open")] = str(o in state.open_containers)
        out[(o, "turned_on")] = str("on" in state.states.get(o, frozenset()))
    out[("robot", "location")] = state.robot_location
    out[("robot", "posture")] = "/".join(sorted(state.states.get("robot", frozenset())))
    return out


def gs_counts(final: KitchenState, reference: KitchenState) -> tuple[int, int]:
    """(matching attributes, attributes) between two final states over the union of their objects."""
    objects = sorted(set(final.object_locations) | set(reference.object_locations))
    a, b = state_attributes(final, objects), state_attributes(reference, objects)
    return sum(a[k] == b[k] for k in a), len(a)


@dataclass
class CapeEpisode:
    """One scored episode."""

    task: str
    source: str  # "paper" | "generated"
    scene: str
    variant: str
    index: int
    executable: bool  # %Exec
    plan_steps: int  # Steps
    afforded_steps: int  # plan steps that ran
    corrections: int
    lcs: float  # %
    gs_match: int
    gs_total: int
    goal: bool  # the goal atoms hold on the final state (ours, for %Correct)
    errors: list[dict[str, Any]] = field(default_factory=list)  # ErrorRec as dicts
    plan: list[str] = field(default_factory=list)  # the plan's action texts
    reference: list[str] = field(default_factory=list)

    @property
    def aff(self) -> float:
        return self.afforded_steps / self.plan_steps if self.plan_steps else 1.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def score_episode(task: CapeTask, variant: str, index: int, attempts: Sequence[AttemptRec],
                  final: KitchenState) -> CapeEpisode:
    plan = plan_of(attempts)
    ref_texts = task.reference_texts()
    texts = [household_text(a.skill, a.args) if a.skill else a.text.lower() for a in plan]
    gs = gs_counts(final, task.reference_final())
    return CapeEpisode(
        task.key, task.source, task.scene, variant, index, executable=all(a.ok for a in plan),
        plan_steps=len(plan), afforded_steps=sum(a.ok for a in plan), corrections=corrections_of(attempts),
        lcs=lcs_percent(texts, ref_texts), gs_match=gs[0], gs_total=gs[1], goal=goal_holds(final, task.goal),
        errors=[asdict(e) for e in errors_of(attempts)], plan=texts, reference=ref_texts)


def state_json(state: KitchenState) -> dict[str, Any]:
    return {"robot": state.robot_location, "holding": state.holding, "objects": dict(state.object_locations),
            "open": sorted(state.open_containers), "states": {k: sorted(v) for k, v in state.states.items()},
            "visited": sorted(state.visited)}


def state_from_json(data: Mapping[str, Any]) -> KitchenState:
    return KitchenState(str(data["robot"]), data.get("holding"), dict(data["objects"]), frozenset(data["open"]),
                        {k: frozenset(v) for k, v in (data.get("states") or {}).items()},
                        frozenset(data.get("visited") or ()))


@dataclass
class CapeRecord:
    """One finished episode: what the bench saw (attempts, final state) and its score. Times in s."""

    episode: CapeEpisode
    instruction_text: str
    attempts: list[dict[str, Any]]
    final_state: dict[str, Any]
    steps: int
    planner_success: bool
    planner_error: str
    planner_reason: str
    transcript_path: str
    seed: int
    wall_s: float
    setup_s: float
    started: float = 0.0

    @property
    def key(self) -> CapeKey:
        return CapeKey(self.episode.variant, self.episode.task, self.episode.index)

    def attempt_recs(self) -> list[AttemptRec]:
        return [AttemptRec(**{**a, "args": tuple(a["args"])}) for a in self.attempts]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CapeRecord:
        return record_from_json(cls, CapeEpisode, data)


def rescore(rec: CapeRecord, task: CapeTask) -> CapeRecord:
    """The record scored again from its attempts and final state (a report after a metric change)."""
    ep = score_episode(task, rec.episode.variant, rec.episode.index, rec.attempt_recs(),
                       state_from_json(rec.final_state))
    return CapeRecord(**{**{k: getattr(rec, k) for k in rec.__dataclass_fields__}, "episode": ep})


class CapeStore(RecordStore[CapeRecord]):
    """`<out>/run.json` (settings) and `<out>/episodes.jsonl` (one CapeRecord per line; core/store.py)."""

    def __init__(self, out_dir: Path, logger: logging.Logger | None = None) -> None:
        super().__init__(out_dir, CapeRecord.from_json, logger or logging.getLogger("bench.cape_store"))


__all__ = ["CAPE_ROBOT", "CAPE_SUITE", "CAPE_VARIANTS", "PAPER_TABLES", "TASK_SETS", "AttemptRec", "CapeEpisode",
           "CapeKey", "CapeRecord", "CapeSettings", "CapeStore", "CapeSuite", "CapeTask", "CapeVariant", "ErrorRec",
           "atom_text", "attempts_from_events", "corrections_of", "errors_of", "gs_counts", "goal_options",
           "lcs_length", "lcs_percent", "load_cape_suite", "plan_cape", "plan_of", "planner_parameters", "rescore",
           "score_episode", "select_tasks", "skills_parameters", "state_from_json", "state_json"]
