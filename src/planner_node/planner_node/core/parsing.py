"""Parse one line of generated LLM output into an admissible skill call (no rclpy).

The papers' planners write their actions in several syntaxes (requirements §7.9):

- code style (IM Listing 2, IM Fig. 3, SayCan open source): ``robot.pick_place("x", "y")``,
  ``robot.pickplace(x, y)``, ``robot.pick_and_place(x, y)``, single or double quotes or none;
- natural language (IM Listing 1, IM Fig. 3): "Pick the X and place it on the Y.",
  "Pick up X and place it in Y.", "Pick up the X and put it in the Y";
- kitchen steps (IM Listings 3-4, SayCan Listing 1): "3. pick up the coke", with inline feedback tags
  (``[success: no]``, ``[scene: a, b]``) and the suffixes " and continue" / " and ask: <question>"
  and an inline " Human: <text>" (an answer or an interjection), matched against the admissible set by
  their text form (skill templates).

Every input yields a :class:`ParseOutcome`: an admissible action, a termination (``robot.stop()``,
``STOP``, ``done``, ``N. done.``, ``Robot thought: None.``, ``Robot thought: I'm done.``, empty
output; requirements §7.8), or a rejection whose reason names the offending part. The parser never
raises and never returns an action outside the admissible set. Object names must match an admissible
name exactly after normalisation (case, spacing, articles); there is no fuzzy matching.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

MAX_INPUT_CHARS = 500
"""Longer inputs are rejected without being parsed."""

PICK_PLACE = "pick_place"
PICK_PLACE_ALIASES = frozenset({"pick_place", "pickplace", "pick_and_place", "pickandplace", "pick_n_place"})
"""Spellings of the pick-and-place call in IM Listing 2, IM Fig. 3 and the SayCan open-source code."""

DEFAULT_TEMPLATES: Mapping[str, str] = {
    # IM Listing 1 (sim); `{prepN}` stands for any preposition (on, in, into, ...).
    PICK_PLACE: "Pick the {0} and place it {prep1} the {1}.",
    # IM Listings 3-4 and SayCan Listing 1 (kitchen).
    "find": "find a {0}",
    "pick_up": "pick up the {0}",
    "go_to": "go to the {0}",
    "put_down": "put down the {0}",
    "bring_to_user": "bring it to you",
    # SayCan Listing 2 (drawers) and IM Listing 4.
    "open_drawer": "open the drawer",
    "close_drawer": "close the drawer",
    "put_in_drawer": "put {0} in the drawer",
    "pick_up_from_drawer": "pick up the {0} from the drawer",
    "put_down_on": "put down the {0} on the {1}",
}
"""Text forms of skills, used when the caller passes no templates. Articles in them do not matter.
A skill with no template is matched as its name's words followed by its arguments
("go_to", ("table",)) -> "go to table"."""

_PREPOSITIONS = ("on top of", "onto", "on", "into", "in", "inside", "to", "at")
_DONE_WORDS = frozenset({
    "done", "stop", "none", "i'm done", "i am done", "tell you i'm done", "tell you i am done",
})
_QUOTE_PAIRS = {'"': '"', "'": "'", "\u201c": "\u201d", "\u2018": "\u2019"}
_TRANSLATE = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " "})
_ALLOWED_CONTROL = frozenset("\t\n\r")
_ARG_SENTINEL = "\ue000"  # private-use characters: rejected in inputs, so they never collide
_PREP_SENTINEL = "\ue0ff"

_ARTICLE_RE = re.compile(r"\b(?:a|an|the)\b")
_TRAILING_RE = re.compile(r"[\s.,;:!?]+$")
_THOUGHT_RE = re.compile(r"^robot\s+thought\s*:\s*", re.IGNORECASE)
_ROBOT_RE = re.compile(r"^robot(?:\s+action)?\s*:\s*", re.IGNORECASE)
_OTHER_SPEAKER_RE = re.compile(
    r"^(human|scene|task|successful action|success|explanation|robot ask)\s*:", re.IGNORECASE)
_STEP_RE = re.compile(r"^(\d{1,3})\s*[.)](?:\s+|$|(?=[^\d\s]))")
_NEXT_STEP_RE = re.compile(r",\s*(?=\d{1,3}\s*\.(?:\s|$))")
_HUMAN_RE = re.compile(r"\s*[,;]?\s*\bhuman\s*:\s*", re.IGNORECASE)
_ASK_RE = re.compile(r"(?:^|\s+)and\s+ask\s*:\s*", re.IGNORECASE)
_CONTINUE_RE = re.compile(r"(?:^|\s+)and\s+continue[\s.,;!]*$", re.IGNORECASE)
_TAG_RE = re.compile(r"\[\s*(?:success|scene)\s*:[^\[\]]*\]", re.IGNORECASE)
_CALL_RE = re.compile(
    r"^(?:robot\s*\.\s*)?([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*[;.]?$", re.DOTALL | re.IGNORECASE)
_PICK_PLACE_NL_RE = re.compile(
    r"^pick(?: up)? (?P<obj>.+?) and (?:place|put) (?:it )?(?:" + "|".join(_PREPOSITIONS) + r") (?P<target>.+)$")
_PLACEHOLDER_RE = re.compile(r"\{(prep)?(\d+)\}")
_ARTICLE_FIELD_RE = re.compile(r"\{a\d+\}\s*")


class OutcomeKind(Enum):
    ACTION = "action"
    DONE = "done"
    REJECTED = "rejected"


@dataclass(frozen=True)
class ParsedAction:
    """An admissible skill call: the skill name and its arguments, spelled as in the admissible set."""

    skill: str
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.skill}({', '.join(self.args)})"


@dataclass(frozen=True)
class ParseOutcome:
    """Result of :func:`parse_action`.

    `kind` says which of the three it is: `action` is set only for ACTION; `reason` is the rejection
    reason for REJECTED and the termination form for DONE. The other fields carry the kitchen-step
    decorations that were split off, whatever the kind: `step` (the "N." number), `continues`
    (" and continue"), `question` (" and ask: <question>"), `human` (an inline "Human: <text>", the
    answer to the question or an unprompted interjection), `feedback_tags` (``[success: no]``,
    ``[scene: ...]``) and `remainder` (further numbered steps on the same line, which are not parsed).
    """

    kind: OutcomeKind
    action: ParsedAction | None = None
    reason: str = ""
    step: int | None = None
    continues: bool = False
    question: str | None = None
    human: str | None = None
    feedback_tags: tuple[str, ...] = ()
    remainder: str = ""

    @property
    def is_action(self) -> bool:
        return self.kind is OutcomeKind.ACTION

    @property
    def is_done(self) -> bool:
        return self.kind is OutcomeKind.DONE

    @property
    def is_rejected(self) -> bool:
        return self.kind is OutcomeKind.REJECTED


@dataclass
class _Context:
    """Decorations split off the line so far (copied into the outcome)."""

    step: int | None = None
    continues: bool = False
    question: str | None = None
    human: str | None = None
    feedback_tags: tuple[str, ...] = ()
    remainder: str = ""

    def outcome(self, kind: OutcomeKind, action: ParsedAction | None = None, reason: str = "") -> ParseOutcome:
        return ParseOutcome(kind, action, reason, self.step, self.continues, self.question, self.human,
                            self.feedback_tags, self.remainder)


def normalize(text: str) -> str:
    """Lower-case, straight quotes, no articles ("a", "an", "the"), single spaces, no trailing punctuation."""
    t = text.translate(_TRANSLATE).lower()
    t = _ARTICLE_RE.sub(" ", t)
    t = " ".join(t.split())
    return _TRAILING_RE.sub("", t)


def split_numbered_steps(text: str) -> list[str]:
    """Split a SayCan plan line "Robot: 1. a, 2. b, 3. done." into ["1. a", "2. b", "3. done."]."""
    body = _ROBOT_RE.sub("", text.strip(), count=1)
    return [s.strip() for s in _NEXT_STEP_RE.split(body) if s.strip()]


def parse_action(
    text: str,
    admissible: Sequence[tuple[str, tuple[str, ...]]],
    objects: Sequence[str],
    templates: Mapping[str, str] | None = None,
) -> ParseOutcome:
    """Parse one line of LLM output against the admissible (skill, args) pairs.

    `objects` are the names the planner may refer to (they and every admissible argument are the
    known names); `templates` maps skill names to their text form (e.g. a prompt profile's skill
    templates, "pick up the {0}"), used to match plain kitchen steps. It extends DEFAULT_TEMPLATES.
    Only the first non-blank line of `text` is parsed. Never raises.
    """
    try:
        return _parse(text, admissible, objects, templates)
    except Exception as e:  # the contract is to never raise on any input
        return ParseOutcome(OutcomeKind.REJECTED, reason=f"internal parser error: {type(e).__name__}")


# ---- implementation -----------------------------------------------------------------------------


def _parse(
    text: object,
    admissible: Sequence[tuple[str, tuple[str, ...]]],
    objects: Sequence[str],
    templates: Mapping[str, str] | None,
) -> ParseOutcome:
    ctx = _Context()
    if not isinstance(text, str):
        return ctx.outcome(OutcomeKind.REJECTED, reason=f"not text: {type(text).__name__}")
    if len(text) > MAX_INPUT_CHARS:
        return ctx.outcome(OutcomeKind.REJECTED, reason=f"input too long ({len(text)} > {MAX_INPUT_CHARS} chars)")
    bad = _bad_character(text)
    if bad is not None:
        return ctx.outcome(OutcomeKind.REJECTED, reason=f"control or binary character {bad!r} in input")
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if not line:
        return ctx.outcome(OutcomeKind.DONE, reason="empty output")

    m = _THOUGHT_RE.match(line)
    if m:
        thought = line[m.end():]
        if not thought or normalize(thought) in _DONE_WORDS:
            return ctx.outcome(OutcomeKind.DONE, reason=f"Robot thought: {thought}".strip())
        return ctx.outcome(OutcomeKind.REJECTED, reason=f"a robot thought, not an action: {_clip(thought)!r}")
    m = _OTHER_SPEAKER_RE.match(line)
    if m:
        return ctx.outcome(OutcomeKind.REJECTED, reason=f"a {m.group(1)!r} line, not a robot action")
    body = _ROBOT_RE.sub("", line, count=1)

    m = _STEP_RE.match(body)
    if m:
        ctx.step = int(m.group(1))
        body = body[m.end():]
    parts = _NEXT_STEP_RE.split(body, maxsplit=1)
    if len(parts) == 2:
        body, ctx.remainder = parts[0], parts[1].strip()
    m = _HUMAN_RE.search(body)
    if m:
        body, ctx.human = body[:m.start()], body[m.end():].strip()
    m = _ASK_RE.search(body)
    if m:
        body, ctx.question = body[:m.start()], body[m.end():].strip()
        if not ctx.question:
            return ctx.outcome(OutcomeKind.REJECTED, reason="empty question after 'and ask:'")
    m = _CONTINUE_RE.search(body)
    if m:
        body, ctx.continues = body[:m.start()], True
    tags = tuple(t.group(0) for t in _TAG_RE.finditer(body))
    if tags:
        ctx.feedback_tags = tags
        body = _TAG_RE.sub(" ", body)
    body = body.strip()

    if not body:
        if ctx.question is not None or ctx.human is not None or ctx.continues or ctx.feedback_tags:
            return ctx.outcome(OutcomeKind.REJECTED, reason="no skill before the step's suffix or tags")
        return ctx.outcome(OutcomeKind.DONE, reason="empty action")
    norm = normalize(body)
    if not norm:
        return ctx.outcome(OutcomeKind.REJECTED, reason=f"no action in {_clip(body)!r}")
    if norm in _DONE_WORDS:
        return ctx.outcome(OutcomeKind.DONE, reason=body)
    return _parse_body(body, norm, _Admissible(admissible, objects, templates), ctx)


def _parse_body(body: str, norm: str, adm: _Admissible, ctx: _Context) -> ParseOutcome:
    # 1. the text form of an admissible skill (profile templates, kitchen steps)
    found = adm.match_text(norm)
    if found is not None:
        return ctx.outcome(OutcomeKind.ACTION, found)
    # 2. code style: robot.pick_place("x", "y")
    m = _CALL_RE.match(body)
    if m:
        return _parse_call(m.group(1), m.group(2), adm, ctx)
    if normalize(body).startswith("robot."):
        return ctx.outcome(OutcomeKind.REJECTED, reason=f"malformed call {_clip(body)!r}")
    # 3. natural-language pick and place (IM sim)
    m = _PICK_PLACE_NL_RE.match(norm)
    if m:
        return _resolve(PICK_PLACE, (m.group("obj"), m.group("target")), adm, ctx)
    # 4. something shaped like a known skill, with unknown or inadmissible arguments
    return adm.explain(norm, ctx, body)


def _parse_call(name: str, arg_text: str, adm: _Admissible, ctx: _Context) -> ParseOutcome:
    lname = name.lower()
    args = _split_args(arg_text)
    if isinstance(args, str):
        return ctx.outcome(OutcomeKind.REJECTED, reason=f"malformed arguments of robot.{name}(): {args}")
    if lname in ("stop", "done"):
        if args:
            return ctx.outcome(OutcomeKind.REJECTED, reason=f"robot.{name}() takes no arguments")
        return ctx.outcome(OutcomeKind.DONE, reason=f"robot.{name}()")
    if lname in PICK_PLACE_ALIASES:
        skill = PICK_PLACE
    elif name in adm.skills:
        skill = name
    elif lname in adm.skills:
        skill = lname
    else:
        return ctx.outcome(OutcomeKind.REJECTED, reason=f"unknown skill {name!r}")
    return _resolve(skill, tuple(args), adm, ctx)


def _resolve(skill: str, raw_args: tuple[str, ...], adm: _Admissible, ctx: _Context) -> ParseOutcome:
    """Map argument texts to known names and check that the call is admissible."""
    for i, a in enumerate(raw_args):
        if not normalize(a):
            return ctx.outcome(OutcomeKind.REJECTED, reason=f"empty argument {i + 1} of {skill}")
    args: list[str] = []
    for a in raw_args:
        name = adm.names.get(normalize(a))
        if name is None:
            return ctx.outcome(OutcomeKind.REJECTED, reason=f"unknown object {_clip(a.strip())!r}")
        args.append(name)
    action = ParsedAction(skill, tuple(args))
    if (action.skill, action.args) in adm.pairs:
        return ctx.outcome(OutcomeKind.ACTION, action)
    arities = adm.arities.get(skill)
    if arities and len(args) not in arities:
        want = " or ".join(str(n) for n in sorted(arities))
        return ctx.outcome(OutcomeKind.REJECTED,
                           reason=f"{skill} takes {want} argument(s), got {len(args)}")
    return ctx.outcome(OutcomeKind.REJECTED, reason=f"{action} is not admissible")


class _Admissible:
    """The admissible set with the lookups the parser needs."""

    def __init__(
        self,
        admissible: Sequence[tuple[str, tuple[str, ...]]],
        objects: Sequence[str],
        templates: Mapping[str, str] | None,
    ) -> None:
        self.entries: list[tuple[str, tuple[str, ...]]] = []
        for entry in admissible:
            skill, args = entry
            self.entries.append((str(skill), tuple(str(a) for a in args)))
        self.pairs = frozenset(self.entries)
        self.skills = frozenset(s for s, _ in self.entries)
        self.arities: dict[str, set[int]] = {}
        for s, a in self.entries:
            self.arities.setdefault(s, set()).add(len(a))
        self.templates: dict[str, str] = dict(DEFAULT_TEMPLATES)
        if templates:
            # `{a<i>}` is an article placeholder (prompts.SkillTemplate); articles are ignored here
            self.templates.update({str(k): _ARTICLE_FIELD_RE.sub("", str(v)) for k, v in templates.items()})
        self.names: dict[str, str] = {}
        for name in _iter_names(objects, self.entries):
            key = normalize(name)
            if key:
                self.names.setdefault(key, name)

    def render(self, skill: str, args: tuple[str, ...]) -> str | None:
        """Normalised text form of one call; `_PREP_SENTINEL` marks a free preposition."""
        tpl = self.templates.get(skill)
        if tpl is None:
            return normalize(" ".join([*skill.split("_"), *args]))
        ok = True

        def sub(m: re.Match[str]) -> str:
            nonlocal ok
            i = int(m.group(2))
            if m.group(1):
                return _PREP_SENTINEL
            if i >= len(args):
                ok = False
                return ""
            return args[i]

        text = _PLACEHOLDER_RE.sub(sub, tpl)
        return normalize(text) if ok else None

    def match_text(self, norm: str) -> ParsedAction | None:
        for skill, args in self.entries:
            rendered = self.render(skill, args)
            if not rendered:
                continue
            if _PREP_SENTINEL in rendered:
                pattern = re.escape(rendered).replace(re.escape(_PREP_SENTINEL), _PREP_PATTERN)
                if re.fullmatch(pattern, norm):
                    return ParsedAction(skill, args)
            elif rendered == norm:
                return ParsedAction(skill, args)
        return None

    def explain(self, norm: str, ctx: _Context, body: str) -> ParseOutcome:
        """Rejection for text that is no admissible call: name the unknown object or the bad call."""
        best: ParseOutcome | None = None
        for skill, tpl in self.templates.items():
            pattern = _template_regex(tpl)
            if pattern is None:
                continue
            m = pattern.fullmatch(norm)
            if m is None:
                continue
            groups = m.groupdict()
            n = len(groups)
            raw = tuple(groups.get(f"a{i}") or "" for i in range(n))
            outcome = _resolve(skill, raw, self, ctx)
            if outcome.is_action:
                return outcome
            if best is None or (best.reason.startswith("unknown object")
                                and not outcome.reason.startswith("unknown object")):
                best = outcome
        if best is not None:
            return best
        return ctx.outcome(OutcomeKind.REJECTED, reason=f"unrecognised action {_clip(body)!r}")


_PREP_PATTERN = "(?:" + "|".join(re.escape(p) for p in _PREPOSITIONS) + ")"


def _template_regex(tpl: str) -> re.Pattern[str] | None:
    """A regex over normalised text with one named group a<i> per argument placeholder {i}."""
    indices: list[int] = []

    def mark(m: re.Match[str]) -> str:
        if m.group(1):
            return _PREP_SENTINEL
        indices.append(int(m.group(2)))
        return _ARG_SENTINEL + chr(0xE001 + min(int(m.group(2)), 9)) + _ARG_SENTINEL

    marked = normalize(_PLACEHOLDER_RE.sub(mark, tpl))
    if not indices or sorted(indices) != list(range(len(indices))) or len(indices) > 9:
        return None  # no arguments (matched exactly elsewhere), or not {0}..{n-1} once each
    pattern = re.escape(marked).replace(re.escape(_PREP_SENTINEL), _PREP_PATTERN)
    for i in indices:
        token = re.escape(_ARG_SENTINEL + chr(0xE001 + i) + _ARG_SENTINEL)
        pattern = pattern.replace(token, f"(?P<a{i}>.+?)")
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _iter_names(objects: Iterable[str], entries: Iterable[tuple[str, tuple[str, ...]]]) -> Iterable[str]:
    for o in objects:
        yield str(o)
    for _, args in entries:
        yield from args


def _split_args(text: str) -> list[str] | str:
    """Split call arguments on commas; quoted arguments may contain commas. Error text on failure."""
    s = text.strip()
    if not s:
        return []
    args: list[str] = []
    i, n = 0, len(s)
    while True:
        while i < n and s[i].isspace():
            i += 1
        if i < n and s[i] in _QUOTE_PAIRS:
            close = _QUOTE_PAIRS[s[i]]
            j = s.find(close, i + 1)
            if j < 0:
                return "unterminated quote"
            args.append(s[i + 1:j])
            i = j + 1
            while i < n and s[i].isspace():
                i += 1
            if i < n and s[i] != ",":
                return f"unexpected text after argument {len(args)}"
        else:
            j = s.find(",", i)
            if j < 0:
                j = n
            token = s[i:j].strip()
            if token[:1] in _QUOTE_PAIRS or token[-1:] in _QUOTE_PAIRS.values():
                return f"unbalanced quotes in argument {len(args) + 1}"
            args.append(token)
            i = j
        if i >= n:
            return args
        i += 1  # the comma; a trailing comma yields an empty (rejected) argument


def _bad_character(text: str) -> str | None:
    for ch in text:
        if ch in _ALLOWED_CONTROL:
            continue
        cat = unicodedata.category(ch)
        if cat in ("Cc", "Cf", "Cs", "Co", "Cn") or ch == "\ufffd":
            return ch
    return None


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
