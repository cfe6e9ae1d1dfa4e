"""CAPE's prompt format (planner strategy `cape`, config/prompts/cape_*.yaml): the expert's sampled steps.

A CAPE prompt is a demonstration (and, in few-shot corrective prompts, (error, correction) examples),
then the query: "Task: <task>", the plan so far as "Step n: <Action>" lines, each refused attempt shown in
a corrective prompt followed by "Error: <message>. A correct step would be to", and the open "Step k:".
CAPE samples the continuation (`sample` queries, one line); every sample is grounded to the admissible
action texts, so the answer is the admissible text of the next correct step, verbatim (" Walk to the
fridge"), or the file's done text ("done") when the goal holds.

The step is decided as a model that follows the prompt would: from the start state of the world (the
truth when the episode's first step was asked) and the plan the prompt shows, replayed as the planner
believes it ran: an attempt followed by an error changed nothing, every other step took effect (in the
open-loop baseline also a step the world refused: the prompt does not say so). With no error in between,
the belief is the world's truth. A prompt whose task has no recorded goal cannot be answered
(ExpertError). The wrong answers for the error rate are plausible mistakes: the plan's later steps taken
too early (skipping standing up, a door, walking to a thing), which the world mostly refuses with a
precondition error, and an optimistic plan's steps.

Worlds: the household (sim_household: monologue_domain.expert.household), the kitchen (sim_kitchen:
monologue_domain.expert.kitchen, when present) and the tabletop (sim_kinematic / sim:
monologue_domain.expert.tabletop, when present), each with the action texts of its CAPE file.
"""
from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from monologue_domain.expert import household as hh
from monologue_domain.expert.channel import WorldTruth

from ..format import Answer, ExpertError, Query

TASK = re.compile(r"^Task:\s*(?P<task>.+?)\s*$")
STEP = re.compile(r"^Step\s+(?P<n>\d+):\s*(?P<action>.*?)\s*$")
ERROR = re.compile(r"^Error:\s*(?P<msg>.*?)\.?\s*A correct step would be to\s*$")
TAG = re.compile(r"\s*\[[^\]]*\]")
DONE = "done"


@dataclass(frozen=True)
class QueryPlan:
    """The query part of a CAPE prompt: the task and the plan's attempts (text, refused) in order."""

    task: str
    entries: tuple[tuple[str, bool], ...]
    open_step: int


def parse_query(prompt: str) -> QueryPlan | None:
    """The last "Task:" block of a CAPE prompt, when the prompt ends with an open "Step k:"; else None."""
    lines = [ln.rstrip() for ln in prompt.rstrip().split("\n")]
    if not lines:
        return None
    last = STEP.match(lines[-1].strip())
    if last is None or last.group("action"):
        return None
    start = next((i for i in range(len(lines) - 1, -1, -1) if TASK.match(lines[i].strip())), None)
    if start is None:
        return None
    m = TASK.match(lines[start].strip())
    assert m is not None
    entries: list[tuple[str, bool]] = []
    for ln in lines[start + 1:-1]:
        ln = ln.strip()
        step = STEP.match(ln)
        if step is not None and step.group("action"):
            action = step.group("action")
            tag = TAG.search(action)  # the household profile's feedback tags (" [success: no]")
            failed = tag is not None and "success: no" in tag.group(0)
            entries.append((action_key(TAG.sub("", action)), failed))
        elif ERROR.match(ln) is not None and entries:
            entries[-1] = (entries[-1][0], True)
        elif ln:
            return None  # not CAPE's layout
    return QueryPlan(m.group("task"), tuple(entries), int(last.group("n")))


def action_key(text: str) -> str:
    """An action text as compared: lower case, whitespace collapsed, no final full stop."""
    return " ".join(text.lower().split()).rstrip(" .")


class CapeWorld(Protocol):
    """One world's expert for CAPE: its state from the truth, the belief after a plan, the next step."""

    def state(self, truth: WorldTruth) -> object: ...

    def believe(self, start: object, entries: Sequence[tuple[str, bool]]) -> object: ...

    def next_text(self, state: object, goal: Mapping[str, Any]) -> str | None:
        """The admissible text of the next correct step; None when the goal holds."""
        ...

    def wrong_texts(self, state: object, goal: Mapping[str, Any]) -> list[str]: ...


class HouseholdCape:
    """CAPE on the household: texts are HOUSEHOLD_SKILLS' (config/prompts/cape_household.yaml)."""

    def state(self, truth: WorldTruth) -> object:
        return hh.household_truth(truth)

    def believe(self, start: object, entries: Sequence[tuple[str, bool]]) -> object:
        assert isinstance(start, hh.HouseholdTruth)
        known = hh.instances(start.scene)
        steps = [(known[t], refused) for t, refused in entries if t in known]
        return hh.plan_from(start, steps)

    def next_text(self, state: object, goal: Mapping[str, Any]) -> str | None:
        assert isinstance(state, hh.HouseholdTruth)
        try:
            step = hh.next_step(state, hh.goal_atoms(goal))
        except hh.NoReferencePlan as e:
            raise ExpertError(f"expert (household): no plan reaches the goal: {e}") from e
        return None if step is None else hh.step_text(step)

    def wrong_texts(self, state: object, goal: Mapping[str, Any]) -> list[str]:
        assert isinstance(state, hh.HouseholdTruth)
        return [hh.step_text(s) for s in hh.wrong_steps(state, hh.goal_atoms(goal))]


class KitchenCape:
    """CAPE on SayCan's kitchen (config/prompts/cape_kitchen.yaml): the kitchen expert's words
    (monologue_domain.expert.kitchen) are SayCan's; CAPE's file names the drawer ("open the top drawer",
    "put the coke in the top drawer"). The belief replays the prompt's steps with kitchen.goals.apply; a
    step it refuses is taken to have changed nothing (an open-loop plan's refused step included)."""

    DRAWER = "top drawer"
    _PUT_IN = re.compile(r"^put (?:the )?(?P<obj>.+) in the (?:top )?drawer$")

    def to_saycan(self, text: str) -> str:
        t = action_key(text)
        m = self._PUT_IN.match(t)
        if m is not None:
            return f"put {m.group('obj')} in the drawer"
        return {f"open the {self.DRAWER}": "open the drawer", f"close the {self.DRAWER}": "close the drawer"}.get(t, t)

    def to_cape(self, text: str) -> str:
        t = action_key(text)
        m = self._PUT_IN.match(t)
        if m is not None:
            return f"put the {m.group('obj')} in the {self.DRAWER}"
        return {"open the drawer": f"open the {self.DRAWER}", "close the drawer": f"close the {self.DRAWER}"}.get(t, t)

    def state(self, truth: WorldTruth) -> object:
        from monologue_domain.expert import kitchen as kx

        return kx.state_of(truth)

    def believe(self, start: object, entries: Sequence[tuple[str, bool]]) -> object:
        from monologue_domain.kitchen.goals import apply

        s = start
        for text, refused in entries:
            if refused:
                continue
            try:
                s = apply(self.to_saycan(text), s)  # type: ignore[arg-type]
            except (ValueError, RuntimeError):  # refused by the world (SkillError) or not a kitchen skill
                continue
        return s

    def _goal(self, goal: Mapping[str, Any]) -> Any:
        from monologue_domain.expert import kitchen as kx

        return kx.KitchenGoal.from_dict(goal)

    def next_text(self, state: object, goal: Mapping[str, Any]) -> str | None:
        from monologue_domain.expert import kitchen as kx

        try:
            step = kx.next_step(state, self._goal(goal))  # type: ignore[arg-type]
        except kx.KitchenPlanError as e:
            raise ExpertError(f"expert (kitchen): {e}") from e
        return None if action_key(step) == DONE else self.to_cape(step)

    def wrong_texts(self, state: object, goal: Mapping[str, Any]) -> list[str]:
        """The goal's steps the world refuses now (e.g. "find a coke" while holding it), then the plan's later
        steps taken too early."""
        from monologue_domain.expert import kitchen as kx
        from monologue_domain.kitchen.goals import apply

        g = self._goal(goal)
        out: list[str] = []
        for step in kx.candidate_steps(state, g):  # type: ignore[arg-type]
            try:
                apply(step, state)  # type: ignore[arg-type]
            except (ValueError, RuntimeError):
                out.append(self.to_cape(step))
        try:
            out += [self.to_cape(x) for x in kx.plan(state, g)[1:3] if action_key(x) != DONE]  # type: ignore[arg-type]
        except kx.KitchenPlanError:
            pass
        return list(dict.fromkeys(out))[:3]


class TabletopCape:
    """CAPE on the tabletop (config/prompts/cape_tabletop.yaml: "pick up the X and place it on the Y"), with
    the tabletop's expert (monologue_domain.expert.tabletop). Positions come from physics, so the state is
    the truth at the time of the query (a closed-loop view; the open-loop belief is not modelled here). A
    task without a recorded goal is read as one of IM Table 1's wordings."""

    TEXT = "pick up the {0} and place it on the {1}"
    latest: object = None  # the truth's state when the query came (set by the responder)

    def state(self, truth: WorldTruth) -> object:
        from monologue_domain.expert import tabletop as tx

        self.latest = tx.TableState.of(truth.objects)
        return self.latest

    def believe(self, start: object, entries: Sequence[tuple[str, bool]]) -> object:
        return self.latest if self.latest is not None else start

    def next_text(self, state: object, goal: Mapping[str, Any]) -> str | None:
        from monologue_domain.expert import tabletop as tx

        step = tx.next_step(goal, state)  # type: ignore[arg-type]
        return self.TEXT.format(step.obj, step.target) if isinstance(step, tx.Step) else None

    def wrong_texts(self, state: object, goal: Mapping[str, Any]) -> list[str]:
        """The goal's moves done directly (a covered block picked up first: the world refuses it)."""
        from monologue_domain.expert import tabletop as tx

        return [self.TEXT.format(o, t) for o, t in tx.subgoals(goal, state)[:3]]  # type: ignore[arg-type]

    @staticmethod
    def goal_of(task: str) -> Mapping[str, Any] | None:
        from monologue_domain.expert import tabletop as tx

        return tx.goal_of_instruction(task)


# truth source (the simulated backend that wrote world.json) -> the world's CAPE expert
WORLDS: dict[str, Callable[[], CapeWorld]] = {"household": HouseholdCape, "kitchen": KitchenCape,
                                              "kinematic": TabletopCape, "mujoco": TabletopCape}


def capitalize(text: str) -> str:
    return text[:1].upper() + text[1:]


class CapeResponder:
    """CAPE's sampled steps and corrective steps (see the module docstring)."""

    name = "cape"
    priority = 50

    def __init__(self) -> None:
        self._starts: dict[tuple[str, str], object] = {}  # (source, task) -> start state of its episode
        self._lock = threading.Lock()

    def claims(self, query: Query) -> bool:
        return query.kind == "sample" and parse_query(query.prompt) is not None

    def answer(self, query: Query) -> Answer:
        q = parse_query(query.prompt)
        if q is None:
            raise ExpertError("expert (cape): not a CAPE prompt")
        truth = query.truth.world()
        make = WORLDS.get(truth.source)
        if make is None:
            raise ExpertError(f"expert (cape): no CAPE expert for the {truth.source!r} world")
        world = make()
        task = query.truth.task(q.task)
        fallback = getattr(world, "goal_of", None)
        if task is None and fallback is not None and fallback(q.task) is not None:
            task = {"goal": fallback(q.task)}
        if task is None:
            raise ExpertError(f"expert (cape): no goal recorded for the task {q.task!r}")
        goal = task.get("goal") or {}
        key = (truth.source, action_key(q.task))
        with self._lock:
            now = world.state(truth)
            if not q.entries or key not in self._starts:  # the episode's first step: its start state
                self._starts[key] = now
            start = self._starts[key]
        belief = world.believe(start, q.entries)
        text = world.next_text(belief, goal)
        wrong = [capitalize(w) for w in world.wrong_texts(belief, goal) if w != text]
        said = DONE if text is None else text
        return Answer(" " + capitalize(said), tuple(" " + w for w in wrong),
                      f"cape {truth.source}: step {q.open_step} of {q.task!r} -> {said}")


RESPONDER = CapeResponder()
