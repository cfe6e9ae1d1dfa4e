"""IM sim success rule (IM:L698-702) on hand-built scenes; the judges registry."""
from __future__ import annotations

import pytest

from success_detector_node.core.judges.sim_geometric import SimGeometricDetector
from success_detector_node.core.judging import SceneEntry, make_judge


def scene(*entries: SceneEntry) -> dict[str, SceneEntry]:
    return {e.name: e for e in entries}


D = SimGeometricDetector(0.04)


def test_in_bowl_is_success() -> None:
    s = scene(SceneEntry("red block", "block", (0.5, 0.1, 0.025)), SceneEntry("red bowl", "bowl", (0.51, 0.1, 0.0)))
    v = D.detect("pick_place", ["red block", "red bowl"], s)
    assert v.success and v.confidence == 1.0


def test_just_outside_tolerance_fails() -> None:
    s = scene(SceneEntry("red block", "block", (0.5, 0.1, 0.025)), SceneEntry("red bowl", "bowl", (0.541, 0.1, 0.0)))
    v = D.detect("pick_place", ["red block", "red bowl"], s)
    assert not v.success and "4.1 cm" in v.explanation


def test_not_higher_than_block_fails() -> None:
    s = scene(SceneEntry("red block", "block", (0.5, 0.1, 0.02)), SceneEntry("blue block", "block", (0.5, 0.1, 0.02)))
    assert not D.detect("pick_place", ["red block", "blue block"], s).success


def test_location_skips_height() -> None:
    s = scene(SceneEntry("red block", "block", (0.7, 0.3, 0.02)), SceneEntry("top left corner", "location", (0.7, 0.3, 0.0)))
    assert D.detect("pick_place", ["red block", "top left corner"], s).success
    s2 = scene(SceneEntry("red block", "block", (0.7, 0.3, -0.5)), SceneEntry("top left corner", "location", (0.7, 0.3, 0.0)))
    assert D.detect("pick_place", ["red block", "top left corner"], s2).success


def test_missing_object_is_failure_with_reason() -> None:
    v = D.detect("pick_place", ["red block", "red bowl"], scene(SceneEntry("red bowl", "bowl", (0.5, 0.1, 0.0))))
    assert not v.success and "red block" in v.explanation


def test_unknown_skill_and_judge() -> None:
    assert not D.detect("wave", [], {}).success
    with pytest.raises(ValueError, match="unknown judges 'magic'; known: .*sim_geometric"):
        make_judge("magic", {})
    with pytest.raises(ValueError):
        SimGeometricDetector(0.0)


def test_skill_result_says_that_nothing_checked_the_skill() -> None:
    d = make_judge("skill_result", {})
    v = d.detect("go_to", ["table"], {})
    assert v.success and v.confidence == 0.5 and v.detector == "skill_result"
    assert v.explanation == "go_to(table): the skill reported success; nothing checked it"
