"""The generated regions of the docs (no rclpy): a table between

    <!-- report:<table id> -->
    ...
    <!-- /report -->

is rebuilt by `make report` (`monologue-report build`) from results/ with the function registered for
its id in tables.TABLES, and `monologue-report check` (and a test) fail when a region differs from its
regeneration. Text outside the regions is never touched.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .store import ResultError, Run
from .tables import TABLES, TableFn

DOCS = ("docs/benchmark.md", "docs/reliability.md")  # relative to the work tree
_REGION = re.compile(r"(<!-- report:(?P<id>[A-Za-z0-9_.-]+) -->\n)(?P<body>.*?)(<!-- /report -->)", re.S)
_OPEN = re.compile(r"<!-- report:([^ ]*) -->")


@dataclass(frozen=True)
class Region:
    table: str
    body: str


def regions(text: str) -> list[Region]:
    """The generated regions of a document, in order; ResultError for an unclosed or nested region."""
    found = [Region(m.group("id"), m.group("body")) for m in _REGION.finditer(text)]
    if len(found) != len(_OPEN.findall(text)) or text.count("<!-- /report -->") != len(found):
        raise ResultError("a <!-- report:<id> --> region is not closed by <!-- /report --> (or regions nest)")
    return found


def render(text: str, runs: Sequence[Run], tables: Mapping[str, TableFn] = TABLES) -> str:
    """`text` with every region's body regenerated; ResultError naming an unknown table id."""
    regions(text)  # malformed markers fail here

    def body(m: re.Match[str]) -> str:
        tid = m.group("id")
        if tid not in tables:
            raise ResultError(f"unknown table id {tid!r} in a report region; known: {sorted(tables)}")
        return m.group(1) + tables[tid](runs).rstrip("\n") + "\n" + m.group(4)

    return _REGION.sub(body, text)


def stale(text: str, runs: Sequence[Run], tables: Mapping[str, TableFn] = TABLES) -> list[str]:
    """Ids of the regions whose body differs from its regeneration."""
    new = {r.table: r.body for r in regions(render(text, runs, tables))}
    return [r.table for r in regions(text) if new.get(r.table) != r.body]


def build(root: Path, runs: Sequence[Run], docs: Sequence[str] = DOCS) -> list[str]:
    """Rewrite the docs' regions; the documents that changed."""
    changed = []
    for rel in docs:
        path = root / rel
        text = path.read_text(encoding="utf-8")
        new = render(text, runs)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(rel)
    return changed


def check(root: Path, runs: Sequence[Run], docs: Sequence[str] = DOCS) -> dict[str, list[str]]:
    """{document: stale region ids} of the documents with a region that differs from its regeneration."""
    out = {}
    for rel in docs:
        bad = stale((root / rel).read_text(encoding="utf-8"), runs)
        if bad:
            out[rel] = bad
    return out
