"""Statler's three-cups-and-a-ball micro-benchmark (../shared/papers/statler.txt §II, Prompts 1-3, Fig. 2),
ROS-free: the LLM backend directly, no node graph.

A game: three cups, the ball under one (`cups = [False, True, False]`), n random swaps of two cups
("Swapping cup 1 with cup 2"); where is the ball at the end? Three prompting styles, each with the
same few-shot demonstrations written in its own style (S: "we feed 30 demonstrations with various numbers
of swaps"; DEMOS here, the 270M model's context and speed):
- `plain` (S Prompt 1, "LLM"): the swaps, then the model writes the final state;
- `cot` (S Prompt 2, "LLM+CoT"): after reading all swaps the model writes every intermediate state;
  the last one is its answer;
- `state` (S Prompt 3, "LLM+State", Statler's idea): after each swap the model writes the current
  state, which stays in the prompt for the next swap (one generation per swap, its own line kept even
  if wrong); the state after the last swap is its answer.
Plain and CoT outputs end at a blank line or `#` (the next demonstration); a model that writes more
swap lines first is read all the same (plain: its first state, CoT: its last, which needs n states).
An answer is correct when the parsed final `cups = [...]` equals the truth (statler_truth.cup_game); an
answer that does not parse is wrong. a(n) = accuracy over the trials with n swaps, r(n) = a(n) / a(1)
(S Fig. 2), with Wilson 95% intervals.
"""
from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from monologue_domain.statler_truth import cup_game

from .benchmark import wilson

STYLES: tuple[str, ...] = ("plain", "cot", "state")
STYLE_LABELS = {"plain": "LLM (S Prompt 1)", "cot": "LLM+CoT (S Prompt 2)", "state": "LLM+State (S Prompt 3)"}
CUPS = 3
DEMOS = 3  # demonstrations per prompt (S: 30)
DEMO_SWAPS = (2, 4, 3)  # swaps in the demonstrations, in order
MAX_SWAPS = 10  # n = 1..MAX_SWAPS by default
TOKENS_PER_STATE = 16  # tokens for one `cups = [...]` line
_STATE = re.compile(r"cups\s*=\s*\[([^\]\n]*)\]")


class Generator(Protocol):
    """What the cup game needs of an LLM backend (monologue_llm.base.LLMBackend.generate)."""

    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64) -> Any: ...


@dataclass(frozen=True)
class Game:
    initial: tuple[bool, ...]
    swaps: tuple[tuple[int, int], ...]

    @property
    def truth(self) -> tuple[bool, ...]:
        return tuple(cup_game(self.initial, self.swaps))

    def states(self) -> list[tuple[bool, ...]]:
        """The state after each swap."""
        return [tuple(cup_game(self.initial, self.swaps[: i + 1])) for i in range(len(self.swaps))]


def make_game(rng: random.Random, n_swaps: int) -> Game:
    """A ball under a random cup, then `n_swaps` swaps of two different cups."""
    ball = rng.randrange(CUPS)
    swaps = tuple(tuple(sorted(rng.sample(range(CUPS), 2))) for _ in range(n_swaps))
    return Game(tuple(i == ball for i in range(CUPS)), swaps)  # type: ignore[arg-type]


def state_line(cups: Sequence[bool]) -> str:
    return f"cups = [{', '.join(str(bool(c)) for c in cups)}]"


def swap_line(i: int, j: int) -> str:
    return f"Swapping cup {i} with cup {j}"


def parse_state(text: str, last: bool = False) -> tuple[bool, ...] | None:
    """The first (or `last`) `cups = [..]` in `text` with three True/False items, else None."""
    found = _STATE.findall(text)
    for body in (reversed(found) if last else found):
        items = [x.strip().lower() for x in body.split(",")]
        if len(items) == CUPS and all(x in ("true", "false") for x in items):
            return tuple(x == "true" for x in items)
        return None  # the state the model meant is not readable
    return None


def demonstration(game: Game, style: str) -> str:
    """A solved game in `style` (S Prompts 1-3's desired outputs)."""
    head = ["# Initial state", state_line(game.initial)]
    swaps = [swap_line(i, j) for i, j in game.swaps]
    if style == "plain":
        return "\n".join([*head, *swaps, state_line(game.truth)])
    if style == "cot":
        return "\n".join([*head, *swaps, *(state_line(s) for s in game.states())])
    return "\n".join([*head, *(x for s, st in zip(swaps, game.states()) for x in (s, state_line(st)))])


def demonstrations(style: str, seed: int, demos: int = DEMOS) -> str:
    """The few-shot part of every prompt of `style` (the same games for every style)."""
    rng = random.Random(f"cups-demos-{seed}")
    games = [make_game(rng, DEMO_SWAPS[k % len(DEMO_SWAPS)]) for k in range(demos)]
    return "".join(demonstration(g, style) + "\n\n" for g in games)


@dataclass(frozen=True)
class Trial:
    style: str
    n: int
    trial: int
    correct: bool
    answer: tuple[bool, ...] | None
    truth: tuple[bool, ...]
    output: str  # what the model wrote (state: its lines joined)

    def to_json(self) -> dict[str, Any]:
        return {"style": self.style, "n": self.n, "trial": self.trial, "correct": self.correct,
                "answer": None if self.answer is None else list(self.answer), "truth": list(self.truth),
                "output": self.output}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Trial:
        ans = d.get("answer")
        return cls(str(d["style"]), int(d["n"]), int(d["trial"]), bool(d["correct"]),
                   None if ans is None else tuple(bool(x) for x in ans), tuple(bool(x) for x in d["truth"]),
                   str(d.get("output", "")))


def play(llm: Generator, game: Game, style: str, demos: str) -> tuple[tuple[bool, ...] | None, str]:
    """The model's final state for `game` in `style` (None: unreadable) and what it wrote."""
    head = demos + "# Initial state\n" + state_line(game.initial) + "\n"
    if style in ("plain", "cot"):
        prompt = head + "".join(swap_line(i, j) + "\n" for i, j in game.swaps)
        lines = 1 if style == "plain" else len(game.swaps)
        out = str(llm.generate(prompt, stop=["\n\n", "#"], max_tokens=TOKENS_PER_STATE * lines).text)
        answer = parse_state(out) if style == "plain" else parse_state(out, last=True)
        if style == "cot" and len(_STATE.findall(out)) < len(game.swaps):
            answer = None  # S Prompt 2: every intermediate state, then the last is the answer
        return answer, out
    prompt, written = head, []
    for i, j in game.swaps:
        prompt += swap_line(i, j) + "\n"
        out = str(llm.generate(prompt, stop=["\n"], max_tokens=TOKENS_PER_STATE).text).strip()
        written.append(out)
        if parse_state(out) is None:
            return None, "\n".join(written)
        prompt += out + "\n"
    return parse_state(written[-1]), "\n".join(written)


def games_for(seed: int, n: int, trials: int) -> list[Game]:
    """The `trials` games with n swaps (the same for every style: a paired comparison)."""
    rng = random.Random(f"cups-{seed}-{n}")
    return [make_game(rng, n) for _ in range(trials)]


def run_trials(llm: Generator, styles: Iterable[str], swaps: Iterable[int], trials: int, seed: int,
               done: Iterable[Trial] = (), on_trial: Any = None) -> list[Trial]:
    """Every (style, n, trial) not in `done`; `on_trial(trial)` after each (for a resumable store)."""
    have = {(t.style, t.n, t.trial) for t in done}
    out = list(done)
    for n in swaps:
        games = games_for(seed, n, trials)
        for style in styles:
            demos = demonstrations(style, seed)
            for k, game in enumerate(games):
                if (style, n, k) in have:
                    continue
                answer, text = play(llm, game, style, demos)
                t = Trial(style, n, k, answer == game.truth, answer, game.truth, text)
                out.append(t)
                if on_trial is not None:
                    on_trial(t)
    return out


def accuracy(trials: Iterable[Trial]) -> dict[tuple[str, int], tuple[int, int]]:
    """(correct, trials) per (style, n)."""
    out: dict[tuple[str, int], tuple[int, int]] = {}
    for t in trials:
        ok, n = out.get((t.style, t.n), (0, 0))
        out[(t.style, t.n)] = (ok + t.correct, n + 1)
    return out


def report_markdown(trials: Sequence[Trial], llm: str) -> str:
    """S Fig. 2 as a table: a(n) [Wilson 95%] (correct/trials) and r(n) = a(n)/a(1) per style."""
    acc = accuracy(trials)
    styles = [s for s in STYLES if any(k[0] == s for k in acc)]
    ns = sorted({k[1] for k in acc})
    lines = [f"### Statler cup game (S Fig. 2): a(n) [Wilson 95%] (correct/trials) and r(n) = a(n)/a(1), "
             f"LLM {llm}, {DEMOS} demonstrations", "",
             "| n | " + " | ".join(f"{STYLE_LABELS[s]} a(n) | r(n)" for s in styles) + " |",
             "|---|" + "---|---|" * len(styles)]
    for n in ns:
        row = []
        for s in styles:
            ok, k = acc.get((s, n), (0, 0))
            a1_ok, a1_k = acc.get((s, 1), (0, 0))
            if not k:
                row += ["-", "-"]
                continue
            lo, hi = wilson(ok, k)
            a, a1 = ok / k, (a1_ok / a1_k if a1_k else 0.0)
            row += [f"{a:.2f} [{lo:.2f}, {hi:.2f}] ({ok}/{k})", f"{a / a1:.2f}" if a1 else "-"]
        lines.append(f"| {n} | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n\n" + answers_markdown(trials)


def answers_markdown(trials: Sequence[Trial]) -> str:
    """Per style: readable answers, the most frequent answer, and the accuracy a model would reach by always
    giving that answer on the same games (the chance baseline a(n) has to beat)."""
    lines = ["| style | readable answers | most frequent answer | its share | always giving it: correct |",
             "|---|---|---|---|---|"]
    for s in STYLES:
        mine = [t for t in trials if t.style == s]
        if not mine:
            continue
        read = [t.answer for t in mine if t.answer is not None]
        if not read:
            lines.append(f"| {STYLE_LABELS[s]} | 0/{len(mine)} | - | - | - |")
            continue
        top, count = Counter(read).most_common(1)[0]
        chance = sum(t.truth == top for t in mine)
        lines.append(f"| {STYLE_LABELS[s]} | {len(read)}/{len(mine)} | {state_line(top)} | {count}/{len(read)} | "
                     f"{chance}/{len(mine)} (the model: {sum(t.correct for t in mine)}/{len(mine)}) |")
    return "\n".join(lines) + "\n"


__all__ = ["DEMOS", "MAX_SWAPS", "STYLES", "Game", "Trial", "accuracy", "answers_markdown", "demonstration",
           "demonstrations", "games_for", "make_game", "parse_state", "play", "report_markdown", "run_trials"]
