"""The EPISODE_END event counts the step decisions and those with a single candidate (what a filtering
rule such as `scoring.goal_check: directed` decided alone; reported by monologue-report)."""
from __future__ import annotations

from monologue_domain.transcript import EventKind, Transcript
from planner_node.core.episode import EpisodeError, ScoredCandidate, StepRecord, finish


def _step(i: int, n: int) -> StepRecord:
    cands = tuple(ScoredCandidate(f"c{j}", None, -1.0, 1.0 / n, 1.0, 1.0 / n) for j in range(n))
    return StepRecord(i, cands, cands[0], "none", 0, 0, 0.0, 0.0)


def test_episode_end_counts_decisions_and_single_candidates() -> None:
    t = Transcript("e")
    finish(t, EpisodeError.NONE, "done", 2, [_step(1, 4), _step(2, 1), _step(3, 1)])
    end = [e for e in t.events if e.kind == EventKind.EPISODE_END]
    assert len(end) == 1
    assert (end[0].data["decisions"], end[0].data["single_candidate"], end[0].data["steps_taken"]) == (3, 2, 2)


def test_an_episode_without_steps_counts_none() -> None:
    t = Transcript("e")
    finish(t, EpisodeError.PLANNING_FAILED, "no moves", 0)
    end = next(e for e in t.events if e.kind == EventKind.EPISODE_END)
    assert (end.data["decisions"], end.data["single_candidate"]) == (0, 0)
