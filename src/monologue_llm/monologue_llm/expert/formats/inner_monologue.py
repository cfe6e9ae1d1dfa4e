"""Inner Monologue's prompt format on the tabletop (IM Listing 1 and our Success / Human-feedback profiles).

What it answers (reading the prompt as a model would; the live episode is the text after the last
`=====` line, or from the last `Scene: There is ...` line in the numbered format):

- score: the admissible `Robot action: Pick the X and place it in/on the Y.` lines and `Robot thought: None.`
  (numbered format: ` pick the X and place it in the Y` and ` done.`), and ` and continue` vs ` and ask:`;
- generate: the next line (the generative variant; after an action prefix only its remainder),
  `Robot thought: Goal state is [...]` (Scene feedback), the chain-of-thought `Robot thought:` after a
  `Scene: You have completed [...]` line, and the question after ` and ask:`.

The next action comes from the tabletop expert planner (monologue_domain.expert.tabletop) on the truth and
the instruction's goal (tasks.json, else Table 1's canonical wordings). With feedback in the prompt
(Success or Scene lines) the planner sees the world's truth; without (open loop) it sees what a model could
believe: the truth at the episode's start with every action of the prompt done as asked.
"""
from __future__ import annotations

import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from monologue_domain.expert.channel import WorldTruth
from monologue_domain.expert.tabletop import (
    Done,
    Plan,
    Step,
    Stuck,
    TableState,
    apply,
    check_goal,
    free_spot,
    goal_of_instruction,
    next_step,
    reached,
    subgoals,
)
from monologue_domain.tabletop import LOCATIONS

from ..format import Answer, ExpertError, Query

SEPARATOR_RE = re.compile(r"^={3,}\s*$")
ACTION_RE = re.compile(r"pick the (?P<obj>.+?) and place it (?:in|on|into|onto) the (?P<target>.+?)\.?$", re.IGNORECASE)
STEP_RE = re.compile(r"^(?:Robot: )?(?P<n>\d+)\.\s*(?P<body>.*)$")
GOAL_STATE_PREFIX = "Robot thought: Goal state is ["
THOUGHT_PREFIX = "Robot thought:"
ACTION_PREFIX = "Robot action:"
PROGRESS_PREFIX = "Scene: You have completed"
CONTINUE, ASK = " and continue", " and ask:"
SETTLE_S = 2.0  # s to wait for a truth with nothing held (the simulators write theirs on every change)


@dataclass
class Episode:
    """The live episode as a model reads it."""

    numbered: bool  # IM Listing 4 style `Robot: 1. ...` steps
    instruction: str
    header: str  # scene and instruction lines (the episode's identity)
    actions: list[tuple[str, str]]  # pick-and-places asked so far, in order
    feedback: bool  # Success / Scene progress lines in the prompt (the model sees outcomes)
    last_line: str  # the last complete line
    tail: str  # text after the last newline (the open line the answer continues)


def _live(prompt: str) -> tuple[str, str]:
    """(preamble, live episode)."""
    lines = prompt.split("\n")
    start = next((i + 1 for i in range(len(lines) - 1, -1, -1) if SEPARATOR_RE.match(lines[i])), None)
    if start is None:
        start = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].startswith("Scene: There is")), None)
    if start is None:
        return prompt, ""
    return "\n".join(lines[:start]), "\n".join(lines[start:])


def parse_episode(prompt: str) -> Episode | None:
    """The live tabletop IM episode of `prompt`, or None when the prompt is not in this format."""
    preamble, live = _live(prompt)
    numbered = "Robot: 1. pick the" in preamble
    if not numbered and "Robot action: Pick the" not in preamble:
        return None
    lines = live.split("\n")
    tail = lines[-1]
    full = lines[:-1]
    humans = [ln for ln in full if ln.startswith("Human: ")]
    scenes = [ln for ln in full if ln.startswith("Scene: There is")]
    if not humans or not scenes or not any(w in scenes[0] for w in ("block", "bowl")):
        return None
    instruction = humans[0][len("Human: "):].strip()
    actions: list[tuple[str, str]] = []
    for ln in full:
        for body in _action_bodies(ln, numbered):
            m = ACTION_RE.search(body)
            if m:
                actions.append((m.group("obj").strip().lower(), m.group("target").strip().lower()))
    feedback = ("Success:" in prompt) or (PROGRESS_PREFIX in live)
    header = "\n".join([scenes[0], humans[0]])
    return Episode(numbered, instruction, header, actions, feedback, full[-1] if full else "", tail)


def _action_bodies(line: str, numbered: bool) -> list[str]:
    if not numbered:
        return [line[len(ACTION_PREFIX):].strip()] if line.startswith(ACTION_PREFIX) else []
    m = STEP_RE.match(line)
    if not m:
        return []
    body = re.split(r" and (?:continue|ask:)", m.group("body"), maxsplit=1)[0]
    return [body]


def action_text(obj: str, target: str, numbered: bool) -> str:
    prep = "in" if target.endswith(" bowl") else "on"
    if numbered:
        return f"pick the {obj} and place it {prep} the {target}"
    return f"Pick the {obj} and place it {prep} the {target}."


def _same_action(text: str, step: Step) -> bool:
    m = ACTION_RE.search(text.strip())
    if m is None:
        return False
    return (m.group("obj").strip().lower(), m.group("target").strip().lower()) == (step.obj, step.target)


def _is_done_text(text: str) -> bool:
    t = text.strip().lower().rstrip(".")
    return t in ("robot thought: none", "done", "robot action: done")


class InnerMonologueResponder:
    """IM's tabletop format (scored and generated lines, goal states, thoughts, `and ask:`)."""

    name = "inner_monologue"
    priority = 20

    def __init__(self) -> None:
        self._initial: dict[str, TableState] = {}  # episode header -> truth at its first query (open loop)
        self._lock = threading.Lock()

    def claims(self, query: Query) -> bool:
        return parse_episode(query.prompt) is not None

    # ------------------------------------------------------------------------- truth --
    def _goal(self, query: Query, ep: Episode) -> dict[str, str]:
        for text in (ep.instruction, ep.instruction.rstrip("."), ep.instruction + "."):
            task = query.truth.task(text)
            if task is not None and task.get("world", "tabletop") == "tabletop":
                return check_goal(task["goal"])
        goal = goal_of_instruction(ep.instruction)
        if goal is None:
            raise ExpertError(f"expert: no goal recorded for {ep.instruction!r} and it is not a Table 1 wording")
        return goal

    def _truth(self, query: Query) -> WorldTruth:
        """The world's truth; while the simulator reports something held (a skill still moving), its
        next write, for up to SETTLE_S."""
        deadline = time.monotonic() + SETTLE_S
        world = query.truth.world()
        while world.held and time.monotonic() < deadline:
            time.sleep(0.02)
            world = query.truth.world()
        return world

    def _state(self, query: Query, ep: Episode) -> TableState:
        """The state the expert plans on: the truth (feedback in the prompt) or the open-loop belief."""
        world = self._truth(query)
        now = TableState.of(world.objects)
        if ep.feedback:
            return now
        with self._lock:
            if not ep.actions or ep.header not in self._initial:
                self._initial[ep.header] = now
            belief = self._initial[ep.header]
        for obj, target in ep.actions:
            belief = apply(belief, obj, target)
        return belief

    # ------------------------------------------------------------------------ answer --
    def answer(self, query: Query) -> Answer:
        ep = parse_episode(query.prompt)
        if ep is None:
            raise ExpertError("expert: not an Inner Monologue tabletop prompt")
        if query.kind == "score" and set(query.candidates) <= {CONTINUE, ASK, CONTINUE.strip(), ASK.strip()}:
            cont = next(c for c in query.candidates if c.strip() == CONTINUE.strip())
            return Answer(cont, wrong=tuple(c for c in query.candidates if c != cont), note="continue: nothing to ask")
        if ep.tail.rstrip().endswith("and ask:"):
            return Answer(" Is the task done?", note="question")
        goal = self._goal(query, ep)
        state = self._state(query, ep)
        if ep.tail.startswith(GOAL_STATE_PREFIX):
            return self._goal_state(goal, state)
        if ep.tail.startswith(THOUGHT_PREFIX) and not ep.last_line.startswith("Human:"):
            return self._thought(goal, state, ep)
        if ep.tail.startswith(THOUGHT_PREFIX):  # a question about the scene (IM Fig. 5d)
            lead = "" if ep.tail.endswith(" ") else " "
            return Answer(lead + describe(state, ep.last_line), note="answer to a question")
        plan = next_step(goal, state)
        if query.kind == "score":
            return self._scored(plan, query.candidates, ep, state, goal)
        return self._generated(plan, ep, state)

    def _scored(self, plan: Plan, candidates: Sequence[str], ep: Episode, state: TableState,
                goal: dict[str, str]) -> Answer:
        done = [c for c in candidates if _is_done_text(c)]
        if isinstance(plan, Step):
            match = [c for c in candidates if _same_action(c, plan)]
            if match:
                return Answer(match[0], wrong=tuple(c for c in candidates if c != match[0]),
                              note=f"{plan.obj} -> {plan.target}: {plan.why}")
            aside = _aside(plan, candidates, state, goal)
            if aside is None:
                raise ExpertError(f"expert: the next step pick_place({plan.obj}, {plan.target}) ({plan.why}) is "
                                  f"not among the {len(candidates)} candidates")
            return Answer(aside, wrong=tuple(c for c in candidates if c != aside),
                          note=f"{plan.obj} -> {plan.target} not offered now; a pending block aside instead")
        if done:
            return Answer(done[0], wrong=tuple(c for c in candidates if c != done[0]), note=_why(plan))
        # Scene feedback offers no done line: try to lift a heavy block (it stays put; the thought after it
        # ends the episode), else repeat the last action
        last = ep.actions[-1] if ep.actions else None
        heavy = [c for c in candidates if (m := ACTION_RE.search(c.strip())) is not None
                 and (t := state.things.get(m.group("obj").strip().lower())) is not None and t.heavy]
        again = heavy or [c for c in candidates if last and _same_action(c, Step(*last))] or list(candidates)
        return Answer(again[0], wrong=tuple(c for c in candidates if c != again[0]), note=_why(plan))

    def _generated(self, plan: Plan, ep: Episode, state: TableState) -> Answer:
        wrong = [action_text(b, t, ep.numbered) for b in state.blocks
                 for t in [*state.things, *LOCATIONS] if t != b]
        if ep.numbered:
            text = " done." if not isinstance(plan, Step) else " " + action_text(plan.obj, plan.target, True) + CONTINUE
            return Answer(text, wrong=tuple(" " + w + CONTINUE for w in wrong[:40]) + (" done.",), note=_why(plan))
        if isinstance(plan, Step):
            line = f"{ACTION_PREFIX} {action_text(plan.obj, plan.target, False)}"
        else:
            line = "Robot thought: None."
        wrong_lines = [f"{ACTION_PREFIX} {w}" for w in wrong[:40]] + ["Robot thought: None."]
        if ep.tail.startswith(ACTION_PREFIX):  # a re-prompt that already wrote the prefix
            cut = len(ep.tail)
            if not isinstance(plan, Step):
                line = ep.tail + " done"
            return Answer(line[cut:], wrong=tuple(w[cut:] for w in wrong_lines if w.startswith(ep.tail)),
                          note=_why(plan))
        return Answer(line, wrong=tuple(w for w in wrong_lines if w != line), note=_why(plan))

    def _goal_state(self, goal: dict[str, str], state: TableState) -> Answer:
        facts = subgoals(goal, state)
        text = ", ".join(f'"{_fact(o, t)}"' for o, t in facts) + "]"
        shuffled = facts[1:] + facts[:1]
        wrong = ", ".join(f'"{_fact(o, t2)}"' for (o, _), (_, t2) in zip(facts, shuffled)) + "]"
        return Answer(text, wrong=(wrong,) if wrong != text else (), note="goal state")

    def _thought(self, goal: dict[str, str], state: TableState, ep: Episode) -> Answer:
        lead = "" if ep.tail.endswith(" ") else " "
        plan = next_step(goal, state)
        if reached(goal, state) or not isinstance(plan, Step):
            return Answer(lead + "None.", wrong=(lead + "Not all blocks are placed yet.",), note=_why(plan))
        missing = [(o, t) for o, t in subgoals(goal, state) if not state.on(o, t)]
        if not missing:
            missing = [(plan.obj, plan.target)]
        text = " ".join(f"{_cap(o)} is not on the {t}." for o, t in missing)
        return Answer(lead + text, wrong=(lead + "None.",), note="unmet sub-goals")



def describe(state: TableState, question: str) -> str:
    """Where the things a question names are, from the truth (e.g. "The red block is in the blue bowl.")."""
    q = question.lower()
    named = [n for n in state.things if n in q] or [n for n in state.blocks if n.split()[0] in q.split()]
    if not named:
        return "I don't know."
    out = []
    for n in named:
        under = [o for o in state.things if o != n and state.on(n, o)]
        under.sort(key=lambda o: -state.things[o].position[2])  # the thing right below first
        where = next((loc for loc in LOCATIONS if state.on(n, loc)), None)
        if under:
            prep = "in" if under[0].endswith(" bowl") else "on"
            out.append(f"The {n} is {prep} the {under[0]}.")
        elif where is not None:
            out.append(f"The {n} is on the {where}.")
        else:
            out.append(f"The {n} is on the table.")
    return " ".join(out)


def _aside(plan: Step, candidates: Sequence[str], state: TableState, goal: dict[str, str]) -> str | None:
    """When the robot does not offer the planned move now (e.g. perception briefly lost the object or its
    target), a harmless line that keeps the episode going: the planned block, or another block whose
    sub-goal is unmet, onto a free named location. None if there is no such line."""
    facts = subgoals(goal, state)
    pending = [plan.obj] + [o for o, t in facts if o != plan.obj and not state.on(o, t)]
    avoid = {t for _, t in facts}
    spots = [free_spot(state, avoid)] + [n for n in LOCATIONS if n not in avoid]  # the freest first
    for obj in pending:
        for spot in spots:
            line = next((c for c in candidates if _same_action(c, Step(obj, spot))), None)
            if line is not None:
                return line
    return None


def _fact(obj: str, target: str) -> str:
    return f"{_cap(obj)} is on the {target}."


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _why(plan: Plan) -> str:
    if isinstance(plan, Step):
        return f"{plan.obj} -> {plan.target}: {plan.why}"
    if isinstance(plan, Stuck):
        return f"stuck: {plan.why}"
    assert isinstance(plan, Done)
    return plan.why


RESPONDER = InnerMonologueResponder()
