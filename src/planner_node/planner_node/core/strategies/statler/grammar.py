"""GBNF grammars of the Statler reader's (and CaP's) code and of the writer's state (no rclpy). The reader's
is built from code.py's whitelist, so every string it admits parses with `parse_code`; the
writer's keeps the state's objects and uses only the attributes of its prompt's demonstration states, and
every string it admits parses with `parse_state` (test_grammars.py).

A program is up to MAX_LINES lines, at least one of them a call: `put_first_on_second("a", "b")` (a one
of the scene's objects, b an object, a location or "table"; any name if the scene gave none),
`say("...")`, `update_wm("...")`, `noop()` (only the functions the variant allows) and `# THINK: ...`
comments. Free text excludes quotes, backslashes, `#` and `=`, so no stop string of the reader
(`# query:`, `===`, `# state =`) can occur inside a line; the program may end with `\\n# query:` (the
demonstrations' next query: the stop string ends the generation there).
"""
from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from monologue_llm.gbnf import Chars, Lit, Named, Node, Rep, alt, lit_choice, opt, render, seq

from .code import NOOP, PUT, SAY, UPDATE_WM

MAX_LINES = 8  # lines of code and THINK comments
TEXT_CHARS = 120  # longest say / update_wm / THINK text (characters)
NAME_CHARS = 40  # longest free object name
END = "\n# query:"  # where the demonstrations continue (a stop string of the reader)
_FORBIDDEN = "\"\\\n#="  # never inside a line's free text
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def reader_node(allowed: Collection[str], objects: Sequence[str] = (), targets: Sequence[str] = (),
                end: bool = True) -> Node:
    """The reader grammar for the functions `allowed`; `objects` / `targets` restrict
    put_first_on_second's first / second argument (empty: any name). `end`: the program may end with the
    demonstrations' next `# query:`."""
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
    return seq(body, opt(END)) if end else body


def reader_grammar(allowed: Collection[str], objects: Sequence[str] = (), targets: Sequence[str] = ()) -> str:
    """GBNF text of the reader grammar."""
    return render(reader_node(allowed, objects, targets))


# ---- the writer's state ---------------------------------------------------------------------------------

WORD_CHARS = 20  # longest attribute word a writer without demonstrations may invent
NUMBER_DIGITS = 3  # digits before / after the point of a weight
_LOWER = "abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True)
class Vocabulary:
    """What a writer's state may say about an object, read from its prompt's demonstration states
    (`vocabulary_of`): per attribute key, the words its lists hold, whether they list objects, and whether
    its value is a number or an expression (`red_block.weight / 2`); and the relation verbs
    ("X is on Y"). Empty (a writer without demonstrations, Statler-Auto): any lowercase word, key or verb."""

    words: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # key -> words its list may hold
    object_lists: frozenset[str] = frozenset()  # keys whose lists name objects ("contains")
    numeric: frozenset[str] = frozenset()  # keys whose value is a number or an expression ("weight")
    verbs: tuple[str, ...] = ()  # relation verbs ("on", "in")

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*self.words, *sorted(self.object_lists), *sorted(self.numeric)]))


def vocabulary_of(states: Sequence[Mapping[str, Any]]) -> Vocabulary:
    """The Vocabulary of demonstration `states` (parsed with statler_state.parse_state)."""
    words: dict[str, list[str]] = {}
    object_lists: set[str] = set()
    numeric: set[str] = set()
    verbs: list[str] = []
    for state in states:
        names = {str(o) for o in state.get("objects", [])}
        for relation in _flat(state.get("relations", [])):
            m = re.fullmatch(r"(.+?) is (\w+) (.+)", str(relation).strip())
            if m and m[2] not in verbs:
                verbs.append(m[2])
        for name in names:
            attrs = state.get(name)
            if not isinstance(attrs, Mapping):
                continue
            for key, value in attrs.items():
                if isinstance(value, list):
                    items = [str(v) for v in _flat(value)]
                    if any(i in names for i in items) or (not items and key not in words):
                        object_lists.add(key)
                    listed = words.setdefault(key, []) if key not in object_lists else []
                    listed.extend(i for i in items if i not in names and i not in listed)
                elif isinstance(value, (int, float, str)) and not isinstance(value, bool):
                    numeric.add(key)
    for key in object_lists:
        words.pop(key, None)
    return Vocabulary({k: tuple(v) for k, v in words.items()}, frozenset(object_lists), frozenset(numeric),
                      tuple(verbs))


def _flat(values: Any) -> list[Any]:
    out: list[Any] = []
    for v in values if isinstance(values, list) else [values]:
        out.extend(_flat(v) if isinstance(v, list) else [v])
    return out


def writer_node(objects: Sequence[str], vocab: Vocabulary, added: Sequence[str] = ()) -> Node:
    """The writer's answer after `# state = {\\n`: the objects line as it is, optionally followed by names
    of `added` (objects the person named that the state lacks: a block hidden under a cup), a relations line
    of "<object> is <verb> <object>" strings, then one line per object, in order, and optionally lines for
    added objects, whose dicts hold only `vocab`'s attributes, then `# }`. Every string it admits parses
    with parse_state."""
    if not objects:
        raise ValueError("the writer grammar needs the state's objects")
    everything = [*objects, *added]
    quoted = [json.dumps(o, ensure_ascii=False) for o in everything]
    extra = quoted[len(objects):]
    name = Named("obj", lit_choice(quoted))
    word_free = Named("word", seq('"', Chars(_LOWER), Rep(Chars(_LOWER + " "), 0, WORD_CHARS - 1), '"'))
    digits = Rep(Chars("0123456789"), 1, NUMBER_DIGITS)
    whole = alt("0", seq(Chars("123456789"), Rep(Chars("0123456789"), 0, NUMBER_DIGITS - 1)))  # no leading zero
    number = Named("number", seq(whole, opt(seq(".", digits))))
    idents = [o.replace(" ", "_") + ".weight" for o in objects]
    expression = Named("expr", seq(lit_choice(idents), opt(seq(" ", alt("*", "/"), " ", number))))

    def listing(item: Node) -> Node:
        return seq("[", opt(seq(item, Rep(seq(", ", item), 0, len(objects) - 1))), "]")

    attrs: list[Node] = []
    for key, words in vocab.words.items():
        attrs.append(seq(f'"{key}": ', listing(lit_choice([json.dumps(w) for w in words]) if words else word_free)))
    for key in sorted(vocab.object_lists):
        attrs.append(seq(f'"{key}": ', listing(name)))
    for key in sorted(vocab.numeric):
        attrs.append(seq(f'"{key}": ', alt(number, expression)))
    if not attrs:  # no demonstrations: any lowercase key, with words, objects or a number
        key_free = seq('"', Chars(_LOWER), Rep(Chars(_LOWER + "_"), 0, WORD_CHARS - 1), '"')
        attrs.append(seq(key_free, ": ", alt(listing(alt(name, word_free)), number, expression)))
    attr = Named("attr", alt(*attrs))
    n_keys = max(len(attrs), 1)
    value = Named("attrs", alt("{}", seq("{", attr, Rep(seq(", ", attr), 0, n_keys - 1), "}")))
    verb = lit_choice(list(vocab.verbs)) if vocab.verbs else Rep(Chars(_LOWER), 1, WORD_CHARS)
    bare = [o.replace("\"", "") for o in everything]
    relation = Named("rel", seq('"', lit_choice(bare), " is ", verb, " ", lit_choice(bare), '"'))
    fixed = quoted[: len(objects)]
    new_name = Named("new-obj", lit_choice(extra)) if extra else None
    more_names: Node | str = Rep(seq(", ", new_name), 0, len(extra)) if new_name is not None else ""
    lines: list[Node | str] = [seq(f'# "objects": [{", ".join(fixed)}', more_names, "],\n"),
                               seq('# "relations": ', listing(relation), ",\n")]
    for q in fixed[:-1]:
        lines.append(seq(f"# {q}: ", value, ",\n"))
    last = seq(f"# {fixed[-1]}: ", value)
    if new_name is not None:  # lines of added objects (the parser keeps any key; the objects line lists them)
        last = seq(last, Rep(seq(",\n# ", new_name, ": ", value), 0, len(extra)))
    lines.extend([last, "\n# }"])
    return seq(*lines)


def writer_grammar(objects: Sequence[str], vocab: Vocabulary, added: Sequence[str] = ()) -> str:
    """GBNF text of the writer grammar."""
    return render(writer_node(objects, vocab, added))


def unified_grammar(allowed: Collection[str], objects: Sequence[str], targets: Sequence[str],
                    state_objects: Sequence[str], vocab: Vocabulary, added: Sequence[str] = ()) -> str:
    """GBNF text of Statler-Unified's answer: the reader's program, then `# state = {` and the writer's
    state (writer_node) after it."""
    return render(seq(reader_node(allowed, objects, targets, end=False), "\n# state = {\n",
                      writer_node(state_objects, vocab, added)))
