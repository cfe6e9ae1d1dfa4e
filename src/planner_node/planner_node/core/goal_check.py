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

With facts, before each step:
- all facts hold -> the planner says done without asking the LLM (`stop`, `affordance`);
- some fact does not hold -> the done line is not offered (`stop`, `affordance`);
- `affordance` also drops the lines that would move an object whose own fact already holds.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .ports import SuccessPort

GOAL_CHECKS = ("off", "stop", "affordance")

_RELATION = r"(?:on top of|into|inside|onto|in|on|to)"
_QUANTIFIED = r"(?:all|every|each|both)"
_EXCLUDING = re.compile(r"\b(?:except|but|other than|not|no|without|only|apart from|besides)\b")


@dataclass(frozen=True)
class GoalFact:
    """`obj` is in/on `target` (scene names), as the success detector's `pick_place` rule checks it."""

    obj: str
    target: str


def _words(text: str) -> str:
    return " " + " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split()) + " "


def parse_goal(instruction: str, categories: Mapping[str, str]) -> tuple[GoalFact, ...]:
    """The instruction's goal as facts over the scene's names (`categories`: {name: category});
    () when it does not read as "<subject> in/on <one scene name>"."""
    text = _words(instruction)
    names = sorted(categories, key=len, reverse=True)  # longest first: "top left corner" before "left"
    target, start, end = "", -1, -1
    for name in names:
        for m in re.finditer(rf" {_RELATION} (?:the |a |an )?{re.escape(_words(name).strip())}(?= )", text):
            if m.start() > start:  # the last relation; at the same place the longest name wins
                target, start, end = name, m.start(), m.end()
    rest = text[end:].split()
    if not target or len(rest) > 2 or {"and", "then", "also", "or"} & set(rest):
        return ()  # no target, or another clause follows it
    subject = text[:start + 1]
    if _EXCLUDING.search(subject):
        return ()
    named = [n for n in names if categories[n] != "location" and n != target and _words(n) in subject]
    named = [n for n in named if not any(n != m and _words(n) in _words(m) for m in named)]  # the longest name
    kinds = {c for c in categories.values() if c != "location"}
    groups = {c for c in kinds
              if re.search(rf" (?:{_QUANTIFIED}(?: of)?(?: the)? {re.escape(c)}s?|the {re.escape(c)}s) ", subject)}
    if len(named) == 1 and not groups:
        return (GoalFact(named[0], target),)
    if len(groups) == 1 and not named:
        cat = next(iter(groups))
        return tuple(GoalFact(n, target) for n in sorted(categories) if categories[n] == cat and n != target)
    return ()


def unmet(facts: Sequence[GoalFact], success: SuccessPort) -> list[GoalFact]:
    """The facts the success detector does not confirm now."""
    return [f for f in facts if not success.detect("pick_place", (f.obj, f.target), 0.0, 0.0).success]
