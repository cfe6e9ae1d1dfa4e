"""The `kitchen` judge judges kitchen skills from the encoded ground truth."""
from __future__ import annotations

from monologue_domain.kitchen.scene import to_scene_objects
from monologue_domain.kitchen.world import KitchenNoise, KitchenWorld, make_state
from success_detector_node.core.judges.kitchen import KitchenDetector


def scene(w: KitchenWorld) -> dict[str, object]:
    return {o.name: o for o in to_scene_objects(w.state())}


def test_success_and_failure_from_the_scene() -> None:
    d = KitchenDetector()
    w = KitchenWorld(make_state({"coke": "far counter"}, "far counter"))
    assert w.execute("pick_up", ["coke"]).ok
    v = d.detect("pick_up", ["coke"], scene(w))  # type: ignore[arg-type]
    assert v.success and v.confidence == 1.0 and "holds the coke" in v.explanation
    dropped = KitchenWorld(make_state({"coke": "far counter"}, "far counter"), noise=KitchenNoise(drop_rate=1.0))
    assert dropped.execute("pick_up", ["coke"]).ok  # the policy thinks it worked
    assert not d.detect("pick_up", ["coke"], scene(dropped)).success  # type: ignore[arg-type]
    assert not d.detect("pick_place", ["a", "b"], scene(w)).success  # type: ignore[arg-type]
    assert "not a kitchen scene" in d.detect("pick_up", ["coke"], {}).explanation
