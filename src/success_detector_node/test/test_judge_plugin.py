"""Adding a judge is a new module plus configuration: a module outside the package, named by its dotted
path in the `judge` parameter, is found, checked by the settings and built (no rclpy)."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from monologue_domain.robots import node_parameters
from success_detector_node.core.judging import JUDGES, SceneEntry, make_judge
from success_detector_node.core.settings import settings_from_parameters

CONFIG = Path(__file__).resolve().parents[3] / "config"
FILES = ["monologue.yaml", "robots/sim_kinematic.yaml", "llm/embedded.yaml"]

JUDGE_MODULE = '''
"""A judge that calls every skill a success when the object is anywhere in the scene."""
from __future__ import annotations

from success_detector_node.core.judging import JudgePlugin, Verdict


class SeenJudge:
    name = "seen"

    def __init__(self, confidence: float) -> None:
        self.confidence = confidence

    def detect(self, skill, args, scene, context=None):
        ok = bool(args) and args[0] in scene
        return Verdict(ok, self.confidence, f"the {args[0] if args else 'object'} is in the scene: {ok}", self.name)


PLUGIN = JudgePlugin(lambda tools: SeenJudge(min(1.0, tools.param("xy_tolerance_m") * 10)),
                     "the object is in the scene")
'''


@pytest.fixture
def judge_module(plugin_module: Callable[[str, str], str]) -> Iterator[str]:
    yield plugin_module("my_judges.seen", JUDGE_MODULE)
    JUDGES.unregister("my_judges.seen")


def test_a_judge_from_a_dotted_module_path_is_selected_by_the_settings(judge_module: str) -> None:
    params = node_parameters(CONFIG, "success_detector", FILES)
    s = settings_from_parameters({**params, "judge": judge_module})
    assert s.judge == judge_module and not s.needs_images and not s.needs_llm and s.unused == ()
    judge = make_judge(s.judge, s.judge_params())
    block = SceneEntry("red block", "block", (0.5, 0.1, 0.02))
    v = judge.detect("pick_place", ["red block", "red bowl"], {"red block": block})
    assert v.success and v.detector == "seen" and v.confidence == pytest.approx(0.4)
    assert not judge.detect("pick_place", ["blue block", "red bowl"], {"red block": block}).success
    assert judge_module in JUDGES.names()


def test_an_unknown_judge_lists_the_known_ones() -> None:
    params = node_parameters(CONFIG, "success_detector", FILES)
    with pytest.raises(ValueError) as e:
        settings_from_parameters({**params, "judge": "magic"})
    assert "judge: unknown judges 'magic'" in str(e.value)
    for name in ("sim_geometric", "tabletop", "clip", "llm_judge", "kitchen", "skill_result"):
        assert name in str(e.value)
    with pytest.raises(ValueError, match="my_missing_judges.nothing"):
        settings_from_parameters({**params, "judge": "my_missing_judges.nothing"})


def test_the_old_parameter_name_is_an_error_naming_the_new_one() -> None:
    params = node_parameters(CONFIG, "success_detector", FILES)
    with pytest.raises(ValueError, match=r"strategy: renamed to `judge`.*judge:=tabletop"):
        settings_from_parameters({**params, "strategy": "tabletop"})


def test_the_builtin_judges_describe_themselves() -> None:
    assert set(JUDGES.names()) >= {"sim_geometric", "tabletop", "clip", "llm_judge", "kitchen", "skill_result"}
    listing = JUDGES.listing()
    assert listing.startswith("judges:") and "IM sim" in listing
    assert JUDGES.get("clip").needs_images and JUDGES.get("llm_judge").needs_llm
