"""Parsing MultiTalk's LLM answers (no rclpy): the Planner's three output types and the action
grammar `move(<coords>)` / `grasp(<coords>)` / `home()`, and the Analyzer's verdict
(../shared/papers/multitalk_supplement.txt l.57-84, l.238-245; requirements §3.2).

Anything that is not exactly one output type in its format raises OutputRejected with a reason the
strategy records (an ERROR event) and puts into the bounded re-prompt.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

PLAN_HEADER = "Step-by-step Instructions:"
QUESTIONS_HEADER = "Questions:"
RERUN = "Perception Rerun Required"
FEASIBLE = "Feasible Plan!"
PLAN, QUESTIONS, PERCEPTION = "plan", "questions", "perception"
VERBS = ("move", "grasp", "home")

_NUMBERED = re.compile(r"^\s*(\d{1,9})\s*[:.)]\s*(.*?)\s*$")  # bounded: int() refuses > 4300 digits
_ACTION = re.compile(r"^(\w+)\s*\((.*)\)\s*[.;,]?$", re.DOTALL)
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_NO_VIOLATION = re.compile(r"^(?:no\s+violations?|none|ok|no\s+issues?)\W*$", re.IGNORECASE)
_QUOTES = "\"'`\u2018\u2019\u201c\u201d"


class OutputRejected(ValueError):
    """An answer that does not follow its output format (the message says what is wrong)."""


Vec3 = tuple[float, float, float]


@dataclass(frozen=True)
class Action:
    """One robot action of a plan; coordinates in m in the robot base frame (z = 0 if only x, y given)."""

    verb: str  # one of VERBS
    coords: Vec3 | None  # None for home()

    @property
    def text(self) -> str:
        if self.coords is None:
            return f"{self.verb}()"
        return f"{self.verb}(({', '.join(_num(v) for v in self.coords)}))"


@dataclass(frozen=True)
class PlanStep:
    index: int  # 1-based, as numbered
    action: Action
    reasoning: str  # after `#` ("" if none)

    @property
    def line(self) -> str:
        return f"{self.index}: {self.action.text}" + (f" # {self.reasoning}" if self.reasoning else "")


@dataclass(frozen=True)
class PlannerOutput:
    """A Planner answer: a plan, questions, or a perception rerun request."""

    kind: str  # PLAN | QUESTIONS | PERCEPTION
    steps: tuple[PlanStep, ...] = ()
    questions: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """The answer in the supplement's format (what the Analyzer and the transcript get)."""
        if self.kind == PLAN:
            return "\n".join([PLAN_HEADER, *(s.line for s in self.steps)])
        if self.kind == QUESTIONS:
            return "\n".join([QUESTIONS_HEADER, *(f"{i}: {q}" for i, q in enumerate(self.questions, 1))])
        return RERUN

    @property
    def actions(self) -> tuple[str, ...]:
        """The plan's actions only (to recognise a plan resubmitted unchanged)."""
        return tuple(s.action.text for s in self.steps)


@dataclass(frozen=True)
class AnalyzerVerdict:
    feasible: bool
    findings: tuple[tuple[int, str], ...]  # (step, violation as written) of the steps with violations

    @property
    def comments(self) -> str:
        """The findings as the Analyzer Feedback's <comments>."""
        return "\n".join(f"{k}: {v}" for k, v in self.findings)


def _num(v: float) -> str:
    s = f"{v:.4f}".rstrip("0")
    s = s + "0" if s.endswith(".") else s
    return "0.0" if s in ("-0.0", "-0.") else s


def _clean(text: str) -> str:
    text = text.replace("\u2212", "-").replace("\r", "")
    return re.sub(r"^\s*```\w*\s*$", "", text, flags=re.MULTILINE).strip()


def _find(text: str, marker: str) -> int:
    return text.lower().find(marker.lower())


_MARKERS = {PLAN: PLAN_HEADER, QUESTIONS: QUESTIONS_HEADER, PERCEPTION: RERUN}


def _starts_line(text: str, marker: str) -> bool:
    """`marker` (any case, optionally quoted) begins one of the lines of `text`."""
    return re.search(rf"^\s*[{_QUOTES}]?{re.escape(marker)}", text, re.IGNORECASE | re.MULTILINE) is not None


def parse_action(text: str) -> Action:
    """`move(<coords>)`, `grasp(<coords>)` or `home()`; coordinates are 2 or 3 numbers in any
    brackets. OutputRejected for anything else (a name instead of coordinates, an unknown verb)."""
    t = text.replace("\u2212", "-").strip().strip(_QUOTES).strip()
    m = _ACTION.match(t)
    if m is None:
        raise OutputRejected(f"{t!r} is not an action: use move(<coordinates>), grasp(<coordinates>) or home()")
    verb, args = m.group(1).lower(), m.group(2).strip()
    if verb not in VERBS:
        raise OutputRejected(f"unknown action {m.group(1)!r}: the actions are move, grasp and home")
    if verb == "home":
        if args:
            raise OutputRejected(f"home() takes no arguments, got {t!r}")
        return Action(verb, None)
    rest = _NUMBER.sub(" ", args)
    if re.sub(r"[\s,()\[\]{}]", "", rest):
        raise OutputRejected(f"{verb} takes coordinates only (numbers, m), got {args!r}")
    values = [float(v) for v in _NUMBER.findall(args)]
    if len(values) not in (2, 3):
        raise OutputRejected(f"{verb} needs 2 or 3 coordinates (x, y[, z] in m), got {len(values)} in {args!r}")
    x, y, z = (*values, 0.0) if len(values) == 2 else values
    return Action(verb, (x, y, z))


def _numbered(lines: list[str], what: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for line in lines:
        if not line.strip():
            continue
        m = _NUMBERED.match(line)
        if m is None:
            raise OutputRejected(f"{what}: the line {line.strip()[:80]!r} is not numbered `k: ...`")
        out.append((int(m.group(1)), m.group(2)))
    if not out:
        raise OutputRejected(f"{what}: no numbered lines after the header")
    if [k for k, _ in out] != list(range(1, len(out) + 1)):
        raise OutputRejected(f"{what}: the lines must be numbered 1, 2, 3, ...; got {[k for k, _ in out]}")
    return out


def parse_planner_output(raw: str) -> PlannerOutput:
    """Exactly one of `Step-by-step Instructions:` (numbered `k: action # reasoning`), `Questions:`
    (numbered) or `Perception Rerun Required`. OutputRejected otherwise."""
    text = _clean(raw)
    found = {kind: _find(text, marker) for kind, marker in
             ((PLAN, PLAN_HEADER), (QUESTIONS, QUESTIONS_HEADER), (PERCEPTION, RERUN))}
    present = [k for k, at in found.items() if at >= 0]
    if not present:
        raise OutputRejected(f"the answer has none of {PLAN_HEADER!r}, {QUESTIONS_HEADER!r}, {RERUN!r}")
    # the first marker decides; a later one mixes types only where it starts a line (a reasoning or a
    # question may mention another type's words)
    first = min(present, key=lambda k: found[k])
    present = [first] + [k for k in present if k != first and _starts_line(text, _MARKERS[k])]
    if len(present) > 1:
        raise OutputRejected(f"the answer mixes output types ({', '.join(present)}): give exactly one")
    kind = present[0]
    if kind == PERCEPTION:
        rest = (text[:found[kind]] + text[found[kind] + len(RERUN):]).strip().strip(_QUOTES + ".! \n")
        if rest:
            raise OutputRejected(f"{RERUN!r} must be the whole answer, got more: {rest[:80]!r}")
        return PlannerOutput(PERCEPTION)
    header = PLAN_HEADER if kind == PLAN else QUESTIONS_HEADER
    before = text[:found[kind]].strip()
    if before:
        raise OutputRejected(f"text before {header!r}: {before[:80]!r}")
    lines = text[found[kind] + len(header):].splitlines()
    if kind == QUESTIONS:
        questions = tuple(q for _, q in _numbered(lines, "Questions"))
        if any(not q.strip() for q in questions):
            raise OutputRejected("Questions: an empty question")
        return PlannerOutput(QUESTIONS, questions=questions)
    steps: list[PlanStep] = []
    for k, body in _numbered(lines, "Step-by-step Instructions"):
        action, _, reasoning = body.partition("#")
        try:
            steps.append(PlanStep(k, parse_action(action), reasoning.strip()))
        except OutputRejected as e:
            raise OutputRejected(f"step {k}: {e}") from None
    return PlannerOutput(PLAN, steps=tuple(steps))


def parse_analyzer_output(raw: str) -> AnalyzerVerdict:
    """`Feasible Plan!`, or numbered `k: violation # details` lines (a header `Step-by-step
    Instructions:` is allowed; steps written as 'no violations' are clean). OutputRejected otherwise."""
    text = _clean(raw)
    feasible = _find(text, FEASIBLE.rstrip("!")) >= 0
    at = _find(text, PLAN_HEADER)
    body = text[at + len(PLAN_HEADER):] if at >= 0 else text
    findings: list[tuple[int, str]] = []
    clean_steps = 0
    for line in body.splitlines():
        m = _NUMBERED.match(line)
        if m is None:
            continue
        violation = m.group(2).strip().strip(_QUOTES)
        if _NO_VIOLATION.match(violation.split("#", 1)[0].strip().strip(_QUOTES)):
            clean_steps += 1
        else:
            findings.append((int(m.group(1)), violation))
    if findings:
        return AnalyzerVerdict(False, tuple(findings))
    if feasible or clean_steps:
        return AnalyzerVerdict(True, ())
    raise OutputRejected(f"the answer is neither {FEASIBLE!r} nor numbered `k: violation` lines")
