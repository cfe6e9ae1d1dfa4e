"""The household prompt profile (config/prompts/household.yaml: SayCan and Inner Monologue on CAPE's
household, robot sim_household; the `monologue-bench --suite cape` SayCan baselines).

The prompt opens with the household preamble ("Robot: Hi there, I'm a Spot robot with one arm in a
home."), then examples, then "Task: <task>", one "Step n: <action>" line per step taken (with " [success:
no]" when success feedback is on and a step failed) and the open "Step k:". SayCan scores the admissible
actions (candidates " <action>" and " done."); the generative variant writes the step (stop at "\\n").
The answer is the household expert's next step (monologue_domain.expert.household), decided as in the
CAPE format (formats/cape.py): from the episode's start state and the steps the prompt shows. When SayCan
does not offer that step (its noisy affordance oracle flipped it to 0: the candidates are the afforded
ones), the answer is a step that changes nothing ("look at ..."), so the next step is asked again with
freshly drawn affordances.
"""
from __future__ import annotations

import re
import threading

from monologue_domain.expert import household as hh

from ..format import Answer, ExpertError, Query
from .cape import HouseholdCape, action_key, parse_query

HEAD = re.compile(r"Robot: Hi there, I['’]m a Spot robot with one arm in a home\.")
DONE_LINE = "done."


class HouseholdResponder:
    """SayCan / IM lines on the household profile (see the module docstring)."""

    name = "household"
    priority = 25  # above the kitchen's and the tabletop's formats; claims only the household preamble

    def __init__(self) -> None:
        self._starts: dict[str, object] = {}
        self._lock = threading.Lock()
        self._world = HouseholdCape()

    def claims(self, query: Query) -> bool:
        return query.kind in ("score", "generate") and HEAD.search(query.prompt[:400]) is not None \
            and parse_query(query.prompt) is not None

    def answer(self, query: Query) -> Answer:
        q = parse_query(query.prompt)
        if q is None:
            raise ExpertError("expert (household): not a household prompt")
        truth = query.truth.world()
        if truth.source != hh.WORLD:
            raise ExpertError(f"expert (household): the truth comes from {truth.source!r}, not the household")
        task = query.truth.task(q.task)
        if task is None:
            raise ExpertError(f"expert (household): no goal recorded for the task {q.task!r}")
        goal = task.get("goal") or {}
        key = action_key(q.task)
        with self._lock:
            if not q.entries or key not in self._starts:
                self._starts[key] = self._world.state(truth)
            start = self._starts[key]
        belief = self._world.believe(start, q.entries)
        text = self._world.next_text(belief, goal)
        wrong = [w for w in self._world.wrong_texts(belief, goal) if w != text]
        said = DONE_LINE if text is None else text
        if query.kind == "score":
            cands = [c for c in query.candidates if action_key(c) == action_key(said)]
            wrong = [c for c in query.candidates if action_key(c) in {action_key(w) for w in wrong}]
            if cands:
                said = cands[0]
            else:  # not offered (SayCan's noisy affordances hid it): a step that changes nothing, then ask again
                idle = [c for c in query.candidates if action_key(c).startswith("look at ")]
                if not idle:
                    raise ExpertError(f"expert (household): {said!r} is not a candidate and no idle step is")
                said = idle[0]
        else:
            said = " " + said
            wrong = [" " + w for w in wrong]
        return Answer(said, tuple(wrong), f"household: step {q.open_step} of {q.task!r}")


RESPONDER = HouseholdResponder()
