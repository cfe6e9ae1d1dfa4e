"""The Statler family's prompt format (../shared/papers/statler.txt Prompts 4-11; the planner's
core/strategies/statler): the reader's code, Statler-Unified's code and state, the writer's state.

Which prompt it is, read as a model would:
- a reader prompt (Statler, Statler-Auto, Statler-Unified, CaP, CaP+CoT) lists `put_first_on_second` among
  the robot's functions and ends with `# query: <q>` (then any `# NOTE:` lines of a re-prompt); its
  function list says whether `update_wm` exists (Statler) or `noop` (the others), and Statler-Unified's
  preamble asks for "the state that results from it" after the code;
- a writer prompt (Statler, Statler-Auto) ends with `# query: <update>` (and notes) and `# state = {`.

The answers come from the Statler expert planner (monologue_domain.expert.statler) on the simulator's
hidden truth (world.json `extra["statler"]`): the reader's calls (`put_first_on_second` for each move,
`say` for a question; Statler adds `update_wm("<what changed>")` after a move or a statement, the others
write `noop()` for a statement), `# THINK:` lines with what the answer rests on, and the state in the
domain writer's vocabulary (Statler-Unified: the state after the code's moves, played on a copy of the
world; the writer: the world as it is after them).
"""
from __future__ import annotations

import json
import re

from monologue_domain.expert.statler import (
    TABLE,
    Plan,
    StatlerPlanError,
    StatlerWorld,
    plan_query,
    state_of,
)

from ..format import Answer, ExpertError, Query

_QUERY = re.compile(r"^# query: (.*)$", re.MULTILINE)
_OBJECTS = re.compile(r'^#\s*"objects":\s*(\[.*\])\s*,?\s*$', re.MULTILINE)
_TAIL_NOTES = re.compile(r"(?:# NOTE: [^\n]*\n)*\Z")
UNIFIED_MARK = "write the state that results from it"


def _functions(prompt: str) -> str:
    """The preamble's function list line (`put_first_on_second`, `say` and ...)."""
    m = re.search(r"^`?put_first_on_second`?.*$", prompt, re.MULTILINE)
    return m[0] if m else ""


def _last_query(prompt: str, before: int | None = None) -> tuple[str, int]:
    """The text of the last `# query:` line (before offset `before`) and where its line ends."""
    found = list(_QUERY.finditer(prompt, 0, len(prompt) if before is None else before))
    if not found:
        raise ExpertError("expert statler: the prompt has no '# query:' line")
    return found[-1][1].strip(), found[-1].end()


def _episode_text(prompt: str) -> str:
    """What follows the demonstrations (after the last `===` line): the episode's state, history, query."""
    i = prompt.rfind("===\n")
    return prompt[i + 4:] if i >= 0 else prompt


def _known_objects(text: str) -> list[str]:
    """The object list of the last state in `text` ([] if none)."""
    found = _OBJECTS.findall(text)
    if not found:
        return []
    try:
        names = json.loads(found[-1])
    except json.JSONDecodeError:
        return []
    return [str(n) for n in names] if isinstance(names, list) else []


_KNOWN = re.compile(r'^#\s*"([^"]+)":\s*\{.*"(?:is|weight)":', re.MULTILINE)


def _known_properties(text: str) -> set[str]:
    """The objects whose cleanliness, hiddenness or weight the states in `text` give."""
    return set(_KNOWN.findall(text))


def _value(v: object) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return json.dumps(v, ensure_ascii=False)


def state_lines(state: dict[str, object]) -> str:
    """The state's body as the prompts write it: `# "key": value,` per key, then `# }`."""
    keys = list(state)
    lines = [f"# {json.dumps(k)}: {_value(state[k])}{',' if n < len(keys) - 1 else ''}" for n, k in enumerate(keys)]
    return "\n".join([*lines, "# }"]) + "\n"


def _call(function: str, *args: str) -> str:
    return f"{function}({', '.join(json.dumps(a, ensure_ascii=False) for a in args)})"


def _describe(moves: tuple[tuple[str, str], ...]) -> str:
    """update_wm's text for the moves ("Put the blue cup on the table and the pink block in the orange bowl")."""
    parts = []
    for obj, target in moves:
        where = "on the table" if target == TABLE else \
            f"in the {target}" if target.endswith("bowl") or target == "disinfector" else f"on the {target}"
        parts.append(f"the {obj} {where}")
    return "Put " + (parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1])


def reader_code(plan: Plan, query: str, update_wm: bool) -> str:
    """The reader's code for `plan` (Statler: with update_wm; noop() when there is no call, e.g. CaP's answer to a
    statement or "Put all the dirty blocks ..." when none is left)."""
    lines = [f"# THINK: {t}" for t in plan.thoughts]
    lines += [_call("put_first_on_second", o, t) for o, t in plan.moves]
    if plan.say:
        lines.append(_call("say", plan.say))
    if update_wm and plan.moves:
        lines.append(_call("update_wm", _describe(plan.moves)))
    elif update_wm and plan.statement:
        lines.append(_call("update_wm", query.strip().rstrip(".").strip()))  # as the demos: no full stop
    if not any(not line.startswith("#") for line in lines):  # a statement, or nothing left to move
        lines.append("noop()")
    return "\n".join(lines) + "\n"


class StatlerResponder:
    """Statler's reader, Statler-Unified's reader, the writers, CaP and CaP+CoT (module docstring)."""

    name = "statler"
    priority = 50

    def claims(self, query: Query) -> bool:
        if query.kind == "score":
            return False
        return self._is_writer(query.prompt) or self._is_reader(query.prompt)

    @staticmethod
    def _is_reader(prompt: str) -> bool:
        if "put_first_on_second" not in prompt:
            return False
        body = _TAIL_NOTES.sub("", prompt) if prompt.endswith("\n") else prompt
        last = body.rstrip("\n").rsplit("\n", 1)[-1]
        return last.startswith("# query:")

    @staticmethod
    def _is_writer(prompt: str) -> bool:
        if not prompt.rstrip(" ").endswith("# state = {\n"):
            return False
        head = prompt.rstrip(" ")[: -len("# state = {\n")]
        body = _TAIL_NOTES.sub("", head)
        last = body.rstrip("\n").rsplit("\n", 1)[-1]
        return last.startswith("# query:")

    def _world(self, query: Query) -> StatlerWorld:
        try:
            return StatlerWorld.from_truth(query.truth.world().extra)
        except StatlerPlanError as e:
            raise ExpertError(f"expert statler: {e}") from None

    def answer(self, query: Query) -> Answer:
        prompt = query.prompt
        world = self._world(query)
        episode = _episode_text(prompt)
        if self._is_writer(prompt):  # the world after the update (its moves already ran)
            update, _ = _last_query(prompt)
            new = state_of(world, _known_objects(episode), update, _known_properties(episode))
            forgot = dict(new, relations=[])
            return Answer(state_lines(new), wrong=(state_lines(forgot),), note=f"writer: state after {update!r}")
        text, _ = _last_query(prompt)
        try:
            plan = plan_query(world, text)
        except StatlerPlanError as e:
            raise ExpertError(f"expert statler: {e}") from None
        functions = _functions(prompt)
        statler = "update_wm" in functions
        code = reader_code(plan, text, statler)
        wrong_plan = Plan(statement=True) if (plan.moves or plan.say) else Plan(say="I do not know")
        wrong = reader_code(wrong_plan, text, statler)
        if UNIFIED_MARK in prompt:
            after = world.play(plan.moves)
            objects, known = _known_objects(episode), _known_properties(episode)
            code += "# state = {\n" + state_lines(state_of(after, objects, text, known))
            wrong += "# state = {\n" + state_lines(state_of(world, objects, text, known))  # the state not updated
        return Answer(code, wrong=(wrong,), note=f"reader ({plan.kind}): {text!r}")


RESPONDER = StatlerResponder()
