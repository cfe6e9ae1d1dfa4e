"""Whole pick-and-place plans for a tabletop goal (pure), for expert formats that write a plan at once
(MultiTalk's Planner) or judge one (its Analyzer), rather than one step at a time.

A goal is the tabletop task dict of the expert channel (monologue_domain.expert.tabletop: `{"family":
<tasks family key>, <its slots>...}`). `plan_pick_places` rolls the tabletop expert (`tabletop.next_step`)
forward on a believed state (`tabletop.apply`, as the kinematic world rests things) until the goal holds.
A target is an object (a bowl, a block to stack on) or a named location.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..scene import SceneObject
from .tabletop import Done, Step, Stuck, TableState, apply, goal_of_instruction, next_step, reached

MAX_MOVES = 12  # pick_place calls a plan may have (4 blocks with unstacking stay well below)
Move = tuple[str, str]  # (object, target)


class NoPlan(ValueError):
    """The goal cannot be reached by pick_place from this state (a heavy block, a missing object)."""


def state_after(objects: Iterable[SceneObject] | TableState, moves: Sequence[Move] = ()) -> TableState:
    """The believed state of `objects` (the truth) after `moves` (a move naming an unknown thing is skipped)."""
    state = objects if isinstance(objects, TableState) else TableState.of(objects)
    for obj, target in moves:
        state = apply(state, obj, target)
    return state


def plan_pick_places(objects: Iterable[SceneObject] | TableState, goal: Mapping[str, Any],
                     done: Sequence[Move] = ()) -> list[Move]:
    """The pick_place(object, target) calls that take the world of `objects`, after the moves `done`, to
    `goal`, in order; [] when it already holds. NoPlan when the expert is stuck or needs more than
    MAX_MOVES."""
    state = state_after(objects, done)
    moves: list[Move] = []
    while True:
        try:
            step = next_step(goal, state)
        except ValueError as e:  # not a tabletop goal
            raise NoPlan(str(e)) from None
        if isinstance(step, Done):
            return moves
        if isinstance(step, Stuck):
            raise NoPlan(step.why)
        assert isinstance(step, Step)
        if len(moves) >= MAX_MOVES:
            raise NoPlan(f"no plan within {MAX_MOVES} moves for {dict(goal)!r}")
        moves.append((step.obj, step.target))
        state = apply(state, step.obj, step.target)


def goal_reached(state: TableState, goal: Mapping[str, Any]) -> bool:
    """The task's reward on a believed state."""
    return reached(goal, state)


__all__ = ["MAX_MOVES", "Move", "NoPlan", "goal_of_instruction", "goal_reached", "plan_pick_places", "state_after"]
