"""A small grammar builder for GBNF (llama.cpp's grammar format) that can also sample the strings it admits.

A strategy builds its output grammar from the same constants its parser uses, renders it with
:func:`render` (the text given to ``generate(..., grammar=...)``) and property-tests its parser on
:func:`sample`'s strings. Only what the strategies need: literals, character classes (negated ones
sample from a pool of awkward characters), sequences, alternatives and bounded repetition; named rules
are created for alternatives and repetitions so the GBNF stays readable. No rclpy.
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

# characters a negated class samples from (printable, punctuation, quotes, unicode, markers' pieces)
_POOL = ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:!?()[]{}'\"`#=-_+*/\\|<>@$%&^~"
         "\t\u00e9\u00fc\u4e2d\u2212\u201c\u201d\u2018\u2019")


class Node:
    """A grammar expression."""


@dataclass(frozen=True)
class Lit(Node):
    text: str


@dataclass(frozen=True)
class Chars(Node):
    """One character of ``chars`` (``negated``: any character but those)."""

    chars: str
    negated: bool = False


@dataclass(frozen=True)
class Seq(Node):
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt(Node):
    options: tuple[Node, ...]


@dataclass(frozen=True)
class Rep(Node):
    """``item`` repeated ``low`` to ``high`` times."""

    item: Node
    low: int
    high: int


@dataclass(frozen=True)
class Named(Node):
    """``item`` as a rule of its own called ``name`` (lower case letters, digits and '-')."""

    name: str
    item: Node


def seq(*items: Node | str) -> Seq:
    return Seq(tuple(Lit(i) if isinstance(i, str) else i for i in items))


def alt(*options: Node | str) -> Alt:
    if not options:
        raise ValueError("an alternative needs at least one option")
    return Alt(tuple(Lit(o) if isinstance(o, str) else o for o in options))


def opt(item: Node | str) -> Rep:
    return Rep(Lit(item) if isinstance(item, str) else item, 0, 1)


def lit_choice(texts: Sequence[str]) -> Alt:
    """One of ``texts`` (duplicates dropped, longest first)."""
    uniq = sorted(dict.fromkeys(texts), key=lambda t: (-len(t), t))
    return alt(*uniq)


_CONTROLS = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}  # written as their C escapes


def _escape_char(ch: str, special: str) -> str:
    """`ch` with a backslash before it if it is one of `special`, a control of _CONTROLS as its escape."""
    return "\\" + ch if ch in special else _CONTROLS.get(ch, ch)


def _escape_lit(text: str) -> str:
    """A GBNF string literal; other control characters as \\xNN."""
    out = (f"\\x{ord(ch):02x}" if ord(ch) < 0x20 and ch not in _CONTROLS else _escape_char(ch, '\\"')
           for ch in text)
    return '"' + "".join(out) + '"'


def _escape_class(chars: str, negated: bool) -> str:
    return "[" + ("^" if negated else "") + "".join(_escape_char(ch, "\\]^-[") for ch in chars) + "]"


class _Renderer:
    def __init__(self) -> None:
        self.rules: dict[str, str] = {}
        self.names: dict[Node, str] = {}

    def rule(self, node: Node, body: str) -> str:
        name = self.names.get(node)
        if name is None:
            name = f"r{len(self.names)}"
            self.names[node] = name
            self.rules[name] = body
        return name

    def expr(self, node: Node) -> str:
        if isinstance(node, Lit):
            return _escape_lit(node.text)
        if isinstance(node, Chars):
            return _escape_class(node.chars, node.negated)
        if isinstance(node, Seq):
            return " ".join(self.expr(i) for i in node.items) if node.items else '""'
        if isinstance(node, Named):
            if node not in self.names:
                self.names[node] = node.name
                self.rules[node.name] = ""  # reserve the name (recursion is not supported)
                self.rules[node.name] = self.expr(node.item)
            return self.names[node]
        if isinstance(node, Alt):
            if node in self.names:
                return self.names[node]
            return self.rule(node, " | ".join(self.expr(o) for o in node.options))
        if isinstance(node, Rep):
            inner = self.expr(node.item)
            if not isinstance(node.item, (Lit, Chars, Alt, Named)):
                inner = f"({inner})"
            if (node.low, node.high) == (0, 1):
                return f"{inner}?"
            return f"{inner}{{{node.low},{node.high}}}"
        raise TypeError(f"not a grammar node: {node!r}")


def render(root: Node) -> str:
    """The GBNF text of ``root`` (rule ``root`` first)."""
    r = _Renderer()
    top = r.expr(root)
    lines = [f"root ::= {top}"]
    lines += [f"{name} ::= {body}" for name, body in r.rules.items()]
    return "\n".join(lines) + "\n"


def sample(root: Node, rng: random.Random, max_rep: int = 6) -> str:
    """A random string the grammar admits (repetitions capped at ``low + max_rep`` for short samples)."""
    out: list[str] = []

    def walk(node: Node) -> None:
        if isinstance(node, Lit):
            out.append(node.text)
        elif isinstance(node, Chars):
            pool = [c for c in _POOL if c not in node.chars] if node.negated else list(node.chars)
            out.append(rng.choice(pool))
        elif isinstance(node, Seq):
            for i in node.items:
                walk(i)
        elif isinstance(node, Alt):
            walk(rng.choice(node.options))
        elif isinstance(node, Named):
            walk(node.item)
        elif isinstance(node, Rep):
            n = rng.randint(node.low, min(node.high, node.low + max_rep))
            for _ in range(n):
                walk(node.item)
        else:
            raise TypeError(f"not a grammar node: {node!r}")

    walk(root)
    return "".join(out)
