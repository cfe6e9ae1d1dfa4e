"""GBNF grammar of the Statler reader's (and CaP's) code (no rclpy), built from core.statler_code's
whitelist, so every string it admits parses with `parse_code` (test_statler_grammar.py).

A program is up to MAX_LINES lines, at least one of them a call: `put_first_on_second("a", "b")` (a one
of the scene's objects, b an object, a location or "table"; any name if the scene gave none),
`say("...")`, `update_wm("...")`, `noop()` (only the functions the variant allows) and `# THINK: ...`
comments. Free text excludes quotes, backslashes, `#` and `=`, so no stop string of the reader
(`# query:`, `===`, `# state =`) can occur inside a line; the program may end with `\\n# query:` (the
demonstrations' next query: the stop string ends the generation there).
"""
from __future__ import annotations

from collections.abc import Collection, Sequence

from monologue_llm.gbnf import Chars, Lit, Named, Node, Rep, alt, lit_choice, opt, render, seq

from .statler_code import NOOP, PUT, SAY, UPDATE_WM

MAX_LINES = 8  # lines of code and THINK comments
TEXT_CHARS = 120  # longest say / update_wm / THINK text (characters)
NAME_CHARS = 40  # longest free object name
END = "\n# query:"  # where the demonstrations continue (a stop string of the reader)
_FORBIDDEN = "\"\\\n#="  # never inside a line's free text
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def reader_node(allowed: Collection[str], objects: Sequence[str] = (), targets: Sequence[str] = ()) -> Node:
    """The reader grammar for the functions `allowed`; `objects` / `targets` restrict
    put_first_on_second's first / second argument (empty: any name)."""
    text_char = Chars(_FORBIDDEN, negated=True)
    start = Chars(_ALNUM)  # a name or text starts with a letter or digit (never blank)
    text = Named("text", seq(start, Rep(text_char, 0, TEXT_CHARS - 1)))
    free = Named("name", seq(start, Rep(text_char, 0, NAME_CHARS - 1)))
    first = Named("object", lit_choice(objects)) if objects else free
    second = Named("target", lit_choice(targets)) if targets else free
    calls: list[Node] = []
    if PUT in allowed:
        calls.append(seq(f'{PUT}("', first, '", "', second, '")'))
    if SAY in allowed:
        calls.append(seq(f'{SAY}("', text, '")'))
    if UPDATE_WM in allowed:
        calls.append(seq(f'{UPDATE_WM}("', text, '")'))
    if NOOP in allowed:
        calls.append(Lit(f"{NOOP}()"))
    if not calls:
        raise ValueError(f"no whitelisted function among {sorted(allowed)}")
    call = Named("call", alt(*calls))
    think = Named("think", seq("# THINK: ", text))
    line = alt(call, think)
    body = seq(Rep(seq(think, "\n"), 0, 2), call, Rep(seq("\n", line), 0, MAX_LINES - 1))
    return seq(body, opt(END))


def reader_grammar(allowed: Collection[str], objects: Sequence[str] = (), targets: Sequence[str] = ()) -> str:
    """GBNF text of the reader grammar."""
    return render(reader_node(allowed, objects, targets))
