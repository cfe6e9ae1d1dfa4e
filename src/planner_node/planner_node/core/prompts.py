"""Prompt profiles: how a domain renders transcript events and skills into prompt text.

A profile is a YAML file plus a few-shot preamble text file, both under the configured prompt
directory, so a new domain is added by configuration only.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from monologue_domain.transcript import Event, EventKind

from .goal_examples import GoalExamples, load_goal_examples

_REQUIRED_FORMATS = ("instruction", "action", "done")


@dataclass(frozen=True)
class SkillTemplate:
    """Text form of one skill, e.g. "Pick the {0} and place it {prep1} the {1}."

    `{i}` is argument i; `{prep<i>}` is the preposition for argument i, chosen by the category of
    the object it names (`prepositions`, with key "default"); `{a<i>}` is its indefinite article
    ("a" or "an").
    """

    template: str
    prepositions: Mapping[str, str] = field(default_factory=dict)

    def render(self, args: Sequence[str], categories: Mapping[str, str]) -> str:
        values: dict[str, str] = {}
        for i, a in enumerate(args):
            cat = categories.get(a, "")
            values[f"prep{i}"] = self.prepositions.get(cat, self.prepositions.get("default", ""))
            values[f"a{i}"] = article(a)
        return self.template.format(*args, **values)


@dataclass(frozen=True)
class PromptProfile:
    """Formats of one domain. Format strings use str.format fields named in each docstring line."""

    name: str
    description: str
    source: str
    preamble: str
    formats: Mapping[str, str]
    skills: Mapping[str, SkillTemplate]
    object_list_style: str = "color_groups"  # or "names", "quoted_list"
    sort_objects: bool = True  # canonical order, so prompts do not depend on detection order
    step_style: str = "lines"  # "lines": one event per line; "numbered": IM kitchen steps (Listings 3-4)
    objects_every_step: bool = False  # Object feedback before every step (IM real tabletop, Listing 2)
    instruction_period: bool = True  # end instructions with "." (Listing 1 does; Listings 2-4 do not)
    articles: bool = False  # color_groups: "an orange block and a red bowl" (format without its own "a")
    goal_prompt: str = ""  # few-shot head that maps an instruction to its goal (scoring.goal_grounding: llm)
    goal_examples: GoalExamples | None = None  # library of the goal_grounding llm_named_retrieved

    # ---- events ----------------------------------------------------------------------------
    def instruction(self, text: str) -> str:
        text = _sentence(text) if self.instruction_period else " ".join(text.split())
        return self.formats["instruction"].format(instruction=text)

    def objects(self, names: Sequence[str]) -> str:
        """Object feedback, e.g. `Scene: There is a cyan, yellow block and a blue bowl.`"""
        fmt = self.formats.get("objects", "Scene: {objects}")
        if self.sort_objects:
            names = sorted(names)
        if self.object_list_style == "color_groups":
            listed = color_groups(names, articles=self.articles)
        elif self.object_list_style == "quoted_list":
            listed = "[" + ", ".join(f'"{n}"' for n in names) + "]"
        else:
            listed = ", ".join(names)
        return fmt.format(objects=listed)

    def occluded(self, names: Sequence[str]) -> str | None:
        """`Scene: Occluded objects are [...]` (IM Listing 2), or None if the profile has no such line."""
        fmt = self.formats.get("occluded")
        if fmt is None:
            return None
        return fmt.format(objects="[" + ", ".join(f'"{n}"' for n in sorted(names)) + "]")

    @property
    def can_ask(self) -> bool:
        """True if steps end with ` and continue` / ` and ask: <question>` (IM Listing 4)."""
        return "ask_suffix" in self.formats and "continue_suffix" in self.formats

    def action(self, skill: str, args: Sequence[str], categories: Mapping[str, str]) -> str:
        return self.formats["action"].format(action=self.skill_text(skill, args, categories))

    def skill_text(self, skill: str, args: Sequence[str], categories: Mapping[str, str]) -> str:
        tpl = self.skills.get(skill)
        if tpl is None:
            raise KeyError(f"prompt profile {self.name!r} has no template for skill {skill!r}")
        return tpl.render(args, categories)

    def human(self, text: str) -> str:
        """A person's interjection, e.g. `Human: Please stop.`"""
        fmt = self.formats.get("human") or "Human: {text}"
        return fmt.format(text=" ".join(text.split()))

    def success(self, ok: bool) -> str:
        return self.formats["success_true" if ok else "success_false"]

    @property
    def done_line(self) -> str:
        return self.formats["done"]

    def render_prompt(self, lines: Sequence[str]) -> str:
        """Preamble, then the episode so far, ending with a newline (the next line is the LLM's)."""
        body = "\n".join(lines)
        return self.preamble + body + ("\n" if body else "")

    def prompt(self, events: Sequence[Event], next_step: bool = True) -> str:
        """The prompt for the next step: preamble, the episode rendered in this domain's style, and
        (numbered style) the next step's number, e.g. `2.` (candidates then start with `lead`)."""
        if self.step_style != "numbered":
            return self.render_prompt([e.text for e in events if e.text])
        lines, steps, open_line = self._numbered(events)
        if not next_step:
            return self.render_prompt(lines + ([open_line] if open_line is not None else []))
        fmt = self.formats["step_first"] if steps == 0 else self.formats["step"]
        nxt = fmt.format(n=steps + 1, action="").rstrip(" ")
        sep = self.formats.get("step_separator", "\n")
        if open_line is None:
            return self.render_prompt(lines) + nxt
        if "\n" in sep:
            return self.render_prompt(lines + [open_line]) + nxt
        return self.render_prompt(lines) + open_line + sep + nxt  # SayCan: `1. find a coke, 2.`

    @property
    def lead(self) -> str:
        """What separates the prompt from a candidate: numbered prompts end with `2.`, so " "."""
        return " " if self.step_style == "numbered" else ""

    def _numbered(self, events: Sequence[Event]) -> tuple[list[str], int, str | None]:
        """IM kitchen rendering: `Robot: 1. <step>`, then `2. <step>`; success and scene tags, the
        ` and continue` / ` and ask: ...` suffix, the answer and interjections go on the step's line."""
        f = self.formats
        lines: list[str] = []
        current: str | None = None
        n = 0
        for e in events:
            kind, data = e.kind, e.data
            is_step = kind == EventKind.ROBOT_ACTION or (kind == EventKind.ROBOT_THOUGHT and data.get("done"))
            if kind == EventKind.HUMAN_INSTRUCTION:
                if current is not None:
                    lines.append(current)
                current, n = None, 0
                lines.append(e.text)
            elif is_step:
                n += 1
                text = (f["step_first"] if n == 1 else f["step"]).format(n=n, action=e.text)
                sep = f.get("step_separator", "\n")
                if current is not None and "\n" not in sep:
                    current += sep + text  # SayCan: all steps on the Robot line
                else:
                    if current is not None:
                        lines.append(current)
                    current = text
                if data.get("suffix") == "continue":
                    current += f.get("continue_suffix", "")
            elif current is not None and kind == EventKind.ROBOT_QUESTION:
                current += f.get("ask_suffix", " and ask: {question}").format(question=data.get("question", e.text))
            elif current is not None and kind == EventKind.HUMAN_ANSWER:
                current += f.get("human_answer", " Human: {text}").format(text=data.get("text", e.text))
            elif current is not None and kind == EventKind.HUMAN_INTERJECTION:
                current += f.get("human_interjection", ", Human: {text}").format(text=data.get("text", e.text))
            elif current is not None and kind in (EventKind.SUCCESS, EventKind.SCENE_OBJECTS):
                current += e.text
            elif kind == EventKind.SCENE_OBJECTS and e.text.startswith("["):
                continue  # a scene tag (Listing 3) only goes onto a step's line
            elif e.text:
                if current is not None:
                    lines.append(current)
                    current = None
                lines.append(e.text)
        return lines, n, current


def article(phrase: str) -> str:
    """The indefinite article for `phrase`: "an" before a vowel sound (by spelling), else "a"."""
    word = phrase.strip().split(" ", 1)[0].lower()
    if not word:
        return "a"
    if word.startswith(("uni", "use", "one", "eu")):
        return "a"
    if word.startswith(("hour", "honest")):
        return "an"
    return "an" if word[0] in "aeiou" else "a"


def color_groups(names: Sequence[str], articles: bool = False) -> str:
    """'red block', 'blue block', 'green bowl' -> 'red, blue block and a green bowl' (IM Listing 1).

    With `articles`, every group gets its own article: 'an orange, red block and a green bowl'.
    """
    groups: dict[str, list[str]] = {}
    others: list[str] = []
    for n in names:
        parts = n.rsplit(" ", 1)
        if len(parts) == 2:
            groups.setdefault(parts[1], []).append(parts[0])
        else:
            others.append(n)
    chunks = [f"{', '.join(colors)} {cat}" for cat, colors in groups.items()] + others
    if articles:
        return " and ".join(f"{article(c)} {c}" for c in chunks)
    return " and a ".join(chunks)


def _sentence(text: str) -> str:
    text = " ".join(text.strip().split())
    if text and text[-1].isascii() and text[-1].isalnum():
        text += "."
    return text


def load_profile(prompt_dir: Path, name: str) -> PromptProfile:
    """Load `<prompt_dir>/<name>.yaml` and its preamble file; raise ValueError on a bad profile."""
    if not re.fullmatch(r"[A-Za-z0-9_\-]+", name):
        raise ValueError(f"invalid prompt profile name {name!r}")
    path = prompt_dir / f"{name}.yaml"
    if not path.is_file():
        available = sorted(p.stem for p in prompt_dir.glob("*.yaml")) if prompt_dir.is_dir() else []
        raise ValueError(f"prompt profile {name!r} not found at {path}; available: {available}")
    try:
        raw: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not a valid YAML file: {e}") from e
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected a mapping")
    formats = raw.get("formats") or {}
    missing = [k for k in _REQUIRED_FORMATS if k not in formats]
    if missing:
        raise ValueError(f"{path}: formats lack {missing}")
    preamble = _text_file(path, raw, "preamble_file")
    goal_prompt = _text_file(path, raw, "goal_prompt_file")
    goal_examples = None
    if raw.get("goal_examples_file"):
        goal_examples = load_goal_examples(path.parent / str(raw["goal_examples_file"]))
    try:
        skills = {
            str(k): SkillTemplate(str(v["template"]), dict(v.get("prepositions") or {}))
            for k, v in (raw.get("skills") or {}).items()
        }
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ValueError(f"{path}: skills must map each skill to {{template: ..., prepositions: {{...}}}} "
                         f"({type(e).__name__}: {e})") from e
    if not skills:
        raise ValueError(f"{path}: no skill templates")
    return PromptProfile(
        name=name,
        description=str(raw.get("description", "")),
        source=str(raw.get("source", "")),
        preamble=preamble,
        formats={str(k): str(v) for k, v in formats.items()},
        skills=skills,
        object_list_style=str(raw.get("object_list_style", "color_groups")),
        sort_objects=bool(raw.get("sort_objects", True)),
        step_style=_choice(path, raw, "step_style", ("lines", "numbered")),
        objects_every_step=bool(raw.get("objects_every_step", False)),
        articles=bool(raw.get("articles", False)),
        instruction_period=bool(raw.get("instruction_period", True)),
        goal_prompt=goal_prompt,
        goal_examples=goal_examples,
    )


def _text_file(path: Path, raw: dict[str, Any], key: str) -> str:
    """The text of the file `raw[key]` names next to the profile `path`; "" when the key is not set."""
    if not raw.get(key):
        return ""
    file = path.parent / str(raw[key])
    if not file.is_file():
        raise ValueError(f"{path}: {key} {file} not found")
    return file.read_text(encoding="utf-8")


def _choice(path: Path, raw: dict[str, Any], key: str, allowed: tuple[str, ...]) -> str:
    value = str(raw.get(key, allowed[0]))
    if value not in allowed:
        raise ValueError(f"{path}: {key} must be one of {allowed}, got {value!r}")
    return value
