"""Judge `hand_camera` (issue 31): Spot's success from perception on the hand camera, the skill's own report
only as a labelled fallback."""
from __future__ import annotations

import pytest

from monologue_domain.scene import SceneObject
from success_detector_node.core.judging import Context, make_judge

PARAMS = {"xy_tolerance_m": 0.04, "stack_tolerance_m": 0.03, "sort_tolerance_m": 0.10, "clip_threshold": 0.5}
COUNTER = (4.0, 1.75, 0.96)  # m, odom: the coke on the far counter


def _scene(*objects: SceneObject) -> dict[str, SceneObject]:
    return {o.name: o for o in objects}



def test_a_pick_that_left_the_object_where_it_lay_is_a_failure() -> None:
    before = _scene(SceneObject("coke", "drink", COUNTER))
    after = _scene(SceneObject("coke", "drink", (4.01, 1.76, 0.96)))
    v = make_judge("hand_camera", PARAMS).detect("pick_up", ["coke"], after, Context(before=before))
    assert not v.success and v.confidence >= 0.9 and v.detector == "hand_camera"
    assert "still where it lay" in v.explanation


def test_a_pick_whose_object_is_gone_from_its_place_or_seen_in_the_gripper_succeeds() -> None:
    before = _scene(SceneObject("coke", "drink", COUNTER))
    gone = _scene(SceneObject("coke", "drink", COUNTER, visible=False))  # in view, not detected
    v = make_judge("hand_camera", PARAMS).detect("pick_up", ["coke"], gone, Context(before=before))
    assert v.success and v.detector == "hand_camera" and "no longer seen" in v.explanation
    in_hand = _scene(SceneObject("coke", "drink", (3.9, 1.2, 1.2)))
    v = make_judge("hand_camera", PARAMS).detect("pick_up", ["coke"], in_hand, Context(before=before))
    assert v.success and "in the gripper" in v.explanation
    v = make_judge("hand_camera", PARAMS).detect("pick_up", ["coke"], {}, Context(held=("coke",)))
    assert v.success and v.confidence == 1.0


def test_releases_fail_while_the_object_is_held_and_succeed_when_it_is_seen() -> None:
    judge = make_judge("hand_camera", PARAMS)
    v = judge.detect("put_down", ["coke"], {}, Context(held=("coke",)))
    assert not v.success and "still in the gripper" in v.explanation
    v = judge.detect("put_in_drawer", ["coke", "top drawer"], _scene(SceneObject("coke", "drink", (3.5, -2.0, 0.5))))
    assert v.success and v.detector == "hand_camera"


@pytest.mark.parametrize(("skill", "args"), [("go_to", ["table"]), ("stand", []), ("find", ["apple"]),
                                             ("pick_up", ["apple"]), ("put_down", ["apple"])])
def test_without_a_view_the_verdict_is_the_skill_report_labelled_as_such(skill: str, args: list[str]) -> None:
    v = make_judge("hand_camera", PARAMS).detect(skill, args, _scene(SceneObject("coke", "drink", COUNTER)))
    assert v.success and v.confidence == 0.5
    assert v.detector == "hand_camera/skill_report" and v.explanation.startswith("skill report (no camera check)")


def test_find_succeeds_on_a_detection() -> None:
    v = make_judge("hand_camera", PARAMS).detect("find", ["coke"], _scene(SceneObject("coke", "drink", COUNTER)))
    assert v.success and v.detector == "hand_camera"


def test_the_judge_asks_for_a_scene_captured_after_the_skill() -> None:
    """The hand camera moves with the skill: a refreshed scene may come from a frame taken during its last
    motion (the node then asks again, success_detector_node/node.py)."""
    from success_detector_node.core.judging import JUDGES

    assert JUDGES.get("hand_camera").fresh_scene and not JUDGES.get("tabletop").fresh_scene
