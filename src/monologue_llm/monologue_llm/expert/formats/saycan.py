"""The expert's kitchen formats: SayCan's numbered steps (config/prompts/saycan.yaml, SC Listing 1) and IM's
kitchen listing (im_kitchen.yaml / im_kitchen_human.yaml, IM Listings 3-4).

Both prompts open with "Robot: Hi there, I'm a robot operating in an office kitchen." (straight or curly
apostrophe), then examples, then the episode: "Human: <instruction>" and the robot's steps so far,
ending with the next step's number:

    SayCan   Robot: 1. find a coke, 2. pick up the coke, 3.          (one line, ", " between steps)
    IM       Robot: 1. find a coke[success: no]\\n2. find a coke\\n3.   (a line a step, feedback tags inline)

Every variant of the kitchen suites asks through these: SayCan and No VF score the admissible lines
(candidates " <skill>" and " done."), Generative writes the continuation (stop at "\\n"), IM scores with
feedback tags in the history. The answer is the next step of the kitchen's expert planner
(monologue_domain.expert.kitchen) from the world's truth and the instruction's goal; the history is read
only to prefer continuing one of the suite's example plans. Written text (generate / sample) is what a
model following the listing writes: in SayCan's one-line format the rest of the plan
(" find a coke, 2. pick up the coke, 3. done."), in IM's one step (" find a coke"), with " and continue"
in the listing that ends its steps so.

Priority 20: above general IM / tabletop formats, which might also recognise "Human:" / numbered steps;
it claims only prompts with the office-kitchen preamble.
"""
from __future__ import annotations

import re
import threading

from monologue_domain.expert.channel import read_tasks
from monologue_domain.expert.kitchen import KitchenGoal, KitchenPlanError, candidate_steps, plan, state_of
from monologue_domain.kitchen.goals import SkillError, apply
from monologue_domain.kitchen.state import KitchenState
from monologue_domain.kitchen.vocabulary import DONE

from ..format import Answer, ExpertError, Query

KITCHEN_HEAD = re.compile(r"Robot: Hi there, I['’]m a robot operating in an office kitchen\.")
_ONE_LINE = re.compile(r"^Robot: 1\. [^\n]*, 2\. ", re.M)  # SayCan: all steps on the Robot line
_STEP_SPLIT = re.compile(r",\s+(?=\d+\.(?:\s|$))")  # before "2. " and before the open "3."
_NUMBER = re.compile(r"^\s*(?:Robot:\s*)?\d+\.\s*")
_TAGS = re.compile(r"\[.*$")
_SUFFIX = re.compile(r"\s+and (?:continue|ask:.*)$")
DONE_LINE = "done."


def _norm(text: str) -> str:
    t = " ".join(text.lower().replace("’", "'").split())
    t = t.strip(" .?!")
    return t[len("how would you "):] if t.startswith("how would you ") else t


def episode(prompt: str) -> tuple[str, list[str], bool]:
    """(instruction, the steps taken so far, one-line SayCan format) of a kitchen prompt's episode."""
    one_line = bool(_ONE_LINE.search(prompt))
    at = prompt.rfind("\nHuman: ")
    if at < 0:
        raise ExpertError("expert[saycan]: the kitchen prompt has no 'Human:' instruction")
    head, _, rest = prompt[at + len("\nHuman: "):].partition("\n")
    if one_line:
        parts = _STEP_SPLIT.split(rest.strip())
    else:
        parts = [ln for ln in rest.split("\n") if ln.strip()]
    steps = []
    for part in parts:
        body = _NUMBER.sub("", part, count=1)
        body = _SUFFIX.sub("", _TAGS.sub("", body)).strip().rstrip(",").strip()
        if body:
            steps.append(body)
    return head.strip(), steps, one_line


class KitchenResponder:
    """SayCan / IM kitchen steps from the kitchen's expert planner."""

    name = "saycan"
    priority = 20

    def __init__(self) -> None:
        self._start: dict[str, KitchenState] = {}  # instruction -> the world when its episode began
        self._lock = threading.Lock()

    def claims(self, query: Query) -> bool:
        return bool(KITCHEN_HEAD.search(query.prompt[:400]))

    def _goal(self, query: Query, instruction: str) -> KitchenGoal:
        want = _norm(instruction)
        tasks = read_tasks(query.truth.directory)
        found = [t for text, t in tasks.items() if _norm(text) == want]
        if not found:
            raise ExpertError(f"expert[saycan]: no goal recorded for the instruction {instruction!r} "
                              f"({len(tasks)} recorded)")
        task = found[-1]
        if task.get("world") != "kitchen":
            raise ExpertError(f"expert[saycan]: the goal of {instruction!r} is for a {task.get('world')!r} world")
        try:
            return KitchenGoal.from_dict(task["goal"])
        except KitchenPlanError as e:
            raise ExpertError(f"expert[saycan]: {e}") from None

    def _state(self, query: Query, instruction: str, taken: list[str], one_line: bool) -> KitchenState:
        """What the model knows of the world. IM's listing (closed loop: Success feedback tags every failed
        step): the world's truth now. SayCan's (open loop: no feedback in the prompt): the truth when the
        episode began with every step since applied as if it ran (a refused one changes nothing), so a
        step that failed silently stays unnoticed, as it would by a real model."""
        now = state_of(query.truth.world())
        if not one_line:
            return now
        key = _norm(instruction)
        with self._lock:
            if not taken:
                self._start[key] = now
                return now
            start = self._start.get(key)
        if start is None:  # the episode began before this responder: only the truth is known
            return now
        belief = start
        for step in taken:
            try:
                belief = apply(step, belief)
            except (SkillError, ValueError):
                continue
        return belief

    def answer(self, query: Query) -> Answer:
        instruction, taken, one_line = episode(query.prompt)
        goal = self._goal(query, instruction)
        try:
            state = self._state(query, instruction, taken, one_line)
            steps = plan(state, goal, taken)
        except KitchenPlanError as e:
            raise ExpertError(f"expert[saycan]: {e}") from None
        nxt = steps[0]
        wrong = self._wrong(state, goal, nxt)
        note = f"kitchen plan {' / '.join(steps)}"
        if query.kind == "score":
            if not any(_norm(c) == _norm(nxt) for c in query.candidates):
                nxt, why = self._offered(state, goal, query.candidates)
                note += f"; not offered, so {nxt!r} ({why})"
            wanted = {_norm(w) for w in wrong}
            return Answer(DONE_LINE if nxt == DONE else nxt,
                          tuple(c for c in query.candidates if _norm(c) in wanted), note)
        suffix = " and continue" if " and continue\n" in query.prompt else ""
        lines = [(DONE_LINE if s == DONE else s + suffix) for s in steps]
        if one_line:
            n = len(taken) + 1
            text = " " + ", ".join(f"{n + i}. {s}" if i else s for i, s in enumerate(lines))
        else:
            text = " " + lines[0]
        return Answer(text, tuple(" " + (DONE_LINE if w == DONE else w + suffix) for w in wrong), note)

    @staticmethod
    def _offered(state: KitchenState, goal: KitchenGoal, candidates: tuple[str, ...]) -> tuple[str, str]:
        """The offered step a model that believes `state` likes best when its own step is not offered (open
        loop: a step failed unnoticed, so the world is not where the model thinks): the one after which its
        plan is shortest; "done" when none leads anywhere."""
        offered = {_norm(c) for c in candidates}
        best: tuple[int, str] | None = None
        for step in candidate_steps(state, goal):
            if step not in offered:
                continue
            try:
                cost = len(plan(apply(step, state), goal))
            except (SkillError, ValueError, KitchenPlanError):
                continue
            if best is None or cost < best[0]:
                best = (cost, step)
        if best is not None:
            return best[1], "the shortest plan from the offered steps"
        if DONE in offered:
            return DONE, "no offered step helps"
        return _norm(candidates[0]), "no offered step helps and done is not offered"

    @staticmethod
    def _wrong(state: KitchenState, goal: KitchenGoal, right: str) -> list[str]:
        """Well-formed steps that are not the planned one: executable other steps, and a premature done."""
        out: list[str] = [] if right == DONE else [DONE]
        for step in candidate_steps(state, goal):
            if step == right:
                continue
            try:
                apply(step, state)
            except (SkillError, ValueError):
                continue
            out.append(step)
        return out[:8]


RESPONDER = KitchenResponder()
