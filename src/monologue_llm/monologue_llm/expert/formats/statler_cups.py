"""The format of Statler's cup game (../shared/papers/statler.txt §II, Prompts 1-3; monologue_eval's
core/statler_cups.py): demonstrations, then `# Initial state`, `cups = [False, True, False]` and
`Swapping cup i with cup j` lines. The answer is decided by the prompt alone (the game is in it):

- plain (S Prompt 1): the demonstrations give one `cups = [...]` line after their swaps: the final state;
- CoT (S Prompt 2): they give one state per swap after all swaps: every intermediate state;
- state (S Prompt 3): a state after each swap line: the state after the swaps so far (one line).
"""
from __future__ import annotations

import re

from monologue_domain.expert.statler import cup_states

from ..format import Answer, ExpertError, Query

_STATE = re.compile(r"^cups\s*=\s*\[([^\]\n]*)\]$")
_SWAP = re.compile(r"^Swapping cup (\d+) with cup (\d+)$")
HEAD = "# Initial state"


def _state(line: str) -> list[bool] | None:
    m = _STATE.match(line.strip())
    if m is None:
        return None
    items = [x.strip().lower() for x in m[1].split(",")]
    return [x == "true" for x in items] if all(x in ("true", "false") for x in items) else None


def state_line(cups: list[bool]) -> str:
    return f"cups = [{', '.join(str(c) for c in cups)}]"


def _style(demo: list[str]) -> str:
    """plain | cot | state, from a demonstration's lines after its initial state."""
    kinds = ["swap" if _SWAP.match(x) else "state" if _state(x) is not None else "" for x in demo]
    kinds = [k for k in kinds if k]
    if kinds.count("state") == 1:
        return "plain"
    if any(a == "swap" and b == "state" for a, b in zip(kinds, kinds[1:])) and kinds[0] == "swap" \
            and all(kinds[i] != kinds[i + 1] for i in range(len(kinds) - 1)):
        return "state"
    return "cot"


class CupGameResponder:
    """The cup game's next state(s) (module docstring)."""

    name = "statler_cups"
    priority = 60

    def claims(self, query: Query) -> bool:
        return query.kind != "score" and HEAD in query.prompt and "Swapping cup" in query.prompt \
            and "put_first_on_second" not in query.prompt

    def answer(self, query: Query) -> Answer:
        games = query.prompt.split(HEAD)
        if len(games) < 2:
            raise ExpertError("expert statler_cups: no '# Initial state' in the prompt")
        last = [x.strip() for x in games[-1].splitlines() if x.strip()]
        demo = [x.strip() for x in games[1].splitlines() if x.strip()][1:] if len(games) > 2 else []
        style = _style(demo) if demo else "plain"
        if not last or (initial := _state(last[0])) is None:
            raise ExpertError("expert statler_cups: the game has no initial 'cups = [...]' line")
        swaps = [(int(m[1]), int(m[2])) for x in last[1:] if (m := _SWAP.match(x))]
        if not swaps:
            raise ExpertError("expert statler_cups: the game has no swap")
        n = len(initial)
        if any(not (0 <= i < n and 0 <= j < n) for i, j in swaps):
            raise ExpertError(f"expert statler_cups: a swap names a cup outside 0..{n - 1}")
        states = cup_states(initial, swaps)
        if style == "cot":
            text = "\n".join(state_line(s) for s in states) + "\n"
        else:
            text = state_line(states[-1]) + "\n"
        final = states[-1]
        moved = final[1:] + final[:1]  # the ball under the next cup: never the right answer
        wrong = "\n".join([*(state_line(s) for s in states[:-1]), state_line(moved)]) if style == "cot" \
            else state_line(moved)
        return Answer(text, wrong=(wrong + "\n",), note=f"cup game ({style}), {len(swaps)} swap(s)")


RESPONDER = CupGameResponder()
