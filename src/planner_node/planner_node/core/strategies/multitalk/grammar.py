"""GBNF grammars of MultiTalk's answers (no rclpy), built from the parser's own constants
(parsing.py), so every string a grammar admits parses (test_multitalk_grammar.py).

Planner: exactly one of `Step-by-step Instructions:` with lines `k: action # reasoning` numbered 1, 2, ...
(actions move((x, y, z)) / grasp((x, y, z)) / home(), coordinates in m: either any numbers or, with
`points`, only the perceived centres as the prompt renders them, grasp's only those of objects),
`Questions:` with numbered lines ending in `?`, or `Perception Rerun Required`. Analyzer: `Feasible Plan!` or numbered
`k: violation # details` lines (optionally under the `Step-by-step Instructions:` header).
"""
from __future__ import annotations

from collections.abc import Sequence

from monologue_llm.gbnf import Chars, Named, Node, Rep, alt, lit_choice, opt, render, seq

from .parsing import FEASIBLE, PLAN_HEADER, QUESTIONS_HEADER, RERUN, VERBS

MAX_STEPS = 8  # plan lines the Planner grammar admits (2 blocks: 5)
MAX_QUESTIONS = 3  # question lines
MAX_FINDINGS = 10  # Analyzer lines
REASON_CHARS = 60  # longest reasoning / question / finding text (characters)
_NOT_NL = Chars("\n", negated=True)
_NOT_NL_SPACE = Chars("\n ", negated=True)


def _numbered(first: str, body: Node, count: int) -> Node:
    """`1: <body>` then optionally `\\n2: <body>` ... up to `count` lines, numbered in order."""
    tail: Node | None = None
    for k in range(count, 1, -1):
        line = seq(f"\n{k}: ", body) if tail is None else seq(f"\n{k}: ", body, tail)
        tail = opt(line)
    return seq(first, "1: ", body) if tail is None else seq(first, "1: ", body, tail)


def _number() -> Node:
    digits = Chars("0123456789")
    return seq(opt("-"), digits, opt(seq(".", Rep(digits, 1, 3))))


def _pairs(k: int, grasp_step: Node, move_step: Node, home_step: Node) -> Node:
    """Lines k, k+1: a grasp and a move; then the end, `home()` as the last line, or the next pair."""
    more: list[Node] = []
    if k + 2 <= MAX_STEPS:
        more.append(seq(f"\n{k + 2}: ", home_step))
    if k + 3 <= MAX_STEPS:
        more.append(_pairs(k + 2, grasp_step, move_step, home_step))
    pair = seq(f"\n{k}: " if k > 1 else "1: ", grasp_step, f"\n{k + 1}: ", move_step)
    return seq(pair, opt(alt(*more))) if more else pair


def planner_node(points: Sequence[str] = (), grasp_points: Sequence[str] = (), pairs: bool = False) -> Node:
    """The Planner grammar; `points` (e.g. "0.25, 0.1, 0.0") restricts move's coordinates to those
    triples and `grasp_points` grasp's (default: `points`); none: any numbers. `pairs`: a plan is
    grasp / move pairs, optionally ending with home() (the prompt's action rules: an object is grasped
    before it is moved, nothing follows home())."""
    move, grasp, home = VERBS
    if points:
        coords: Node = Named("point", seq("(", lit_choice(points), ")"))
        grasp_coords: Node = Named("object-point", seq("(", lit_choice(grasp_points), ")")) if grasp_points \
            else coords
    else:
        sep = seq(",", opt(" "))
        num = _number()
        coords = grasp_coords = Named("point", seq("(", num, sep, num, sep, num, ")"))
    action = alt(seq(f"{move}(", coords, ")"), seq(f"{grasp}(", grasp_coords, ")"), f"{home}()")
    reason = seq(_NOT_NL_SPACE, Rep(_NOT_NL, 0, REASON_CHARS - 1))
    step = Named("step", seq(action, opt(seq(" # ", reason))))
    why = opt(seq(" # ", reason))
    grasp_step = Named("grasp-step", seq(f"{grasp}(", grasp_coords, ")", why))
    move_step = Named("move-step", seq(f"{move}(", coords, ")", why))
    home_step = Named("home-step", seq(f"{home}()", why))
    question = Named("question", seq(Chars("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"),
                   Rep(Chars("\n?", negated=True), 0, REASON_CHARS - 2), "?"))
    plan = seq(PLAN_HEADER + "\n", _pairs(1, grasp_step, move_step, home_step)) if pairs \
        else _numbered(PLAN_HEADER + "\n", step, MAX_STEPS)
    questions = _numbered(QUESTIONS_HEADER + "\n", question, MAX_QUESTIONS)
    return alt(plan, questions, RERUN)


def analyzer_node() -> Node:
    finding = Named("finding", seq(Chars("123456789"), opt(Chars("0123456789")), ": ", _NOT_NL_SPACE,
                                   Rep(_NOT_NL, 0, REASON_CHARS - 1)))
    findings = seq(opt(seq(PLAN_HEADER, "\n")), finding, Rep(seq("\n", finding), 0, MAX_FINDINGS - 1))
    return alt(FEASIBLE, findings)


def planner_grammar(points: Sequence[str] = (), grasp_points: Sequence[str] = (), pairs: bool = False) -> str:
    """GBNF text of the Planner grammar."""
    return render(planner_node(points, grasp_points, pairs))


def analyzer_grammar() -> str:
    """GBNF text of the Analyzer grammar."""
    return render(analyzer_node())
