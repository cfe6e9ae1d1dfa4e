"""Statler's world state: the commented JSON-like dict of S Prompts 4-5 (../shared/papers/statler.txt
l.91-132), rendered, parsed leniently and initialised from the scene (no rclpy, never eval/exec).

Rendering (S Prompt 4, l.91-102): one key per line, every line prefixed with `# `:

    # state = {
    # "objects": ["cyan block", "yellow block", "green bowl"],
    # "relations": [],
    # "cyan block": {"is": ["dirty"]},
    # "green bowl": {}
    # }

Parsing accepts what the paper's own states contain (S l.650-668, l.3 of Prompt 7/9): the `#`
prefixes, a `state =` or `world_state =` head, trailing commas, Python literals (True/None) as well
as JSON ones (true/null), a missing opening quote (`green block"`), stray spaces in names, and
expressions such as `red_block.weight / 2`, which are kept as `Expression` text (never evaluated).
The text is parsed with Python's `ast` (a parser, no evaluation) and only literal nodes become values.
"""
from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ...ports import SceneItem

STATE_HEADS = ("state", "world_state")
_HEAD = re.compile(r"^\s*(?:#\s*)?(?:world_state|state)\s*=\s*", re.MULTILINE)
_MISSING_OPEN_QUOTE = re.compile(r'([\[,:]\s*)([A-Za-z][A-Za-z0-9_ \-]*)"')
_JSON_NAMES = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}


class StateParseError(ValueError):
    """The text holds no state that can be read (what is wrong, and where)."""


class Expression(str):
    """A value that is a Python-like expression in the state (e.g. `red_block.weight / 2`), kept as
    its text; rendered without quotes. It is stored as a plain string in JSON (transcripts)."""


State = dict[str, Any]


def initial_state(items: Sequence[SceneItem]) -> State:
    """S l.136 and Prompts 7-9: the objects listed, no relations, nothing known about any object;
    a disinfector starts with `{"contains": []}` (S Prompt 8 l.5). Named locations are not objects."""
    names = [i.name for i in items if i.category != "location"]
    state: State = {"objects": names, "relations": []}
    for name in names:
        state[name] = {"contains": []} if "disinfector" in name else {}
    return state


def _value(v: Any) -> str:
    if isinstance(v, Expression):
        return str(v)
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{json.dumps(str(k), ensure_ascii=False)}: {_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return json.dumps(v, ensure_ascii=False)


def render_state(state: Mapping[str, Any], head: str = "state") -> str:
    """The state as the prompts show it: `# state = {`, one `# "key": value,` line per key, `# }`."""
    keys = list(state)
    lines = [f"# {head} = {{"]
    for n, key in enumerate(keys):
        comma = "," if n < len(keys) - 1 else ""
        lines.append(f"# {json.dumps(str(key), ensure_ascii=False)}: {_value(state[key])}{comma}")
    lines.append("# }")
    return "\n".join(lines)


def to_json(state: Mapping[str, Any]) -> dict[str, Any]:
    """The state as plain JSON data (expressions become their text): for transcripts and topics."""
    result: dict[str, Any] = json.loads(json.dumps(state, ensure_ascii=False))
    return result


def extract_state_text(text: str) -> str:
    """The `{...}` of the first `# state = {` (or `# world_state = {`) in `text`, with the comment
    prefixes removed; a text that starts with `{` is taken as the dict itself. Raises StateParseError."""
    m = _HEAD.search(text)
    body = text[m.end():] if m else text.lstrip()
    lines = []
    for line in body.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            stripped = stripped[1:].strip()
        lines.append(stripped)
    joined = "\n".join(lines).lstrip()
    if not joined.startswith("{"):
        raise StateParseError("no state found: expected '# state = {' followed by a dict")
    depth, in_str, esc = 0, False, False
    for i, ch in enumerate(joined):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"' or ch == "\n":  # a string never spans lines here
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return joined[: i + 1]
    raise StateParseError(f"the state's braces do not close (depth {depth} at the end of the text)")


def _convert(node: ast.AST, source: str) -> Any:
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (str, int, float, bool))):
        return node.value.strip() if isinstance(node.value, str) else node.value
    if isinstance(node, ast.Dict):
        out: dict[str, Any] = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                raise StateParseError(f"line {node.lineno}: '**' is not allowed in a state")
            key = _convert(k, source)
            if not isinstance(key, str):
                raise StateParseError(f"line {k.lineno}: keys must be strings, "
                                      f"got {ast.get_source_segment(source, k)!r}")
            out[key] = _convert(v, source)
        return out
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_convert(e, source) for e in node.elts]
    if isinstance(node, ast.Name) and node.id in _JSON_NAMES:
        return _JSON_NAMES[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, (int, float)) and not isinstance(node.operand.value, bool):
        return -node.operand.value
    if isinstance(node, (ast.Name, ast.Attribute, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp)):
        return Expression(ast.get_source_segment(source, node) or ast.unparse(node))
    raise StateParseError(f"line {getattr(node, 'lineno', '?')}: unsupported value "
                          f"{ast.get_source_segment(source, node)!r} (only literals, lists, dicts and "
                          "arithmetic expressions are kept)")


def parse_state(text: str, max_chars: int = 20000) -> State:
    """Read a state from LLM output or a prompt (see the module docstring). Raises StateParseError
    with what is wrong; never evaluates anything."""
    if len(text) > max_chars:
        raise StateParseError(f"the state text has {len(text)} characters, more than {max_chars}")
    text = text.replace("\x00", "")  # ast refuses NULs, and a transcript cannot hold them
    try:
        return _parse_state(text)
    except StateParseError as first:
        # the paper's own slip `, green block"` (S l.650): retry with the missing quote added
        fixed = _MISSING_OPEN_QUOTE.sub(lambda m: f'{m.group(1)}"{m.group(2)}"', text)
        if fixed == text:
            raise
        try:
            return _parse_state(fixed)
        except StateParseError:
            raise first from None


def _parse_state(text: str) -> State:
    body = extract_state_text(text)
    try:
        tree = ast.parse(body, mode="eval")
    except SyntaxError as e:
        lines = body.splitlines()
        line = lines[e.lineno - 1] if e.lineno and e.lineno <= len(lines) else ""
        raise StateParseError(f"the state is not a dict: {e.msg} at line {e.lineno} of the state: {line!r}") from None
    except (RecursionError, MemoryError):
        raise StateParseError("the state is nested too deeply") from None
    if not isinstance(tree.body, ast.Dict):
        raise StateParseError("the state must be a dict ({...})")
    try:
        state = _convert(tree.body, body)
    except RecursionError:
        raise StateParseError("the state is nested too deeply") from None
    if "objects" in state:
        objects = state["objects"]
        if not isinstance(objects, list) or not all(isinstance(o, str) for o in objects):
            raise StateParseError('"objects" must be a list of names')
        state["objects"] = [o.strip() for o in objects]
    return dict(state)
