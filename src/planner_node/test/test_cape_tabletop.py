"""CAPE on the tabletop: the demonstration file config/prompts/cape_tabletop.yaml (loads, no IM Table 1
wording, demonstrations run on the kinematic world, corrections say what the skills node says) and an
episode on the kinematic world whose first step is refused by a tabletop precondition (the blue block is on
the red block) and corrected, with a scripted sampling LLM and bag-of-words embeddings."""
from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from monologue_common.core.settings import parameters_from_files
from monologue_domain.kinematic_world import TabletopWorld, world_with
from monologue_domain.skills import SkillError, SkillRejected
from monologue_domain.tabletop import LOCATIONS
from monologue_domain.tabletop_preconditions import SKILL_TEXT, TableThing, check_pick_place
from monologue_domain.tasks import FAMILIES, sample_task
from monologue_domain.transcript import EventKind, Transcript
from monologue_llm.base import Sample, SampleResult
from planner_node.core.episode import EpisodeError
from planner_node.core.ports import SceneItem
from planner_node.core.prompts import load_profile
from planner_node.core.runner import run_episode
from planner_node.core.settings import episode_defaults, settings_from_parameters
from planner_node.core.strategies.cape import CapeStrategy
from planner_node.core.strategies.cape.prompts import CapeDomain, load_domain
from planner_node.core.strategies.cape.settings import CapeSettings
from planner_node.core.strategy import EpisodeContext, Ports
from planner_node.testing import SamplingOnlyLLM, WorldPorts

REPO = Path(__file__).resolve().parents[3]
CONFIG = REPO / "config"
PROMPTS = CONFIG / "prompts"
LOG = logging.getLogger("cape-tabletop-test")
STEP = re.compile(r"^pick up the (.+) and place it on the (.+)$")


class Scripted(SamplingOnlyLLM):
    """A sampling LLM whose lines come from `rule(prompt)`; bag-of-words embeddings."""

    name = "scripted-cape-tabletop"

    def __init__(self, rule: Callable[[str], str]) -> None:
        self.rule = rule
        self.prompts: list[str] = []

    def sample(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64, n: int = 1,
               temperature: float = 1.0, presence_penalty: float = 0.0, seed: int = 0) -> SampleResult:
        self.prompts.append(prompt)
        return SampleResult(tuple(Sample(" " + self.rule(prompt), (-0.1,), "stop") for _ in range(n)), 1, 1, 0.0)


class TabletopPorts(WorldPorts):
    """The kinematic skills backend as the planner sees it: every pick_place instance (afforded or not)
    and the world's refusals."""

    world: TabletopWorld

    def run(self, skill: str, args: Sequence[str]) -> tuple[SkillError, str, str]:
        try:
            moved, message = self.world.pick_place(args[0], args[1])
        except SkillRejected as e:
            return e.error, e.message, e.failed_precondition
        return SkillError.NONE if moved else SkillError.EXECUTION_FAILED, message, ""

    def describe(self) -> list[SceneItem]:
        return [SceneItem(s.name, s.category) for s in self.world.snapshot()]


def domain() -> CapeDomain:
    return load_domain(PROMPTS, "cape_tabletop")


def settings(method: str = "Z_E") -> CapeSettings:
    params = parameters_from_files([CONFIG / "monologue.yaml", CONFIG / "robots" / "sim_kinematic.yaml",
                                    CONFIG / "llm" / "embedded.yaml"], "planner")
    params["prompt_dir"] = str(PROMPTS)
    s = settings_from_parameters(params).strategy_settings.get(CapeSettings)
    assert isinstance(s, CapeSettings)
    return replace(s, method=method)


def norm(text: str) -> str:
    return " ".join(text.lower().rstrip(".").split())


# ---- the demonstration file ----------------------------------------------------------------------

def test_the_tabletop_robots_select_the_tabletop_file() -> None:
    assert settings().demonstrations == "cape_tabletop"
    for robot in ("sim", "ur5e"):
        params = parameters_from_files([CONFIG / "monologue.yaml", CONFIG / "robots" / f"{robot}.yaml"], "planner")
        assert params["cape.demonstrations"] == "cape_tabletop", robot
    d = domain()
    assert d.skills == {"pick_place": SKILL_TEXT} and d.done == "done"
    assert len(d.demonstrations) >= 8 and len(d.corrections) >= 8


def test_no_task_is_an_im_table_1_wording() -> None:
    d = domain()
    tasks = {norm(t) for t in [*(x.task for x in d.demonstrations), *(x.task for x in d.corrections)]}
    im = {norm(sample_task(f, seed).instruction) for f in FAMILIES for seed in range(40)}
    assert not tasks & im
    # nor one of the families' templates with other slot values
    stems = ("pick the ", "stack all the blocks", "put all the blocks", "put the blocks in their matching",
             "put the blocks on mismatched")
    assert not [t for t in tasks if t.startswith(stems)]


def test_every_step_is_an_admissible_action_text() -> None:
    d = domain()
    steps = [s for x in d.demonstrations for s in x.steps]
    steps += [s for x in d.corrections for s in (*x.steps, x.failed, x.correction)]
    for s in steps:
        assert s == d.done or STEP.match(s), s
    for x in d.demonstrations:
        assert x.steps[-1] == d.done and d.done not in x.steps[:-1]


def _world_for(steps: Sequence[str], stacked: Sequence[tuple[str, str]] = ()) -> TabletopWorld:
    """A kinematic world holding every object the steps name, 15 cm apart; `stacked` (top, base) pairs
    start stacked."""
    names: list[str] = [n for pair in stacked for n in pair]
    for s in steps:
        m = STEP.match(s)
        if m:
            names += [n for n in m.groups() if n not in LOCATIONS and n not in names]
    spots = [(0.35, -0.2), (0.35, 0.0), (0.35, 0.2), (0.55, -0.2), (0.55, 0.2), (0.65, 0.0)]
    objects = [(n, (*spots[i], 0.02 if n.endswith("block") else 0.0)) for i, n in enumerate(names)]
    w = world_with(objects)
    for top, base in stacked:
        w.pick_place(top, base)
    return w


def test_every_demonstration_runs_without_a_precondition_error() -> None:
    for demo in domain().demonstrations:
        stacked = [("red block", "blue block")] if "off the blue block" in demo.task else []
        w = _world_for(demo.steps, stacked)
        for s in demo.steps[:-1]:
            m = STEP.match(s)
            assert m is not None
            ok, message = w.pick_place(*m.groups())
            assert ok, (demo.task, s, message)


def test_every_correction_gives_the_skills_nodes_words() -> None:
    """Each example's error is the line the tabletop preconditions write for that situation."""
    for ex in domain().corrections:
        m = STEP.match(ex.failed)
        assert m is not None
        obj, target = m.groups()
        things = {n: TableThing(n, n.rsplit(" ", 1)[-1], (0.5 + 0.1 * i, 0.0, 0.02), pickable=n.endswith("block"))
                  for i, n in enumerate(dict.fromkeys([obj, target]))}
        held, reach = None, None
        if ex.reason.endswith("on top of it"):
            above = re.findall(r"the (\w+ block)", ex.reason)
            things[obj] = replace(things[obj], on_top=tuple(above))
        elif ex.reason.startswith("I cannot see"):
            things[obj] = replace(things[obj], visible=False)
        elif ex.reason.endswith("out of my reach"):
            class Far:
                def unreachable(self, thing: TableThing, place: bool) -> str | None:
                    return "outside the workspace" if place else None
            reach = Far()
        found = check_pick_place(things, obj, target, held=held, reach=reach)
        assert found is not None, ex
        assert found.explicit == f"I cannot {ex.cannot} because {ex.reason}", ex


# ---- an episode ----------------------------------------------------------------------------------

def unstack_rule(prompt: str) -> str:
    """Put the red block in the bowl; after the error, move the blue block off it first."""
    query = prompt.split("\n\n")[-1]
    if query.split("\n")[-2].startswith("Error: "):
        return "Pick up the blue block and place it on the left side."
    if "Step 2: Pick up the red block and place it on the red bowl" in query:
        return "done"
    if "Step 1: Pick up the blue block and place it on the left side" in query:
        return "Pick up the red block and place it on the red bowl."
    return "Pick up the red block and place it on the red bowl."


def test_z_e_on_the_tabletop_corrects_a_covered_block() -> None:
    w = world_with([("red block", (0.40, 0.10, 0.02)), ("blue block", (0.60, -0.10, 0.02)),
                    ("red bowl", (0.55, 0.20, 0.0))])
    w.pick_place("blue block", "red block")
    ports = TabletopPorts(w)
    llm = Scripted(unstack_rule)
    t = Transcript("cape-tabletop")
    ep = EpisodeContext(llm, Ports(ports, ports, ports), load_profile(PROMPTS, "im_sim_object"), t,
                        "Put the red block in the red bowl", episode_defaults(CONFIG, max_steps=4), LOG)
    res = run_episode(CapeStrategy(settings("Z_E"), embedder=ep.llm), ep)
    assert res.error == EpisodeError.NONE, res.reason
    assert w.is_on("red block", "red bowl") and w.is_on("blue block", "left side")
    errors = [e for e in t.events if e.kind == EventKind.ERROR]
    assert [e.text for e in errors] == [
        "Precondition error at step 1: I cannot pick up the red block because the blue block is on top of it"]
    assert errors[0].data["proposition"] == "not_clear"
    thoughts = [e.text for e in t.events if e.kind == EventKind.ROBOT_THOUGHT and e.data.get("corrective_prompt")]
    assert thoughts == ["Error: I cannot pick up the red block because the blue block is on top of it. "
                        "A correct step would be to"]
    actions = [(e.text, e.data["correction"]) for e in t.events if e.kind == EventKind.ROBOT_ACTION]
    assert actions == [("Step 1: Pick up the red block and place it on the red bowl", 0),
                       ("Step 1: Pick up the blue block and place it on the left side", 1),
                       ("Step 2: Pick up the red block and place it on the red bowl", 0)]
    # the refused step moved nothing: three attempts, two moves
    assert ports.executed[0] == ("pick_place", ("red block", "red bowl")) and len(ports.executed) == 3


def test_an_unreachable_target_is_corrected_like_a_precondition() -> None:
    """not_reachable comes as OUT_OF_LIMITS with the CAPE line: still a precondition error for CAPE."""
    class NoCorners:
        def unreachable(self, thing: TableThing, place: bool) -> str | None:
            return "y = 0.300 m is outside the workspace" if thing.name.endswith("corner") else None

    w = world_with([("red block", (0.40, 0.10, 0.02))], reach=NoCorners())
    ports = TabletopPorts(w)

    def rule(prompt: str) -> str:
        query = prompt.split("\n\n")[-1]
        if query.split("\n")[-2].startswith("Error: "):
            return "pick up the red block and place it on the top side"
        if "Step 1: Pick up the red block and place it on the top side" in query:
            return "done"
        return "pick up the red block and place it on the top left corner"

    t = Transcript("cape-tabletop")
    ep = EpisodeContext(Scripted(rule), Ports(ports, ports, ports), load_profile(PROMPTS, "im_sim_object"), t,
                        "Move the red block to the top left corner", episode_defaults(CONFIG, max_steps=3), LOG)
    res = run_episode(CapeStrategy(settings("Z_E"), embedder=ep.llm), ep)
    assert res.error == EpisodeError.NONE, res.reason
    error = next(e for e in t.events if e.kind == EventKind.ERROR)
    assert error.data["error_name"] == "OUT_OF_LIMITS" and error.data["precondition"] is True
    assert error.data["error_message"] == ("I cannot place the red block on the top left corner because the top left "
                                           "corner is out of my reach")
    assert w.is_on("red block", "top side")


@pytest.mark.parametrize("method, message", [
    ("Z_S", "Task Failed"), ("Z_I", "I cannot pick up the red block"),
    ("Z_E", "I cannot pick up the red block because the blue block is on top of it")])
def test_specificities_on_the_tabletop(method: str, message: str) -> None:
    w = world_with([("red block", (0.40, 0.10, 0.02)), ("blue block", (0.60, -0.10, 0.02)),
                    ("red bowl", (0.55, 0.20, 0.0))])
    w.pick_place("blue block", "red block")
    ports = TabletopPorts(w)
    llm = Scripted(unstack_rule)
    ep = EpisodeContext(llm, Ports(ports, ports, ports), load_profile(PROMPTS, "im_sim_object"),
                        Transcript("x"), "Put the red block in the red bowl", episode_defaults(CONFIG, max_steps=4), LOG)
    run_episode(CapeStrategy(settings(method), embedder=llm), ep)
    corrective = next(p for p in llm.prompts if p.split("\n")[-2].startswith("Error: "))
    assert corrective.endswith(f"Step 1: Pick up the red block and place it on the red bowl\nError: {message}. "
                               "A correct step would be to\nStep 1:")


def test_few_shot_examples_name_the_half_of_the_step_that_failed() -> None:
    d = domain()
    ex = next(x for x in d.corrections if x.task == "Put the green block in the yellow bowl")
    assert d.example_block(ex, "E").split("\n") == [
        "Task: Put the green block in the yellow bowl",
        "Step 1: Pick up the green block and place it on the yellow bowl",
        "Error: I cannot pick up the green block because the red block is on top of it. A correct step would be to",
        "Step 1: Pick up the red block and place it on the left side"]
    assert d.example_block(ex, "I").split("\n")[2] == "Error: I cannot pick up the green block. A correct step would be to"
