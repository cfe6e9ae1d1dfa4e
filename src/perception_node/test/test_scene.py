"""Oracle scene source: ground truth becomes the scene description."""
from __future__ import annotations

from perception_node.core.scene import OracleSceneSource, Scene, SceneObject


def test_oracle_marks_everything_visible_and_relabels() -> None:
    gt = Scene("base_link", 1.0, "ground_truth", (
        SceneObject("red block", "block", (0.5, 0.1, 0.02), visible=False, confidence=0.3),
        SceneObject("middle", "location", (0.5, 0.0, 0.0)),
    ))
    out = OracleSceneSource().describe(gt)
    assert out.source == "oracle"
    assert all(o.visible and o.confidence == 1.0 for o in out.objects)
    assert out.visible_names() == ["red block"]
    assert out.visible_names(include_locations=True) == ["red block", "middle"]
    assert OracleSceneSource(include_locations=False).describe(gt).visible_names(True) == ["red block"]
