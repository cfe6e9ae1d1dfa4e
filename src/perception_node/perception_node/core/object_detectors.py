"""Object detectors: open-vocabulary 2D detectors behind one Protocol, image + candidate names ->
labelled boxes.

Plug-ins of the registry `DETECTORS` (kind "detectors", the perception parameter `detector`): OWL-ViT /
OWLv2 and Grounding DINO (transformers), MDETR (the IM paper's model: core/mdetr.py with an official
checkpoint and a local roberta-base directory), CLIP re-ranking of crops, and an oracle that projects
ground-truth objects into the image and keeps what the depth image shows is visible.
Another detector is a module on PYTHONPATH defining `PLUGIN = DetectorPlugin(create, description)`,
selected by its dotted module path (`detector: my_pkg.my_detector`) or an entry point in the group
`monologue.detectors`.

Model weights are never downloaded unless `allow_download` is true, and torch and transformers are
imported on first use (monologue_vision.models); the CLIP scorer is monologue_vision.clip's.
"""
from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from monologue_common.core.registry import Registry
from monologue_vision.clip import ClipScorer
from monologue_vision.images import RgbImage, check_image
from monologue_vision.models import (
    ModelLoadError,
    from_pretrained,
    import_module,
    offline_mode,
    resolve_model,
    set_threads,
    to_pil,
)

from .geometry import Box, FloatArray, Intrinsics, apply, invert, valid_depth_mask


@dataclass(frozen=True)
class Detection:
    label: str                                 # one of the candidate names
    score: float                               # [0, 1]
    box: Box                                   # x_min, y_min, x_max, y_max (px)


class Detector(Protocol):
    """Finds the candidate objects in an RGB image."""

    name: str

    def detect(self, image: RgbImage, candidates: Sequence[str]) -> list[Detection]: ...


def caption(candidates: Sequence[str]) -> str:
    """IM real tabletop (IM:L747-755): "we join the list of all possible object names together,
    separated by periods". Names are lower-cased and stripped; e.g. "red block. blue bowl."."""
    names = [c.strip().lower().rstrip(".") for c in candidates if c.strip()]
    if not names:
        raise ValueError("no candidate object names to detect")
    return ". ".join(names) + "."


def match_label(phrase: str, candidates: Sequence[str]) -> str | None:
    """The candidate a detector's text span refers to: exact match, else the candidate sharing the
    most words with it (ties: the shorter candidate). None if no word is shared."""
    p = phrase.strip().lower().rstrip(".")
    words = set(re.findall(r"[\w']+", p))
    best: tuple[int, int, str] | None = None
    for c in candidates:
        cl = c.strip().lower()
        if cl == p:
            return c
        overlap = len(words & set(re.findall(r"[\w']+", cl)))
        if overlap and (best is None or (overlap, -len(cl)) > (best[0], best[1])):
            best = (overlap, -len(cl), c)
    return None if best is None else best[2]


def best_per_label(detections: Sequence[Detection]) -> list[Detection]:
    """Keep the highest-scoring detection of each label (names are unique in a scene)."""
    best: dict[str, Detection] = {}
    for d in detections:
        if d.label not in best or d.score > best[d.label].score:
            best[d.label] = d
    return sorted(best.values(), key=lambda d: -d.score)


def clip_boxes(detections: Sequence[Detection], width: int, height: int, min_size_px: float = 2.0) -> list[Detection]:
    """Clip boxes to the image and drop the degenerate ones."""
    out = []
    for d in detections:
        x0, y0 = min(max(d.box[0], 0.0), width - 1.0), min(max(d.box[1], 0.0), height - 1.0)
        x1, y1 = min(max(d.box[2], 0.0), width - 1.0), min(max(d.box[3], 0.0), height - 1.0)
        if x1 - x0 >= min_size_px and y1 - y0 >= min_size_px:
            out.append(Detection(d.label, d.score, (x0, y0, x1, y1)))
    return out


# ----------------------------------------------------------------------------- OWL-ViT / OWLv2 --

class OwlDetector:
    """OWL-ViT (v1) or OWLv2 open-vocabulary detection; one text query per candidate name."""

    def __init__(self, model_path: str, version: str, score_threshold: float, allow_download: bool,
                 num_threads: int, logger: logging.Logger | None = None) -> None:
        if version not in ("owlvit", "owlv2"):
            raise ValueError(f"version must be owlvit or owlv2, got {version!r}")
        self.name = version
        self.score_threshold = score_threshold
        self._log = logger or logging.getLogger(__name__)
        offline_mode(allow_download)
        path = resolve_model(model_path, allow_download, version)
        tf = import_module("transformers")
        set_threads(num_threads)
        model_cls = tf.OwlViTForObjectDetection if version == "owlvit" else tf.Owlv2ForObjectDetection
        proc_cls = tf.OwlViTProcessor if version == "owlvit" else tf.Owlv2Processor
        self._processor = from_pretrained(proc_cls, path, allow_download, version)
        self._model = from_pretrained(model_cls, path, allow_download, version).eval()
        self._torch = import_module("torch")
        self._log.info("loaded %s from %s", version, path)

    def detect(self, image: RgbImage, candidates: Sequence[str]) -> list[Detection]:
        check_image(image)
        queries = [c.strip().lower() for c in candidates if c.strip()]
        if not queries:
            raise ValueError("no candidate object names to detect")
        h, w = image.shape[:2]
        inputs = self._processor(text=[queries], images=to_pil(image), return_tensors="pt")
        with self._torch.no_grad():
            outputs = self._model(**inputs)
        # OWLv2 pads the image to a square before resizing: boxes are relative to the padded image.
        size = (max(h, w), max(h, w)) if self.name == "owlv2" else (h, w)
        res = self._processor.post_process_grounded_object_detection(
            outputs=outputs, threshold=self.score_threshold, target_sizes=[size])[0]
        dets = [
            Detection(candidates[int(lbl)], float(s), tuple(float(v) for v in b.tolist()))  # type: ignore[arg-type]
            for s, lbl, b in zip(res["scores"], res["labels"], res["boxes"])
        ]
        return best_per_label(clip_boxes(dets, w, h))


# ------------------------------------------------------------------------------ Grounding DINO --

class GroundingDinoDetector:
    """Grounding DINO with the period-joined caption; text spans are mapped back to candidates."""

    name = "grounding_dino"

    def __init__(self, model_path: str, box_threshold: float, text_threshold: float, allow_download: bool,
                 num_threads: int, logger: logging.Logger | None = None) -> None:
        self.box_threshold, self.text_threshold = box_threshold, text_threshold
        self._log = logger or logging.getLogger(__name__)
        offline_mode(allow_download)
        path = resolve_model(model_path, allow_download, self.name)
        tf = import_module("transformers")
        set_threads(num_threads)
        self._processor = from_pretrained(tf.AutoProcessor, path, allow_download, self.name)
        self._model = from_pretrained(tf.AutoModelForZeroShotObjectDetection, path, allow_download,
                                       self.name).eval()
        self._torch = import_module("torch")
        self._log.info("loaded grounding_dino from %s", path)

    def detect(self, image: RgbImage, candidates: Sequence[str]) -> list[Detection]:
        check_image(image)
        h, w = image.shape[:2]
        inputs = self._processor(images=to_pil(image), text=caption(candidates), return_tensors="pt")
        with self._torch.no_grad():
            outputs = self._model(**inputs)
        res = self._processor.post_process_grounded_object_detection(
            outputs, inputs["input_ids"], threshold=self.box_threshold, text_threshold=self.text_threshold,
            target_sizes=[(h, w)])[0]
        dets = []
        for s, phrase, b in zip(res["scores"], res["text_labels"], res["boxes"]):
            label = match_label(str(phrase), candidates)
            if label is not None:
                dets.append(Detection(label, float(s), tuple(float(v) for v in b.tolist())))  # type: ignore[arg-type]
        return best_per_label(clip_boxes(dets, w, h))


# ------------------------------------------------------------------------------------------ CLIP --

class ClipReranker:
    """Wraps a detector: CLIP re-classifies each box crop over the candidates; the label becomes the
    CLIP argmax and the score the geometric mean of detector score and CLIP probability.
    Detections whose combined score falls below `min_score` are dropped."""

    def __init__(self, detector: Detector, clip: ClipScorer, min_score: float = 0.05) -> None:
        self.inner, self.clip, self.min_score = detector, clip, min_score
        self.name = f"{detector.name}+clip"

    def detect(self, image: RgbImage, candidates: Sequence[str]) -> list[Detection]:
        dets = self.inner.detect(image, candidates)
        if not dets:
            return []
        probs = self.clip.classify_crops(image, [d.box for d in dets], candidates)
        out = []
        for d, p in zip(dets, probs):
            j = int(np.argmax(p))
            s = math.sqrt(max(d.score, 0.0) * float(p[j]))
            if s >= self.min_score:
                out.append(Detection(candidates[j], s, d.box))
        return best_per_label(out)


# ----------------------------------------------------------------------------------------- MDETR --

def caption_spans(candidates: Sequence[str]) -> tuple[str, list[tuple[int, int, int]]]:
    """The caption (see `caption`) and, for each non-empty candidate, (candidate index, start, end)
    of its name in the caption's characters."""
    text, spans, start = caption(candidates), [], 0
    for i, c in enumerate(candidates):
        name = c.strip().lower().rstrip(".")
        if c.strip() and name:
            beg = text.find(name, start)
            spans.append((i, beg, beg + len(name)))
            start = beg + len(name)
    return text, spans


class MdetrDetector:
    """MDETR (Kamath et al. 2021), as in IM's real tabletop, from local files only.

    `checkpoint` is an official MDETR ResNet-101 checkpoint such as pretrained_resnet101_checkpoint.pth;
    `text_encoder_dir` a local roberta-base directory (config.json and the tokenizer files; the
    text encoder's weights come from the checkpoint). The model is core/mdetr.py, a plain-torch
    re-implementation with the official parameter names (no torchvision, no timm). Each query whose
    1 - p(no object) exceeds `score_threshold` is labelled with the candidate whose caption tokens get
    most of its probability mass. See docs/perception.md.
    """

    name = "mdetr"

    def __init__(self, checkpoint: str, text_encoder_dir: str, model_name: str, score_threshold: float,
                 num_threads: int, resize_px: int = 800, max_size_px: int = 1333,
                 logger: logging.Logger | None = None) -> None:
        self.score_threshold, self.resize_px, self.max_size_px = score_threshold, resize_px, max_size_px
        self._log = logger or logging.getLogger(__name__)
        ckpt, text_dir = Path(checkpoint).expanduser(), Path(text_encoder_dir).expanduser()
        if not checkpoint.strip() or not ckpt.is_file():
            raise ModelLoadError(
                f"MDETR checkpoint {ckpt} does not exist (parameter models.mdetr_checkpoint; see docs/perception.md)")
        if not text_encoder_dir.strip() or not (text_dir / "config.json").is_file():
            raise ModelLoadError(
                f"MDETR text encoder directory {text_dir} has no config.json (parameter "
                "models.mdetr_text_encoder_dir: a local roberta-base copy, see docs/perception.md)")
        self._torch = import_module("torch")
        self._mdetr = import_module("perception_node.core.mdetr")
        if model_name not in self._mdetr.MODEL_NAMES:
            raise ModelLoadError(f"MDETR model {model_name!r} is not supported (parameter models.mdetr_model_name); "
                                 f"supported: {list(self._mdetr.MODEL_NAMES)}")
        set_threads(num_threads)
        try:
            self._model = self._mdetr.load_mdetr(ckpt, text_dir)
        except Exception as e:  # torch.load, transformers and load_state_dict raise many types
            raise ModelLoadError(f"could not load MDETR {model_name} from {ckpt} with {text_dir}: {e}") from e
        self._log.info("loaded MDETR %s from %s (text encoder %s)", model_name, ckpt, text_dir)

    def detect(self, image: RgbImage, candidates: Sequence[str]) -> list[Detection]:
        check_image(image)
        h, w = image.shape[:2]
        text, spans = caption_spans(candidates)
        img = self._mdetr.image_tensor(image, self.resize_px, self.max_size_px)
        with self._torch.no_grad():
            memory = self._model(img, [text], encode_and_save=True)
            out = self._model(img, [text], encode_and_save=False, memory_cache=memory)
        pos = self._mdetr.positive_map(memory["tokenized"], [(b, e) for _, b, e in spans],
                                       out["pred_logits"].shape[-1] - 1)
        dets = [Detection(candidates[spans[g.phrase][0]], g.score, g.box)
                for g in self._mdetr.grounded_boxes(out, pos, w, h, self.score_threshold)]
        return best_per_label(clip_boxes(dets, w, h))


# ---------------------------------------------------------------------------------------- oracle --

@dataclass(frozen=True)
class GroundTruthObject:
    """A simulator object: centre and axis-aligned size in metres in the base frame."""

    name: str
    category: str
    center: tuple[float, float, float]
    size: tuple[float, float, float]


def _corners(center: Sequence[float], size: Sequence[float]) -> FloatArray:
    c, s = np.asarray(center, dtype=np.float64), np.asarray(size, dtype=np.float64) / 2
    signs = np.array([[i, j, k] for i in (-1, 1) for j in (-1, 1) for k in (-1, 1)], dtype=np.float64)
    return np.asarray(c + signs * s, dtype=np.float64)


class OracleDetector:
    """Ground truth projected into the image, kept only where the depth image shows the object.

    For each candidate object the pixels inside its projected box whose deprojected depth lands
    inside its 3D box (inflated by `tolerance_m`) are its visible pixels. It is detected when at
    least `min_visible_fraction` of its projected area and `min_pixels` pixels are visible, with the
    tight box around those pixels: a covered block (the bottom of a tower seen from above) is not
    detected, as MDETR would not detect it. Call :meth:`update` with the newest ground truth and
    camera pose before :meth:`detect_frame`.
    """

    name = "oracle"

    def __init__(self, min_visible_fraction: float = 0.5, min_pixels: int = 30, tolerance_m: float = 0.01,
                 stride: int = 2) -> None:
        self.min_visible_fraction, self.min_pixels = min_visible_fraction, min_pixels
        self.tolerance_m, self.stride = tolerance_m, max(1, stride)
        self._objects: list[GroundTruthObject] = []
        self._k: Intrinsics | None = None
        self._base_from_camera: FloatArray | None = None
        self._depth: NDArray[np.floating[Any]] | None = None

    def update(self, objects: Sequence[GroundTruthObject], k: Intrinsics, base_from_camera: FloatArray,
               depth_m: NDArray[np.floating[Any]]) -> None:
        self._objects, self._k, self._base_from_camera, self._depth = list(objects), k, base_from_camera, depth_m

    def projected_box(self, obj: GroundTruthObject, k: Intrinsics, base_from_camera: FloatArray) -> Box | None:
        """Pixel box of the object's 3D box, clipped to the image; None if behind or outside."""
        cam = apply(invert(base_from_camera), _corners(obj.center, obj.size))
        if np.any(cam[:, 2] <= 0.01):
            return None
        uv = k.project(cam)
        x0, y0 = max(0.0, float(uv[:, 0].min())), max(0.0, float(uv[:, 1].min()))
        x1, y1 = min(k.width - 1.0, float(uv[:, 0].max())), min(k.height - 1.0, float(uv[:, 1].max()))
        if x1 <= x0 or y1 <= y0:
            return None
        return (x0, y0, x1, y1)

    def detect_frame(self, candidates: Sequence[str]) -> list[Detection]:
        if self._k is None or self._base_from_camera is None or self._depth is None:
            raise RuntimeError("oracle detector has no ground truth yet (call update first)")
        k, t, depth = self._k, self._base_from_camera, np.asarray(self._depth, dtype=np.float64)
        wanted = {c.strip().lower() for c in candidates}
        dets = []
        for obj in self._objects:
            if obj.category == "location" or (wanted and obj.name.lower() not in wanted):
                continue
            box = self.projected_box(obj, k, t)
            if box is None:
                continue
            u0, v0 = int(box[0]), int(box[1])
            u1, v1 = int(math.ceil(box[2])) + 1, int(math.ceil(box[3])) + 1
            vs, us = np.mgrid[v0:v1:self.stride, u0:u1:self.stride]
            z = depth[vs, us]
            ok = valid_depth_mask(z, 0.01, 10.0)
            pts_cam = np.stack([(us - k.cx) * z / k.fx, (vs - k.cy) * z / k.fy, z], axis=-1)[ok]
            pts = apply(t, pts_cam.reshape(-1, 3)) if len(pts_cam) else np.empty((0, 3))
            lo = np.asarray(obj.center) - np.asarray(obj.size) / 2 - self.tolerance_m
            hi = np.asarray(obj.center) + np.asarray(obj.size) / 2 + self.tolerance_m
            inside = np.all((pts >= lo) & (pts <= hi), axis=1) if len(pts) else np.zeros(0, dtype=bool)
            for other in self._objects:  # a point inside another object belongs to that one
                if other is not obj and other.category != "location" and inside.any():
                    olo = np.asarray(other.center) - np.asarray(other.size) / 2
                    ohi = np.asarray(other.center) + np.asarray(other.size) / 2
                    inside &= ~np.all((pts > olo) & (pts < ohi), axis=1)
            # Fraction of the projected area that shows the object (a box projects to a hexagon that
            # fills roughly 2/3 of its bounding box, hence the comparison with the area's 0.6).
            n_in, n_total = int(inside.sum()), max(1, us.size)
            fraction = n_in / (0.6 * n_total)
            if n_in * self.stride * self.stride < self.min_pixels or fraction < self.min_visible_fraction:
                continue
            vis_u, vis_v = us[ok][inside], vs[ok][inside]
            tight = (float(vis_u.min()), float(vis_v.min()),
                     float(min(k.width - 1, vis_u.max() + self.stride - 1)),
                     float(min(k.height - 1, vis_v.max() + self.stride - 1)))
            dets.append(Detection(obj.name, float(min(1.0, fraction)), tight))
        return dets

    def detect(self, image: RgbImage, candidates: Sequence[str]) -> list[Detection]:
        """The Detector interface: the image is not used (ground truth and depth are)."""
        return self.detect_frame(candidates)


# --------------------------------------------------------------------------------------- factory --

@dataclass(frozen=True)
class DetectorConfig:
    """Parameters of `make_detector` (the node's `detector` and `models.*` parameters; their defaults
    are in config/monologue.yaml only)."""

    kind: str                          # a detector of DETECTORS (name or dotted module path)
    model_path: str                    # owlvit/owlv2/grounding_dino: local transformers model dir
    clip_model_path: str               # "" = no CLIP re-ranking
    mdetr_checkpoint: str              # official MDETR ResNet-101 .pth
    mdetr_text_encoder_dir: str        # local roberta-base dir (config.json + tokenizer files)
    mdetr_model_name: str
    score_threshold: float             # owl*: box score; grounding_dino: box threshold; mdetr: 1 - p(no object)
    text_threshold: float              # grounding_dino
    allow_download: bool
    num_threads: int                   # torch CPU threads, 0 = torch's default


@dataclass(frozen=True)
class DetectorPlugin:
    """A detector kind as the registry holds it."""

    create: Callable[[DetectorConfig, logging.Logger], Detector]  # loads weights; ValueError or ModelLoadError
    description: str
    clip_rerank: bool = True           # wrapped in a ClipReranker when models.clip_model_path is set


DETECTORS: Registry[DetectorPlugin] = Registry("detectors", attribute="PLUGIN", describe=lambda p: p.description)
DETECTORS.add("oracle", DetectorPlugin(lambda cfg, log: OracleDetector(),
                                       "ground truth projected into the image, kept where depth shows it",
                                       clip_rerank=False))
DETECTORS.add("owlvit", DetectorPlugin(
    lambda cfg, log: OwlDetector(cfg.model_path, "owlvit", cfg.score_threshold, cfg.allow_download,
                                 cfg.num_threads, log),
    "OWL-ViT (transformers, models.model_path)"))
DETECTORS.add("owlv2", DetectorPlugin(
    lambda cfg, log: OwlDetector(cfg.model_path, "owlv2", cfg.score_threshold, cfg.allow_download,
                                 cfg.num_threads, log),
    "OWLv2 (transformers, models.model_path)"))
DETECTORS.add("grounding_dino", DetectorPlugin(
    lambda cfg, log: GroundingDinoDetector(cfg.model_path, cfg.score_threshold, cfg.text_threshold,
                                           cfg.allow_download, cfg.num_threads, log),
    "Grounding DINO (transformers, models.model_path)"))
DETECTORS.add("mdetr", DetectorPlugin(
    lambda cfg, log: MdetrDetector(cfg.mdetr_checkpoint, cfg.mdetr_text_encoder_dir, cfg.mdetr_model_name,
                                   cfg.score_threshold, cfg.num_threads, logger=log),
    "MDETR, IM's model (models.mdetr_checkpoint, models.mdetr_text_encoder_dir)"))


def make_detector(cfg: DetectorConfig, logger: logging.Logger | None = None) -> Detector:
    """Build the configured detector (loads weights); raises ValueError (an unknown kind:
    UnknownPluginError, listing the known ones) or ModelLoadError."""
    log = logger or logging.getLogger(__name__)
    plugin = DETECTORS.get(cfg.kind)
    det = plugin.create(cfg, log)
    if cfg.clip_model_path and plugin.clip_rerank:
        det = ClipReranker(det, ClipScorer(cfg.clip_model_path, cfg.allow_download, cfg.num_threads, log))
    return det
