"""A strategy is one module: this test module registers `greedy_affordance` (a baseline that asks no
LLM: it runs the most afforded skill until none is left) and runs it through the episode runner,
as docs/adding_a_strategy.md describes."""
from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest

from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.transcript import EventKind
from planner_node.core import strategies
from planner_node.core.episode import EpisodeError, EpisodeResult, ScoredCandidate, StepRecord
from planner_node.core.loop import run_closed_loop
from planner_node.core.runner import GoalRequest
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
    strategies.register("greedy_affordance")(GreedyAffordance)
    yield "greedy_affordance"
    strategies.unregister("greedy_affordance")


def test_a_registered_strategy_runs_through_the_runner(greedy, make_runner, scripted, world_ports) -> None:  # type: ignore[no-untyped-def]
    assert greedy in strategies.names() and {
        "cape", "inner_monologue", "inner_monologue_generative", "saycan"} <= set(strategies.names())
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
        strategies.register(greedy)(Other)
    with pytest.raises(ValueError, match="unknown strategy"):
        strategies.get("no_such_strategy")
