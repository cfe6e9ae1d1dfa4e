"""The detections drawn onto the colour image (perception/detections_image)."""
from __future__ import annotations

import numpy as np

from perception_node.core.object_detectors import Detection
from perception_node.core.overlay import draw_detections


def test_boxes_are_drawn_in_the_label_colour_and_the_input_is_untouched() -> None:
    rgb = np.full((120, 160, 3), 255, np.uint8)
    out = draw_detections(rgb, [Detection("red block", 0.9, (40.0, 50.0, 90.0, 100.0)),
                                Detection("blue bowl", 0.5, (100.0, 60.0, 100.0, 80.0))])  # empty box: skipped
    assert out.shape == rgb.shape and out.dtype == np.uint8 and (rgb == 255).all()
    assert tuple(out[75, 40]) == (229, 57, 53) and tuple(out[100, 65]) == (229, 57, 53)  # the box's edges
    assert tuple(out[75, 65]) == (255, 255, 255)          # its inside is left as it was
    assert (out[36:50, 40:90] != 255).any()                # the label above it
    assert tuple(out[70, 100]) == (255, 255, 255)          # nothing for the empty box
