"""The reader's code, checked against a whitelist and never executed (no rclpy, no eval/exec).

Statler's reader (and CaP) write Python (S Prompts 4, 10, 11: ../shared/papers/statler.txt
l.104-105, 426-473, 474-544). Here that text is parsed with `ast` and accepted only if every
statement is a call, as a statement of its own, of a whitelisted function with string literal
arguments of the right number:

    put_first_on_second("cyan block", "yellow block")   # pick and place
    say("There is no block in the red bowl")             # to the person
    update_wm("Put the cyan block on the yellow block")  # Statler: the writer updates the state
    noop()                                               # CaP: nothing to do

Comments are allowed anywhere; `# THINK: ...` comments are kept as the reader's thoughts.
Everything else is rejected with its line: imports, assignments, attribute calls (`os.system`),
`exec`/`eval`, unknown functions, keyword arguments, non-literal arguments (names, f-strings,
concatenation), and control flow (`for`, `if`, `while`, `def`, ...). Loops are rejected on purpose:
the paper's demonstrations are straight-line code, and running a loop would mean evaluating
arbitrary expressions; a reader that wants three moves writes three calls.
"""
from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Collection
from dataclasses import dataclass

PUT = "put_first_on_second"
SAY = "say"
UPDATE_WM = "update_wm"
NOOP = "noop"
ARITY = {PUT: 2, SAY: 1, UPDATE_WM: 1, NOOP: 0}
STATLER_FUNCTIONS = frozenset({PUT, SAY, UPDATE_WM, NOOP})
CAP_FUNCTIONS = frozenset({PUT, SAY, NOOP})  # S Prompt 10 l.434: put_first_on_second, say and noop
MAX_CODE_CHARS = 8000
_THINK = re.compile(r"^#\s*THINK:\s*(.*)$")
_FENCE = re.compile(r"^\s*```")


class CodeRejected(ValueError):
    """The code is not whitelisted straight-line calls (the reason names the line)."""


@dataclass(frozen=True)
class Call:
    """One whitelisted call: the function, its string arguments, its source line and line number."""

    function: str
    args: tuple[str, ...]
    source: str
    lineno: int


@dataclass(frozen=True)
class Program:
    """Accepted reader code: the calls in order, the `# THINK:` thoughts, the code as parsed."""

    calls: tuple[Call, ...]
    thoughts: tuple[str, ...]
    code: str


def clean_code(text: str) -> str:
    """The code part of an LLM answer: markdown fences and blank lines dropped, common indentation
    removed."""
    text = text.replace("\x00", "")  # NULs cannot go into a transcript
    lines = [line.rstrip() for line in text.splitlines() if not _FENCE.match(line) and line.strip()]
    return textwrap.dedent("\n".join(lines))


def _parse(code: str) -> tuple[ast.Module, str]:
    """Parse `code`; if its indentation is off (the paper's generated code has stray leading spaces
    on some lines, S l.611-612, 680-682), parse it with every line's indentation removed."""
    try:
        return ast.parse(code, mode="exec"), code
    except SyntaxError:
        flat = "\n".join(line.strip() for line in code.splitlines())
        try:
            return ast.parse(flat, mode="exec"), flat
        except SyntaxError:
            pass
        raise


def _describe(node: ast.stmt) -> str:
    return type(node).__name__.lower()


def parse_code(text: str, allowed: Collection[str] = STATLER_FUNCTIONS) -> Program:
    """Parse the reader's `text` against the whitelist `allowed`. Raises CodeRejected."""
    if len(text) > MAX_CODE_CHARS:
        raise CodeRejected(f"the code has {len(text)} characters, more than {MAX_CODE_CHARS}")
    code = clean_code(text)
    if not code:
        raise CodeRejected("no code: the answer is empty")
    try:
        tree, code = _parse(code)
    except SyntaxError as e:
        raise CodeRejected(f"line {e.lineno}: not valid Python ({e.msg})") from None
    except (RecursionError, MemoryError, ValueError) as e:
        raise CodeRejected(f"not valid Python ({type(e).__name__})") from None
    lines = code.splitlines()
    calls: list[Call] = []
    for node in tree.body:
        where = f"line {node.lineno} {lines[node.lineno - 1]!r}"
        if not isinstance(node, ast.Expr) or not isinstance(node.value, ast.Call):
            raise CodeRejected(f"{where}: only calls of {sorted(allowed)} are allowed, not a {_describe(node)} "
                               "statement")
        call = node.value
        if not isinstance(call.func, ast.Name):
            raise CodeRejected(f"{where}: only plain calls of {sorted(allowed)} are allowed "
                               "(no attribute or computed calls)")
        name = call.func.id
        if name not in allowed:
            raise CodeRejected(f"{where}: {name}() is not an allowed function (allowed: {sorted(allowed)})")
        if call.keywords:
            raise CodeRejected(f"{where}: {name}() takes no keyword arguments")
        if len(call.args) != ARITY[name]:
            raise CodeRejected(f"{where}: {name}() takes {ARITY[name]} argument(s), got {len(call.args)}")
        args: list[str] = []
        for arg in call.args:
            if not isinstance(arg, ast.Constant) or not isinstance(arg.value, str):
                raise CodeRejected(f"{where}: the arguments of {name}() must be string literals")
            args.append(" ".join(arg.value.replace("\x00", "").split()))
        if name == PUT and not all(args):
            raise CodeRejected(f"{where}: {name}() needs two non-empty names")
        calls.append(Call(name, tuple(args), lines[node.lineno - 1], node.lineno))
    if not calls:
        raise CodeRejected(f"no call: only comments (write {NOOP}() when nothing is to be done)"
                           if NOOP in allowed else "no call: only comments")
    thoughts = tuple(m.group(1).strip() for line in lines
                     if (m := _THINK.match(line.strip())) and m.group(1).strip())
    return Program(tuple(calls), thoughts, code)
