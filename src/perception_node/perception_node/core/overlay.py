"""The detections drawn onto the colour image (for the web monitor, RViz's Image display, Foxglove)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from .object_detectors import Detection

# box colour per label word; anything else orange
_COLOURS = {"red": (229, 57, 53), "green": (67, 160, 71), "blue": (30, 136, 229), "yellow": (253, 216, 53),
            "purple": (142, 36, 170), "orange": (251, 140, 0), "pink": (236, 64, 122), "cyan": (0, 172, 193)}


def _colour(label: str) -> tuple[int, int, int]:
    return next((_COLOURS[w] for w in label.lower().split() if w in _COLOURS), (255, 152, 0))


def draw_detections(rgb: NDArray[np.uint8], detections: Sequence[Detection], width_px: int = 2) -> NDArray[np.uint8]:
    """A copy of the HxWx3 uint8 image with each detection's box (px) and `label score` drawn."""
    from PIL import Image, ImageDraw

    img = Image.fromarray(np.ascontiguousarray(rgb), "RGB")
    draw = ImageDraw.Draw(img)
    for d in detections:
        x0, y0, x1, y1 = (float(v) for v in d.box)
        if not (x1 > x0 and y1 > y0):
            continue
        c = _colour(d.label)
        draw.rectangle((x0, y0, x1, y1), outline=c, width=width_px)
        text = f"{d.label} {d.score:.2f}"
        tx, ty = x0 + 2, max(0.0, y0 - 12)
        box = draw.textbbox((tx, ty), text)
        draw.rectangle(box, fill=c)
        draw.text((tx, ty), text, fill=(0, 0, 0))
    return np.asarray(img, dtype=np.uint8)
