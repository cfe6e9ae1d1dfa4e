"""Strategies are plug-ins: this test module registers `greedy_affordance` (a baseline that asks no
LLM: it runs the most afforded skill until none is left) and runs it through the episode runner;
a strategy in a folder outside the package is selected by its module path, with typed settings of
its own; the topics strategies declare beyond the transcript (docs/adding_a_strategy.md)."""
from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Mapping

import pytest

from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.transcript import Event, EventKind, load_episode
from planner_node.core import strategies
from planner_node.core.episode import EpisodeError, EpisodeResult, ScoredCandidate, StepRecord
from planner_node.core.loop import run_closed_loop
from planner_node.core.runner import EpisodeRunner, GoalRequest
from planner_node.core.settings import settings_from_parameters
from planner_node.core.strategy import EpisodeContext


def most_afforded(ep: EpisodeContext, step: int, categories: Mapping[str, str]) -> StepRecord:
    """A StepChooser: the skill with the highest affordance, or the done line if none is afforded."""
    best = max(ep.ports.skills.affordances(), key=lambda o: o.affordance, default=None)
    if best is None or best.affordance <= 0.0:
        chosen = ScoredCandidate(ep.profile.done_line, None, 0.0, 1.0, 1.0, 1.0)
    else:
        text = ep.profile.action(best.skill, best.args, categories)
        chosen = ScoredCandidate(text, best, 0.0, 1.0, best.affordance, best.affordance)
    return StepRecord(step, (chosen,), chosen, "none", 0, 0, 0.0, 0.0)


class GreedyAffordance:
    name = "greedy_affordance"
    decoding = "score"  # recorded in the transcript header; nothing is generated

    def run(self, episode: EpisodeContext) -> EpisodeResult:
        return run_closed_loop(episode, most_afforded)


@pytest.fixture
def greedy() -> Iterator[str]:
    strategies.STRATEGIES.register("greedy_affordance")(GreedyAffordance)
    yield "greedy_affordance"
    strategies.STRATEGIES.unregister("greedy_affordance")


def test_a_registered_strategy_runs_through_the_runner(greedy, make_runner, scripted, world_ports) -> None:  # type: ignore[no-untyped-def]
    assert greedy in strategies.names() and {
        "cape", "inner_monologue", "inner_monologue_generative", "saycan", "statler", "cap", "multitalk",
    } <= set(strategies.names())
    world = TabletopWorld.random(4, num_blocks=2, num_bowls=2, matching_bowls=True)
    ports = world_ports(world)
    llm = scripted(lambda c, p: 0)
    steps: list[StepRecord] = []
    runner = make_runner(llm, ports, strategy=greedy)  # the node's parameter `strategy`
    out = runner.execute(GoalRequest("Put the blocks in their matching bowls.", max_steps=6),
                         on_step=lambda _eid, r: steps.append(r))
    assert out.result.error in (EpisodeError.NONE, EpisodeError.MAX_STEPS_REACHED)
    assert ports.executed and llm.prompts == [] and llm.gen_prompts == []  # no LLM call
    assert len(steps) == len(ports.executed) + (1 if out.result.success else 0)
    actions = out.transcript.texts(EventKind.ROBOT_ACTION) if out.transcript is not None else []
    assert len(actions) == len(ports.executed) and out.events[-1].kind == EventKind.EPISODE_END


def test_names_are_unique(greedy) -> None:  # type: ignore[no-untyped-def]
    class Other(GreedyAffordance):
        pass

    with pytest.raises(ValueError, match="already registered"):
        strategies.STRATEGIES.register(greedy)(Other)
    with pytest.raises(ValueError, match="unknown strategy"):
        strategies.get("no_such_strategy")


# A strategy package outside planner_node: one module, its own typed settings block, selected by its
# dotted path. Nothing in planner_node names it.
OUTSIDE = '''
from dataclasses import dataclass, replace

from monologue_common.core.settings import ParamReader
from planner_node.core.episode import EpisodeError, EpisodeResult
from planner_node.core.loop import run_closed_loop
from planner_node.core.scoring import score_step
from planner_node.core.strategies import SETTINGS_BLOCKS
from planner_node.core.strategy import EpisodeContext, SettingsBlock


@dataclass(frozen=True)
class CappedSettings:
    max_moves: int


def read_capped(r: ParamReader, prompt_dir: str) -> CappedSettings:
    return CappedSettings(r.integer("capped.max_moves", low=1))


SETTINGS_BLOCKS.add("capped", SettingsBlock("capped", read_capped))


class Capped:
    """Inner Monologue scoring with a step cap of its own (capped.max_moves)."""

    name = "capped"
    decoding = "score"

    def run(self, episode: EpisodeContext) -> EpisodeResult:
        s = episode.settings.get(CappedSettings)
        return run_closed_loop(replace(episode, options=replace(episode.options, max_steps=s.max_moves)),
                               score_step)


STRATEGY = Capped
'''


@pytest.fixture
def outside_strategy(plugin_module: Callable[[str, str], str]) -> Iterator[str]:
    """`my_strategies.capped` in a temporary folder on sys.path (as PYTHONPATH would put it)."""
    yield plugin_module("my_strategies.capped", OUTSIDE)
    strategies.STRATEGIES.unregister("my_strategies.capped")
    strategies.SETTINGS_BLOCKS.unregister("capped")


def test_a_strategy_outside_the_package_is_selected_by_its_module_path(  # type: ignore[no-untyped-def]
        outside_strategy, planner_parameters, scripted, world_ports, tmp_path) -> None:
    params = {**planner_parameters(), "transcript_dir": str(tmp_path / "transcripts"),
              "strategy": outside_strategy, "capped.max_moves": 1}
    settings = settings_from_parameters(params)  # the node's start-up path
    assert settings.strategy == outside_strategy and settings.episode.decoding == "score"
    assert "capped.max_moves" not in settings.unused
    world = TabletopWorld.random(4, num_blocks=2, num_bowls=2, matching_bowls=True)
    ports = world_ports(world)
    llm = scripted(lambda c, p: 0)  # always the first line: a move, never done
    runner = EpisodeRunner(settings, llm, ports, ports, ports, logger=logging.getLogger("planner-test"))
    out = runner.execute(GoalRequest("Put the blocks in their matching bowls."))
    assert out.result.error == EpisodeError.MAX_STEPS_REACHED and out.result.steps_taken == 1  # capped.max_moves
    assert len(ports.executed) == 1 and llm.prompts
    assert out.path is not None and load_episode(out.path).header["strategy"] == outside_strategy
    with pytest.raises(ValueError, match="capped.max_moves"):  # its block is validated with the planner's
        settings_from_parameters({**params, "capped.max_moves": 0})


def test_an_unknown_module_path_is_a_parameter_error(planner_parameters) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="strategy: must be one of .*inner_monologue"):
        settings_from_parameters({**planner_parameters(), "strategy": "no_such_package.no_such_strategy"})


def test_strategies_declare_what_they_publish_beyond_the_transcript() -> None:
    """Statler declares its world state topic; the node creates publishers from the declarations."""
    pubs = {p.topic: p for p in strategies.publications()}
    ws = pubs["planner/world_state"]
    assert ws.kind == "string" and ws.latched
    state = Event("e1", 3, EventKind.ROBOT_THOUGHT, "# state = {}",
                  {"statler": "state", "world_state": {"objects": ["red block"]}, "query_index": 0, "cause": "q"}, 12.5)
    other = Event("e1", 4, EventKind.ROBOT_THOUGHT, "put_first_on_second(...)", {"statler": "code"}, 13.0)
    assert ws.select(state) and not ws.select(other)
    msg = json.loads(ws.render(state))
    assert msg["episode_id"] == "e1" and msg["state"] == {"objects": ["red block"]} and msg["query_index"] == 0
    assert [p.topic for p in getattr(strategies.STRATEGIES.get("cap"), "publications", ())] == []


def test_the_node_knows_every_declared_message_kind() -> None:
    pytest.importorskip("rclpy")
    from planner_node.node import MESSAGE_KINDS

    for p in strategies.publications():
        msg_type, make = MESSAGE_KINDS[p.kind]
        assert isinstance(make("{}"), msg_type)
