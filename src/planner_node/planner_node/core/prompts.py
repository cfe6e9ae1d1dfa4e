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

_REQUIRED_FORMATS = ("instruction", "action", "done")


@dataclass(frozen=True)
class SkillTemplate:
    """Text form of one skill, e.g. "Pick the {0} and place it {prep1} the {1}."

    `{i}` is argument i; `{prep<i>}` is the preposition for argument i, chosen by the category of
    the object it names (`prepositions`, with key "default").
    """

    template: str
    prepositions: Mapping[str, str] = field(default_factory=dict)

    def render(self, args: Sequence[str], categories: Mapping[str, str]) -> str:
        values: dict[str, str] = {}
        for i, a in enumerate(args):
            cat = categories.get(a, "")
            values[f"prep{i}"] = self.prepositions.get(cat, self.prepositions.get("default", ""))
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

    # ---- events ----------------------------------------------------------------------------
    def instruction(self, text: str) -> str:
        return self.formats["instruction"].format(instruction=_sentence(text))

    def objects(self, names: Sequence[str]) -> str:
        """Object feedback, e.g. `Scene: There is a cyan, yellow block and a blue bowl.`"""
        fmt = self.formats.get("objects", "Scene: {objects}")
        if self.sort_objects:
            names = sorted(names)
        if self.object_list_style == "color_groups":
            listed = color_groups(names)
        elif self.object_list_style == "quoted_list":
            listed = "[" + ", ".join(f'"{n}"' for n in names) + "]"
        else:
            listed = ", ".join(names)
        return fmt.format(objects=listed)

    def action(self, skill: str, args: Sequence[str], categories: Mapping[str, str]) -> str:
        return self.formats["action"].format(action=self.skill_text(skill, args, categories))

    def skill_text(self, skill: str, args: Sequence[str], categories: Mapping[str, str]) -> str:
        tpl = self.skills.get(skill)
        if tpl is None:
            raise KeyError(f"prompt profile {self.name!r} has no template for skill {skill!r}")
        return tpl.render(args, categories)

    def human(self, text: str) -> str:
        """A person's interjection, e.g. `Human: Please stop.`"""
        fmt = self.formats.get("human_interjection") or self.formats.get("human") or "Human: {text}"
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


def color_groups(names: Sequence[str]) -> str:
    """'red block', 'blue block', 'green bowl' -> 'red, blue block and a green bowl' (IM Listing 1)."""
    groups: dict[str, list[str]] = {}
    others: list[str] = []
    for n in names:
        parts = n.rsplit(" ", 1)
        if len(parts) == 2:
            groups.setdefault(parts[1], []).append(parts[0])
        else:
            others.append(n)
    chunks = [f"{', '.join(colors)} {cat}" for cat, colors in groups.items()] + others
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
    raw: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected a mapping")
    formats = raw.get("formats") or {}
    missing = [k for k in _REQUIRED_FORMATS if k not in formats]
    if missing:
        raise ValueError(f"{path}: formats lack {missing}")
    preamble = ""
    if raw.get("preamble_file"):
        pre_path = prompt_dir / str(raw["preamble_file"])
        if not pre_path.is_file():
            raise ValueError(f"{path}: preamble file {pre_path} not found")
        preamble = pre_path.read_text(encoding="utf-8")
    skills = {
        str(k): SkillTemplate(str(v["template"]), dict(v.get("prepositions") or {}))
        for k, v in (raw.get("skills") or {}).items()
    }
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
    )
