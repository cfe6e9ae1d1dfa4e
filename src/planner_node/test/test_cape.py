"""The `cape` strategy (CAPE) against the ROS-free kitchen world (monologue_domain.kitchen.world.
KitchenWorld as the skills port), with a scripted sampling LLM and bag-of-words embeddings: grounding,
scores, corrective prompts at each specificity (the paper's strings), few-shot examples, the
correction cap, the baselines (open loop, re-sampling), settings, the runner and cassette replay;
and once with the real embedded model (marked llm + slow)."""
from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from monologue_domain.kitchen.world import DEFAULT_PLACEMENTS, KitchenWorld, default_state, make_state
from monologue_domain.skills import SkillError
from monologue_domain.transcript import Event, EventKind, Transcript
from monologue_llm.base import Sample, SampleResult
from monologue_llm.cassette import CassetteBackend
from planner_node.core.episode import EpisodeError, EpisodeResult
from planner_node.core.ports import SceneItem, SkillOption
from planner_node.core.prompts import load_profile
from planner_node.core.runner import run_episode
from planner_node.core.settings import episode_defaults, settings_from_parameters
from planner_node.core.strategies.cape import CapeStrategy, correction_examples
from planner_node.core.strategies.cape.grounding import (
    Grounder,
    Proposal,
    most_similar,
    score_geometric,
    score_weighted,
)
from planner_node.core.strategies.cape.prompts import (
    TASK_FAILED,
    Attempt,
    PlanEntry,
    clean_step,
    error_info,
    load_domain,
)
from planner_node.core.strategies.cape.settings import METHODS, CapeSettings
from planner_node.core.strategy import EpisodeContext, Ports
from planner_node.testing import SamplingOnlyLLM, WorldPorts, bow

LOG = logging.getLogger("cape-test")
CONFIG = Path(__file__).resolve().parents[3] / "config"
PROMPTS = CONFIG / "prompts"


# ---- fakes ---------------------------------------------------------------------------------------

class BowEmbedder:
    name = "bow"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> tuple[tuple[float, ...], ...]:
        self.calls.append(list(texts))
        return tuple(bow(t) for t in texts)


class ScriptedCape(SamplingOnlyLLM):
    """A sampling LLM: `rule(prompt)` gives the sampled lines (or (line, mean log-prob) pairs) of
    one request; bag-of-words embeddings. Records every sampling prompt."""

    name = "scripted-cape"

    def __init__(self, rule: Callable[[str], Sequence[str | tuple[str, float]]]) -> None:
        self.rule = rule
        self.prompts: list[str] = []
        self.requests: list[dict[str, Any]] = []

    def sample(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64, n: int = 1,
               temperature: float = 1.0, presence_penalty: float = 0.0, seed: int = 0) -> SampleResult:
        self.prompts.append(prompt)
        self.requests.append({"n": n, "temperature": temperature, "presence_penalty": presence_penalty,
                              "seed": seed, "stop": list(stop)})
        out = []
        for item in list(self.rule(prompt))[:n]:
            text, p = (item, -0.1) if isinstance(item, str) else item
            out.append(Sample(" " + text, (p, p), "stop"))
        return SampleResult(tuple(out), len(prompt) // 4, len(prompt) // 4, 0.0)


class KitchenPorts(WorldPorts):
    """Skills, scene and success ports over the kitchen world, as the sim_kitchen skills backend serves it."""

    world: KitchenWorld

    def run(self, skill: str, args: Sequence[str]) -> tuple[SkillError, str, str]:
        o = self.world.execute(skill, args)
        return o.error, o.message, o.failed_precondition

    def describe(self) -> list[SceneItem]:
        return [SceneItem(o.name, o.category) for o in self.world.scene_objects()]


def holding_coke() -> KitchenWorld:
    placements = dict(DEFAULT_PLACEMENTS)
    placements["coke"] = "robot"
    return KitchenWorld(make_state(placements))


def cape_settings(method: str = "Z_E", **changes: object) -> CapeSettings:
    s = settings_from_parameters(yaml_params()).strategy_settings.get(CapeSettings)
    assert isinstance(s, CapeSettings)
    changes = {"embedder": "llm", **changes}  # the scripted LLMs embed; the YAML's default is Sentence-BERT
    return replace(s, method=method, **changes)  # type: ignore[arg-type]


def yaml_params(**overrides: object) -> dict[str, object]:
    from monologue_common.core.settings import parameters_from_files

    params = parameters_from_files([CONFIG / "monologue.yaml", CONFIG / "llm" / "embedded.yaml"], "planner")
    params["prompt_dir"] = str(PROMPTS)
    params.update(overrides)
    return params


def run(llm: Any, world: KitchenWorld, task: str, settings: CapeSettings, max_steps: int = 8,
        transcript: Transcript | None = None) -> tuple[EpisodeResult, Transcript, KitchenPorts]:
    ports = KitchenPorts(world)
    t = transcript or Transcript("cape")
    ep = EpisodeContext(llm, Ports(ports, ports, ports), load_profile(PROMPTS, "saycan"), t, task,
                        episode_defaults(CONFIG, max_steps=max_steps), LOG)
    return run_episode(CapeStrategy(settings), ep), t, ports


def kinds(t: Transcript) -> list[str]:
    return [e.kind.name for e in t.events]


def of(t: Transcript, kind: EventKind) -> list[Event]:
    return [e for e in t.events if e.kind == kind]


def flat(text: str) -> str:
    return " ".join(text.split())


def last_query(prompt: str) -> str:
    return prompt.split("\n\n")[-1]


# ---- grounding and scores ------------------------------------------------------------------------

def test_scores_are_the_papers_equations() -> None:
    assert score_weighted(0.8, -0.5, 0.3) == pytest.approx(0.8 - 0.15)
    assert score_geometric(0.8, -0.5) == pytest.approx(0.9 * math.exp(-0.5))
    for c in (-1.0, 0.0, 1.0):  # S_g stays in [0, 1] for P <= 0
        for p in (-50.0, -1.0, 0.0):
            assert 0.0 <= score_geometric(c, p) <= 1.0


def test_grounding_takes_the_most_similar_action_and_the_best_sample() -> None:
    actions = ["pick up the apple", "find an apple", "go to the trash", "done"]
    g = Grounder(BowEmbedder(), actions)
    ranked = g.ground([Proposal("pick the apple up", -0.2)], "weighted", 0.3)
    assert ranked[0].action == "pick up the apple" and ranked[0].similarity == pytest.approx(1.0)
    assert ranked[0].score == pytest.approx(1.0 + 0.3 * -0.2)
    assert [r.action for r in ranked][-1] != "pick up the apple"
    # eq. 1: each action takes the max over samples of C + beta * P
    props = [Proposal("go to the trash", -3.0), Proposal("walk to the trash can", -0.1)]
    best = {r.action: r for r in g.ground(props, "weighted", 1.0)}
    c_walk = sum(a * b for a, b in zip(bow("walk to the trash can"), bow("go to the trash")))
    assert best["go to the trash"].score == pytest.approx(max(1.0 - 3.0, c_walk - 0.1))
    assert best["go to the trash"].sample == "walk to the trash can"
    geo = {r.action: r for r in g.ground(props, "geometric", 1.0)}
    assert geo["go to the trash"].score == pytest.approx(max(math.exp(-3.0), (c_walk + 1) / 2 * math.exp(-0.1)))
    assert g.ground([Proposal("", -0.1)], "weighted", 0.3) == []


def test_clean_step_and_demonstration_choice() -> None:
    assert clean_step(" Step 3: Pick up the apple.\nStep 4: x") == "pick up the apple"
    domain = load_domain(PROMPTS, "cape_kitchen")
    ranked = most_similar(BowEmbedder(), "Throw away the coke", [d.task for d in domain.demonstrations])
    assert domain.demonstrations[ranked[0][0]].task == "Throw away the apple"


# ---- corrective prompts --------------------------------------------------------------------------

HOLDING = "hand_full: I cannot pick up the apple because I am already holding the coke"


def test_error_messages_at_each_specificity() -> None:
    info = error_info("pick up the apple", "PRECONDITION_FAILED", "x", HOLDING)
    assert info.message("S") == TASK_FAILED == "Task Failed"
    assert info.message("I") == "I cannot pick up the apple"
    assert info.message("E") == "I cannot pick up the apple because I am already holding the coke"
    assert info.proposition == "hand_full"
    other = error_info("go to the table", "EXECUTION_FAILED", "the policy failed", "")
    assert other.message("I") == "I cannot go to the table"
    assert other.message("E") == "I cannot go to the table because the policy failed"


@pytest.mark.parametrize("spec, message", [
    ("S", "Task Failed"),
    ("I", "I cannot pick up the apple"),
    ("E", "I cannot pick up the apple because I am already holding the coke"),
])
def test_corrective_prompt_rendering(spec: str, message: str) -> None:
    domain = load_domain(PROMPTS, "cape_kitchen")
    msg = error_info("pick up the apple", "PRECONDITION_FAILED", "", HOLDING).message(spec)
    plan = [PlanEntry((), "find an apple"), PlanEntry((Attempt("pick up the apple", msg),), None)]
    prompt = domain.prompt(domain.demonstrations[0], "Pick up the apple", plan)
    assert last_query(prompt) == (
        "Task: Pick up the apple\n"
        "Step 1: Find an apple\n"
        "Step 2: Pick up the apple\n"
        f"Error: {message}. A correct step would be to\n"
        "Step 2:")
    assert prompt.startswith("Task: Throw away the apple\nStep 1: Find an apple\n")


def test_rendering_reproduces_the_papers_plans(paper_lines: Callable[[str, int, int], list[str]]) -> None:
    """CAPE Tables VIII-X (C l.404-427) print plans with their line breaks flattened; our layout,
    flattened, is the paper's text, chained corrections included."""
    domain = load_domain(PROMPTS, "cape_kitchen")
    plan = [PlanEntry((), a) for a in ("Walk to home office", "Walk to remote control", "Find remote control",
                                       "Grab remote control", "Walk to couch", "Sit on couch",
                                       "Touch remote control")]
    plan.append(PlanEntry((Attempt("Find television", "I am not near the television"),
                           Attempt("Walk to tv", "I am sitting")), "Stand up"))
    text = flat("\n".join(domain.query_lines("Listen to Music", plan)[1:]))
    expected = ("Step 1: Walk to home office Step 2: Walk to remote control Step 3: Find remote control "
                "Step 4: Grab remote control Step 5: Walk to couch Step 6: Sit on couch Step 7: Touch remote "
                "control Step 8: Find television Error: I am not near the television. A correct step would be to "
                "Step 8: Walk to tv Error: I am sitting. A correct step would be to Step 8: Stand up")
    assert text == expected
    pot = flat("\n".join(domain.query_lines("x", [
        *(PlanEntry((), a) for a in ("Find stove", "Find pot", "Turn to stove", "Switch on stove")),
        PlanEntry((Attempt("Put pot on stove", "I don't have the pot"),), "Find pot")])[1:]))
    assert pot.endswith("Step 5: Put pot on stove Error: I don't have the pot. A correct step would be to "
                        "Step 5: Find pot")
    source = flat("\n".join(paper_lines("cape.txt", 404, 427)))  # Tables VIII-X
    assert expected in source
    assert "Step 5: Put pot on stove Error: I don't have the pot. A correct step would be to Step 5: Find pot" in source


# ---- episodes on the kitchen world ---------------------------------------------------------------

def corrective(prompt: str) -> bool:
    """A corrective prompt ends with the error line and the open step."""
    lines = last_query(prompt).split("\n")
    return len(lines) >= 2 and lines[-2].startswith("Error: ")


def fix_hand_rule(prompt: str) -> list[str]:
    """Find the apple, pick it up (fails while holding the coke), after an error put the coke down."""
    q = last_query(prompt)
    if corrective(prompt):
        return ["put down the coke"] * 3
    if "Step 2: Put down the coke" in q and "Step 3: Pick up the apple" not in q:
        return ["pick up the apple"] * 3
    if "Step 3: Pick up the apple" in q:
        return ["done"] * 3
    if "Step 1: Find an apple" in q:
        return ["pick up the apple"] * 3
    return ["find an apple"] * 3


def test_z_e_corrects_a_precondition_error_and_nothing_moves_on_failure() -> None:
    world = holding_coke()
    llm = ScriptedCape(fix_hand_rule)
    res, t, ports = run(llm, world, "Pick up the apple", cape_settings("Z_E"))
    assert res.error == EpisodeError.NONE, res.reason
    assert world.holding == "apple" and world.place_of("coke") == "close counter"
    errors = [e for e in of(t, EventKind.ERROR) if e.data.get("precondition")]
    assert len(errors) == 1
    assert errors[0].data["failed_precondition"] == HOLDING and errors[0].data["proposition"] == "hand_full"
    thoughts = [e for e in of(t, EventKind.ROBOT_THOUGHT) if e.data.get("corrective_prompt")]
    assert [e.text for e in thoughts] == [
        "Error: I cannot pick up the apple because I am already holding the coke. A correct step would be to"]
    actions = of(t, EventKind.ROBOT_ACTION)
    assert [(e.text, e.data["correction"]) for e in actions] == [
        ("Step 1: Find an apple", 0), ("Step 2: Pick up the apple", 0), ("Step 2: Put down the coke", 1),
        ("Step 3: Pick up the apple", 0)]
    for e in actions:
        assert {"score", "similarity", "mean_logprob", "sample", "candidates", "skill", "args"} <= set(e.data)
        assert e.data["score"] == pytest.approx(e.data["similarity"] + 0.3 * e.data["mean_logprob"])
    assert kinds(t)[-2:] == ["ROBOT_THOUGHT", "EPISODE_END"] and of(t, EventKind.ROBOT_THOUGHT)[-1].data["done"]
    # the corrective prompt, then the grounded correction in the next planning prompt (errors kept)
    fix_prompt = next(p for p in llm.prompts if corrective(p))
    assert last_query(fix_prompt).endswith(
        "Step 2: Pick up the apple\nError: I cannot pick up the apple because I am already holding the coke. "
        "A correct step would be to\nStep 2:")
    assert "Step 2: Put down the coke\nStep 3:" in llm.prompts[-1]
    # paper sampling settings, seeds advance per request
    assert {(r["temperature"], r["presence_penalty"], r["n"]) for r in llm.requests} == {(0.5, 0.5, 3)}
    assert [r["seed"] for r in llm.requests] == list(range(len(llm.requests)))
    assert res.steps_taken == len(ports.executed) == 4


@pytest.mark.parametrize("method, message", [
    ("Z_S", "Task Failed"), ("Z_I", "I cannot pick up the apple"),
    ("Z_E", "I cannot pick up the apple because I am already holding the coke"),
    ("Z_E+S_g", "I cannot pick up the apple because I am already holding the coke")])
def test_variants_put_their_message_in_the_corrective_prompt(method: str, message: str) -> None:
    llm = ScriptedCape(fix_hand_rule)
    res, t, _ = run(llm, holding_coke(), "Pick up the apple", cape_settings(method))
    assert res.error == EpisodeError.NONE, res.reason
    fix_prompt = next(p for p in llm.prompts if corrective(p))
    assert f"Error: {message}. A correct step would be to\nStep 2:" in fix_prompt
    score_fn = "geometric" if method.endswith("S_g") else "weighted"
    for e in of(t, EventKind.ROBOT_ACTION):
        assert e.data["score_fn"] == score_fn and e.data["method"] == method
        if score_fn == "geometric":
            assert e.data["score"] == pytest.approx((e.data["similarity"] + 1) / 2 * math.exp(e.data["mean_logprob"]))


def test_few_shot_examples_only_in_corrective_prompts_and_disjoint_from_the_task() -> None:
    task = "Bring me the pepsi"  # a task of the correction set: its own example must not be shown
    world = holding_coke()

    def rule(prompt: str) -> list[str]:
        q = last_query(prompt)
        if corrective(prompt):
            return ["put down the coke"]
        if "Put down the coke" in q:
            return ["done"]
        return ["pick up the pepsi"]

    llm = ScriptedCape(rule)
    res, t, _ = run(llm, world, task, cape_settings("F_E"))
    assert res.error == EpisodeError.NONE, res.reason
    fixes = [p for p in llm.prompts if corrective(p)]
    plans = [p for p in llm.prompts if not corrective(p)]
    assert fixes and plans
    domain = load_domain(PROMPTS, "cape_kitchen")
    example_tasks = {ex.task for ex in domain.corrections}
    for p in fixes:
        blocks = p.split("\n\n")
        shown = [b.split("\n", 1)[0].removeprefix("Task: ") for b in blocks[1:-1]]
        assert len(shown) == 3 and set(shown) <= example_tasks and task not in shown
        for b in blocks[1:-1]:  # each example: failed step, E message, corrective step
            lines = b.split("\n")
            assert re.fullmatch(r"Error: I cannot .+ because .+\. A correct step would be to", lines[-2])
            assert lines[-1].split(":")[0] == lines[-3].split(":")[0]
    for p in plans:  # demonstration + query only (the query keeps its own corrected step)
        blocks = p.split("\n\n")
        assert len(blocks) == 2 and "Error:" not in blocks[0]
    chosen = correction_examples(domain, BowEmbedder(), task, 3)
    assert len(chosen) == 3 and all(ex.task != task for ex in chosen)
    instr = of(t, EventKind.HUMAN_INSTRUCTION)[0]
    assert len(instr.data["few_shot_examples"]) == 3 and task not in instr.data["few_shot_examples"]


@pytest.mark.parametrize("cap", [0, 1, 3])
def test_corrections_chain_up_to_the_cap(cap: int) -> None:
    world = holding_coke()
    before = world.state()
    llm = ScriptedCape(lambda p: ["pick up the apple"])  # never learns
    res, t, ports = run(llm, world, "Pick up the apple", cape_settings("Z_E", max_corrections=cap))
    assert res.error == EpisodeError.PLANNING_FAILED
    assert f"after {cap} corrections" in res.reason
    assert len([e for e in of(t, EventKind.ERROR) if e.data.get("precondition")]) == cap + 1
    corr = [e for e in of(t, EventKind.ROBOT_THOUGHT) if e.data.get("corrective_prompt")]
    assert [e.data["correction"] for e in corr] == list(range(1, cap + 1))
    assert len(ports.executed) == cap + 1 and world.state() == before  # nothing moved
    assert "Error:" not in llm.prompts[0]
    if cap == 3:  # the chain: every earlier failure stays in the corrective prompt
        assert last_query(llm.prompts[-1]).count("Step 1: Pick up the apple\nError:") == 3


def test_resampling_walks_the_top_k_without_error_text() -> None:
    world = holding_coke()

    def rule(prompt: str) -> list[tuple[str, float]]:
        if "Step 1: Put down the coke" in last_query(prompt):
            return [("done", -0.1)]
        # top-1 fails (hand full), the second candidate runs
        return [("pick up the apple", -0.1), ("put down the coke", -0.5)]

    llm = ScriptedCape(rule)
    res, t, ports = run(llm, world, "Pick up the apple", cape_settings("resampling"))
    assert res.error == EpisodeError.NONE, res.reason
    assert ports.executed[:2] == [("pick_up", ("apple",)), ("put_down", ("coke",))]
    assert [e.data["resample"] for e in of(t, EventKind.ROBOT_ACTION)] == [0, 1]
    assert not any("Error:" in p for p in llm.prompts)
    assert not [e for e in of(t, EventKind.ROBOT_THOUGHT) if e.data.get("corrective_prompt")]


def test_resampling_ends_when_none_of_the_top_k_runs() -> None:
    world = holding_coke()
    llm = ScriptedCape(lambda p: ["pick up the apple"])
    res, t, ports = run(llm, world, "Pick up the apple", cape_settings("resampling", top_k=2))
    assert res.error == EpisodeError.PLANNING_FAILED and "top 2" in res.reason
    assert len(ports.executed) == 2 and all(s == "pick_up" for s, _ in ports.executed)


def test_huang_open_loop_keeps_going_without_feedback() -> None:
    world = holding_coke()
    steps = iter(["find an apple", "pick up the apple", "go to the trash", "done"])
    llm = ScriptedCape(lambda p: [next(steps)])
    res, t, ports = run(llm, world, "Throw away the apple", cape_settings("huang"))
    assert res.error == EpisodeError.NONE
    assert [e.text for e in of(t, EventKind.ROBOT_ACTION)] == [
        "Step 1: Find an apple", "Step 2: Pick up the apple", "Step 3: Go to the trash"]
    assert len([e for e in of(t, EventKind.ERROR) if e.data.get("precondition")]) == 1
    assert "Step 2: Pick up the apple\nStep 3:" in llm.prompts[2]  # the failed step stays, no error text
    assert not any("Error:" in p for p in llm.prompts)
    assert world.holding == "coke"


def test_a_step_below_the_threshold_ends_the_plan() -> None:
    world = KitchenWorld(default_state())
    llm = ScriptedCape(lambda p: [("xyzzy plugh", -0.1)])
    res, t, ports = run(llm, world, "Throw away the apple", cape_settings("Z_E", threshold_weighted=0.5))
    assert res.error == EpisodeError.NONE and "threshold" in res.reason
    assert not ports.executed
    end = of(t, EventKind.ROBOT_THOUGHT)[-1]
    assert end.text == "Step 1: Done" and end.data["done"] and end.data["score"] < 0.5


def test_settings_come_from_the_yaml_and_are_validated() -> None:
    s = cape_settings()
    assert (s.method, s.samples, s.temperature, s.presence_penalty, s.few_shot_examples) == ("Z_E", 3, 0.5, 0.5, 3)
    assert (cape_settings("F_E+S_g").few_shot, cape_settings("F_E+S_g").score) == (True, "geometric")
    assert set(METHODS) == {"Z_S", "Z_I", "Z_E", "Z_E+S_g", "F_E", "F_E+S_g", "huang", "resampling"}
    with pytest.raises(ValueError, match="cape.method"):
        settings_from_parameters(yaml_params(**{"cape.method": "Z_X"}))
    yaml_cape = settings_from_parameters(yaml_params()).strategy_settings.get(CapeSettings)
    assert isinstance(yaml_cape, CapeSettings)
    assert (yaml_cape.embedder, yaml_cape.sentence_bert_path) == ("sentence_bert", "")  # the packaged MiniLM
    with pytest.raises(ValueError, match="cape.embedder"):
        settings_from_parameters(yaml_params(**{"cape.embedder": "bert"}))
    with pytest.raises(ValueError, match="cape.samples"):
        settings_from_parameters(yaml_params(**{"cape.samples": 0}))
    assert not [u for u in settings_from_parameters(yaml_params()).unused if u.startswith("cape.")]


def test_demonstrations_run_in_the_kitchen_and_corrections_are_admissible() -> None:
    domain = load_domain(PROMPTS, "cape_kitchen")
    texts = {domain.action_text(s, a): (s, a) for s, a in KitchenWorld(default_state()).instances()}
    for demo in domain.demonstrations:
        world = KitchenWorld(default_state())
        assert demo.steps[-1] == domain.done
        for step in demo.steps[:-1]:
            assert world.execute(*texts[step]).ok, (demo.task, step)
    assert len(domain.corrections) >= 4
    for ex in domain.corrections:
        for step in (*ex.steps, ex.failed, ex.correction):
            assert step in texts, (ex.task, step)


def test_through_the_runner_with_the_yaml_parameters(make_runner: Any) -> None:
    from planner_node.core.runner import GoalRequest

    world = holding_coke()
    ports = KitchenPorts(world)
    runner = make_runner(ScriptedCape(fix_hand_rule), ports, strategy="cape", prompt_profile="saycan")
    out = runner.execute(GoalRequest(instruction="Pick up the apple"))
    assert out.result.error == EpisodeError.NONE, out.result.reason
    assert world.holding == "apple"
    assert out.path is not None
    header = json.loads(out.path.read_text(encoding="utf-8").split("\n", 1)[0])
    assert header["strategy"] == "cape" and header["options"]["decoding"] == "generate"
    assert any(e.data.get("corrective_prompt") for e in out.events)
    assert len(out.result.steps) == 5  # 4 proposals + the done one: one step record each


def test_a_recorded_cassette_replays_the_same_transcript(tmp_path: Path) -> None:
    path = tmp_path / "cape.jsonl"
    rec = CassetteBackend(ScriptedCape(fix_hand_rule), path, "record")
    res1, t1, _ = run(rec, holding_coke(), "Pick up the apple", cape_settings("F_E"))
    rep = CassetteBackend(None, path, "replay")
    res2, t2, _ = run(rep, holding_coke(), "Pick up the apple", cape_settings("F_E"))
    assert res1.error == res2.error == EpisodeError.NONE
    assert [(e.kind, e.text, dict(e.data)) for e in t1.events] == [(e.kind, e.text, dict(e.data)) for e in t2.events]
    assert {line.split('"kind": ')[1].split('"')[1] for line in path.read_text().splitlines()} == {"sample", "embed"}


def test_invalid_goals() -> None:
    llm = ScriptedCape(lambda p: ["done"])
    res, _, _ = run(llm, holding_coke(), "  ", cape_settings())
    assert res.error == EpisodeError.INVALID_GOAL
    res, _, _ = run(llm, holding_coke(), "x", cape_settings(demonstrations="no_such_file"))
    assert res.error == EpisodeError.INVALID_GOAL and "no_such_file" in res.reason




# ---- the real embedded model ---------------------------------------------------------------------

@pytest.mark.llm
@pytest.mark.slow
@pytest.mark.parametrize("method", ["Z_E", "F_E+S_g"])
def test_precondition_error_and_correction_with_the_embedded_model(llama_backend: Any, method: str) -> None:
    """The robot holds the coke and is asked to pick up the apple: the natural plan (find the
    apple, pick it up) meets a precondition error, which becomes a corrective prompt and a
    correction (mechanics, not wisdom: whatever the 270M model proposes; its own embeddings)."""
    placements = dict(DEFAULT_PLACEMENTS)
    placements["coke"] = "robot"
    world = KitchenWorld(make_state(placements))
    ports = KitchenPorts(world)
    base = settings_from_parameters(yaml_params()).strategy_settings.get(CapeSettings)
    assert isinstance(base, CapeSettings)
    # every proposal passes: the test is about the error -> corrective prompt -> correction path
    s = replace(base, method=method, embedder="llm", threshold_weighted=-100.0, threshold_geometric=0.0,
                max_corrections=1)
    t = Transcript("cape-real")
    ep = EpisodeContext(llama_backend, Ports(ports, ports, ports), load_profile(PROMPTS, "saycan"), t,
                        "Pick up the apple", episode_defaults(CONFIG, max_steps=4), logging.getLogger("cape-real"))
    res = run_episode(CapeStrategy(s), ep)
    assert res.error in (EpisodeError.NONE, EpisodeError.PLANNING_FAILED, EpisodeError.MAX_STEPS_REACHED), res.reason
    errors = [e for e in t.events if e.kind == EventKind.ERROR and e.data.get("precondition")]
    assert errors, [e.text for e in t.events]
    first = errors[0]
    assert first.data["failed_precondition"].split(": ", 1)[0] in ("hand_full", "not_near", "not_holding",
                                                                     "already_holding", "hand_empty")
    fixes = [e for e in t.events if e.kind == EventKind.ROBOT_THOUGHT and e.data.get("corrective_prompt")]
    assert fixes and fixes[0].index > first.index
    assert fixes[0].text == f"Error: {first.data['error_message']}. A correct step would be to"
    assert " because " in fixes[0].text  # explicit cause (E)
    corrections = [e for e in t.events if e.kind == EventKind.ROBOT_ACTION and e.data.get("correction", 0) >= 1]
    assert corrections and corrections[0].index > fixes[0].index
    assert corrections[0].data["step"] == first.data["step"]
    # every executed attempt is a ROBOT_ACTION; a refused one moved nothing (the coke stays held
    # unless the plan put it down)
    actions = [e for e in t.events if e.kind == EventKind.ROBOT_ACTION]
    assert [(e.data["skill"], tuple(e.data["args"])) for e in actions] == ports.executed
    if ("put_down", ("coke",)) not in ports.executed:
        assert world.holding == "coke"


# ---- ports and backends without the optional capabilities ----------------------------------------

class AffordedOnlyPorts(KitchenPorts):
    def affordances(self) -> list[SkillOption]:  # type: ignore[override]
        return super().affordances()


def test_admissible_actions_are_every_instance_where_the_port_can_say() -> None:
    from planner_node.core.strategies.cape import admissible_options

    world = holding_coke()
    every = admissible_options(KitchenPorts(world))
    assert len(every) == len(world.instances()) and any(o.affordance == 0.0 for o in every)
    afforded = admissible_options(AffordedOnlyPorts(world))
    assert afforded and all(o.affordance > 0.0 for o in afforded) and len(afforded) < len(every)


def test_a_backend_without_sampling_or_embeddings(scripted: Any) -> None:
    """Greedy generation + scoring gives one sample per step; the embedder can be given; without
    one and without LLM embeddings the goal is refused."""
    world = KitchenWorld(default_state())
    llm = scripted(lambda c, p: 0, lines=[" Find an apple", " Pick up the apple", " Done"])
    ports = KitchenPorts(world)
    t = Transcript("greedy")
    ep = EpisodeContext(llm, Ports(ports, ports, ports), load_profile(PROMPTS, "saycan"), t, "Pick up the apple",
                        episode_defaults(CONFIG, max_steps=5), LOG)
    res = run_episode(CapeStrategy(cape_settings("Z_E"), embedder=BowEmbedder()), ep)
    assert res.error == EpisodeError.NONE, res.reason
    assert world.holding == "apple" and len(llm.gen_prompts) == 3 and len(llm.prompts) == 3  # scored each line
    refused, _, _ = run(scripted(lambda c, p: 0), KitchenWorld(default_state()), "x", cape_settings())
    assert refused.error == EpisodeError.INVALID_GOAL and "embeddings" in refused.reason
