"""Committed benchmark results (`results/<run>/`) and the docs tables generated from them (no rclpy).

- store.py: a result run: `episodes.jsonl.gz` (the bench's per-episode records, large strings cut) and
  `run.json` (command, commit, date, suite, robot, llm, column, non-default parameters, n per cell);
  `import_run` makes one from a finished `monologue-bench --out` directory.
- tables.py: the generated tables, one function per table id (registry `TABLES`).
- docs.py: the `<!-- report:<id> -->` ... `<!-- /report -->` regions of the docs, rebuilt or checked.
- cli.py: `monologue-report import | build | check | list`.
"""
