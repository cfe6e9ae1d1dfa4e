"""The expert stand-in's CAPE responder (monologue_llm.expert.formats.cape) against the real CAPE loop and
prompt code on CAPE's household (monologue_domain.kitchen.household.HouseholdWorld as the skills port, its
truth written to the side channel as the skills node writes it): every method reaches the suite's goals, the
steps ground exactly to the intended admissible action, and with the error rate CAPE corrects the
precondition errors the wrong steps cause."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import yaml

from monologue_domain.expert.channel import write_task, write_world
from monologue_domain.expert.household import goal_json, instances, scene_to_json
from monologue_domain.kitchen.household import (
    SCENES,
    Atom,
    HouseholdWorld,
    generate_tasks,
    goal_holds,
    parse_atom,
    reference_program,
    start_with,
)
from monologue_domain.kitchen.state import KitchenState
from monologue_domain.transcript import EventKind, Transcript
from monologue_llm.expert.backend import ExpertBackend
from monologue_llm.expert.formats.cape import RESPONDER, CapeResponder, parse_query
from planner_node.core.episode import EpisodeError, EpisodeResult
from planner_node.core.ports import SceneItem, SkillOption, SkillResult, SuccessReport
from planner_node.core.prompts import load_profile
from planner_node.core.runner import run_episode
from planner_node.core.settings import episode_defaults, settings_from_parameters
from planner_node.core.strategies.cape import CapeStrategy
from planner_node.core.strategies.cape.grounding import Grounder, Proposal
from planner_node.core.strategies.cape.settings import METHODS, CapeSettings
from planner_node.core.strategy import EpisodeContext, Ports

REPO = Path(__file__).resolve().parents[3]
CONFIG = REPO / "config"
PROMPTS = CONFIG / "prompts"
LOG = logging.getLogger("expert-cape-test")


@dataclass(frozen=True)
class CapeTask:
    """A task of config/benchmarks/cape.yaml (as monologue_eval's cape suite loads it; no tool import here)."""

    key: str
    text: str
    scene: str
    source: str
    goal: tuple[Atom, ...]
    held: str = ""
    standing: bool = False

    def start(self) -> KitchenState:
        return start_with(SCENES[self.scene]()[1], self.held, self.standing)

    @property
    def reference(self) -> list[tuple[str, tuple[str, ...]]]:
        return [(s, tuple(a)) for s, a in reference_program(SCENES[self.scene]()[0], self.start(), self.goal)]


@dataclass(frozen=True)
class Suite:
    tasks: tuple[CapeTask, ...]

    def of_source(self, source: str) -> list[CapeTask]:
        return [t for t in self.tasks if t.source == source]


def load_suite() -> Suite:
    raw = yaml.safe_load((CONFIG / "benchmarks" / "cape.yaml").read_text(encoding="utf-8"))
    demos = yaml.safe_load((PROMPTS / f"{raw['demonstrations']}.yaml").read_text(encoding="utf-8"))
    tasks = [CapeTask(f"paper_{t['key']}_{scene}", t["text"], scene, "paper", tuple(parse_atom(a) for a in atoms))
             for t in raw["paper_tasks"] for scene, atoms in t["goals"].items()]
    exclude = [d["task"] for d in demos["demonstrations"] + demos["corrections"]] + [t.text for t in tasks]
    gen = raw["generated"]
    tasks += [CapeTask(g.key, g.text, g.scene, "generated", g.goal, g.held, g.standing)
              for g in generate_tasks(gen["scenes"], gen["per_scene"], gen["seed"], exclude)]
    return Suite(tuple(tasks))


SUITE = load_suite()
PER_METHOD = ("paper_run_lab", "paper_mail_lab", "paper_iron_kitchen")


class HouseholdPorts:
    """The household as the sim_household skills backend serves it; every change is written to the truth
    directory (as the skills node does with llm:=expert)."""

    def __init__(self, world: HouseholdWorld, truth_dir: Path) -> None:
        self.world, self.dir = world, truth_dir
        self.executed: list[tuple[str, tuple[str, ...]]] = []
        self.publish()

    def publish(self) -> None:
        write_world(self.dir, "household", self.world.scene_objects(),
                    extra={"household": scene_to_json(self.world.scene, self.world.hands)})

    def affordances(self, include_unaffordable: bool = False) -> list[SkillOption]:
        return [SkillOption(a.skill, a.args, a.affordance) for a in self.world.affordance_list(include_unaffordable)]

    def execute(self, skill: str, args: Sequence[str], cancel: threading.Event) -> SkillResult:
        self.executed.append((skill, tuple(args)))
        t = time.time()
        o = self.world.execute(skill, args)
        self.publish()
        return SkillResult(int(o.error), o.error.name, o.message, o.failed_precondition, t, time.time())

    def describe(self) -> list[SceneItem]:
        return [SceneItem(o.name, o.category) for o in self.world.scene_objects()]

    def detect(self, skill: str, args: Sequence[str], start_s: float, end_s: float) -> SuccessReport:
        return SuccessReport(True, 1.0, "not used by cape")


def cape_settings(method: str, **changes: object) -> CapeSettings:
    from monologue_common.core.settings import parameters_from_files

    params = parameters_from_files([CONFIG / "monologue.yaml", CONFIG / "llm" / "embedded.yaml"], "planner")
    params["prompt_dir"] = str(PROMPTS)
    s = settings_from_parameters(params).strategy_settings.get(CapeSettings)
    assert isinstance(s, CapeSettings)
    return replace(s, method=method, embedder="llm", demonstrations="cape_household", **changes)  # type: ignore[arg-type]


def run_task(task: CapeTask, method: str, truth: Path, error_rate: float = 0.0, seed: int = 0,
             max_steps: int = 40, slip_share: float = 0.25, **changes: object) -> tuple[EpisodeResult, Transcript, HouseholdPorts]:
    scene = SCENES[task.scene]()[0]
    world = HouseholdWorld(scene, task.start())
    ports = HouseholdPorts(world, truth)
    write_task(truth, task.text, "household", goal_json(task.goal))
    llm = ExpertBackend(truth, error_rate=error_rate, slip_share=slip_share, seed=seed, responders=[CapeResponder()])
    t = Transcript("cape")
    ep = EpisodeContext(llm, Ports(ports, ports, ports), load_profile(PROMPTS, "household"), t, task.text,
                        episode_defaults(CONFIG, max_steps=max_steps), LOG)
    return run_episode(CapeStrategy(cape_settings(method, **changes)), ep), t, ports


def test_parse_query_reads_the_plan_with_its_refused_attempts() -> None:
    prompt = ("Task: Make me a cup of coffee\nStep 1: Stand up\nStep 2: Done\n\n"
              "Task: Put the phone on the nightstand\nStep 1: Walk to the phone\n"
              "Error: I cannot walk to the phone because I am sitting. A correct step would be to\n"
              "Step 1: Stand up\nStep 2:")
    q = parse_query(prompt)
    assert q is not None and q.task == "Put the phone on the nightstand" and q.open_step == 2
    assert q.entries == (("walk to the phone", True), ("stand up", False))
    assert parse_query("Task: x\nStep 1: Stand up") is None  # no open step
    assert parse_query("Robot: hello\nStep 1:") is None


@pytest.mark.parametrize("scene", sorted(SCENES))
def test_every_admissible_household_text_grounds_to_itself(scene: str) -> None:
    """The expert's step is the admissible text verbatim; with the backend's hashed bag-of-words it must
    not tie with another admissible action (the Grounder breaks ties by list order)."""
    texts = list(instances(SCENES[scene]()[0])) + ["done"]
    g = Grounder(ExpertBackend("unused"), texts)
    sims = g.similarities(texts)
    near = sims >= sims.diagonal()[:, None] - 1e-9  # actions that score as high as the text itself
    clashes = [(texts[i], texts[j]) for i, j in zip(*near.nonzero()) if i != j]
    # "put the x on the y" and "put the y on the x" share their words; only the first is ever planned
    real = [(a, b) for a, b in clashes if sorted(a.split()) != sorted(b.split())]
    assert real == []
    ranked = g.ground([Proposal("walk to the fridge" if scene != "lab" else "walk to the desk", -0.01)],
                      "weighted", 0.3)
    assert ranked[0].action == ("walk to the fridge" if scene != "lab" else "walk to the desk")


@pytest.mark.parametrize("method", [m for m in METHODS])
def test_every_method_reaches_the_paper_goals(method: str, tmp_path: Path) -> None:
    # the tasks that exposed defects (a door walked to twice, a dropped-and-picked-up mail) and the longest
    for task in (t for t in SUITE.of_source("paper") if t.key in PER_METHOD):
        res, t, ports = run_task(task, method, tmp_path / task.key)
        assert res.error == EpisodeError.NONE, (task.key, res.reason)
        assert goal_holds(ports.world.state(), task.goal), task.key
        assert ports.executed == task.reference, task.key  # no error, the reference program


@pytest.mark.slow
def test_the_paper_and_generated_goals_are_reached(tmp_path: Path) -> None:
    for task in SUITE.of_source("paper") + SUITE.of_source("generated")[::4]:
        res, _, ports = run_task(task, "Z_E", tmp_path / task.key)
        assert res.error == EpisodeError.NONE and goal_holds(ports.world.state(), task.goal), (task.key, res.reason)


@pytest.mark.slow
def test_with_errors_cape_corrects_precondition_errors_and_reaches_the_goal(tmp_path: Path) -> None:
    """Every sample wrong with probability 0.5 (wrong steps, no format slips: a slip grounds to nothing
    and ends the plan), one sample per step: wrong steps are mostly refused for a precondition, the
    corrective prompt follows, and the expert's correction is the right step."""
    corrected = 0
    reached = 0
    for i, task in enumerate(SUITE.of_source("paper")):
        res, t, ports = run_task(task, "Z_E", tmp_path / task.key, error_rate=0.5, seed=i, samples=1,
                                 max_corrections=6, slip_share=0.0)
        errors = [e for e in t.events if e.kind == EventKind.ERROR and e.data.get("precondition")]
        corrected += len(errors)
        reached += goal_holds(ports.world.state(), task.goal)
    assert corrected > 0
    assert reached >= 10  # of 12


def test_open_loop_believes_refused_steps_ran(tmp_path: Path) -> None:
    """Huang's open loop does not show the refusal: the expert plans on as if the step had run (its
    belief), so a refused step leaves the world behind the plan."""
    task = next(t for t in SUITE.of_source("paper") if t.key == "paper_phone_lab")
    r = CapeResponder()
    from monologue_llm.expert.format import Query, Truth

    truth = tmp_path / "t"
    ports = HouseholdPorts(HouseholdWorld(SCENES["lab"]()[0], task.start()), truth)
    write_task(truth, task.text, "household", goal_json(task.goal))
    tr = Truth(truth)

    def ask(plan: str) -> str:
        return r.answer(Query("sample", f"Task: {task.text}\n{plan}", tr)).text.strip()

    assert ask("Step 1:") == "Stand up"
    # the robot still sits (the world refused "walk to the phone"), but open loop believes it walked
    assert ports.world.check("walk_to", ("phone",)) is not None
    assert ask("Step 1: Stand up\nStep 2: Walk to the phone\nStep 3:") == "Pick up the phone"
    # with the error shown, the step changed nothing
    shown = ask("Step 1: Walk to the phone\nError: I cannot walk to the phone because I am sitting. "
                "A correct step would be to\nStep 1:")
    assert shown == "Stand up"


def test_no_goal_recorded_is_an_expert_error(tmp_path: Path) -> None:
    from monologue_llm.expert.format import ExpertError, Query, Truth

    task = SUITE.of_source("paper")[0]
    HouseholdPorts(HouseholdWorld(SCENES[task.scene]()[0], task.start()), tmp_path)
    with pytest.raises(ExpertError, match="no goal"):
        RESPONDER.answer(Query("sample", f"Task: {task.text}\nStep 1:", Truth(tmp_path)))

