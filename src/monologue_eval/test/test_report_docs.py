"""Every generated table of docs/benchmark.md and docs/reliability.md equals its regeneration from the
committed results/ (`make report` rebuilds them; monologue_eval/results/)."""
from __future__ import annotations

from pathlib import Path

from monologue_eval.results.docs import DOCS, check, regions
from monologue_eval.results.store import load_runs
from monologue_eval.results.tables import TABLES

ROOT = Path(__file__).resolve().parents[3]


def test_every_docs_table_is_its_regeneration_from_results() -> None:
    runs = load_runs(ROOT / "results")
    assert check(ROOT, runs) == {}, "a docs table differs from results/: run `make report`"


def test_the_docs_have_a_region_for_every_suite_table() -> None:
    ids = {r.table for doc in DOCS for r in regions((ROOT / doc).read_text(encoding="utf-8"))}
    assert ids == set(TABLES)


def test_results_stay_small() -> None:
    total = sum(p.stat().st_size for p in (ROOT / "results").rglob("*") if p.is_file())
    assert total < 5_000_000  # bytes
    assert not [p for p in (ROOT / "results").rglob("*") if p.suffix in (".png", ".jpg", ".mcap", ".db3")]
