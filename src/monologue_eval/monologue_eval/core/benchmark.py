"""The IM Table 1 benchmark without ROS: planner variants, the episode plan and its seeds, a resumable
result store, Wilson intervals, the episode wall-time split, and the episode loop.

IM §4.1 / Table 1: 8 task families x planner variants, 50 episodes per cell, k = 15 steps, binary
ground-truth reward. `monologue_eval.bench` runs the episodes through the real node graph.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from .store import InfrastructureError as InfrastructureError  # re-exported (core/store.py)
from .store import RecordStore, Runner, run_pending
from .store import SettingsMismatch as SettingsMismatch  # re-exported

K_STEPS = 15  # IM §4.1: "We use k=15."
PAPER_EPISODES = 50  # IM Table 1: "averaged across 50 episodes"


@dataclass(frozen=True)
class Variant:
    """One planner column of IM Table 1, as ExecuteInstruction goal options."""

    key: str
    label: str  # column header, as in IM Table 1
    prompt_profile: str  # config/prompts/<name>.yaml
    object_feedback: bool  # object list once, at the start
    success_feedback: bool  # "Success: True/False" after every step
    scene_feedback: bool  # goal state, "Scene: You have completed [...]" and "Robot thought:" (IM A.1)
    description: str


VARIANTS: dict[str, Variant] = {v.key: v for v in (
    Variant("llm_object", "LLM + Object", "im_sim_object", True, False, False,
            "open loop: the objects are listed once at the start, no feedback after the steps"),
    Variant("im_object_success", "IM: Object + Success", "im_sim_object_success", True, True, False,
            "objects at the start, success of every step"),
    Variant("im_object_scene", "IM: Object + Scene", "im_sim_object_scene", True, False, True,
            "objects at the start, goal state, task progress after every step, chain of thought"),
)}

# IM Table 1, verbatim (success %, 50 episodes each, Ravens-based sim with test-time noise). The
# CLIPort columns are kept for reference; our variants are the three LLM columns.
PAPER_TABLE1: dict[str, dict[str, float]] = {
    "pick_place": {"cliport": 24.0, "cliport_oracle": 74.0,
                   "llm_object": 80.0, "im_object_success": 90.0, "im_object_scene": 94.0},
    "stack": {"cliport": 2.0, "cliport_oracle": 32.0,
              "llm_object": 4.0, "im_object_success": 10.0, "im_object_scene": 26.0},
    "blocks_to_location": {"cliport": 2.0, "cliport_oracle": 32.0,
                           "llm_object": 30.0, "im_object_success": 28.0, "im_object_scene": 30.0},
    "blocks_to_bowl": {"cliport": 32.0, "cliport_oracle": 94.0,
                       "llm_object": 52.0, "im_object_success": 46.0, "im_object_scene": 56.0},
    "different_corners": {"cliport": 0.0, "cliport_oracle": 0.0,
                          "llm_object": 20.0, "im_object_success": 20.0, "im_object_scene": 26.0},
    "matching_bowls": {"cliport": 0.0, "cliport_oracle": 0.0,
                       "llm_object": 56.0, "im_object_success": 70.0, "im_object_scene": 82.0},
    "mismatched_bowls": {"cliport": 0.0, "cliport_oracle": 0.0,
                         "llm_object": 62.0, "im_object_success": 76.0, "im_object_scene": 86.0},
    "stack_on_location": {"cliport": 0.0, "cliport_oracle": 0.0,
                          "llm_object": 0.0, "im_object_success": 4.0, "im_object_scene": 6.0},
}

STRATEGIES = {"scoring": "inner_monologue", "generative": "inner_monologue_generative"}
WORDINGS = ("original", "paraphrase")
MIN_WORDINGS = 3  # per family (issue 18)


def load_wordings(path: Path, families: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
    """The paraphrase list (config/benchmarks/wordings.yaml): family -> wordings. `families` maps each family
    to the slots its tasks have; ValueError naming the file for a missing family, too few wordings or an
    unknown placeholder."""
    import string

    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise ValueError(f"{path}: cannot read the wordings: {e}") from e
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping family -> list of wordings")
    out: dict[str, tuple[str, ...]] = {}
    problems = [f"unknown family {k!r}" for k in data if k not in families]
    for family, slots in families.items():
        texts = data.get(family)
        if not isinstance(texts, list) or not all(isinstance(t, str) and t.strip() for t in texts):
            problems.append(f"{family}: expected a list of non-empty strings")
            continue
        if len(texts) < MIN_WORDINGS:
            problems.append(f"{family}: {len(texts)} wordings, at least {MIN_WORDINGS} needed")
        allowed = set(slots) | ({"prep"} if "target" in slots else set())
        for t in texts:
            names = {f for _, f, _, _ in string.Formatter().parse(t) if f is not None}
            if names - allowed:
                problems.append(f"{family}: {t!r} uses {sorted(names - allowed)}; allowed {sorted(allowed)}")
        out[family] = tuple(texts)
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))
    return out


@dataclass(frozen=True)
class Settings:
    """Everything that changes the results; a resumed run must use the same values."""

    llm: str  # "embedded" | "openai"
    seed: int
    strategy: str  # key of STRATEGIES
    affordances: bool  # SayCan-style affordances in the planner (IM's sim has none)
    place_noise_m: float  # N(0, std) on place positions, m (IM: 0.02)
    max_steps: int  # k
    wording: str = "original"  # "original" (IM Table 1's) | "paraphrase" (config/benchmarks/wordings.yaml)
    # node parameter overrides of the whole run (ablations), canonical `node:name=value` items joined by
    # "; " in sorted order ("" = none); see `param_text` / `param_overrides`
    params: str = ""

    def validate(self) -> None:
        param_overrides(self.params)  # ValueError on a malformed item
        if self.wording not in WORDINGS:
            raise ValueError(f"wording must be one of {list(WORDINGS)}, got {self.wording!r}")
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {list(STRATEGIES)}, got {self.strategy!r}")
        if self.max_steps < 1:
            raise ValueError("max_steps must be >= 1")
        if not 0.0 <= self.place_noise_m <= 0.1:
            raise ValueError("place noise must be within 0-0.1 m")


PARAM_SEPARATOR = "; "


def param_text(params: Mapping[str, Mapping[str, str]]) -> str:
    """{node: {parameter: value}} (as `monologue_bringup.up.parse_node_params` gives) -> the canonical
    Settings.params text, sorted by node and parameter. ValueError on an empty name or a value holding
    the separator."""
    items = []
    for node in sorted(params):
        for name in sorted(params[node]):
            value = str(params[node][name]).strip()
            if not node.strip() or not name.strip() or PARAM_SEPARATOR in value:
                raise ValueError(f"bad parameter override {node}:{name}={value!r}")
            items.append(f"{node.strip()}:{name.strip()}={value}")
    return PARAM_SEPARATOR.join(items)


def param_overrides(text: str) -> dict[str, dict[str, str]]:
    """Settings.params text -> {node: {parameter: value}}."""
    out: dict[str, dict[str, str]] = {}
    for item in (i for i in text.split(PARAM_SEPARATOR) if i.strip()):
        node, _, rest = item.partition(":")
        name, eq, value = rest.partition("=")
        if not (eq and node and name):
            raise ValueError(f"malformed parameter override {item!r} (node:name=value)")
        out.setdefault(node, {})[name] = value
    return out


@dataclass(frozen=True, order=True)
class EpisodeKey:
    task: str
    variant: str
    index: int  # 0-based episode number within its cell


@dataclass
class EpisodeRecord:
    """One finished episode. Times in s (wall clock); tokens as counted by the LLM backend."""

    task: str
    variant: str
    index: int
    seed: int  # scene seed (colours, slots and positions)
    instruction: str
    reward: bool  # ground-truth reward on the final world state
    block_colors: list[str] = field(default_factory=list)
    bowl_colors: list[str] = field(default_factory=list)
    slots: dict[str, str] = field(default_factory=dict)
    steps: int = 0  # skills executed
    planner_success: bool = False  # the planner ended the episode itself (said done)
    planner_error: str = ""  # ExecuteInstruction error code name
    planner_reason: str = ""
    transcript_path: str = ""
    wall_s: float = 0.0  # goal sent -> final state read
    llm_s: float = 0.0  # inside the LLM backend
    motion_s: float = 0.0  # skill execution (Robot action -> its feedback)
    rest_s: float = 0.0  # wall - LLM - motion: ROS round trips, perception, success checks
    setup_s: float = 0.0  # (re)starting the scene's nodes until the scene is observed
    llm_calls: int = 0
    prompt_tokens: int = 0  # prompt tokens over all calls
    new_tokens: int = 0  # tokens actually evaluated (after KV-cache reuse)
    completion_tokens: int = 0  # generated tokens
    final_state: dict[str, list[float]] = field(default_factory=dict)  # name -> [x, y, z] m
    started: float = 0.0  # s since the epoch
    # the planner's step decisions and those with a single candidate (EPISODE_END event; -1: not reported)
    decisions: int = -1
    single_candidate: int = -1

    @property
    def key(self) -> EpisodeKey:
        return EpisodeKey(self.task, self.variant, self.index)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> EpisodeRecord:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in obj.items() if k in names})


def plan_episodes(tasks: Sequence[str], variants: Sequence[str], episodes: int) -> list[EpisodeKey]:
    """Every (task, variant, index), in the order they run: index outermost, so an interrupted run
    has covered every cell; then variant, so consecutive episodes share the variant's prompt profile
    and the LLM reuses its few-shot preamble from the KV cache (about 1,000 tokens per episode)."""
    if episodes < 1:
        raise ValueError("episodes must be >= 1")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise ValueError(f"unknown variants {unknown}; known: {list(VARIANTS)}")
    unknown = [t for t in tasks if t not in PAPER_TABLE1]
    if unknown:
        raise ValueError(f"unknown tasks {unknown}; known: {list(PAPER_TABLE1)}")
    return [EpisodeKey(t, v, i) for i in range(episodes) for v in variants for t in tasks]


def episode_seed(base_seed: int, task: str, index: int, attempt: int = 0) -> int:
    """Scene seed of an episode. The variant is not in it: every variant sees the same scenes."""
    digest = hashlib.sha256(f"{base_seed}:{task}:{index}:{attempt}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % 1_000_000


# ----- resumable store --------------------------------------------------------------------------
class ResultStore(RecordStore[EpisodeRecord]):
    """`<out>/run.json` (Settings) and `<out>/episodes.jsonl` (one EpisodeRecord per line; core/store.py)."""

    def __init__(self, out_dir: Path, logger: logging.Logger | None = None) -> None:
        super().__init__(out_dir, EpisodeRecord.from_json, logger)


# ----- statistics --------------------------------------------------------------------------------
def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (95% for the default z); (0, 1) when n = 0."""
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class Cell:
    """One task x variant cell: our successes over n episodes, and the paper's rate (%)."""

    task: str
    variant: str
    n: int
    successes: int
    paper: float | None

    @property
    def rate(self) -> float:
        return self.successes / self.n if self.n else math.nan

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.successes, self.n)


def summarize(records: Iterable[EpisodeRecord], tasks: Sequence[str], variants: Sequence[str]) -> list[Cell]:
    """Cells in table order (tasks, then variants)."""
    counts: dict[tuple[str, str], list[int]] = {}
    for r in records:
        c = counts.setdefault((r.task, r.variant), [0, 0])
        c[0] += 1
        c[1] += int(r.reward)
    cells = []
    for t in tasks:
        for v in variants:
            n, k = counts.get((t, v), [0, 0])
            cells.append(Cell(t, v, n, k, PAPER_TABLE1.get(t, {}).get(v)))
    return cells


# ----- timing --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LlmUsage:
    calls: int = 0
    wall_s: float = 0.0
    prompt_tokens: int = 0
    new_tokens: int = 0
    completion_tokens: int = 0


def llm_usage(cassette_lines: Iterable[str]) -> LlmUsage:
    """Sum the responses of the planner's recorded LLM calls (cassette JSONL records)."""
    calls, wall, prompt, new, completion = 0, 0.0, 0, 0, 0
    for resp in _responses(cassette_lines):
        calls += 1
        wall += float(resp.get("wall_time_s", 0.0))
        prompt += int(resp.get("prompt_tokens", 0))
        new += int(resp.get("new_tokens_processed", 0))
        completion += int(resp.get("completion_tokens", 0))
    return LlmUsage(calls, wall, prompt, new, completion)


def llm_intervals(stamped_lines: Iterable[tuple[float, str]]) -> list[tuple[float, float]]:
    """(start, end) s of each recorded LLM call, from the time its record appeared (its end, s since
    the epoch) and the call's own duration."""
    out = []
    for t, line in stamped_lines:
        for resp in _responses([line]):
            out.append((t - float(resp.get("wall_time_s", 0.0)), t))
    return out


def _responses(lines: Iterable[str]) -> list[dict[str, Any]]:
    out = []
    for line in lines:
        if not line.strip():
            continue
        try:
            resp = json.loads(line)["response"]
        except (json.JSONDecodeError, KeyError, TypeError):
            continue
        if isinstance(resp, dict):
            out.append(resp)
    return out


def motion_time(events: Sequence[tuple[str, float]], llm: Sequence[tuple[float, float]] = ()) -> float:
    """Skill execution time, s: from each `ROBOT_ACTION` event to the next event, minus LLM calls in
    between (without Success feedback the next event is the next step, planned after the skill).

    `events` are (kind name, stamp s since the epoch) in transcript order; `llm` are (start, end) s."""
    total = 0.0
    for (kind, start), (_next_kind, end) in zip(events, events[1:]):
        if kind == "ROBOT_ACTION" and end > start:
            busy = sum(max(0.0, min(end, b) - max(start, a)) for a, b in llm)
            total += max(0.0, end - start - busy)
    return total


def split_wall_time(wall_s: float, llm_s: float, motion_s: float) -> tuple[float, float, float]:
    """(LLM, motion, rest) with rest = wall - LLM - motion, never negative."""
    return (llm_s, motion_s, max(0.0, wall_s - llm_s - motion_s))


# ----- the loop -------------------------------------------------------------------------------------
EpisodeRunner = Runner[EpisodeKey, EpisodeRecord]


@dataclass
class Progress:
    """Episodes done (this run and earlier ones), successes among them, and an ETA (s)."""

    total: int
    done: int = 0
    successes: int = 0
    session_s: list[float] = field(default_factory=list)  # wall time of each episode run now

    @property
    def eta_s(self) -> float | None:
        if not self.session_s:
            return None
        return (self.total - self.done) * sum(self.session_s) / len(self.session_s)

    def line(self, rec: EpisodeRecord | None = None, width: int = 24) -> str:
        filled = int(width * self.done / self.total) if self.total else width
        bar = "#" * filled + "." * (width - filled)
        rate = f"{self.successes}/{self.done} = {100 * self.successes / self.done:.0f}%" if self.done else "-"
        eta = self.eta_s
        eta_text = "-" if eta is None else _duration(eta)
        text = f"[{bar}] {self.done}/{self.total}  success so far {rate}  ETA {eta_text}"
        if rec is not None:
            text += (f"  | {rec.task} x {rec.variant} #{rec.index}: reward {int(rec.reward)}, "
                     f"{rec.steps} steps, {rec.setup_s + rec.wall_s:.0f} s")
        return text


def run_benchmark(
    plan: Sequence[EpisodeKey],
    store: ResultStore,
    runner: EpisodeRunner,
    on_progress: Callable[[Progress, EpisodeRecord | None], None],
    logger: logging.Logger,
    retries: int = 1,
) -> list[EpisodeRecord]:
    """Run every planned episode not already in the store; return all planned records.

    An InfrastructureError is retried `retries` times after `runner.recover()`; then it propagates,
    and a rerun with the same store continues from there.
    """
    wanted = set(plan)
    progress = Progress(total=len(plan))
    for r in store.load():
        if r.key in wanted:
            progress.done += 1
            progress.successes += int(r.reward)
    if progress.done:
        logger.info("resuming: %d of %d episodes already done", progress.done, len(plan))
    on_progress(progress, None)

    def count(rec: EpisodeRecord, seconds: float) -> None:
        progress.done += 1
        progress.successes += int(rec.reward)
        progress.session_s.append(seconds)
        on_progress(progress, rec)

    done = run_pending(plan, store, runner, logger, count, retries)
    return [done[k] for k in plan]


def _duration(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"
