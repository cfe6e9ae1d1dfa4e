"""CLIP image-text similarity (transformers CLIP from a local directory): whole-image scores for the
success detector, crop classification for perception's re-ranking."""
from __future__ import annotations

import logging
import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from .images import RgbImage, check_image
from .models import from_pretrained, import_module, offline_mode, resolve_model, set_threads, to_pil

Box = tuple[float, float, float, float]  # x_min, y_min, x_max, y_max in pixels


class ClipScorer:
    """CLIP image-text similarity: crop classification and whole-image scores."""

    def __init__(self, model_path: str, allow_download: bool = False, num_threads: int = 0,
                 logger: logging.Logger | None = None) -> None:
        self._log = logger or logging.getLogger(__name__)
        offline_mode(allow_download)
        path = resolve_model(model_path, allow_download, "clip")
        tf = import_module("transformers")
        set_threads(num_threads)
        self._processor = from_pretrained(tf.CLIPProcessor, path, allow_download, "clip")
        self._model = from_pretrained(tf.CLIPModel, path, allow_download, "clip").eval()
        self._torch = import_module("torch")
        self._log.info("loaded clip from %s", path)

    def logits(self, images: Sequence[RgbImage], texts: Sequence[str]) -> NDArray[np.float64]:
        """len(images) x len(texts) CLIP logits (scaled cosine similarities)."""
        if not images or not texts:
            raise ValueError("need at least one image and one text")
        inputs = self._processor(text=list(texts), images=[to_pil(i) for i in images], return_tensors="pt",
                                 padding=True, truncation=True)
        with self._torch.no_grad():
            out = self._model(**inputs)
        return np.asarray(out.logits_per_image.float().numpy(), dtype=np.float64)

    def score(self, image: RgbImage, texts: Sequence[str]) -> list[float]:
        """CLIP logits of one image against each text (the success detector's ImageTextScorer)."""
        return [float(v) for v in self.logits([image], texts)[0]]

    def classify_crops(self, image: RgbImage, boxes: Sequence[Box], labels: Sequence[str],
                       pad_fraction: float = 0.1) -> NDArray[np.float64]:
        """Softmax over `labels` for each box crop (len(boxes) x len(labels)); boxes are padded by
        `pad_fraction` of their size on each side."""
        check_image(image)
        h, w = image.shape[:2]
        crops = []
        for b in boxes:
            pw, ph = (b[2] - b[0]) * pad_fraction, (b[3] - b[1]) * pad_fraction
            u0, v0 = max(0, int(b[0] - pw)), max(0, int(b[1] - ph))
            u1, v1 = min(w, int(math.ceil(b[2] + pw)) + 1), min(h, int(math.ceil(b[3] + ph)) + 1)
            crops.append(np.ascontiguousarray(image[v0:max(v1, v0 + 1), u0:max(u1, u0 + 1)]))
        logits = self.logits(crops, [f"a photo of a {lbl}" for lbl in labels])
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return np.asarray(e / e.sum(axis=1, keepdims=True), dtype=np.float64)
