"""Kitchen benchmark suites: SayCan's 101 instructions (SC Appendix Table 5, `config/benchmarks/saycan_101.yaml`)
and IM's kitchen instructions (IM Table 6, `config/benchmarks/im_kitchen.yaml`) with their start states,
goal predicates and acceptable plans, validated at load; plan and execution success of an episode (no rclpy).

Suite file (YAML):

    suite: saycan                       # the name `monologue-bench --suite` uses
    title: ...
    families: [{key: nl_single, label: NL Single, count: 15}, ...]   # table order, exact counts checked
    layout: {7up: table, apple: close counter, ...}                  # default object locations
    instructions:
      - family: nl_single
        text: How would you pick up the coke can                     # verbatim from the paper
        start: {robot: table, holding: coke, place: {coke#2: far counter}, absent: [..], open: [top drawer]}
        goal: holding(coke)                                          # goals.py predicate language
        vars: {X: "@sodas"}                                          # optional: plan variables
        plans:                                                       # acceptable plans ("done" is implied)
          - [{fetch: "{X}"}, bring it to you]
        note: why the goal / plans are what they are

Plan elements: a skill's words ("{X}" is replaced by each binding of the variables; different variables
take different objects); `{opt: [..]}` optional steps; `{any: [[..], [..]]}` one of several sequences;
`{unordered: [[..], [..]]}` every sequence once, in any order, each contiguous; and macros expanded on the
start state: `{reach: X}` = optionally "find a X" or "go to the L" for a start place L of an X;
`{fetch: X}` = reach + "pick up the X"; `{deliver: X}` = fetch + "bring it to you" + optional
"put down the X"; `{move: [X, L]}` = fetch + "go to the L" (L = user: "bring it to you") + "put down
the X"; `{place: [X, L]}` = optional "go to the L" + "put down the X" (for an object already held).

Plan success (SC: "whether the skills selected by the model are correct for the instruction, regardless
of whether or not they actually successfully executed") = the skill sequence matches an acceptable plan
AND executing it with the reference semantics (goals.apply) from the start state satisfies the goal, so an
optional navigation step may only be skipped where the robot already is. Execution success = the goal
predicate holds on the episode's final world state.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .goals import Call, PredicateError, SkillError, evaluate, make_state, parse, run
from .state import KitchenState
from .vocabulary import (
    BRING,
    CATEGORIES,
    CONTAINERS,
    DONE,
    DRAWERS,
    FIND,
    GO_TO,
    LOCATIONS,
    NAV_TARGETS,
    PICK,
    PLACES,
    PUT,
    START,
    USER,
    is_object,
    object_type,
    parse_skill,
    skill_text,
)

SUITE_FILES: dict[str, str] = {"saycan": "saycan_101.yaml", "im_kitchen": "im_kitchen.yaml"}


class SuiteError(ValueError):
    """A bad suite file; the message names the file and the instruction."""


# ----- plan patterns -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Skill:
    text: str  # normalised skill words


@dataclass(frozen=True)
class Seq:
    items: tuple[Elem, ...]


@dataclass(frozen=True)
class Opt:
    item: Elem


@dataclass(frozen=True)
class Alt:
    options: tuple[Elem, ...]


@dataclass(frozen=True)
class Unordered:
    groups: tuple[Elem, ...]


Elem = Skill | Seq | Opt | Alt | Unordered


def normalize(skill: str) -> str:
    """The canonical words of a skill ("Find an Apple." -> "find an apple"); ValueError if unknown."""
    template, arg = parse_skill(skill)
    return skill_text(template, arg)


def _ends(e: Elem, seq: Sequence[str], i: int) -> set[int]:
    """Positions where a match of `e` starting at i can end."""
    if isinstance(e, Skill):
        return {i + 1} if i < len(seq) and seq[i] == e.text else set()
    if isinstance(e, Seq):
        pos = {i}
        for item in e.items:
            pos = {j for p in pos for j in _ends(item, seq, p)}
            if not pos:
                break
        return pos
    if isinstance(e, Opt):
        return {i} | _ends(e.item, seq, i)
    if isinstance(e, Alt):
        return {j for o in e.options for j in _ends(o, seq, i)}
    return _ends_unordered(e.groups, seq, i)


def _ends_unordered(groups: tuple[Elem, ...], seq: Sequence[str], i: int) -> set[int]:
    if not groups:
        return {i}
    out: set[int] = set()
    for k, g in enumerate(groups):
        rest = groups[:k] + groups[k + 1:]
        for j in _ends(g, seq, i):
            out |= _ends_unordered(rest, seq, j)
    return out


def matches(pattern: Elem, skills: Sequence[str]) -> bool:
    return len(skills) in _ends(pattern, skills, 0)


def canonical(e: Elem) -> list[str]:
    """One sequence of the pattern: every optional step taken, first alternatives, groups in order."""
    if isinstance(e, Skill):
        return [e.text]
    if isinstance(e, Seq):
        return [s for item in e.items for s in canonical(item)]
    if isinstance(e, Opt):
        return canonical(e.item)
    if isinstance(e, Alt):
        return canonical(e.options[0])
    return [s for g in e.groups for s in canonical(g)]


# ----- suite data ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Family:
    key: str
    label: str  # row label of the paper's table
    count: int  # number of instructions (checked at load)


@dataclass(frozen=True)
class Instruction:
    key: str  # "<family>_<nn>", 1-based within the family, in file order
    family: str
    text: str  # verbatim from the paper
    start: KitchenState
    goal: Call
    plans: tuple[Elem, ...]  # acceptable plans, each ending with "done"
    note: str = ""

    @property
    def pattern(self) -> Alt:
        return Alt(self.plans)


@dataclass(frozen=True)
class Suite:
    name: str
    title: str
    families: tuple[Family, ...]
    instructions: tuple[Instruction, ...]

    def family(self, key: str) -> Family:
        return next(f for f in self.families if f.key == key)

    def by_key(self) -> dict[str, Instruction]:
        return {i.key: i for i in self.instructions}

    def of_family(self, key: str) -> list[Instruction]:
        return [i for i in self.instructions if i.family == key]


def suite_path(config_dir: Path, name: str) -> Path:
    """config_dir/benchmarks/<file of suite `name`>; KeyError naming the suites if unknown."""
    if name not in SUITE_FILES:
        raise KeyError(f"unknown kitchen suite {name!r}; known: {sorted(SUITE_FILES)}")
    return Path(config_dir) / "benchmarks" / SUITE_FILES[name]


def load_suite(path: Path) -> Suite:
    """The suite in `path`, validated (SuiteError naming the instruction on a bad entry)."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise SuiteError(f"{path}: not valid YAML: {e}") from None
    return parse_suite(data, str(path))


def _objects(values: Iterable[Any], what: str) -> list[str]:
    out = []
    for v in values:
        name = str(v)
        if not is_object(name):
            raise ValueError(f"{what}: unknown object {name!r}")
        out.append(name)
    return out


def _location(value: Any, what: str) -> str:
    loc = str(value)
    if loc not in LOCATIONS:
        raise ValueError(f"{what}: unknown location {loc!r}; known: {list(LOCATIONS)}")
    return loc


def _start(spec: Any, layout: Mapping[str, str]) -> KitchenState:
    spec = {} if spec is None else spec
    if not isinstance(spec, dict):
        raise ValueError("start must be a mapping")
    unknown = set(spec) - {"robot", "holding", "place", "absent", "open"}
    if unknown:
        raise ValueError(f"start: unknown key(s) {sorted(unknown)}")
    places = dict(layout)
    for obj, loc in (spec.get("place") or {}).items():
        places[_objects([obj], "start.place")[0]] = _location(loc, f"start.place[{obj}]")
    for obj in _objects(spec.get("absent") or [], "start.absent"):
        if obj not in places:
            raise ValueError(f"start.absent: {obj!r} is not in the layout")
        del places[obj]
    holding = spec.get("holding")
    if holding is not None:
        holding = _objects([holding], "start.holding")[0]
        places.pop(holding, None)
    robot = str(spec.get("robot", START))
    if robot not in PLACES:
        raise ValueError(f"start.robot: unknown place {robot!r}; known: {list(PLACES)}")
    opened = [str(c) for c in spec.get("open") or []]
    for c in opened:
        if c not in CONTAINERS:
            raise ValueError(f"start.open: {c!r} is not a container {list(CONTAINERS)}")
    return make_state(robot, places, holding, opened)


def _bindings(spec: Any) -> list[dict[str, str]]:
    if not spec:
        return [{}]
    if not isinstance(spec, dict):
        raise ValueError("vars must be a mapping of name -> object list or @category")
    names, domains = [], []
    for name, values in spec.items():
        if isinstance(values, str):
            if not values.startswith("@") or values[1:] not in CATEGORIES:
                raise ValueError(f"vars.{name}: {values!r} is not a list or a known @category {sorted(CATEGORIES)}")
            values = list(CATEGORIES[values[1:]])
        names.append(str(name))
        domains.append(_objects(values, f"vars.{name}"))
    return [dict(zip(names, combo)) for combo in itertools.product(*domains) if len(set(combo)) == len(combo)]


def _subst(text: str, binding: Mapping[str, str]) -> str:
    for k, v in binding.items():
        text = text.replace("{" + k + "}", v)
    if "{" in text or "}" in text:
        raise ValueError(f"unbound variable in {text!r}")
    return text


class _Builder:
    """Turns the YAML plan elements into patterns, expanding macros on the start state."""

    def __init__(self, start: KitchenState, binding: Mapping[str, str]) -> None:
        self.start = start
        self.binding = binding

    def seq(self, items: Any) -> Seq:
        if not isinstance(items, list):
            raise ValueError(f"a plan must be a list of steps, got {items!r}")
        return Seq(tuple(self.elem(x) for x in items))

    def skill(self, text: str) -> Skill:
        return Skill(normalize(_subst(text, self.binding)))

    def obj(self, value: Any) -> str:
        return _objects([_subst(str(value), self.binding)], "plan")[0]

    def reach(self, obj: str) -> Elem:
        places = {DRAWERS if loc in CONTAINERS else loc for o, loc in self.start.object_locations.items()
                  if object_type(o) == object_type(obj)}
        locs = sorted(places & set(NAV_TARGETS) - {"trash"})
        options: list[Elem] = [Skill(skill_text(FIND, object_type(obj)))]
        options += [Skill(skill_text(GO_TO, loc)) for loc in locs]
        return Opt(Alt(tuple(options)))

    def fetch(self, obj: str) -> Elem:
        return Seq((self.reach(obj), Skill(skill_text(PICK, object_type(obj)))))

    def elem(self, x: Any) -> Elem:
        if isinstance(x, str):
            return self.skill(x)
        if not isinstance(x, dict) or len(x) != 1:
            raise ValueError(f"a plan step is a skill or a one-key mapping, got {x!r}")
        (op, arg), = x.items()
        if op == "opt":
            return Opt(self.seq(arg))
        if op in ("any", "unordered"):
            if not isinstance(arg, list) or not arg:
                raise ValueError(f"{op}: expected a list of sequences")
            parts = tuple(self.seq(a) for a in arg)
            return Alt(parts) if op == "any" else Unordered(parts)
        if op == "reach":
            return self.reach(self.obj(arg))
        if op == "fetch":
            return self.fetch(self.obj(arg))
        if op == "deliver":
            o = object_type(self.obj(arg))
            return Seq((self.fetch(o), Skill(BRING), Opt(Skill(skill_text(PUT, o)))))
        if op in ("move", "place"):
            if not isinstance(arg, list) or len(arg) != 2:
                raise ValueError(f"{op}: expected [object, location]")
            o = object_type(self.obj(arg[0]))
            loc = _location(_subst(str(arg[1]), self.binding), op)
            if loc not in (*NAV_TARGETS, USER):
                raise ValueError(f"{op}: the robot cannot go to the {loc}")
            go: Elem = Skill(BRING) if loc == USER else Skill(skill_text(GO_TO, loc))
            put = Skill(skill_text(PUT, o))
            if op == "move":
                return Seq((self.fetch(o), go, put))
            return Seq((Opt(go), put))
        raise ValueError(f"unknown plan element {op!r}")


def _instruction(entry: Any, key: str, layout: Mapping[str, str]) -> Instruction:
    if not isinstance(entry, dict):
        raise ValueError("an instruction must be a mapping")
    unknown = set(entry) - {"family", "text", "start", "goal", "vars", "plans", "note"}
    if unknown:
        raise ValueError(f"unknown key(s) {sorted(unknown)}")
    start = _start(entry.get("start"), layout)
    try:
        goal = parse(str(entry["goal"]))
    except KeyError:
        raise ValueError("missing goal") from None
    except PredicateError as e:
        raise ValueError(f"goal: {e}") from None
    plans_spec = entry.get("plans")
    if not isinstance(plans_spec, list) or not plans_spec:
        raise ValueError("plans must be a non-empty list of plans")
    plans: list[Elem] = []
    for binding in _bindings(entry.get("vars")):
        b = _Builder(start, binding)
        plans += [Seq((b.seq(p), Skill(DONE))) for p in plans_spec]
    if not plans:
        raise ValueError("vars admit no binding (different variables need different objects)")
    if evaluate(goal, start):
        raise ValueError(f"the goal {goal} already holds in the start state")
    return Instruction(key, str(entry["family"]), str(entry.get("text", "")), start, goal, tuple(plans),
                       str(entry.get("note", "")))


def parse_suite(data: Any, source: str = "<suite>") -> Suite:
    """A suite from its YAML data; SuiteError naming `source` and the instruction on a bad entry."""
    if not isinstance(data, dict):
        raise SuiteError(f"{source}: expected a mapping at the top")
    for k in ("suite", "families", "layout", "instructions"):
        if k not in data:
            raise SuiteError(f"{source}: missing {k!r}")
    try:
        families = tuple(Family(str(f["key"]), str(f["label"]), int(f["count"])) for f in data["families"])
        layout = {o: _location(loc, f"layout[{o}]") for o, loc in data["layout"].items()}
        _objects(layout, "layout")
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise SuiteError(f"{source}: bad families/layout: {e}") from None
    keys = {f.key for f in families}
    counters: dict[str, int] = {}
    out: list[Instruction] = []
    for n, entry in enumerate(data["instructions"] or [], start=1):
        fam = str(entry.get("family")) if isinstance(entry, dict) else "?"
        text = entry.get("text", "") if isinstance(entry, dict) else ""
        where = f"{source}: instruction #{n} {text!r} (family {fam})"
        if fam not in keys:
            raise SuiteError(f"{where}: unknown family; known: {sorted(keys)}")
        counters[fam] = counters.get(fam, 0) + 1
        key = f"{fam}_{counters[fam]:02d}"
        try:
            out.append(_instruction(entry, key, layout))
        except ValueError as e:
            raise SuiteError(f"{where}: {e}") from None
    for f in families:
        if counters.get(f.key, 0) != f.count:
            raise SuiteError(f"{source}: family {f.key!r} has {counters.get(f.key, 0)} instructions, "
                             f"expected {f.count}")
    return Suite(str(data["suite"]), str(data.get("title", "")), families, tuple(out))


# ----- scoring -------------------------------------------------------------------------------------
def _collapse(skills: Sequence[str]) -> list[str]:
    return [s for k, s in enumerate(skills) if k == 0 or s != skills[k - 1]]


def judge_plan(instr: Instruction, skills: Sequence[str], collapse_repeats: bool = False) -> str:
    """Why the skill sequence is not an acceptable plan for `instr` ("" if it is). `skills` are the
    skills the planner chose, in order, ending with "done" if it terminated. collapse_repeats merges
    immediate repetitions (IM retries a failed step)."""
    try:
        seq = [normalize(s) for s in skills]
    except ValueError as e:
        return str(e)
    if collapse_repeats:
        seq = _collapse(seq)
    if not seq or seq[-1] != DONE:
        return "the plan does not end with done"
    if not matches(instr.pattern, seq):
        return "not one of the acceptable plans"
    try:
        states = run(seq, instr.start)
    except SkillError as e:
        return f"not executable: {e}"
    if not evaluate(instr.goal, states[-1], states[:-1]):
        return f"executed ideally it does not reach the goal {instr.goal}"
    return ""


def plan_success(instr: Instruction, skills: Sequence[str], collapse_repeats: bool = False) -> bool:
    return judge_plan(instr, skills, collapse_repeats) == ""


def execution_success(instr: Instruction, final: KitchenState, history: Sequence[KitchenState] = ()) -> bool:
    """Whether the goal holds on the episode's final world state (history: earlier states, for visited)."""
    return evaluate(instr.goal, final, history)


def example_plans(instr: Instruction) -> list[list[str]]:
    """One sequence per acceptable plan and variable binding (canonical(): all optional steps taken)."""
    return [canonical(p) for p in instr.plans]


def start_placements(instr: Instruction) -> list[str]:
    """The start state's objects as "object@where" strings (where: a location, a drawer, or "robot" when
    held), the format of the sim_kitchen world's `kitchen.objects` parameter (kitchen.world.parse_placements)."""
    return [f"{o}@{w}" for o, w in instr.start.object_locations.items()]


def verify(instr: Instruction) -> list[str]:
    """Problems of the entry's data: example plans that are not plan successes (empty when sound)."""
    return [f"{instr.key} {' / '.join(p)}: {why}" for p in example_plans(instr)
            if (why := judge_plan(instr, p))]


__all__ = ["Alt", "Elem", "Family", "Instruction", "Opt", "SUITE_FILES", "Seq", "Skill", "Suite", "SuiteError",
           "Unordered", "canonical", "example_plans", "execution_success", "judge_plan", "load_suite", "matches",
           "normalize", "parse_suite", "plan_success", "start_placements", "suite_path", "verify"]
