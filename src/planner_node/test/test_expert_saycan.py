"""The expert stand-in's kitchen responder (monologue_llm.expert.formats.saycan) against the real planner
loop and prompt code on SayCan's kitchen (monologue_domain.kitchen.world.KitchenWorld as the skills port,
its truth written to the side channel as the skills node writes it): every variant of the SayCan and IM
kitchen suites plans every instruction acceptably and reaches its goal, and IM's closed loop recovers
from disturbances that SayCan's open loop does not notice."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from monologue_domain.expert.channel import write_task, write_world
from monologue_domain.expert.kitchen import goal_of, state_json
from monologue_domain.kitchen.judge import judge
from monologue_domain.kitchen.suites import Instruction, execution_success, judge_plan, load_suite, suite_path
from monologue_domain.kitchen.world import KitchenNoise, KitchenWorld
from monologue_domain.transcript import EventKind, Transcript
from monologue_llm.expert.backend import ExpertBackend
from monologue_llm.expert.format import Query, Truth
from monologue_llm.expert.formats.saycan import RESPONDER, KitchenResponder, episode
from planner_node.core.episode import EpisodeError, EpisodeResult
from planner_node.core.ports import SceneItem, SkillOption, SkillResult, SuccessReport
from planner_node.core.prompts import load_profile
from planner_node.core.runner import run_episode
from planner_node.core.settings import episode_defaults
from planner_node.core.strategies.inner_monologue import GenerativeInnerMonologueStrategy, InnerMonologueStrategy
from planner_node.core.strategies.saycan import SayCanStrategy
from planner_node.core.strategy import EpisodeContext, Ports

REPO = Path(__file__).resolve().parents[3]
CONFIG = REPO / "config"
PROMPTS = CONFIG / "prompts"
LOG = logging.getLogger("expert-saycan-test")
SAYCAN = load_suite(suite_path(CONFIG, "saycan"))
IM = load_suite(suite_path(CONFIG, "im_kitchen"))

# the kitchen suites' variants (monologue_eval.core.kitchen_bench): strategy, profile, affordances, Object
# and Success feedback
VARIANTS: dict[str, tuple[type[SayCanStrategy] | type[InnerMonologueStrategy], str, bool, bool, bool]] = {
    "saycan": (SayCanStrategy, "saycan", True, False, False),
    "no_vf": (SayCanStrategy, "saycan", False, False, False),
    "generative": (GenerativeInnerMonologueStrategy, "saycan", False, False, False),
    "im_success": (InnerMonologueStrategy, "im_kitchen", True, False, True),
    "im_object_success": (InnerMonologueStrategy, "im_kitchen", True, True, True),
}


class KitchenPorts:
    """The kitchen as the sim_kitchen skills backend serves it; every change is written to the truth
    directory (as the skills node does with llm:=expert), with the backend's `expert_extra`."""

    def __init__(self, world: KitchenWorld, truth_dir: Path, with_extra: bool = True) -> None:
        self.world, self.dir, self.with_extra = world, truth_dir, with_extra
        self.executed: list[str] = []
        self.publish()

    def publish(self) -> None:
        extra = {"kitchen_state": state_json(self.world.state())} if self.with_extra else None
        write_world(self.dir, "kitchen", self.world.scene_objects(), extra=extra)

    def affordances(self, include_unaffordable: bool = False) -> list[SkillOption]:
        return [SkillOption(a.skill, a.args, a.affordance) for a in self.world.affordances(include_unaffordable)]

    def execute(self, skill: str, args: Sequence[str], cancel: threading.Event) -> SkillResult:
        t = time.time()
        o = self.world.execute(skill, args)
        self.executed.append(f"{skill}({', '.join(args)})")
        self.publish()
        return SkillResult(int(o.error), o.error.name, o.message, o.failed_precondition, t, time.time())

    def describe(self) -> list[SceneItem]:
        return [SceneItem(o.name, o.category, o.visible) for o in self.world.scene_objects()]

    def detect(self, skill: str, args: Sequence[str], start_s: float, end_s: float) -> SuccessReport:
        ok, why = judge(skill, args, self.world.state())
        return SuccessReport(ok, 1.0, why)


def run(instr: Instruction, variant: str, truth: Path, noise: KitchenNoise | None = None, seed: int = 0,
        error_rate: float = 0.0, with_extra: bool = True) -> tuple[EpisodeResult, Transcript, KitchenPorts]:
    strategy, profile, affordances, objects, success = VARIANTS[variant]
    ports = KitchenPorts(KitchenWorld(instr.start, seed=seed, noise=noise), truth, with_extra)
    write_task(truth, instr.text, "kitchen", goal_of(instr))
    llm = ExpertBackend(truth, error_rate=error_rate, seed=seed, responders=[KitchenResponder()])
    t = Transcript("saycan")
    opts = episode_defaults(CONFIG, max_steps=15, use_affordances=affordances, object_feedback=objects,
                            success_feedback=success, scene_feedback=False, human_feedback=False)
    ep = EpisodeContext(llm, Ports(ports, ports, ports), load_profile(PROMPTS, profile), t, instr.text, opts, LOG)
    return run_episode(strategy(), ep), t, ports


def skills_chosen(t: Transcript) -> list[str]:
    out = [e.text for e in t.events if e.kind == EventKind.ROBOT_ACTION]
    return out + ["done"] * any(e.kind == EventKind.ROBOT_THOUGHT and e.data.get("done") for e in t.events)


def _sample(per_family: int) -> list[Instruction]:
    return [i for f in SAYCAN.families for i in SAYCAN.of_family(f.key)[:per_family]]


# 3 instructions of every family per variant; all 101 (about a minute each) under the slow marker
@pytest.mark.parametrize(("variant", "instructions"), [
    ("saycan", _sample(3)), ("no_vf", _sample(3)), ("generative", _sample(3)),
    *[pytest.param(v, list(SAYCAN.instructions), marks=pytest.mark.slow, id=f"{v}-all")
      for v in ("saycan", "no_vf", "generative")]])
def test_every_saycan_instruction_is_planned_and_executed(variant: str, instructions: list[Instruction],
                                                          tmp_path: Path) -> None:
    failed = []
    for instr in instructions:
        res, t, ports = run(instr, variant, tmp_path / instr.key)
        skills = skills_chosen(t)
        why = judge_plan(instr, skills)
        if res.error != EpisodeError.NONE or why or not execution_success(instr, ports.world.state()):
            failed.append((instr.key, res.reason, why, skills))
    assert failed == []


@pytest.mark.parametrize("variant", ["saycan", "im_success", "im_object_success"])
def test_every_im_kitchen_instruction_succeeds_without_disturbances(variant: str, tmp_path: Path) -> None:
    for instr in IM.instructions:
        res, t, ports = run(instr, variant, tmp_path / instr.key)
        assert res.error == EpisodeError.NONE, (instr.key, res.reason)
        assert judge_plan(instr, skills_chosen(t), collapse_repeats=True) == "", (instr.key, skills_chosen(t))
        assert execution_success(instr, ports.world.state()), instr.key


def test_the_scene_alone_is_enough_truth(tmp_path: Path) -> None:
    """Without the backend's expert_extra the planner decodes the kitchen scene (visited markers included)."""
    instr = next(i for i in SAYCAN.instructions if "visited(" in str(i.goal))
    res, t, ports = run(instr, "saycan", tmp_path, with_extra=False)
    assert res.error == EpisodeError.NONE and execution_success(instr, ports.world.state()), skills_chosen(t)


def test_im_recovers_from_disturbances_saycan_does_not(tmp_path: Path) -> None:
    """IM §4.3: skills fail silently at random. IM's Success feedback replans from the world's truth; SayCan's
    open loop, blind to failures, stops early more often."""
    noise = KitchenNoise(failure_rate=0.3)
    reached = {"saycan": 0, "im_success": 0}
    errors = []
    for variant in reached:
        for seed in range(3):
            for instr in IM.instructions:
                res, _, ports = run(instr, variant, tmp_path / f"{variant}-{seed}-{instr.key}", noise, seed)
                reached[variant] += execution_success(instr, ports.world.state())
                if res.error not in (EpisodeError.NONE, EpisodeError.MAX_STEPS_REACHED):
                    errors.append((variant, seed, instr.key, res.error.name, res.reason))
    assert reached["im_success"] == 3 * len(IM.instructions)
    assert reached["saycan"] < reached["im_success"]
    # SayCan believes a silently failed step ran; when its next step is then not offered it still picks an
    # offered one: open loop fails by not reaching the goal, never by a planner error
    assert errors == []


def test_episode_reads_both_kitchen_layouts() -> None:
    one = "Robot: Hi there, I'm a robot operating in an office kitchen.\nHuman: How would you bring me a coke\n" \
          "Robot: 1. find a coke, 2. pick up the coke, 3."
    assert episode(one) == ("How would you bring me a coke", ["find a coke", "pick up the coke"], True)
    im = ("Robot: Hi there, I’m a robot operating in an office kitchen.\nHuman: pick up a soda\n"
          "Robot: 1. find a coke[success: no][scene: coke]\n2. find a coke\n3.")
    assert episode(im) == ("pick up a soda", ["find a coke", "find a coke"], False)


def test_generation_in_saycan_layout_writes_the_rest_of_the_plan(tmp_path: Path) -> None:
    instr = next(i for i in SAYCAN.instructions if i.key == "long_horizon_01")
    KitchenPorts(KitchenWorld(instr.start), tmp_path)
    write_task(tmp_path, instr.text, "kitchen", goal_of(instr))
    pre = load_profile(PROMPTS, "saycan").preamble
    ans = RESPONDER.answer(Query("generate", pre + f"Human: {instr.text}\nRobot: 1.", Truth(tmp_path)))
    steps = [s.split(". ", 1)[-1] for s in ans.text.strip().split(", ")]
    assert ans.text.startswith(" find an energy bar, 2. pick up the energy bar, 3.")
    assert judge_plan(instr, [s.rstrip(".") for s in steps]) == ""


def test_an_unknown_instruction_is_an_expert_error(tmp_path: Path) -> None:
    from monologue_llm.expert.format import ExpertError

    KitchenPorts(KitchenWorld(SAYCAN.instructions[0].start), tmp_path)
    pre = load_profile(PROMPTS, "saycan").preamble
    with pytest.raises(ExpertError, match="no goal"):
        RESPONDER.answer(Query("score", pre + "Human: N/A\nRobot: 1.", Truth(tmp_path), (" done.",)))


def test_open_loop_belief_and_a_step_that_is_not_offered(tmp_path: Path) -> None:
    """SayCan's prompt shows no feedback: the stand-in plans from the world as it was when the episode began
    plus the steps since. "find a coke" failed silently (the robot stayed), so the model, believing it is at
    the coke, wants "pick up the coke", which the robot does not offer; it takes the offered step after
    which its plan is shortest (finding the coke again), not an answer outside the candidates."""
    instr = next(i for i in IM.instructions if i.key == "mobile_manipulation_01")
    world = KitchenWorld(instr.start)
    KitchenPorts(world, tmp_path)
    write_task(tmp_path, instr.text, "kitchen", goal_of(instr))
    r, truth = KitchenResponder(), Truth(tmp_path)
    head = load_profile(PROMPTS, "saycan").preamble + f"Human: {instr.text}\nRobot: 1."
    offered = tuple(" " + load_profile(PROMPTS, "saycan").action(a.skill, a.args, {})
                    for a in world.affordances()) + (" done.",)
    assert r.answer(Query("score", head, truth, offered)).text == "find a coke"  # the start is remembered
    after = head + " find a coke, 2."  # the world did not change: the find failed silently
    assert " pick up the coke" not in offered
    ans = r.answer(Query("score", after, truth, offered))
    assert ans.text == "find a coke" and "not offered" in ans.note
    world.execute("find", ["coke"])  # had it run, the next step is the pick
    KitchenPorts(world, tmp_path)
    offered = tuple(" " + load_profile(PROMPTS, "saycan").action(a.skill, a.args, {})
                    for a in world.affordances()) + (" done.",)
    assert r.answer(Query("score", after, truth, offered)).text == "pick up the coke"
