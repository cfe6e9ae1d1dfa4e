"""MultiTalk's Planner answer built by scoring instead of free generation (no rclpy).

The embedded 270M model cannot pick coordinates when it generates (under the grammar it copies the first
centre it sees; docs/benchmark.md), but it ranks candidate lines sensibly when the line names the object
(SayCan-style scoring, the planner's offline default elsewhere). Here the Planner's answer is written in
the supplement's format, `Step-by-step Instructions:` with `k: action # reasoning` lines, one line at a
time: every admissible line for the next step is scored as a continuation of the conversation and the
answer so far, and the most likely one is kept. Admissible lines, from the perceived boxes:

- odd steps: `grasp((<centre>)) # grasp the <object>` for every object that is neither a bowl nor a
  location, and, once a pair is in the plan, `home() # the task is done` (which ends the plan);
- even steps: `move((<point>)) # put the <grasped object> in|on the <target>` for every other box: a bowl's
  or a location's centre, another object's top (to stack); not an object the plan has already put
  something on. After a move, the plan's later lines see the object at its new place.

A line is ranked by the log-probability of its reasoning given the rest of the line (natural log: the
whole line's minus that of the line up to its `#`): the coordinates are fixed by the object named in the
reasoning, and round numbers of a table location would otherwise win over a bowl's (on the 270M model,
whole lines put every block on the first location listed). An object is grasped at most once per plan
(after its move, its centre no longer holds it). Lines that would repeat a plan the simulator or the person
rejected in the episode are skipped when another line is left, so a revision after such feedback is a
different plan; after the Analyzer's comments the same plan may come back (MultiTalk's deferral). The
answer always parses (parse_planner_output), so it is never re-prompted. Questions and perception reruns
are left to generated answers (`planner_decoding: generate`).
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from monologue_llm.base import LLMBackend

from .parsing import PLAN_HEADER
from .scene import LOCATION, Box, fmt

HOME_LINE = "home() # the task is done"


@dataclass(frozen=True)
class ScoredLine:
    line: str  # without the step number
    logprob: float  # natural-log probability of the reasoning given the line before it
    chosen: bool


def _point(b: Box, digits: int) -> str:
    return ", ".join(fmt(c, digits) for c in b.center)


def grasp_lines(boxes: Sequence[Box], digits: int) -> dict[str, Box]:
    return {f"grasp(({_point(b, digits)})) # grasp the {b.name}": b
            for b in boxes if b.category not in (LOCATION, "bowl")}


def target_point(t: Box) -> tuple[float, float, float]:
    """Where a move to `t` aims (m, base frame): a bowl's or a location's centre, another object's top
    (the simulator's stacking rule: a move onto an object below its top is a collision)."""
    if t.category in (LOCATION, "bowl"):
        return t.center
    return (t.center[0], t.center[1], t.center[2] + t.size[2] / 2)


def placed(held: Box, t: Box) -> Box:
    """`held` after a move to `t`: centred on it, resting on its top (in a bowl: on its bottom)."""
    x, y, z = target_point(t)
    if t.category == "bowl":
        z = t.center[2]
    return Box(held.name, held.category, held.size, (x, y, z + held.size[2] / 2))


def supporting(boxes: Sequence[Box], tolerance: float = 0.01) -> set[str]:
    """Names of the objects (not bowls or locations) another box rests on: its bottom within `tolerance`
    (m) of their top, its centre over their footprint."""
    out: set[str] = set()
    for a in boxes:
        if a.category in (LOCATION, "bowl"):
            continue
        top = a.center[2] + a.size[2] / 2
        for b in boxes:
            if b is a or b.category == LOCATION:
                continue
            over = abs(b.center[0] - a.center[0]) <= a.size[0] / 2 and abs(b.center[1] - a.center[1]) <= a.size[1] / 2
            if over and abs(b.center[2] - b.size[2] / 2 - top) <= tolerance:
                out.add(a.name)
    return out


def move_lines(boxes: Sequence[Box], held: Box, digits: int, covered: Sequence[str] = ()) -> dict[str, Box]:
    """The admissible moves of `held`: to every other box except objects with something on them
    (`covered`; bowls and locations stay)."""
    def put(t: Box) -> str:
        return f"put the {held.name} {'in' if t.category == 'bowl' else 'on'} the {t.name}"

    def point(t: Box) -> str:
        return ", ".join(fmt(c, digits) for c in target_point(t))
    return {f"move(({point(t)})) # {put(t)}": t for t in boxes
            if t.name != held.name and not (t.name in covered and t.category not in (LOCATION, "bowl"))}


def scored_plan(llm: LLMBackend, prompt: str, boxes: Sequence[Box], digits: int, max_pairs: int,
                rejected: Sequence[tuple[str, ...]] = (), log: logging.Logger | None = None,
                baseline: str | None = None) -> tuple[str, list[list[ScoredLine]]]:
    """The Planner's answer (text) for `prompt` (which ends with the Planner's open turn) and, per step,
    every line that was scored. `rejected`: earlier plans' lines (without numbers) not to repeat.
    `baseline`: the same prompt without the task (contextual calibration): each line's score is then its
    reasoning's log-probability minus that under the baseline, so what the model says whatever the task
    (the first table location) no longer wins."""
    grasps = grasp_lines(boxes, digits)
    if not grasps:
        raise ValueError("no graspable object in the scene: a plan cannot be scored")
    lines: list[str] = []
    trace: list[list[ScoredLine]] = []
    banned = {tuple(r) for r in rejected}
    pairs = 0
    moved: set[str] = set()
    now = list(boxes)  # the boxes as the plan so far leaves them
    while True:
        covered = supporting(now)
        options: dict[str, Box | None] = {t: b for t, b in grasps.items()
                                          if b.name not in moved and b.name not in covered}
        if pairs or not options:
            options[HOME_LINE] = None
        if pairs >= max_pairs:
            options = {HOME_LINE: None}
        line, held = _choose(llm, prompt, lines, options, banned, trace, log, baseline)
        lines.append(line)
        if held is None:
            break
        moved.add(held.name)
        rest = [b for b in now if b.name != held.name]  # lifted: what it stood on is clear now
        line, target = _choose(llm, prompt, lines, dict(move_lines(rest, held, digits, sorted(supporting(rest)))),
                               banned, trace, log, baseline)
        lines.append(line)
        assert target is not None
        now = [placed(b, target) if b.name == held.name else b for b in now]
        pairs += 1
    return _render(lines), trace


def _render(lines: Sequence[str]) -> str:
    return PLAN_HEADER + "\n" + "\n".join(f"{k}: {line}" for k, line in enumerate(lines, 1))


def _reasoning(llm: LLMBackend, prompt: str, k: int, texts: Sequence[str]) -> list[float]:
    """Per line, the log-probability of its reasoning given `prompt` and the line before its `#`."""
    fulls = [f"{k}: {t}" for t in texts]
    heads = [f"{k}: {t.split(' #', 1)[0]} #" for t in texts]  # the line up to its reasoning
    scores = llm.score(prompt, [*fulls, *heads]).scores
    return [f.logprob - h.logprob for f, h in zip(scores[: len(texts)], scores[len(texts):], strict=True)]


def _choose(llm: LLMBackend, prompt: str, lines: list[str], options: dict[str, Box | None],
            banned: set[tuple[str, ...]], trace: list[list[ScoredLine]],
            log: logging.Logger | None, baseline: str | None = None) -> tuple[str, Box | None]:
    head = _render(lines) + "\n" if lines else PLAN_HEADER + "\n"
    k = len(lines) + 1
    texts = list(options)
    reasoning = _reasoning(llm, prompt + head, k, texts)
    if baseline is not None:
        reasoning = [r - b for r, b in zip(reasoning, _reasoning(llm, baseline + head, k, texts), strict=True)]
    ranked = sorted(zip(texts, reasoning, strict=True), key=lambda p: -p[1])
    # a line that completes a rejected plan (home() after it, or its last move) is skipped if another is left
    allowed = [t for t, _ in ranked if not _completes(lines, t, banned)] or [ranked[0][0]]
    best = allowed[0]
    trace.append([ScoredLine(t, lp, t == best) for t, lp in ranked])
    if log is not None:
        log.debug("MultiTalk scored step %d: %s", k, ", ".join(f"{t!r}={lp:.2f}" for t, lp in ranked[:4]))
    return best, options[best]


def _completes(lines: Sequence[str], line: str, banned: set[tuple[str, ...]]) -> bool:
    plan = (*lines, line)
    return plan in banned or (*plan, HOME_LINE) in banned
