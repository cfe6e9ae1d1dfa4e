"""Adding an object detector is a new module plus configuration: a module outside the package, named
by its dotted path in the `detector` parameter, is checked by the settings and built by make_detector."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from monologue_domain.robots import node_parameters
from perception_node.core.object_detectors import DETECTORS, make_detector
from perception_node.core.settings import settings_from_parameters

CONFIG = Path(__file__).resolve().parents[3] / "config"
FILES = ["monologue.yaml", "robots/sim.yaml"]

DETECTOR_MODULE = '''
"""Finds every candidate in the middle of the image."""
from __future__ import annotations

from perception_node.core.object_detectors import Detection, DetectorPlugin


class CentreDetector:
    name = "centre"

    def __init__(self, score):
        self.score = score

    def detect(self, image, candidates):
        h, w = image.shape[:2]
        return [Detection(c, self.score, (w / 4, h / 4, 3 * w / 4, 3 * h / 4)) for c in candidates]


PLUGIN = DetectorPlugin(lambda cfg, log: CentreDetector(max(cfg.score_threshold, 0.5)), "everything in the middle")
'''


@pytest.fixture
def detector_module(plugin_module: Callable[[str, str], str]) -> Iterator[str]:
    yield plugin_module("my_detectors.centre", DETECTOR_MODULE)
    DETECTORS.unregister("my_detectors.centre")


def test_a_detector_from_a_dotted_module_path_is_selected_by_the_settings(detector_module: str) -> None:
    s = settings_from_parameters({**node_parameters(CONFIG, "perception", FILES), "detector": detector_module})
    assert s.camera.detector.kind == detector_module and s.unused == ()
    det = make_detector(s.camera.detector)
    assert det.name == "centre" and detector_module in DETECTORS.names()
    out = det.detect(np.zeros((40, 80, 3), dtype=np.uint8), ["red block"])
    assert [(d.label, d.score, d.box) for d in out] == [("red block", 0.5, (20.0, 10.0, 60.0, 30.0))]


def test_an_unknown_detector_lists_the_known_ones() -> None:
    with pytest.raises(ValueError) as e:
        settings_from_parameters({**node_parameters(CONFIG, "perception", FILES), "detector": "magic"})
    assert "detector: unknown detectors 'magic'" in str(e.value)
    for name in ("oracle", "owlvit", "owlv2", "grounding_dino", "mdetr"):
        assert name in str(e.value)
