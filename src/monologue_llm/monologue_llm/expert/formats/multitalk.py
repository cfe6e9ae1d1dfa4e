"""MultiTalk's prompt format (../shared/papers/multitalk_supplement.txt App. C/D; config/prompts/multitalk_*.txt):
the Planner's answers (a plan, questions to the person, `Perception Rerun Required`) and the Analyzer's
verdicts, generated, and the Planner's plan lines when they are scored one at a time (`planner_decoding:
scored`). The prompt is read as a model would: the conversation's `User:` / `Planner:` / `Analyzer:` turns,
the instruction, the environment dict `{name: ((l, w, h), (cx, cy, cz))}` (m, base frame), the answers.

What to do comes from the truth: the task's tabletop goal (tasks.json, else Table 1's wording of the
instruction, else a person's answer in that wording) and the world's objects, through
monologue_domain.expert.tabletop_plans. Coordinates are the prompt's: an object's centre to grasp it, a
bowl's or a location's centre or an object's top to put something there.

The Planner, as its prompt says: asks when the instruction does not say which object (`the block` with
several blocks in view, or a task it cannot read) and nobody has answered yet; asks for a perception rerun
when the task needs an object the environment lacks (at most twice, then it asks the person); otherwise
writes the plan (grasp / move pairs, then `home()`), and after the Analyzer's comments on a plan it still
holds right, writes the same plan again (MultiTalk's deferral, M l.231-233). The Analyzer maps the plan's
coordinates to objects, runs it on the world's truth and reports the first step that grasps nothing, that
cannot run, or that takes the task elsewhere than its goal (or that the plan stops short); else
`Feasible Plan!`. Error-rate wrong answers: a block put in the wrong place, a plan one pair short, a bowl
grasped; the Analyzer's: `Feasible Plan!` for a wrong plan, a spurious finding for a right one.
"""
from __future__ import annotations

import ast
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from monologue_domain.expert.tabletop_plans import (
    Move,
    NoPlan,
    goal_of_instruction,
    goal_reached,
    plan_pick_places,
    state_after,
)
from monologue_domain.tabletop import COLORS, LOCATIONS

from ..format import Answer, ExpertError, NoPreference, Query

PLANNER_SYSTEM = "Your task is to split a high-level instruction into low-level step-by-step instructions"
ANALYZER_SYSTEM = "You are a fault finding agent"
PLAN_HEADER = "Step-by-step Instructions:"
QUESTIONS_HEADER = "Questions:"
RERUN = "Perception Rerun Required"
FEASIBLE = "Feasible Plan!"
HOME_LINE = "home() # the task is done"
MAX_RERUNS = 2  # perception reruns the Planner asks for before it asks the person instead
MATCH_TOLERANCE = 0.03  # m (x-y): a coordinate names the object (or location) this near, as the simulator's
FINDING_CHARS = 60  # longest Analyzer finding text (the Analyzer grammar's limit)
SPURIOUS = "1: check the coordinates of this step # unsure"  # the error rate's finding for a right plan

_TURN = re.compile(r"\n\n(User|Planner|Analyzer):\n")
_ACTION_LINE = re.compile(r"^\s*(\d+)\s*:\s*(move|grasp|home)\s*\((.*?)\)\s*\)?\s*(?:#\s*(.*))?$", re.IGNORECASE)
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)")
_NAMED = re.compile(r"\b(" + "|".join(COLORS) + r") (block|bowl)\b")
_GENERIC = re.compile(r"\bthe (block|bowl)\b", re.IGNORECASE)

Vec3 = tuple[float, float, float]


@dataclass
class _Box:
    name: str
    size: Vec3
    center: Vec3

    @property
    def category(self) -> str:
        if self.name in LOCATIONS:
            return "location"
        return self.name.rsplit(" ", 1)[-1]


@dataclass(frozen=True)
class _Conversation:
    role: str  # "Planner" | "Analyzer"
    turns: tuple[tuple[str, str], ...]  # (speaker, text), the open turn last with what is written of it

    def user_turns(self) -> list[str]:
        return [t for who, t in self.turns if who == "User"]

    def own_turns(self) -> list[str]:
        return [t for who, t in self.turns[:-1] if who == self.role]

    @property
    def written(self) -> str:
        """What the open turn has so far (a scored plan's first lines)."""
        return self.turns[-1][1]


def _conversation(prompt: str) -> _Conversation | None:
    parts = _TURN.split(prompt)
    if len(parts) < 3:
        return None
    turns = tuple((parts[i], parts[i + 1]) for i in range(1, len(parts) - 1, 2))
    role = turns[-1][0]
    if role not in ("Planner", "Analyzer") or turns[-2][0] != "User":
        return None
    return _Conversation(role, turns)


# ------------------------------------------------------------------------------------------ reading --
def _dict_after(text: str, marker: str) -> dict[str, _Box] | None:
    """The environment dict literal following the last `marker` in `text`."""
    at = text.rfind(marker)
    if at < 0:
        return None
    start = text.find("{", at)
    if start < 0:
        return None
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            try:
                raw = ast.literal_eval(text[start:i + 1])
            except (ValueError, SyntaxError):
                return None
            boxes: dict[str, _Box] = {}
            for name, value in dict(raw).items():
                (sx, sy, sz), (x, y, z) = value
                boxes[str(name)] = _Box(str(name), (float(sx), float(sy), float(sz)), (float(x), float(y), float(z)))
            return boxes
    return None


def _environment(conv: _Conversation) -> dict[str, _Box]:
    """The latest environment the conversation shows."""
    for text in reversed(conv.user_turns()):
        for marker in ("The new environment information is as follows:", "Enviornment:", "Observed environment:"):
            boxes = _dict_after(text, marker)
            if boxes is not None:
                return boxes
    raise ExpertError("expert[multitalk]: the prompt shows no environment dict")


def _instruction(conv: _Conversation) -> str:
    for text in conv.user_turns():
        for marker in ("High-level Instruction:", "High-level instruction given to the planner:"):
            m = re.search(re.escape(marker) + r"[ \t]*(.*)", text)
            if m is not None:
                return m.group(1).strip()
    raise ExpertError("expert[multitalk]: the prompt has no high-level instruction")


def _answers(conv: _Conversation) -> list[str]:
    """The person's answers so far (Human Feedback turns)."""
    out: list[str] = []
    for text in conv.user_turns():
        if text.startswith("The following are the answers to the questions"):
            lines = text.splitlines()[1:]
            for line in lines:
                m = re.match(r"^\s*\d+:\s*(.*)$", line)
                if m is None:
                    break
                out.append(m.group(1).strip())
    return out


def _fmt(v: float, digits: int = 3) -> str:
    s = f"{round(v, digits):.{digits}f}".rstrip("0")
    s = s + "0" if s.endswith(".") else s
    return "0.0" if s == "-0.0" else s


def _point(v: Vec3) -> str:
    return ", ".join(_fmt(c) for c in v)


def _target_point(t: _Box) -> Vec3:
    if t.category in ("location", "bowl"):
        return t.center
    return (t.center[0], t.center[1], t.center[2] + t.size[2] / 2)


def _place(boxes: dict[str, _Box], obj: str, target: str) -> None:
    """`obj` after a move onto `target` (in a bowl: on its bottom; on an object: on its top)."""
    held, t = boxes[obj], boxes[target]
    x, y, z = _target_point(t)
    boxes[obj] = _Box(obj, held.size, (x, y, z + held.size[2] / 2))


# ------------------------------------------------------------------------------------------ actions --
@dataclass(frozen=True)
class _Step:
    index: int
    verb: str
    coords: Vec3 | None


def _steps(text: str) -> list[_Step]:
    """The numbered action lines of a plan text (lines that are not actions are skipped)."""
    out: list[_Step] = []
    for line in text.splitlines():
        m = _ACTION_LINE.match(line.split(" Further, the planner")[0])
        if m is None:
            continue
        nums = [float(v) for v in _NUMBER.findall(m.group(3))]
        coords: Vec3 | None = None
        if len(nums) >= 2:
            coords = (nums[0], nums[1], nums[2] if len(nums) > 2 else 0.0)
        out.append(_Step(int(m.group(1)), m.group(2).lower(), coords))
    return out


def _resolve(boxes: Mapping[str, _Box], c: Vec3, grasp: bool, exclude: str = "") -> str | None:
    """The object (or location) the coordinates `c` name, as the simulator reads them: within an object's
    footprint or MATCH_TOLERANCE (x-y); a grasp prefers what is not a bowl and the top of a stack, a move
    a bowl (as the simulator: put it in), else the highest object there (it lands on it), then a location."""
    best: tuple[float, ...] | None = None
    name: str | None = None
    for b in boxes.values():
        if b.name == exclude:
            continue
        d = math.hypot(b.center[0] - c[0], b.center[1] - c[1])
        loc = b.category == "location"
        reach = MATCH_TOLERANCE if loc else max(MATCH_TOLERANCE, max(b.size[0], b.size[1]) / 2)
        if d > reach:
            continue
        if grasp:
            key: tuple[float, ...] = (float(b.category in ("bowl", "location")), round(d, 2), abs(b.center[2] - c[2]))
        else:
            key = (float(loc), round(d, 2), float(b.category != "bowl"), -b.center[2])
        if best is None or key < best:
            best, name = key, b.name
    return name


def _symbolic(steps: Sequence[_Step], boxes: dict[str, _Box]) -> tuple[list[Move], str | None, str]:
    """The plan's pick_place moves (boxes updated as they happen), what is still held, and the first
    problem ("k: ..." or "")."""
    moves: list[Move] = []
    held: str | None = None
    for s in steps:
        if s.verb == "home":
            if held is not None:
                return moves, held, f"{s.index}: home() while holding the {held}"
            continue
        if s.coords is None:
            return moves, held, f"{s.index}: {s.verb} needs coordinates"
        if s.verb == "grasp":
            if held is not None:
                return moves, held, f"{s.index}: the {held} is still held"
            hit = _resolve(boxes, s.coords, grasp=True)
            if hit is None or boxes[hit].category in ("bowl", "location"):
                return moves, held, f"{s.index}: no graspable object at these coordinates"
            held = hit
            continue
        if held is None:
            return moves, held, f"{s.index}: move before any grasp"
        hit = _resolve(boxes, s.coords, grasp=False, exclude=held)
        if hit is None:
            return moves, held, f"{s.index}: no object or location at these coordinates"
        moves.append((held, hit))
        _place(boxes, held, hit)
        held = None
    return moves, held, ""


def _landing(boxes: Mapping[str, _Box], obj: str, target: str) -> str:
    """What a move of `obj` to `target` aims at: a table location some block already stands at means
    the top of that pile (the simulator calls a move onto an occupied location a collision)."""
    if target not in LOCATIONS:
        return target
    x, y = LOCATIONS[target]
    here = [b for b in boxes.values() if b.category == "block" and b.name != obj
            and math.hypot(b.center[0] - x, b.center[1] - y) < MATCH_TOLERANCE + 0.01]
    return max(here, key=lambda b: b.center[2]).name if here else target


def _render(plan: Sequence[Move], boxes: Mapping[str, _Box]) -> list[str]:
    """The plan's grasp / move lines (without numbers), in the prompt's coordinates, then home()."""
    now = dict(boxes)
    lines: list[str] = []
    for obj, where in plan:
        target = _landing(now, obj, where)
        prep = "in" if now[target].category == "bowl" else "on"
        lines.append(f"grasp(({_point(now[obj].center)})) # grasp the {obj}")
        lines.append(f"move(({_point(_target_point(now[target]))})) # put the {obj} {prep} the {target}")
        _place(now, obj, target)
    lines.append(HOME_LINE)
    return lines


def _numbered(lines: Sequence[str], header: str) -> str:
    return header + "\n" + "\n".join(f"{k}: {line}" for k, line in enumerate(lines, 1))


# ------------------------------------------------------------------------------------------- truth --
def _goal(query: Query, instruction: str, answers: Sequence[str]) -> Mapping[str, Any] | None:
    task = query.truth.task(instruction)
    if task is not None:
        goal = task.get("goal")
        return dict(goal) if isinstance(goal, Mapping) else None
    for text in [instruction, *reversed(answers)]:
        goal = goal_of_instruction(text)
        if goal is not None:
            return goal
    return None


def _truth_plan(query: Query, goal: Mapping[str, Any], done: Sequence[Move]) -> list[Move]:
    """The expert's remaining moves after `done` (moves already written) from the world's truth."""
    try:
        return plan_pick_places(query.truth.world().objects, goal, done)
    except NoPlan as e:
        raise ExpertError(f"expert[multitalk]: no plan for {dict(goal)!r}: {e}") from None


def _needed(instruction: str, plan: Sequence[Move]) -> list[str]:
    """Objects the task needs: those the instruction names and those the plan moves or uses."""
    named = [f"{c} {k}" for c, k in _NAMED.findall(instruction.lower())]
    used = [n for move in plan for n in move if n not in LOCATIONS]
    return list(dict.fromkeys(named + used))


# ----------------------------------------------------------------------------------------- planner --
def _planner_generate(query: Query, conv: _Conversation) -> Answer:
    boxes = _environment(conv)
    instruction = _instruction(conv)
    answers = _answers(conv)
    reruns = sum(t.strip().strip('"') == RERUN for t in conv.own_turns())
    asked = any(t.strip().startswith(QUESTIONS_HEADER) for t in conv.own_turns())
    goal = _goal(query, instruction, answers)
    named = _needed(instruction, [])
    missing = [n for n in named if n not in boxes]
    if missing:
        return _missing(missing, reruns)
    generic = [k for k in _GENERIC.findall(instruction) if sum(b.category == k.lower() for b in boxes.values()) > 1]
    if (generic or goal is None) and not asked:
        q = f"Which {generic[0].lower()} do you mean?" if generic else "What exactly should be done?"
        return Answer(_numbered([q], QUESTIONS_HEADER), note="ambiguous instruction: ask the person")
    if goal is None:
        raise ExpertError(f"expert[multitalk]: no goal known for {instruction!r} (answers {answers!r})")
    plan = _truth_plan(query, goal, ())
    missing = [n for n in _needed("", plan) if n not in boxes]
    if missing:
        return _missing(missing, reruns)
    if not plan:
        raise ExpertError(f"expert[multitalk]: the goal of {instruction!r} already holds; MultiTalk has no empty plan")
    lines = _render(plan, boxes)
    return Answer(_numbered(lines, PLAN_HEADER), wrong=_wrong_plans(plan, boxes), note=f"plan {plan}")


def _missing(missing: Sequence[str], reruns: int) -> Answer:
    if reruns < MAX_RERUNS:
        return Answer(RERUN, note=f"{missing} not in the environment: perception rerun")
    q = f"I cannot find the {missing[0]}. Where is it?"  # the task cannot be executed: the person may alter it
    return Answer(_numbered([q], QUESTIONS_HEADER), note=f"{missing} still missing after {reruns} reruns: ask")


def _wrong_plans(plan: Sequence[Move], boxes: Mapping[str, _Box]) -> tuple[str, ...]:
    """Well-formed wrong plans: a move to another target, a pair short, a bowl grasped."""
    out: list[str] = []
    obj, target = plan[0]
    others = [b.name for b in boxes.values() if b.name not in (obj, target) and b.category in ("bowl", "location")
              and not any(b.name == t for _, t in plan)]
    if others:
        out.append(_numbered(_render([(obj, others[0]), *plan[1:]], boxes), PLAN_HEADER))
    if len(plan) > 1:
        out.append(_numbered(_render(plan[:-1], boxes), PLAN_HEADER))
    bowls = [b for b in boxes.values() if b.category == "bowl"]
    if bowls:
        lines = _render(plan, boxes)
        lines[0] = f"grasp(({_point(bowls[0].center)})) # grasp the {obj}"
        out.append(_numbered(lines, PLAN_HEADER))
    return tuple(out)


def _planner_score(query: Query, conv: _Conversation) -> Answer:
    written = conv.written
    if not written.startswith(PLAN_HEADER):
        raise ExpertError("expert[multitalk]: a scored Planner query must continue a plan")
    boxes = _environment(conv)
    instruction = _instruction(conv)
    goal = _goal(query, instruction, _answers(conv))
    if goal is None:  # e.g. the calibration prompt (the task replaced by "N/A"): no preference
        raise NoPreference(f"expert[multitalk]: no goal for {instruction!r}")
    steps = _steps(written[len(PLAN_HEADER):])
    now = dict(boxes)
    done, held, problem = _symbolic(steps, now)
    if problem:
        raise ExpertError(f"expert[multitalk]: the plan so far is not readable ({problem})")
    k = len(steps) + 1
    if held is not None:
        rest = _truth_plan(query, goal, done)
        target = next((t for o, t in rest if o == held), None)
        want: tuple[str, str | None] = ("move", _landing(now, held, target) if target is not None else None)
    else:
        rest = _truth_plan(query, goal, done)
        want = ("grasp", rest[0][0]) if rest else ("home", None)
    for cand in query.candidates:
        if cand.rstrip().endswith("#"):  # the line up to its reasoning (scored.py's normaliser)
            continue
        cs = _steps(cand)
        if len(cs) != 1 or cs[0].index != k or cs[0].verb != want[0]:
            continue
        if want[0] == "home":
            return Answer(cand, note="scored: home, the plan is complete")
        c = cs[0].coords
        if c is None:
            continue
        hit = _resolve(now, c, grasp=want[0] == "grasp", exclude=held or "")
        if hit == want[1]:
            return Answer(cand, note=f"scored step {k}: {want}")
    raise ExpertError(f"expert[multitalk]: no candidate line does {want} at step {k}")


# ---------------------------------------------------------------------------------------- analyzer --
def _analyzer(query: Query, conv: _Conversation) -> Answer:
    boxes = _environment(conv)
    instruction = _instruction(conv)
    last = conv.user_turns()[-1]
    at = last.find(PLAN_HEADER)
    if at < 0:
        raise ExpertError("expert[multitalk]: the Analyzer's query has no plan")
    plan_text = last[at + len(PLAN_HEADER):].split("Further, the planner", 1)[0]
    steps = _steps(plan_text)
    qa = last.split("questions and the user's responses are as follows:", 1)[-1]
    answers = [m.group(1).strip() for m in re.finditer(r"^\s*\d+:\s*(.*)$", qa, re.MULTILINE)][1::2]
    goal = _goal(query, instruction, answers)
    finding = _judge(query, steps, dict(boxes), goal)
    if not finding:
        return Answer(FEASIBLE, wrong=(SPURIOUS,), note="the plan reaches the goal")
    return Answer(finding, wrong=(FEASIBLE,), note=finding)


def _short(text: str) -> str:
    k, _, rest = text.partition(": ")
    return f"{k}: {rest[:FINDING_CHARS].rstrip()}"


def _judge(query: Query, steps: Sequence[_Step], boxes: dict[str, _Box], goal: Mapping[str, Any] | None) -> str:
    """The first violation of the plan as `k: violation # details` ("" when it is right)."""
    if not steps:
        return "1: the plan has no steps"
    env = dict(boxes)
    moves, held, problem = _symbolic(steps, boxes)
    if problem:
        return _short(problem)
    last = steps[-1].index
    if held is not None:
        return _short(f"{last}: the {held} is never put down")
    if goal is None:
        return ""  # nothing to judge the plan's aim by (the person's intent is unknown)
    truth = query.truth.world().objects
    names = {o.name for o in truth}
    move_steps = [s.index for s in steps if s.verb == "move"]
    for (obj, target), k in zip(moves, move_steps, strict=True):
        if obj not in names or (target not in names and target not in LOCATIONS):
            return _short(f"{k}: there is no {obj if obj not in names else target} # not in the scene")
    if goal_reached(state_after(truth, moves), goal):
        return ""
    want = dict(_truth_plan(query, goal, ()))
    for (obj, target), k in zip(moves, move_steps, strict=True):
        if obj in want and want[obj] != target and env.get(want[obj]) is not None:
            prep = "in" if env[want[obj]].category == "bowl" else "on"
            return _short(f"{k}: the {obj} must go {prep} the {want[obj]} # task")
        if obj not in want:
            return _short(f"{k}: the {obj} need not be moved # task")
    rest = _truth_plan(query, goal, moves)
    if rest:
        return _short(f"{last}: the task is not done: move the {rest[0][0]} # incomplete")
    return ""


# ---------------------------------------------------------------------------------------- responder --
class MultitalkResponder:
    """MultiTalk's Planner and Analyzer (see the module docstring)."""

    name = "multitalk"
    priority = 60

    def claims(self, query: Query) -> bool:
        head = query.prompt[:1000]
        if PLANNER_SYSTEM not in head and ANALYZER_SYSTEM not in head:
            return False
        return _conversation(query.prompt) is not None

    def answer(self, query: Query) -> Answer:
        conv = _conversation(query.prompt)
        if conv is None:
            raise ExpertError("expert[multitalk]: not a MultiTalk conversation")
        if conv.role == "Analyzer":
            if query.kind == "score":
                raise ExpertError("expert[multitalk]: the Analyzer's verdict is generated, not scored")
            return _analyzer(query, conv)
        if query.kind == "score":
            return _planner_score(query, conv)
        return _planner_generate(query, conv)


RESPONDER = MultitalkResponder()
