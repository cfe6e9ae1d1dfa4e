"""Goal check of the scoring planner (no rclpy): the instruction read as "X in/on Y" facts about the
scene's own object names, checked with the success detector before each step
(`scoring.goal_check`).

The grammar is the planner's own action language (`Pick the X and place it in/on the Y.`), not any
benchmark's wording: the LAST `in | into | inside | on | onto | on top of | to` followed by a scene name
(object or location) is the target; the words before it name the subject, either exactly one scene
object ("the red block ... it") or every object of one category with a plural noun ("all the blocks",
"every block", "each block", "the blocks"). Anything else (no known target, several objects, a
negation or an exception, a relation between objects such as "matching" or "different") parses to no
facts, and the rule does nothing: the LLM alone decides, as without the check.

`stack` or `pile` with every object of one category is a tower instead: those objects one on another,
on the target when one is named, anywhere otherwise ("Stack all the blocks [on the left side]").

With facts, before each step:
- all facts hold -> the planner says done without asking the LLM (`stop`, `affordance`);
- some fact does not hold -> the done line is not offered (`stop`, `affordance`);
- `affordance` also drops the lines that would move an object whose own fact already holds;
- `directed` offers only the moves that make an unmet fact hold, or put the next object on the tower
  (`advancing`), when there is one; otherwise every admissible move, placed objects' too (the next object
  may be covered), and still no done line. The LLM chooses among what is offered.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .ports import SuccessPort


class GoalScorer(Protocol):
    def score(self, prompt: str, candidates: Sequence[str]) -> Any: ...

GOAL_CHECKS = ("off", "stop", "affordance", "directed")
# llm: when the parser reads nothing, the LLM picks the goal by scoring; llm_named: among the goals over the
# scene names the instruction mentions (named_goals); llm_named_calibrated: the same, each goal's score minus
# its score for the content-free instruction "N/A" (what the model thinks of the goal whatever was said);
# llm_named_retrieved: llm_named with the prompt profile's goal examples most similar to the instruction
# (core/goal_examples.py) instead of its fixed goal prompt
GOAL_GROUNDINGS = ("parser", "llm", "llm_named", "llm_named_calibrated", "llm_named_retrieved")
CONTENT_FREE = "N/A"
NO_GOAL = "Something else."

# "to" but not "next to", "close to", "near to", "adjacent to": beside the target is not in/on it
_RELATION = r"(?:on top of|into|inside|onto|in|on|(?<!next )(?<!close )(?<!near )(?<!adjacent )to)"
_QUANTIFIED = r"(?:all|every|each|both)"
_EXCLUDING = re.compile(r"\b(?:except|but|other than|not|no|without|only|apart from|besides)\b")


@dataclass(frozen=True)
class GoalFact:
    """`obj` is in/on `target` (scene names), as the success detector's `pick_place` rule checks it."""

    obj: str
    target: str


def _words(text: str) -> str:
    return " " + " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split()) + " "


@dataclass(frozen=True)
class Goal:
    """What the instruction asks for: `facts` (each object in/on its target), or a `tower` of objects
    stacked one on another, standing on `base` ("" = anywhere)."""

    facts: tuple[GoalFact, ...] = ()
    tower: tuple[str, ...] = ()
    base: str = ""

    def __bool__(self) -> bool:
        return bool(self.facts or self.tower)

    def describe(self) -> str:
        if self.tower:
            return f"tower of {', '.join(self.tower)}" + (f" on the {self.base}" if self.base else "")
        return ", ".join(f"{f.obj} in/on {f.target}" for f in self.facts)


@dataclass(frozen=True)
class GoalStatus:
    """`holds`: the goal is met; `placed`: objects already where the goal wants them (not to be moved);
    `chains`: a tower goal's longest chains of two or more (or one on the base), bottom first."""

    holds: bool
    placed: frozenset[str]
    chains: tuple[tuple[str, ...], ...] = ()


_STACK = re.compile(r" (?:stack|pile)(?:s|ed|ing)? ")


def parse_goal(instruction: str, categories: Mapping[str, str]) -> Goal:
    """The instruction's goal over the scene's names (`categories`: {name: category}); an empty Goal
    when it does not read as "<subject> in/on <one scene name>" or "stack <every X> [on <scene name>]"."""
    text = _words(instruction)
    names = sorted(categories, key=len, reverse=True)  # longest first: "top left corner" before "left"
    target, start, end = "", -1, -1
    for name in names:
        for m in re.finditer(rf" {_RELATION} (?:the |a |an )?{re.escape(_words(name).strip())}(?= )", text):
            if m.start() > start:  # the last relation; at the same place the longest name wins
                target, start, end = name, m.start(), m.end()
    stacking = bool(_STACK.search(text))
    if not target and stacking:
        if any(_words(n) in text for n in names):
            return Goal()  # a scene name it does not read as the target ("... at the left side"): not anywhere
        start, end = len(text) - 1, len(text) - 1  # a tower anywhere: the whole text is the subject
        rest = [w for w in text.split() if w in {"and", "then", "also", "or"}]
    else:
        rest = text[end:].split()
    if (not target and not stacking) or len(rest) > 2 or {"and", "then", "also", "or"} & set(rest):
        return Goal()  # no target, or another clause follows it
    subject = text[:start + 1]
    if _EXCLUDING.search(subject):
        return Goal()
    named = [n for n in names if categories[n] != "location" and n != target and _words(n) in subject]
    named = [n for n in named if not any(n != m and _words(n) in _words(m) for m in named)]  # the longest name
    kinds = {c for c in categories.values() if c != "location"}
    groups = {c for c in kinds
              if re.search(rf" (?:{_QUANTIFIED}(?: of)?(?: the)? {re.escape(c)}s?|the {re.escape(c)}s) ", subject)}
    if len(named) == 1 and not groups and target:
        return Goal(facts=(GoalFact(named[0], target),))
    if len(groups) == 1 and not named:
        cat = next(iter(groups))
        members = tuple(n for n in sorted(categories) if categories[n] == cat and n != target)
        if stacking and len(members) >= 2 and (not target or categories[target] == "location"):
            return Goal(tower=members, base=target)
        if target:
            return Goal(facts=tuple(GoalFact(n, target) for n in members))
    return Goal()


def _on(success: SuccessPort, obj: str, target: str) -> bool:
    return bool(success.detect("pick_place", (obj, target), 0.0, 0.0).success)


def check(goal: Goal, success: SuccessPort) -> GoalStatus:
    """The goal against the success detector's view now."""
    if goal.facts:
        placed = frozenset(f.obj for f in goal.facts if _on(success, f.obj, f.target))
        return GoalStatus(len(placed) == len(goal.facts), placed)
    chains = _longest_chains(goal, success)
    n = len(chains[0]) if chains else 0
    # a lone block on the base is placed; without a base a lone block is only a possible bottom. Of several
    # longest chains (4 cm lets a block be "on" two neighbours), only what all of them share is placed
    towered = n >= 2 or bool(goal.base and n)
    placed = frozenset.intersection(*(frozenset(c) for c in chains)) if towered else frozenset()
    return GoalStatus(n == len(goal.tower), placed, tuple(chains) if towered else ())


def advancing(goal: Goal, status: GoalStatus) -> frozenset[tuple[str, str]]:
    """The (object, target) moves that bring the goal one fact nearer: an object whose fact does not hold
    onto its target; for a tower, another object onto the top of a longest chain (onto the base, or onto
    any other tower object, while there is no chain yet)."""
    if status.holds:
        return frozenset()
    if goal.facts:
        return frozenset((f.obj, f.target) for f in goal.facts if f.obj not in status.placed)
    if status.chains:
        return frozenset((b, c[-1]) for c in status.chains for b in goal.tower if b not in c)
    if goal.base:
        return frozenset((b, goal.base) for b in goal.tower)
    return frozenset((a, b) for a in goal.tower for b in goal.tower if a != b)


def _longest_chains(goal: Goal, success: SuccessPort) -> list[tuple[str, ...]]:
    """Every longest chain b1, b2, ... of tower objects with b1 on the base and each next one on the one
    before it, as the success detector judges "X on Y"; with a base, every object of a chain is on the
    base too (a tower that leans off its location is not on it)."""
    on = {(a, b): _on(success, a, b) for a in goal.tower for b in goal.tower if a != b}
    allowed = [b for b in goal.tower if not goal.base or _on(success, b, goal.base)]
    best: list[tuple[str, ...]] = []

    def extend(chain: tuple[str, ...]) -> None:  # depth first: a block two levels up is "on" the bottom too
        if not best or len(chain) > len(best[0]):
            best[:] = [chain]
        elif len(chain) == len(best[0]) and chain not in best:
            best.append(chain)
        for a in allowed:
            if a not in chain and on[(a, chain[-1])]:
                extend(chain + (a,))

    for bottom in allowed:
        if not any(on[(bottom, b)] for b in goal.tower if b != bottom):  # stands on no other tower object
            extend((bottom,))
    return best


def goal_candidates(pairs: Iterable[tuple[str, str]], categories: Mapping[str, str],
                    place: Callable[[str, str], str]) -> list[str]:
    """Every goal parse_goal reads, in the planner's action language, for the admissible `pairs` (object,
    target) of pick-and-place: one object in/on a target, every object of a category in/on a target, a
    tower of a category (anywhere or on a location); then NO_GOAL. `place(obj, target)` is the action text."""
    pairs = sorted(set(pairs))
    out = [place(o, t) for o, t in pairs]
    by_cat: dict[str, list[str]] = {}
    for o in sorted({o for o, _ in pairs}):
        by_cat.setdefault(categories.get(o, ""), []).append(o)
    for cat, members in sorted(by_cat.items()):
        if len(members) < 2 or not cat:
            continue
        first = members[0]
        targets = sorted({t for o, t in pairs if o == first and categories.get(t) != cat})
        out += [place(first, t).replace(f"the {first}", f"every {cat}", 1) for t in targets]
        out.append(f"Stack every {cat}.")
        out += [f"Stack every {cat} on the {t}." for t in targets if categories.get(t) == "location"]
    return out + [NO_GOAL]


def mentions(text: str, name: str) -> bool:
    """`name` (a scene name) is written in `text`, between non-letters: also inside text with no spaces
    (Chinese, Japanese), where a scene name read off the screen stands between other characters."""
    words = r"\s+".join(re.escape(w) for w in name.lower().split())
    return re.search(rf"(?<![a-z]){words}(?![a-z])", text.lower()) is not None


def names_in(text: str, categories: Mapping[str, str]) -> list[str]:
    """The scene names written in `text`, longest first and each once ("blue bowl" is not also "blue")."""
    rest, used = text.lower(), []
    for n in sorted(categories, key=len, reverse=True):
        if mentions(rest, n):
            used.append(n)
            rest = re.sub(rf"(?<![a-z]){re.escape(n.lower())}(?![a-z])", " ", rest)
    return used


def named_goals(instruction: str, candidates: Sequence[str], categories: Mapping[str, str]) -> list[str]:
    """The goal candidates for `llm_named`, by what the instruction names, in any language (scene names
    are written as the scene names them): a goal about an object the person did not name is not
    theirs, and a goal that leaves out a named one is not either. So: of the goals every scene name of
    which the instruction mentions, those that use the most of them; when none uses any, the goals over
    a whole category with no target (a tower anywhere) and NO_GOAL. NO_GOAL also stays when the text has
    one of the parser's words of exclusion ("except", "not", ...). The LLM ranks what is left."""
    used = {c: names_in(c, categories) for c in candidates if c != NO_GOAL}
    kept = {c: len(u) for c, u in used.items() if all(mentions(instruction, n) for n in u)}
    most = max(kept.values(), default=0)
    if most:
        hedged = _EXCLUDING.search(_words(instruction)) is not None
        return [c for c in candidates if kept.get(c) == most or (hedged and c == NO_GOAL)]
    return [c for c in candidates if c == NO_GOAL or kept.get(c) == 0]


def goal_prompt(head: str, instruction: str) -> str:
    return f"{head.rstrip()}\nInstruction: {' '.join(instruction.split())}\nGoal:"


def ground_goal(llm: GoalScorer, head: str, instruction: str, candidates: Sequence[str],
                categories: Mapping[str, str], named: bool = False,
                calibrated: bool = False) -> tuple[Goal, str, int]:
    """The goal the LLM ranks first for `instruction` among `candidates` (raw sum of log-probabilities,
    after `head`'s examples), or among named_goals() of them (`named`), as parse_goal reads it; NO_GOAL
    reads as no goal. `calibrated`: each sum minus the goal's sum for the content-free instruction "N/A"
    (pointwise mutual information with the instruction; one more scoring call). Returns (goal, text,
    number of goals ranked)."""
    if named:
        candidates = named_goals(instruction, candidates, categories)
    if len(candidates) == 1:
        text = candidates[0]
    else:
        padded = [" " + c for c in candidates]
        lp = [float(s.logprob) for s in llm.score(goal_prompt(head, instruction), padded).scores]
        if calibrated:
            prior = llm.score(goal_prompt(head, CONTENT_FREE), padded).scores
            lp = [v - float(s.logprob) for v, s in zip(lp, prior)]
        text = candidates[max(range(len(candidates)), key=lambda i: lp[i])]
    return (Goal() if text == NO_GOAL else parse_goal(text, categories)), text, len(candidates)
