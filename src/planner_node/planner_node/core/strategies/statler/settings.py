"""The Statler strategies' parameters (`planner.statler.*`), validated once (no rclpy).

One block serves `statler`, `statler_unified`, `statler_auto`, `cap` and `cap_cot`
(../shared/papers/statler.txt §IV, Table III). Defaults live only in config/monologue.yaml
(`planner: statler:`).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from monologue_common.core.settings import ParamReader

from ...episode import InvalidEpisode
from ...role_llm import read_role_llm

STRATEGIES = ("statler", "statler_unified", "statler_auto", "cap", "cap_cot")
PROMPT_ROLES = ("reader", "writer", "auto_writer", "unified", "cap", "cap_cot")


@dataclass(frozen=True)
class StatlerSettings:
    """Prompt files and bounds of the Statler family."""

    prompt_dir: Path  # config/prompts
    prompts: dict[str, str]  # role (PROMPT_ROLES) -> file stem: <prompt_dir>/<stem>.txt ("": none for the domain)
    max_reprompts: int  # re-prompts after code or a state that does not parse (per reader/writer call)
    max_tokens_code: int  # tokens the reader may write per query
    max_tokens_state: int  # tokens the writer may write per state
    reader_history: bool  # statler*: earlier queries and code of the episode in the reader prompt (S: not stated)
    table_locations: tuple[str, ...]  # where put_first_on_second(x, "table") places x (first free one)
    max_state_chars: int  # longest state text that is parsed
    # statler, statler_auto: the writer's own LLM block (the planner's `llm.*` with `statler.writer_llm.*`
    # over it); empty = the writer uses the planner's backend
    writer_llm: Mapping[str, object] = field(default_factory=dict)
    # grammar-constrained decoding of the reader's code (grammar.py; not statler_unified)
    constrained: bool = False
    domain: str = ""  # statler.domain: a key of statler.domains whose prompt files replace statler.prompts

    def prompt_path(self, role: str) -> Path:
        """<prompt_dir>/<stem>.txt of `role`; MissingPrompt if the domain has no prompt for it."""
        stem = self.prompts.get(role, "")
        if not stem:
            raise MissingPrompt(f"statler.domain {self.domain!r} has no {role!r} prompt "
                                f"(statler.domains.{self.domain}.{role} is not set)")
        return self.prompt_dir / f"{stem}.txt"


class InvalidStatlerEpisode(InvalidEpisode):
    """Missing settings or prompt files, or no query (INVALID_GOAL)."""


class MissingPrompt(InvalidStatlerEpisode, ValueError):
    """The selected domain has no prompt file for a role its variant needs."""


def _domain_prompts(r: ParamReader, section: Mapping[str, object]) -> dict[str, dict[str, str]]:
    """`statler.domains.<domain>.<role>: <stem>` as {domain: {role: stem}}; unknown roles are errors."""
    out: dict[str, dict[str, str]] = {}
    for key, value in section.items():
        domain, _, role = key.partition(".")
        r.check(role in PROMPT_ROLES, f"statler.domains.{key}: the role must be one of {list(PROMPT_ROLES)}")
        r.check(isinstance(value, str) and bool(value.strip()),
                f"statler.domains.{key}: expected a prompt file stem, got {value!r}")
        out.setdefault(domain, {})[role] = str(value).strip()
    return out


def read_statler_settings(r: ParamReader, prompt_dir: str) -> StatlerSettings:
    """`statler.*` from a planner ParamReader (errors are collected in `r`; call `r.finish()`)."""
    prompts = {role: r.string(f"statler.prompts.{role}", nonempty=True) for role in PROMPT_ROLES}
    domain = r.string("statler.domain").strip()
    domains = _domain_prompts(r, r.section("statler.domains"))
    if domain:
        r.check(domain in domains, f"statler.domain: {domain!r} is not one of statler.domains {sorted(domains)}")
        own = domains.get(domain, {})
        prompts = {role: own.get(role, "") for role in PROMPT_ROLES}
    table = r.strings("statler.table_locations")
    r.check(bool(table), "statler.table_locations: needs at least one location")
    writer = read_role_llm(r, "statler.writer_llm")
    return StatlerSettings(
        prompt_dir=Path(prompt_dir).expanduser(),
        prompts=prompts,
        max_reprompts=r.integer("statler.max_reprompts", low=0),
        max_tokens_code=r.integer("statler.max_tokens_code", low=1),
        max_tokens_state=r.integer("statler.max_tokens_state", low=1),
        reader_history=r.boolean("statler.reader_history"),
        table_locations=table,
        max_state_chars=r.integer("statler.max_state_chars", low=100),
        writer_llm=writer,
        constrained=r.boolean("statler.constrained"),
        domain=domain,
    )
