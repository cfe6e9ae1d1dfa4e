"""Plumbing of the model detectors: tiny random-weight models saved to disk, loaded through the same
code path as real weights, one forward pass on a 640x480 image. Also the loading errors."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from monologue_domain.robots import node_parameters
from monologue_vision.clip import ClipScorer
from monologue_vision.models import ModelLoadError
from perception_node.core.object_detectors import (
    ClipReranker,
    GroundingDinoDetector,
    MdetrDetector,
    OwlDetector,
    caption,
    make_detector,
    match_label,
)
from perception_node.core.settings import settings_from_parameters

CANDIDATES = ["red block", "blue bowl", "green block"]
CONFIG = Path(__file__).resolve().parents[3] / "config"
# The detector configuration of the shipped YAML (the node's `detector` and `models.*` parameters).
YAML = settings_from_parameters(node_parameters(CONFIG, "perception", ["monologue.yaml", "robots/sim.yaml"])).camera.detector


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    rng = np.random.default_rng(0)
    img = rng.integers(0, 255, (480, 640, 3), dtype=np.uint8)
    img[200:260, 300:360] = (220, 20, 20)
    return img


def _check(dets: list, w: int = 640, h: int = 480) -> None:
    labels = [d.label for d in dets]
    assert len(labels) == len(set(labels)), "one detection per label"
    for d in dets:
        assert d.label in CANDIDATES
        assert 0.0 <= d.score <= 1.0
        x0, y0, x1, y1 = d.box
        assert 0 <= x0 < x1 <= w - 1 and 0 <= y0 < y1 <= h - 1


@pytest.mark.parametrize("version", ["owlvit", "owlv2"])
def test_owl_forward_pass_on_640x480(tiny_models: dict[str, Path], image: np.ndarray, version: str) -> None:
    det = OwlDetector(str(tiny_models[version]), version, score_threshold=0.0, allow_download=False, num_threads=0)
    dets = det.detect(image, CANDIDATES)
    # Threshold 0 keeps every query box: random weights still give one box per detected label.
    assert dets, "threshold 0 must keep boxes"
    _check(dets)


def test_grounding_dino_forward_pass_on_640x480(tiny_models: dict[str, Path], image: np.ndarray) -> None:
    det = GroundingDinoDetector(str(tiny_models["grounding_dino"]), box_threshold=0.0, text_threshold=0.0,
                                allow_download=False, num_threads=0)
    _check(det.detect(image, CANDIDATES))


def test_clip_scores_and_reranks(tiny_models: dict[str, Path], image: np.ndarray) -> None:
    clip = ClipScorer(str(tiny_models["clip"]))
    scores = clip.score(image, ["a red block", "a blue bowl"])
    assert len(scores) == 2 and all(np.isfinite(scores))
    probs = clip.classify_crops(image, [(300, 200, 360, 260), (0, 0, 50, 50)], CANDIDATES)
    assert probs.shape == (2, 3) and np.allclose(probs.sum(axis=1), 1.0)
    owl = OwlDetector(str(tiny_models["owlvit"]), "owlvit", score_threshold=0.0, allow_download=False, num_threads=0)
    reranked = ClipReranker(owl, clip, min_score=0.0).detect(image, CANDIDATES)
    assert reranked
    _check(reranked)


def test_factory_builds_configured_detector_with_clip(tiny_models: dict[str, Path]) -> None:
    det = make_detector(replace(YAML, kind="owlvit", model_path=str(tiny_models["owlvit"]),
                                clip_model_path=str(tiny_models["clip"])))
    assert det.name == "owlvit+clip"


def test_missing_model_dir_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "no_such_model"
    with pytest.raises(ModelLoadError, match=str(missing)):
        OwlDetector(str(missing), "owlvit", 0.1, allow_download=False, num_threads=0)
    with pytest.raises(ModelLoadError, match="model_path"):
        make_detector(replace(YAML, kind="grounding_dino", model_path=""))
    # A hub id is refused while downloads are off.
    with pytest.raises(ModelLoadError, match="allow_download"):
        OwlDetector("google/owlvit-base-patch32", "owlvit", 0.1, allow_download=False, num_threads=0)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelLoadError, match="config.json"):
        ClipScorer(str(tmp_path / "empty"))


def test_mdetr_forward_pass_on_640x480(tiny_mdetr: dict[str, Path], image: np.ndarray) -> None:
    """A tiny official-layout checkpoint loads through the factory (architecture read from the state
    dict, heads from its args) and returns the labelled pixel box its heads were set to."""
    det = make_detector(replace(YAML, kind="mdetr", mdetr_checkpoint=str(tiny_mdetr["checkpoint"]),
                                mdetr_text_encoder_dir=str(tiny_mdetr["text_encoder"]), score_threshold=0.7))
    assert isinstance(det, MdetrDetector) and det.name == "mdetr"
    assert det._model.transformer.nhead == 4 and det._model.cfg.backbone_layers == (1, 1, 1, 1)
    dets = det.detect(image, CANDIDATES)
    _check(dets)
    assert [d.label for d in dets] == ["red block"] and dets[0].score > 0.99
    assert np.allclose(dets[0].box, (160, 120, 480, 360))   # (0.5, 0.5, 0.5, 0.5) of the 640x480 image
    assert det.detect(image, CANDIDATES) == dets, "deterministic"
    # Another caption: "red block" is no longer at token positions 1-9, so no box refers to it.
    assert "red block" not in [d.label for d in det.detect(image, ["blue bowl", "red block"])]


def mdetr(checkpoint: str, text_encoder_dir: str, model_name: str = YAML.mdetr_model_name) -> MdetrDetector:
    """MdetrDetector with the YAML's model name unless given (the tests below are about loading)."""
    return MdetrDetector(checkpoint, text_encoder_dir, model_name, score_threshold=0.7, num_threads=0)


def test_mdetr_missing_files_name_the_path(tiny_mdetr: dict[str, Path], tmp_path: Path) -> None:
    ckpt, text_dir = str(tiny_mdetr["checkpoint"]), str(tiny_mdetr["text_encoder"])
    with pytest.raises(ModelLoadError, match="no_such.pth"):
        mdetr(str(tmp_path / "no_such.pth"), text_dir)
    with pytest.raises(ModelLoadError, match="mdetr_checkpoint"):
        make_detector(replace(YAML, kind="mdetr", mdetr_text_encoder_dir=text_dir))
    with pytest.raises(ModelLoadError, match="no_roberta"):
        mdetr(ckpt, str(tmp_path / "no_roberta"))
    with pytest.raises(ModelLoadError, match="mdetr_text_encoder_dir"):
        make_detector(replace(YAML, kind="mdetr", mdetr_checkpoint=ckpt))
    with pytest.raises(ModelLoadError, match="mdetr_efficientnetB3"):
        mdetr(ckpt, text_dir, model_name="mdetr_efficientnetB3")


def test_mdetr_checkpoint_that_does_not_fit_names_it(tiny_mdetr: dict[str, Path], tmp_path: Path) -> None:
    """A state dict that is not MDETR's, or misses a key, is a ModelLoadError naming the file."""
    import torch

    text_dir = str(tiny_mdetr["text_encoder"])
    other = tmp_path / "linear.pth"
    torch.save({"model": torch.nn.Linear(2, 2).state_dict()}, other)
    with pytest.raises(ModelLoadError, match="(?s)linear.pth.*query_embed"):
        mdetr(str(other), text_dir)
    state = torch.load(tiny_mdetr["checkpoint"], weights_only=False)["model"]
    del state["contrastive_align_projection_text.bias"]
    partial = tmp_path / "partial.pth"
    torch.save(state, partial)  # a bare state dict is accepted too, but strict loading finds the gap
    with pytest.raises(ModelLoadError, match="(?s)partial.pth.*contrastive_align_projection_text.bias"):
        mdetr(str(partial), text_dir)
    garbage = tmp_path / "garbage.pth"
    garbage.write_text("not a checkpoint")
    with pytest.raises(ModelLoadError, match="garbage.pth"):
        mdetr(str(garbage), text_dir)


def test_caption_and_label_matching() -> None:
    assert caption(["Red block", " blue bowl "]) == "red block. blue bowl."
    with pytest.raises(ValueError):
        caption([" "])
    assert match_label("red block", CANDIDATES) == "red block"
    assert match_label("blue", CANDIDATES) == "blue bowl"
    assert match_label("the green one", CANDIDATES) == "green block"
    assert match_label("cat", CANDIDATES) is None
