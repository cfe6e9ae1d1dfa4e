"""MultiTalk with the real embedded model (Gemma 3 270M), through the runner on the kinematic tabletop:
whatever the model answers as Planner or Analyzer is parsed into one of its formats or recorded as an
ERROR with a re-prompt, only a simulator-approved plan moves anything, and the transcript ends
(mechanics, not wisdom: the 270M model rarely writes a usable plan)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from monologue_domain.kinematic_world import world_with
from monologue_domain.transcript import EventKind
from monologue_llm.base import Generation
from planner_node.core.episode import EpisodeError
from planner_node.core.ports import SceneItem
from planner_node.core.runner import GoalRequest
from planner_node.core.strategies.multitalk.parsing import parse_planner_output

pytestmark = [pytest.mark.llm, pytest.mark.slow]

TASK = "Put the red block in the red bowl."
PLAN = """Step-by-step Instructions:
1: grasp((0.4, 0.1, 0.02)) # the red block
2: move((0.5, 0.2, 0.0)) # into the red bowl
3: home() # done"""


def _ports(world_ports: type, world: Any) -> Any:
    class GeoPorts(world_ports):  # type: ignore[misc, valid-type]
        def describe(self) -> list[SceneItem]:
            return [SceneItem(s.name, s.category, True, s.position, s.size) for s in self.world.snapshot()]

    return GeoPorts(world)


class PlannerScriptAnalyzerModel:
    """The Planner answers from a script, the Analyzer is the real model (its stage with the LLM)."""

    def __init__(self, model: Any, planner: Sequence[str]) -> None:
        self.model, self.planner = model, list(planner)
        self.name = f"script+{model.name}"
        self.analyzer_prompts = 0

    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64) -> Generation:
        if prompt.endswith("\n\nAnalyzer:\n"):
            self.analyzer_prompts += 1
            return self.model.generate(prompt, stop, max_tokens)  # type: ignore[no-any-return]
        text = self.planner.pop(0) if self.planner else ""
        return Generation(text, 0, 0, 0, "stop", 0.0)

    def score(self, prompt: str, candidates: Sequence[str]) -> Any:
        raise AssertionError("MultiTalk only generates")

    def close(self) -> None:
        pass


def _check(out: Any, ports: Any) -> None:
    events = out.events
    assert out.result.error in (EpisodeError.NONE, EpisodeError.PLANNING_FAILED), out.result.reason
    assert events[-1].kind == EventKind.EPISODE_END and events[0].data["multitalk"] == "perception"
    for e in events:
        if e.data.get("multitalk") == "rejected":
            assert e.kind == EventKind.ERROR and e.data["reason"] and e.data["role"] in ("planner", "analyzer")
        if e.data.get("multitalk") == "planner":  # an accepted answer is one of the three formats
            assert parse_planner_output(e.data["output"]).kind == e.data["output_type"]
    sims = [e for e in events if e.data.get("multitalk") == "simulator"]
    actions = [e for e in events if e.kind == EventKind.ROBOT_ACTION]
    assert len(actions) == len(ports.executed)
    if actions:  # only after the simulator approved a plan
        assert sims and sims[-1].data["ok"] and sims[-1].index < actions[0].index


def test_planner_stage_with_the_embedded_model(llama_backend, make_runner, world_ports) -> None:  # type: ignore[no-untyped-def]
    world = world_with([("red block", (0.4, 0.1, 0.02)), ("red bowl", (0.5, 0.2, 0.0))])
    ports = _ports(world_ports, world)
    runner = make_runner(llama_backend, ports, strategy="multitalk", **{
        "multitalk.planner_decoding": "generate",
        "multitalk.max_rounds": 2, "multitalk.max_reprompts": 1, "multitalk.max_tokens_planner": 96,
        "multitalk.max_tokens_analyzer": 64, "multitalk.include_locations": False})
    out = runner.execute(GoalRequest(TASK))
    _check(out, ports)
    answers = [e for e in out.events if e.data.get("multitalk") in ("planner", "rejected")]
    assert answers and answers[0].data.get("role", "planner") == "planner"


def test_analyzer_stage_with_the_embedded_model(llama_backend, make_runner, world_ports) -> None:  # type: ignore[no-untyped-def]
    world = world_with([("red block", (0.4, 0.1, 0.02)), ("red bowl", (0.5, 0.2, 0.0))])
    ports = _ports(world_ports, world)
    llm = PlannerScriptAnalyzerModel(llama_backend, [PLAN, PLAN])
    runner = make_runner(llm, ports, strategy="multitalk", **{
        "multitalk.planner_decoding": "generate", "multitalk.max_reprompts": 1, "multitalk.max_tokens_analyzer": 64, "multitalk.include_locations": False})
    out = runner.execute(GoalRequest(TASK))
    _check(out, ports)
    assert llm.analyzer_prompts >= 1
    verdicts = [e for e in out.events if e.data.get("multitalk") in ("analyzer", "analyzer_deferred")]
    if out.result.success:  # the model's verdict accepted the plan, or its comments were deferred to
        assert verdicts and world.is_on("red block", "red bowl")


def test_scored_planner_with_the_embedded_model(llama_backend, make_runner, world_ports) -> None:  # type: ignore[no-untyped-def]
    """The default decoding (`scored`): the embedded model ranks the admissible lines; the plan is in the
    supplement's format, passes the simulator and puts the block in the bowl."""
    world = world_with([("red block", (0.4, 0.1, 0.02)), ("red bowl", (0.5, 0.2, 0.0))])
    ports = _ports(world_ports, world)
    runner = make_runner(llama_backend, ports, strategy="multitalk", **{
        "multitalk.ablation": "no_analyzer", "multitalk.include_locations": False})
    out = runner.execute(GoalRequest(TASK))
    _check(out, ports)
    assert out.result.success, out.result.reason
    plan = next(e for e in out.events if e.data.get("multitalk") == "planner").data["output"]
    assert plan == ("Step-by-step Instructions:\n1: grasp((0.4, 0.1, 0.02)) # grasp the red block\n"
                    "2: move((0.5, 0.2, 0.0)) # put the red block in the red bowl\n3: home() # the task is done")
    scores = next(e for e in out.events if e.data.get("multitalk") == "planner_scores").data["steps"]
    assert [len(step) for step in scores] == [1, 1, 1]  # one candidate each: the only block, bowl, then home
    assert world.is_on("red block", "red bowl") and ports.executed == [("pick_place", ("red block", "red bowl"))]
