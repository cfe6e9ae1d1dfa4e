"""The reliability driver's `--out` rows imported into results/ fill docs/reliability.md's generated table."""
from __future__ import annotations

from pathlib import Path

from monologue_eval.reliability.__main__ import write_rows
from monologue_eval.reliability.common import Row
from monologue_eval.results.importer import import_run
from monologue_eval.results.store import load_runs
from monologue_eval.results.tables import NOT_RUN, TABLES


def test_reliability_rows_fill_the_reliability_table(tmp_path: Path) -> None:
    assert "| R1 fuzzed LLM output" in TABLES["reliability"]([]) and NOT_RUN in TABLES["reliability"]([])
    write_rows(tmp_path / "rel", [Row("R6", "secrets", "0 hits", "0 hits in 14 outputs", True, 2.0)])
    import_run(tmp_path / "rel", tmp_path / "results" / "rel", "python -m monologue_eval.reliability --short",
               suite="reliability", commit="x")
    table = TABLES["reliability"](load_runs(tmp_path / "results"))
    r6 = next(x for x in table.splitlines() if x.startswith("| R6"))
    assert "0 hits in 14 outputs | pass | 2 s | `rel`" in r6
    assert next(x for x in table.splitlines() if x.startswith("| R1")).count(NOT_RUN) == 2
