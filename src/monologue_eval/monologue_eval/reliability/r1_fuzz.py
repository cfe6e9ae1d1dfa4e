"""R1: fuzzed LLM output through the real planner core (EpisodeRunner), for every registered strategy
and every prompt profile, on the kinematic tabletop, SayCan's kitchen and CAPE's household.

Counted (docs/reliability.md): outputs fed (FuzzBackend.outputs); crashes (an exception escaping the
runner, an INTERNAL_ERROR outcome, or a transcript without its EPISODE_END); skills executed that
were not admissible (the ports check every execute against the last affordance listing the strategy
asked for, or, for strategies that build calls from the scene (Statler, MultiTalk), against every
skill instance of the world); rejections (ERROR events `Rejected ...`) and silent rejections (an
output followed by no transcript event and then a re-prompt that extends the same prompt).

    python -m monologue_eval.reliability.r1_fuzz [--outputs N] [--seed S]
"""
# ruff: noqa: E402
from __future__ import annotations

import logging
import math
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monologue_common.core.settings import parameters_from_files
from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.kitchen.household import HouseholdWorld, spot_home
from monologue_domain.kitchen.world import KitchenWorld, default_state
from monologue_domain.scene_spec import SceneSpec
from monologue_domain.skills import SkillError, SkillRejected
from monologue_domain.transcript import Event, EventKind
from monologue_llm.fuzz import FuzzBackend
from planner_node.core import strategies
from planner_node.core.episode import EpisodeError
from planner_node.core.ports import SceneItem, SkillOption, SkillResult, SuccessReport, Workspace
from planner_node.core.prompts import load_profile
from planner_node.core.runner import EpisodeRunner, GoalRequest
from planner_node.core.settings import settings_from_parameters
from planner_node.core.strategies.cape.prompts import load_domain

from .common import CONFIG, PROMPTS, Row, sampling_args

LOG = logging.getLogger("reliability.r1")
WORKSPACE = Workspace((0.25, -0.35, -0.01), (0.75, 0.35, 0.6), 0.0)  # m, the sim tabletop's box
TASKS = {"tabletop": "Put the blocks in their matching bowls.", "kitchen": "Bring me a coke.",
         "household": "Put the apple in the fridge."}
CAPE_METHODS = ("Z_S", "Z_I", "Z_E", "Z_E+S_g", "F_E", "F_E+S_g", "huang", "resampling")
STATLER_FAMILY = ("statler", "statler_unified", "statler_auto", "cap", "cap_cot")


# ------------------------------------------------------------------------------------- ports --
class FuzzPorts:
    """Skills, scene and success ports over one world that record every executed skill and check it
    against the admissible set of that step. World kinds: tabletop, kitchen, household."""

    def __init__(self, kind: str, seed: int) -> None:
        self.kind = kind
        self.world: Any = self._make(kind, seed)
        self.listing: set[tuple[str, tuple[str, ...]]] | None = None  # the last listing the strategy asked for
        self.executed: list[tuple[str, tuple[str, ...]]] = []
        self.not_admissible: list[tuple[str, tuple[str, ...]]] = []  # run although not admissible
        self.refused: list[tuple[str, tuple[str, ...]]] = []  # not admissible, sent, refused by the backend

    @staticmethod
    def _make(kind: str, seed: int) -> Any:
        if kind == "kitchen":
            return KitchenWorld(default_state())
        if kind == "household":
            scene, start = spot_home()
            return HouseholdWorld(scene, start)
        return TabletopWorld.from_spec(SceneSpec(("red", "blue", "green")[: 2 + seed % 2], ("red", "blue")), seed=seed)

    def _all(self, include_unaffordable: bool) -> list[SkillOption]:
        w = self.world
        if self.kind == "household":
            affs = w.affordance_list(include_unaffordable)
        else:
            affs = w.affordances(include_unaffordable)
        return [SkillOption(a.skill, tuple(a.args), a.affordance) for a in affs]

    def affordances(self, include_unaffordable: bool = False) -> list[SkillOption]:
        opts = self._all(include_unaffordable)
        self.listing = {(o.skill, o.args) for o in opts}
        return opts

    def execute(self, skill: str, args: Sequence[str], cancel: threading.Event) -> SkillResult:
        call = (skill, tuple(args))
        allowed = self.listing if self.listing is not None else {(o.skill, o.args) for o in self._all(True)}
        self.executed.append(call)
        result = self._run(skill, args)
        if call not in allowed:  # refused by the skills backend (nothing moved), or run: a violation
            moved = result.error_name in ("NONE", "EXECUTION_FAILED")
            (self.not_admissible if moved else self.refused).append(call)
        return result

    def _run(self, skill: str, args: Sequence[str]) -> SkillResult:
        t = time.time()

        def result(error: SkillError, message: str, failed: str = "") -> SkillResult:
            return SkillResult(int(error), error.name, message, failed, t, time.time())

        if self.kind == "tabletop":
            if skill != "pick_place" or len(args) != 2:
                return result(SkillError.UNKNOWN_SKILL, f"unknown skill {skill}")
            try:
                moved, message = self.world.pick_place(args[0], args[1])
            except SkillRejected as e:
                return result(e.error, e.message, e.failed_precondition)
            return result(SkillError.NONE if moved else SkillError.EXECUTION_FAILED, message)
        o = self.world.execute(skill, args)
        return result(o.error, o.message, o.failed_precondition)

    def describe(self) -> list[SceneItem]:
        if self.kind == "tabletop":
            return [SceneItem(s.name, s.category, True, s.position, s.size) for s in self.world.snapshot()]
        return [SceneItem(o.name, o.category) for o in self.world.scene_objects()]

    def detect(self, skill: str, args: Sequence[str], start_s: float, end_s: float) -> SuccessReport:
        if self.kind == "tabletop" and skill == "pick_place" and len(args) == 2 and self.world.has(args[0]):
            ok = self.world.is_on(args[0], args[1])
            return SuccessReport(ok, 1.0, "kinematic rule")
        return SuccessReport(True, 0.5, "no rule")

    def workspace(self) -> Workspace | None:
        return WORKSPACE if self.kind == "tabletop" else None


class FuzzAsker:
    """A person answering the robot's questions with fuzzed text, or not at all."""

    def __init__(self, llm: FuzzBackend) -> None:
        self.llm = llm

    def ask(self, question: str, timeout_s: float, cancel: threading.Event, episode_id: str = "") -> str | None:
        return None if self.llm.rng.random() < 0.3 else self.llm.text(question)


# ------------------------------------------------------------------------------------ scenarios --
@dataclass(frozen=True)
class Scenario:
    strategy: str
    profile: str
    world: str
    params: tuple[tuple[str, object], ...] = ()

    @property
    def label(self) -> str:
        extra = ",".join(f"{k}={v}" for k, v in self.params if k in ("cape.method", "cape.demonstrations",
                                                                      "multitalk.ablation", "multitalk.accept_gate",
                                                                      "multitalk.planner_decoding"))
        return f"{self.strategy}/{self.profile}" + (f"[{extra}]" if extra else "")


def im_profiles() -> list[str]:
    """The prompt profiles the IM loop runs (every <prompts>/*.yaml with line formats)."""
    return sorted(p.stem for p in PROMPTS.glob("*.yaml") if not p.stem.startswith("cape_"))


def world_of(profile: str) -> str:
    return "kitchen" if "kitchen" in profile or profile == "saycan" else "household" if "household" in profile \
        else "tabletop"


def scenarios() -> list[Scenario]:
    """Every registered strategy; the scoring/generative ones with every profile."""
    out: list[Scenario] = []
    names = strategies.names()
    for name in names:
        if name in ("inner_monologue", "inner_monologue_generative", "saycan"):
            for prof in im_profiles():
                params: list[tuple[str, object]] = []
                if prof == "im_sim_object_scene" and name != "saycan":
                    params.append(("feedback.scene", True))
                out.append(Scenario(name, prof, world_of(prof), tuple(params)))
        elif name == "cape":
            for i, method in enumerate(CAPE_METHODS):
                demo, world, prof = [("cape_kitchen", "kitchen", "saycan"), ("cape_tabletop", "tabletop",
                                     "im_sim_object_success"), ("cape_household", "household", "household")][i % 3]
                out.append(Scenario(name, prof, world, (("cape.method", method), ("cape.demonstrations", demo),
                                                        ("cape.embedder", "llm"))))
        elif name in STATLER_FAMILY:
            out.append(Scenario(name, "im_sim_object_success", "tabletop"))
        elif name == "multitalk":
            for ablation, gate, decoding in (("full", "off", "generate"), ("no_analyzer", "off", "generate"),
                                             ("full", "ask", "generate"), ("full", "off", "scored")):
                out.append(Scenario(name, "im_sim_object_success", "tabletop",
                                    (("multitalk.ablation", ablation), ("multitalk.accept_gate", gate),
                                     ("multitalk.planner_decoding", decoding))))
        else:  # a strategy added later: run it with the default profile
            out.append(Scenario(name, "im_sim_object_success", "tabletop"))
    return out


def valid_lines(sc: Scenario, ports: FuzzPorts) -> list[str]:
    """What a correct model could write for this scenario (the fuzzer writes these as they are and
    with near-miss mutations, so episodes get far enough to execute skills)."""
    opts = ports._all(False)
    items = ports.describe()
    cats = {i.name: i.category for i in items}
    names = [i.name for i in items]
    if sc.strategy == "cape":
        domain = load_domain(PROMPTS, dict(sc.params)["cape.demonstrations"])  # type: ignore[arg-type]
        lines = []
        for o in opts:
            try:
                lines.append(domain.action_text(o.skill, o.args))
            except (KeyError, IndexError):
                continue
        return lines + [domain.done]
    if sc.strategy in STATLER_FAMILY:
        pairs = [(a, b) for a in names for b in names if a != b]
        code = [f"put_first_on_second('{a}', '{b}')" for a, b in pairs[:12]]
        code += ["say('done')", "noop()", "update_wm('the red block is in the red bowl')",
                 "# query: " + TASKS["tabletop"] + "\n" + "\n".join(code[:2])]
        states = ["\n".join([f'# "objects": {names!r},'.replace("'", '"'), '# "relations": [],'] +
                            [f'# "{n}": {{}},' for n in names]) + "\n# }\n"]
        return code + states
    if sc.strategy == "multitalk":
        pos = {i.name: i.position for i in items if i.position is not None}
        blocks = [n for n in pos if cats[n] == "block"]
        bowls = [n for n in pos if cats[n] == "bowl"]
        plans = []
        for b in blocks:
            for w in bowls:
                p, q = pos[b], pos[w]
                assert p is not None and q is not None
                plans.append("Step-by-step Instructions:\n"
                             f"1: grasp(({p[0]:.3f}, {p[1]:.3f}, {p[2]:.3f})) # the {b}\n"
                             f"2: move(({q[0]:.3f}, {q[1]:.3f}, {q[2]:.3f})) # the {w}\n3: home()")
        return plans + ["Plan Accepted", "Plan Rejected: the plan is wrong", "Perception Rerun Required",
                        "Questions for the Human:\n1. Which bowl?"]
    profile = load_profile(PROMPTS, sc.profile)
    lines = []
    for o in opts:
        try:
            lines.append(profile.lead + profile.action(o.skill, o.args, cats))
        except KeyError:
            continue
    lines.append(profile.done_line)
    if dict(sc.params).get("feedback.scene"):
        goal = ", ".join(f'"{b}" in "{b.replace("block", "bowl")}"' for b in names if "block" in b)
        lines += [f"Robot thought: Goal state is [{goal}].", "Robot thought: None."]
    return lines


# ------------------------------------------------------------------------------------- counting --
@dataclass
class Counts:
    outputs: int = 0
    episodes: int = 0
    crashes: int = 0  # exceptions escaping + INTERNAL_ERROR outcomes + transcripts without EPISODE_END
    executed: int = 0
    not_admissible: int = 0
    refused_by_backend: int = 0  # not admissible, sent to the skills port and refused there (Statler family)
    rejections: int = 0  # ERROR events "Rejected ..."
    silent_rejections: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    per_scenario: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)  # the first few, for the report
    problem_kinds: Counter[str] = field(default_factory=Counter)  # every problem, by kind
    crash_examples: list[str] = field(default_factory=list)  # every crash (there should be none)

    def problem(self, text: str) -> None:
        kind = text.split(": ", 1)[-1][:90]
        if kind not in self.problem_kinds and len(self.problems) < 40:
            self.problems.append(text)
        self.problem_kinds[kind] += 1


def silent(calls: Sequence[tuple[str, str]], marks: Sequence[int]) -> int:
    """Outputs dropped without a transcript event: call i had no event before call i+1, and call
    i+1 is a re-prompt (same kind, its prompt extends call i's). `marks[j]` = calls made before
    event j."""
    n = 0
    for i in range(len(calls) - 1):
        (kind, prompt), (next_kind, next_prompt) = calls[i], calls[i + 1]
        if kind == "score" or kind != next_kind or not next_prompt.startswith(prompt):
            continue
        if not any(m == i + 1 for m in marks):
            n += 1
    return n


def make_runner(sc: Scenario, llm: Any, ports: FuzzPorts, transcript_dir: Path) -> EpisodeRunner:
    params = parameters_from_files([CONFIG / "monologue.yaml", CONFIG / "llm" / "embedded.yaml"], "planner")
    params.update({"prompt_dir": str(PROMPTS), "transcript_dir": str(transcript_dir), "strategy": sc.strategy,
                   "prompt_profile": sc.profile, "max_steps": 6, "timeouts.answer": 0.01,
                   "timeouts.fault_pause": 0.01, "cape.samples": 2, "multitalk.max_rounds": 4})
    profile = load_profile(PROMPTS, sc.profile)
    params["feedback.success"] = {"success_true", "success_false"} <= set(profile.formats)
    params.update(dict(sc.params))
    quiet = logging.getLogger("reliability.r1.planner")
    asker = FuzzAsker(llm) if isinstance(llm, FuzzBackend) else None
    return EpisodeRunner(settings_from_parameters(params), llm, ports, ports, ports, asker=asker,
                         logger=quiet)


def run_episode(sc: Scenario, runner: EpisodeRunner, llm: FuzzBackend, ports: FuzzPorts, counts: Counts,
                instruction: str | None = None) -> None:
    """One episode of `sc` on fresh ports; counts what happened."""
    llm.calls.clear()
    marks: list[int] = []
    events: list[Event] = []

    def on_event(e: Event) -> None:
        marks.append(len(llm.calls))
        events.append(e)

    before = llm.outputs
    counts.episodes += 1
    counts.per_scenario[sc.label] += 1
    try:
        out = runner.execute(GoalRequest(instruction if instruction is not None else TASKS[sc.world]),
                             on_event=on_event)
    except Exception as e:  # noqa: BLE001 - this is what R1 counts
        counts.crashes += 1
        counts.problem(f"{sc.label}: exception escaped: {e!r}")
        counts.crash_examples.append(f"{sc.label}: exception escaped: {e!r}"[:400])
        out = None
    counts.outputs += llm.outputs - before
    counts.executed += len(ports.executed)
    counts.not_admissible += len(ports.not_admissible)
    counts.refused_by_backend += len(ports.refused)
    for call in ports.not_admissible:
        counts.problem(f"{sc.label}: executed a skill that was not admissible: {call}")
    for call in ports.refused:
        counts.problem(f"{sc.label}: sent a call outside the admissible set (the backend refused it): {call}")
    if out is None:
        return
    counts.outcomes[out.result.error.name] += 1
    if out.result.error == EpisodeError.INTERNAL_ERROR:
        counts.crashes += 1
        counts.problem(f"{sc.label}: INTERNAL_ERROR: {out.result.reason[:300]}")
        counts.crash_examples.append(f"{sc.label}: {out.result.reason[:300]}")
    if out.transcript is not None and (not out.events or out.events[-1].kind != EventKind.EPISODE_END):
        counts.crashes += 1
        counts.problem(f"{sc.label}: transcript without EPISODE_END")
    counts.rejections += sum(1 for e in events if e.kind == EventKind.ERROR and e.text.startswith("Rejected"))
    s = silent(llm.calls, marks)
    counts.silent_rejections += s
    if s:
        counts.problem(f"{sc.label}: {s} output(s) dropped without an ERROR event")


def fuzz(total_outputs: int, seed: int = 0, scenario_filter: str = "",
         texts: Iterator[str] | None = None) -> Counts:
    """Run scenarios round-robin until `total_outputs` outputs were fed."""
    counts = Counts()
    scs = [s for s in scenarios() if scenario_filter in s.label]
    with tempfile.TemporaryDirectory(prefix="reliability-r1-") as tmp:
        llm = FuzzBackend(seed=seed, texts=texts)
        runners: dict[Scenario, tuple[EpisodeRunner, FuzzPorts]] = {}
        i = 0
        while counts.outputs < total_outputs:
            sc = scs[i % len(scs)]
            i += 1
            ports = FuzzPorts(sc.world, seed + i)
            if sc not in runners:
                runners[sc] = (make_runner(sc, llm, ports, Path(tmp) / "t"), ports)
            runner = runners[sc][0]
            runner.ports = type(runner.ports)(ports, ports, ports, runner.inbox, None)
            llm.valid = valid_lines(sc, ports)
            run_episode(sc, runner, llm, ports, counts)
            if i % 200 == 0:  # keep the disk use bounded
                for p in (Path(tmp) / "t").glob("*.jsonl"):
                    p.unlink()
            if texts is not None and i >= len(scs) and counts.outputs == 0:
                break
    return counts


def row(short: bool = False, seed: int = 0) -> Row:
    n = 1_000 if short else 100_000
    t0 = time.monotonic()
    c = fuzz(n, seed)
    wall = time.monotonic() - t0
    ok = c.crashes == 0 and c.not_admissible == 0 and c.silent_rejections == 0
    measured = (f"{c.outputs} outputs, {c.episodes} episodes, {len(c.per_scenario)} strategy/profile runs: "
                f"{c.crashes} crashes, {c.not_admissible} not-admissible executed (of {c.executed}), "
                f"{c.silent_rejections} rejections without ERROR (of {c.rejections} reported); "
                f"{c.refused_by_backend} sent outside the set and refused by the skills backend")
    details = "; ".join(f"{k} {v}" for k, v in sorted(c.outcomes.items()))
    if c.crash_examples:
        details += " | crashes: " + " / ".join(c.crash_examples[:5])
    if c.refused_by_backend:
        details += (f" | {c.refused_by_backend} calls outside the admissible set reached the skills backend and "
                    "were refused there (Statler family: unknown names passed on), e.g. "
                    + " / ".join(p for p in c.problems if "refused it" in p)[:300])
    return Row("R1", "fuzzed LLM output, every strategy and profile", "0 crashes, 0 not admissible, "
               "0 silent rejections", measured, ok, wall, details)


def main() -> None:
    a = sampling_args(__doc__ or "", "outputs", 100_000, "run only scenarios whose label contains this")
    t0 = time.monotonic()
    c = fuzz(a.outputs, a.seed, a.only)
    wall = time.monotonic() - t0
    print(f"outputs {c.outputs} episodes {c.episodes} in {wall:.1f} s ({1e3 * wall / max(1, c.outputs):.2f} ms/output)")
    print(f"crashes {c.crashes} not-admissible {c.not_admissible}/{c.executed} (refused by the backend: "
          f"{c.refused_by_backend}) rejections {c.rejections} silent {c.silent_rejections}")
    print("problem kinds", dict(c.problem_kinds.most_common(15)))
    print("outcomes", dict(c.outcomes))
    for p in c.problems:
        print("  problem:", p)
    for p in c.crash_examples:
        print("  crash:", p)
    _ = math


if __name__ == "__main__":
    main()
