"""Statler with the real embedded model (Gemma 3 270M) on the kinematic tabletop, through the runner:
whatever the model writes, only whitelisted calls run, each move goes through the skills port, and the
transcript holds the queries, the code, the states and the outcome (mechanics, not wisdom)."""
from __future__ import annotations

import pytest

from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.scene_spec import SceneSpec
from monologue_domain.transcript import EventKind
from planner_node.core.episode import EpisodeError
from planner_node.core.runner import GoalRequest
from planner_node.core.strategies.statler.code import PUT, parse_code

pytestmark = [pytest.mark.llm, pytest.mark.slow]

QUERIES = ["The cyan block is dirty", "Put the cyan block in the green bowl"]


def test_statler_episode_with_the_embedded_model(llama_backend, make_runner, world_ports) -> None:  # type: ignore[no-untyped-def]
    world = TabletopWorld.from_spec(SceneSpec(("cyan", "yellow", "brown"), ("green",)), seed=1)
    ports = world_ports(world)
    runner = make_runner(llama_backend, ports, **{"statler.max_reprompts": 1})
    out = runner.execute(GoalRequest("\n".join(QUERIES), strategy="statler"))
    events = out.events
    assert out.result.error in (EpisodeError.NONE, EpisodeError.PLANNING_FAILED), out.result.reason
    assert events[-1].kind == EventKind.EPISODE_END
    assert events[0].kind == EventKind.SCENE_OBJECTS
    assert events[0].data["objects"] == ["cyan block", "yellow block", "brown block", "green bowl"]
    states = [e for e in events if e.data.get("statler") == "state"]
    assert states[0].data["world_state"]["objects"] == events[0].data["objects"]
    assert states[0].text.startswith("# state = {")
    for s in states[1:]:  # every later state came from the writer and was parsed
        assert isinstance(s.data["world_state"], dict) and isinstance(s.data["world_state"].get("objects"), list)
    queries = [e for e in events if e.data.get("statler") == "query"]
    assert [e.text for e in queries] == QUERIES[: len(queries)] and queries
    codes = [e for e in events if e.data.get("statler") == "code"]
    rejected = [e for e in events if e.data.get("statler") == "rejected"]
    for e in rejected:
        assert e.kind == EventKind.ERROR and e.data["reason"] and e.data["role"] in ("reader", "writer")
    # only whitelisted calls: every move of accepted code, in order, went through the skills port
    puts = [c.args for e in codes for c in parse_code(e.data["code"]).calls if c.function == PUT]
    actions = [e for e in events if e.kind == EventKind.ROBOT_ACTION]
    assert len(actions) == len(ports.executed) == out.result.steps_taken
    for e, (skill, args) in zip(actions, ports.executed):
        assert skill == "pick_place" and e.data["args"] == list(args)
        assert tuple(e.data["call"]) in puts
    if out.result.error == EpisodeError.NONE:
        assert len(queries) == len(codes) == len(QUERIES)
