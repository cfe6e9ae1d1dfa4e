"""A robot that offers no admissible move (e.g. its arm not connected yet after a simulator restart):
the planner asks again for a bounded time and then fails the episode; it never reports done."""
from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.tasks import matching_bowls_done
from monologue_domain.transcript import EventKind, Transcript
from planner_node.core import scoring, strategies
from planner_node.core.episode import EpisodeError, StepRecord
from planner_node.core.ports import SkillOption
from planner_node.core.prompts import load_profile
from planner_node.core.runner import run_episode
from planner_node.core.settings import episode_defaults
from planner_node.core.strategy import EpisodeContext, Ports

CONFIG = Path(__file__).resolve().parents[3] / "config"
PROFILE = load_profile(CONFIG / "prompts", "im_sim_object_success")
INSTRUCTION = "Put the blocks in their matching bowls."
STRATEGIES = ("inner_monologue", "saycan", "inner_monologue_generative")


def matching_picker(cands: Sequence[str], prompt: str) -> int:
    """The first matching-bowl action not yet reported successful, else the last line (done)."""
    done_lines = prompt.split("Human: " + INSTRUCTION)[-1]
    for i, c in enumerate(cands):
        words = c.split()
        if "bowl." in c and words[4] == words[-2] and c + "\nSuccess: True" not in done_lines:
            return i
    return len(cands) - 1


@pytest.fixture(autouse=True)
def short_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """The re-query wait in milliseconds (the default is seconds)."""
    monkeypatch.setattr(scoring, "NO_MOVES_WAIT_S", 0.05)  # s
    monkeypatch.setattr(scoring, "NO_MOVES_POLL_S", 0.001)  # s


def _ports(world_ports, world: TabletopWorld, unavailable_queries: int | None):  # type: ignore[no-untyped-def]
    """World ports whose first `unavailable_queries` affordance queries (every one: None) offer each
    move with affordance 0, as the skills node does while its arm is disconnected."""
    ports = world_ports(world)
    real = ports.affordances
    ports.queries = 0

    def affordances() -> list[SkillOption]:
        ports.queries += 1
        options = real()
        if unavailable_queries is None or ports.queries <= unavailable_queries:
            return [SkillOption(o.skill, o.args, 0.0) for o in options]
        return options

    ports.affordances = affordances
    return ports


def _run(scripted, ports, strategy: str, cancel: threading.Event | None = None,  # type: ignore[no-untyped-def]
         lines: Sequence[str] = (), **changes: object) -> tuple[object, Transcript, list[StepRecord]]:
    llm = scripted(matching_picker, lines)
    decoding = "generate" if strategy.endswith("generative") else "score"
    options = episode_defaults(CONFIG, decoding=decoding, **changes)
    transcript = Transcript("e")
    steps: list[StepRecord] = []
    ep = EpisodeContext(llm=llm, ports=Ports(ports, ports, ports), profile=PROFILE, transcript=transcript,
                        instruction=INSTRUCTION, options=options, log=logging.getLogger("t"),
                        cancel=cancel or threading.Event(), on_step=steps.append)
    return run_episode(strategies.get(strategy), ep), transcript, steps


@pytest.mark.parametrize("strategy", ("inner_monologue", "saycan"))
def test_moves_that_appear_while_waiting_continue_the_episode(scripted, world_ports, strategy: str) -> None:
    world = TabletopWorld.random(4, num_blocks=3, num_bowls=3, matching_bowls=True)
    ports = _ports(world_ports, world, unavailable_queries=2)
    res, t, steps = _run(scripted, ports, strategy)
    assert res.error == EpisodeError.NONE and res.success  # type: ignore[attr-defined]
    assert res.steps_taken == 3 and matching_bowls_done(world.snapshot())  # type: ignore[attr-defined]
    assert steps[0].chosen.option is not None  # step 1 waited for the moves, it did not say done
    assert not [e for e in t.events if e.kind == EventKind.ERROR]


def test_generative_waits_for_moves_too(scripted, world_ports) -> None:
    world = TabletopWorld.random(4, num_blocks=3, num_bowls=3, matching_bowls=True)
    ports = _ports(world_ports, world, unavailable_queries=2)
    line = "Pick the red block and place it in the red bowl."
    res, _, steps = _run(scripted, ports, "inner_monologue_generative", lines=[line], max_steps=1)
    assert res.error == EpisodeError.MAX_STEPS_REACHED  # type: ignore[attr-defined]
    assert steps[0].chosen.option is not None and ports.executed == [("pick_place", ("red block", "red bowl"))]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("use_affordances", (True, False))
def test_no_moves_ever_fails_the_episode(scripted, world_ports, strategy: str, use_affordances: bool) -> None:
    world = TabletopWorld.random(4, num_blocks=3, num_bowls=3, matching_bowls=True)
    ports = _ports(world_ports, world, unavailable_queries=None)
    if not use_affordances:  # without affordances only an empty list is "no move"
        ports.affordances = lambda: []
    res, t, steps = _run(scripted, ports, strategy, use_affordances=use_affordances)
    assert not res.success and res.error == EpisodeError.PLANNING_FAILED  # type: ignore[attr-defined]
    assert "no admissible move" in res.reason and res.steps_taken == 0  # type: ignore[attr-defined]
    assert ports.executed == [] and steps == []
    if use_affordances:
        assert ports.queries > 2  # asked again before giving up
    assert not [e for e in t.events if e.kind == EventKind.ROBOT_THOUGHT and e.data.get("done")]
    errors = [e for e in t.events if e.kind == EventKind.ERROR]
    assert errors and "no admissible move" in errors[-1].text and errors[-1].data["error"] == "PLANNING_FAILED"
    assert t.events[-1].kind == EventKind.EPISODE_END and t.events[-1].data["success"] is False


def test_cancel_while_waiting_for_moves(scripted, world_ports, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scoring, "NO_MOVES_WAIT_S", 60.0)  # s: only the cancel ends this wait
    world = TabletopWorld.random(4, num_blocks=3, num_bowls=3, matching_bowls=True)
    ports = _ports(world_ports, world, unavailable_queries=None)
    cancel = threading.Event()
    offer = ports.affordances

    def affordances() -> list[SkillOption]:
        if ports.queries >= 2:
            cancel.set()
        return offer()

    ports.affordances = affordances
    res, _, _ = _run(scripted, ports, "inner_monologue", cancel=cancel)
    assert res.error == EpisodeError.CANCELED and not res.success  # type: ignore[attr-defined]
    assert ports.executed == []
