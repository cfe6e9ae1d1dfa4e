"""`--suite statler`'s ROS-free part: the episode file's checks, scoring counted to the first failure with
temporal / non-temporal splits, and S Tables I-II with the paper's numbers (the generated episodes
themselves: test_statler_episodes.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from monologue_eval.core.statler_bench import (
    Episode,
    Query,
    SuiteError,
    failed_before,
    load_episodes,
    report_markdown,
    score_episode,
    score_query,
)


def test_the_suite_file_is_checked(tmp_path: Path) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_text("episodes:\n  - {id: a, domain: kitchen, queries: [{query: x, temporal: true}]}\n")
    with pytest.raises(SuiteError, match="kitchen"):
        load_episodes(bad)
    bad.write_text("episodes:\n  - {id: a, domain: weights, queries: [{query: x}]}\n")
    with pytest.raises(SuiteError, match="temporal"):
        load_episodes(bad)


EP = Episode("e", "disinfection", {}, (
    Query("The red block is dirty"),
    Query("Put the blue block on the red block", gold=(("blue block", "red block"),)),
    Query("Is the blue block clean?", temporal=True, say=("no",)),
    Query("Put the dirty blocks in the disinfector", temporal=True,
          gold=(("blue block", "disinfector"), ("red block", "disinfector"))),
))


def events(*per_query: tuple[list[tuple[str, str]], list[str]]) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for i, (moves, said) in enumerate(per_query):
        out.append(("ROBOT_THOUGHT", {"statler": "code", "query_index": i}))
        out += [("ROBOT_ACTION", {"call": list(m), "query_index": i}) for m in moves]
        out += [("ROBOT_THOUGHT", {"statler": "say", "say": s, "query_index": i}) for s in said]
    return out


def test_an_episode_succeeds_only_if_every_query_does() -> None:
    good = score_episode(EP, "statler", events(([], []), ([("the Blue block", "red block")], []),
                                               ([], ["No, it is dirty"]),
                                               ([("red block", "disinfector"), ("blue block", "disinfector")], [])))
    assert good.success and good.counts() == (4, 4) and good.counts(temporal=True) == (2, 2)
    # CaP-like: a wrong answer to the temporal question ends the count there
    bad = score_episode(EP, "cap", events(([], []), ([("blue block", "red block")], []), ([], ["yes"]),
                                          ([("red block", "disinfector")], [])))
    assert not bad.success and bad.counts() == (2, 3) and bad.counts(temporal=True) == (0, 1)
    assert "no answer containing" in bad.queries[-1].why
    moved = score_episode(EP, "cap", events(([("red block", "middle")], [])))
    assert moved.counts() == (0, 1) and "instead of" in moved.queries[0].why
    unanswered = score_episode(EP, "statler", events(([], [])), planner_error="PLANNING_FAILED")
    assert unanswered.counts() == (0, 1) and "the episode ended here: PLANNING_FAILED" in unanswered.queries[0].why
    cut = score_episode(EP, "statler", events(([], []), ([("blue block", "red block")], [])), planner_error="x")
    assert cut.counts() == (1, 2) and not cut.success


def test_tables_put_ours_beside_the_papers() -> None:
    good = score_episode(EP, "statler", events(([], []), ([("blue block", "red block")], []), ([], ["no"]),
                                               ([("blue block", "disinfector"), ("red block", "disinfector")], [])))
    bad = score_episode(EP, "cap", events(([], []), ([("blue block", "red block")], []), ([], ["yes"])))
    md = report_markdown([good, bad], "embedded")
    assert "| Statler | 1.00 (1/1, CI 0.21-1.00) / steps 1.00 (4/4, CI 0.51-1.00) [0.40 (0.82)] |" in md
    assert "| CaP | 0.00 (0/1, CI 0.00-0.79) / steps 0.67 (2/3, CI 0.21-0.94) [0.00 (0.68)] |" in md
    assert "| Disinfection | CaP | 1.00 (2/2, CI 0.34-1.00) [148/149] | 0.00 (0/1, CI 0.00-0.79) [1/20] |" in md
    assert "| Disinfection | Statler | 1.00 (2/2, CI 0.34-1.00) [164/168] | 1.00 (2/2, CI 0.34-1.00) [15/23] |" in md
    assert EP.scene_parameters(3)["sim.scene"] == "disinfection"


def test_answers_are_matched_as_whole_words_with_alternatives() -> None:
    q = Query("How many blocks are in the pink bowl?", temporal=True, say=("2|two",))
    assert score_query(q, 0, [], ["There are two blocks."], True).success
    assert score_query(q, 0, [], ["2"], True).success
    assert not score_query(q, 0, [], ["twelve"], True).success
    no = Query("Is the red block clean?", temporal=True, say=("no",))
    assert score_query(no, 0, [], ["No."], True).success
    assert not score_query(no, 0, [], ["I do not know"], True).success  # "no" inside "not", "know"


def test_the_bench_stops_an_episode_once_a_query_failed() -> None:
    def start(i: int) -> tuple[str, dict[str, Any]]:
        return ("HUMAN_INSTRUCTION", {"statler": "query", "query_index": i})

    ok = [start(0), *events(([], []))]
    assert not failed_before(EP, "cap", ok)  # query 0 has not been followed by another yet
    assert not failed_before(EP, "cap", [*ok, start(1)])  # query 0 succeeded
    moved = [start(0), *events(([("red block", "middle")], []))]
    assert failed_before(EP, "cap", [*moved, start(1)])  # a statement moved a block: decided
