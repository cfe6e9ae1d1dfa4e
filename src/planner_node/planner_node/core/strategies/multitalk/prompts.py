"""MultiTalk's prompt files and its two persistent conversations (no rclpy).

A prompt file (config/prompts/multitalk_planner.txt, multitalk_analyzer.txt) is a `#%` header (the
supplement's lines it was rebuilt from, and its gaps) and blocks, each introduced by a line
`=== <block> ===`. The static blocks open a role's conversation; the other blocks are templates of
user turns whose `<placeholder>`s are filled in (`fill`). A conversation is rendered as plain text
for a completion backend: the static blocks, then `User:` and `<Role>:` turns, ending with an open
`<Role>:` turn for the model to complete.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ...episode import InvalidEpisode

HEADER_PREFIX = "#%"
_BLOCK = re.compile(r"^===\s*([a-z_]+)\s*===\s*$")
USER = "User"

# blocks each file must have; the static ones in the order they open the conversation
PLANNER_STATIC = ("system", "actions", "environment", "output_format")  # M l.36's order
PLANNER_TURNS = ("query", "analyzer_feedback", "human_feedback", "simulator_feedback", "perception_feedback")
ANALYZER_STATIC = ("system", "input_format", "environment", "critic", "restrictions", "output_format")  # M l.153-155
ANALYZER_TURNS = ("query_first", "query_subsequent")


class InvalidMultitalkEpisode(InvalidEpisode):
    """Missing settings or prompt files, or no instruction (INVALID_GOAL)."""


class PromptFileError(InvalidMultitalkEpisode):
    """A prompt file is missing, unreadable or lacks a block."""


@dataclass(frozen=True)
class PromptFile:
    """The blocks of one prompt file, by name."""

    path: Path
    blocks: Mapping[str, str]

    def block(self, name: str) -> str:
        return self.blocks[name]


def load_prompt_file(path: Path, required: tuple[str, ...]) -> PromptFile:
    """Read `path` (header lines dropped) into its blocks; PromptFileError if a required one is missing."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise PromptFileError(f"cannot read prompt file {path}: {e.strerror or e}") from None
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith(HEADER_PREFIX):
            continue
        m = _BLOCK.match(line)
        if m is not None:
            if m.group(1) in blocks:
                raise PromptFileError(f"{path}: block {m.group(1)!r} appears twice")
            current = blocks.setdefault(m.group(1), [])
        elif current is not None:
            current.append(line)
        elif line.strip():
            raise PromptFileError(f"{path}: text before the first `=== <block> ===` line: {line[:60]!r}")
    out = {name: "\n".join(lines).strip("\n") for name, lines in blocks.items()}
    missing = [b for b in required if not out.get(b, "").strip()]
    if missing:
        raise PromptFileError(f"{path}: missing or empty blocks {missing}")
    return PromptFile(path, out)


def fill(template: str, values: Mapping[str, str]) -> str:
    """`template` with every `<key>` of `values` replaced (other `<...>` text is left as written)."""
    for key, value in values.items():
        template = template.replace(f"<{key}>", value)
    return template


@dataclass
class Conversation:
    """One role's persistent dialogue (Planner or Analyzer), rendered for a completion backend."""

    role: str  # "Planner" | "Analyzer"
    static: str  # the static blocks, joined
    turns: list[tuple[str, str]] = field(default_factory=list)  # (speaker, text)

    @classmethod
    def open(cls, role: str, prompts: PromptFile, static: tuple[str, ...], values: Mapping[str, str]) -> Conversation:
        return cls(role, "\n\n".join(fill(prompts.block(b), values) for b in static))

    def prompt(self, message: str, notes: tuple[str, ...] = ()) -> str:
        """The text the model completes: the conversation, the user turn `message` (and re-prompt
        `notes` after it), then the open turn of this role."""
        parts = [self.static]
        parts.extend(f"{who}:\n{text}" for who, text in self.turns)
        user = message + "".join(f"\n{n}" for n in notes)
        parts.append(f"{USER}:\n{user}")
        return "\n\n".join(parts) + f"\n\n{self.role}:\n"

    def commit(self, message: str, answer: str) -> None:
        """Keep a user turn and the answer that was accepted for it."""
        self.turns.append((USER, message))
        self.turns.append((self.role, answer))

    @property
    def stop(self) -> tuple[str, ...]:
        """Where the model's turn ends."""
        return (f"\n{USER}:", f"\n{self.role}:")
