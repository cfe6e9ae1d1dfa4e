"""The MultiTalk benchmark's ROS-free part: variants' planner parameters, counts from the transcript's
summary event, rows round-tripping through JSON, the table."""
from __future__ import annotations

from typing import Any

import pytest

from monologue_eval.core.multitalk_bench import Row, planner_params, summary_counts, table
from monologue_eval.suites.multitalk import parse_args


def test_variants_and_counts() -> None:
    assert planner_params("im") == {"strategy": "inner_monologue"}
    assert planner_params("no_analyzer") == {"strategy": "multitalk", "multitalk.ablation": "no_analyzer"}
    with pytest.raises(ValueError, match="unknown variant"):
        planner_params("statler")
    events: list[dict[str, Any]] = [{"multitalk": "planner"},
                                    {"multitalk": "summary", "counts": {"analyzer_rounds": 3, "reprompts": 1}}]
    assert summary_counts(events) == {"analyzer_rounds": 3, "reprompts": 1} and summary_counts([{}]) == {}


def test_rows_and_table() -> None:
    rows = [Row("full", 1, True, "NONE", 2, {"plans_accepted": 2, "analyzer_rounds": 3, "simulator_rejections": 1},
                20.0),
            Row("full", 2, False, "PLANNING_FAILED", 0, {"reprompts": 4}, 30.0),
            Row("im", 1, True, "NONE", 2, {}, 10.0)]
    assert [Row.from_json(r.to_json()) for r in rows] == rows
    text = table(rows, "embedded")
    assert "| MultiTalk (full) | 2 | 1/2 | 1.0 | 1.5 | 0.0 | 0.0 | 0.5 | 2.0 | 0.0 | 1.0 |" in text
    assert "| Inner Monologue | 1 | 1/1 | - | - | - | - | - | - | - | 2.0 |" in text
    assert "MultiTalk (full): NONE 1, PLANNING_FAILED 1" in text and "Planner + Simulator" not in text
    ns = parse_args(["--variants", "full,im", "--scenes", "3", "--param", "planner:multitalk.max_rounds=3"])
    assert ns.instructions == 3 and ns.param == ["planner:multitalk.max_rounds=3"]


def test_table_names_the_runs_parameters() -> None:
    rows = [Row("full", 1, True, "NONE", 2, {"planner_rounds": 1}, 3.0)]
    text = table(rows, "expert", ["planner:llm.expert.error_rate=0.2"])
    assert text.startswith("MultiTalk benchmark (llm expert; planner:llm.expert.error_rate=0.2):")
    assert "| MultiTalk (full) | 1 | 1/1 |" in text
