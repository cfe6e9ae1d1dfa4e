"""Bad input (docs/reliability.md): empty, 1 MB and invalid instructions and interjections, unknown names,
malformed prompt profiles and config files, corrupted bags and cassettes: each a clear error naming the
input, no crash, nothing recorded lost (monologue_eval/reliability/bad_input.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from monologue_common.core.settings import parameters_from_files
from monologue_eval.reliability import bad_input


def test_every_bad_input_is_a_clear_error_and_nothing_recorded_is_lost() -> None:
    report = bad_input.measure()
    assert report.failed == [], [(c.name, c.message) for c in report.failed]
    assert report.lost == []
    names = {c.name for c in report.cases}
    assert {"empty instruction", "1 MB instruction", "unknown strategy", "prompt profile malformed_yaml",
            "malformed config YAML", "cassette truncated (replay)", "bag: garbage MCAP"} <= names


def test_a_malformed_parameter_file_is_named_in_the_error(tmp_path: Path) -> None:
    bad = tmp_path / "broken.yaml"
    bad.write_text("planner:\n  ros__parameters:\n    strategy: [unclosed\n", encoding="utf-8")
    with pytest.raises(ValueError, match="broken.yaml: not a valid YAML file"):
        parameters_from_files([bad], "planner")
