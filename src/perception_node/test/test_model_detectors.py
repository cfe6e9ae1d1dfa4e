"""Plumbing of the model detectors: tiny random-weight models saved to disk, loaded through the same
code path as real weights, one forward pass on a 640x480 image. Also the loading errors."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perception_node.core.detectors import (
    ClipReranker,
    ClipScorer,
    DetectorConfig,
    GroundingDinoDetector,
    MdetrDetector,
    ModelLoadError,
    OwlDetector,
    caption,
    make_detector,
    match_label,
)

CANDIDATES = ["red block", "blue bowl", "green block"]


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
    det = OwlDetector(str(tiny_models[version]), version, score_threshold=0.0)
    dets = det.detect(image, CANDIDATES)
    # Threshold 0 keeps every query box: random weights still give one box per detected label.
    assert dets, "threshold 0 must keep boxes"
    _check(dets)


def test_grounding_dino_forward_pass_on_640x480(tiny_models: dict[str, Path], image: np.ndarray) -> None:
    det = GroundingDinoDetector(str(tiny_models["grounding_dino"]), box_threshold=0.0, text_threshold=0.0)
    _check(det.detect(image, CANDIDATES))


def test_clip_scores_and_reranks(tiny_models: dict[str, Path], image: np.ndarray) -> None:
    clip = ClipScorer(str(tiny_models["clip"]))
    scores = clip.score(image, ["a red block", "a blue bowl"])
    assert len(scores) == 2 and all(np.isfinite(scores))
    probs = clip.classify_crops(image, [(300, 200, 360, 260), (0, 0, 50, 50)], CANDIDATES)
    assert probs.shape == (2, 3) and np.allclose(probs.sum(axis=1), 1.0)
    owl = OwlDetector(str(tiny_models["owlvit"]), "owlvit", score_threshold=0.0)
    reranked = ClipReranker(owl, clip, min_score=0.0).detect(image, CANDIDATES)
    assert reranked
    _check(reranked)


def test_factory_builds_configured_detector_with_clip(tiny_models: dict[str, Path]) -> None:
    det = make_detector(DetectorConfig(kind="owlvit", model_path=str(tiny_models["owlvit"]),
                                       clip_model_path=str(tiny_models["clip"])))
    assert det.name == "owlvit+clip"


def test_missing_model_dir_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "no_such_model"
    with pytest.raises(ModelLoadError, match=str(missing)):
        OwlDetector(str(missing), "owlvit")
    with pytest.raises(ModelLoadError, match="model_path"):
        make_detector(DetectorConfig(kind="grounding_dino", model_path=""))
    # A hub id is refused while downloads are off.
    with pytest.raises(ModelLoadError, match="allow_download"):
        OwlDetector("google/owlvit-base-patch32", "owlvit")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelLoadError, match="config.json"):
        ClipScorer(str(tmp_path / "empty"))


def test_mdetr_missing_files_name_the_path(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="hubconf.py"):
        MdetrDetector(str(tmp_path / "mdetr"), str(tmp_path / "ckpt.pth"))
    (tmp_path / "mdetr").mkdir()
    (tmp_path / "mdetr" / "hubconf.py").write_text("")
    with pytest.raises(ModelLoadError, match="ckpt.pth"):
        MdetrDetector(str(tmp_path / "mdetr"), str(tmp_path / "ckpt.pth"))


def test_mdetr_loads_through_torch_hub_local(tmp_path: Path) -> None:
    """A local hub repo + checkpoint go through torch.hub.load(source="local") and load_state_dict;
    a checkpoint that does not fit the model is a ModelLoadError naming both paths."""
    import torch

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "hubconf.py").write_text(
        "import torch\ndependencies = ['torch']\n"
        "def mdetr_resnet101(pretrained=False):\n    return torch.nn.Linear(2, 2)\n")
    good, bad = tmp_path / "good.pth", tmp_path / "bad.pth"
    torch.save({"model": torch.nn.Linear(2, 2).state_dict()}, good)
    torch.save({"model": torch.nn.Linear(3, 2).state_dict()}, bad)
    det = MdetrDetector(str(repo), str(good))
    assert det.name == "mdetr"
    with pytest.raises(ModelLoadError, match="bad.pth"):
        MdetrDetector(str(repo), str(bad))


def test_caption_and_label_matching() -> None:
    assert caption(["Red block", " blue bowl "]) == "red block. blue bowl."
    with pytest.raises(ValueError):
        caption([" "])
    assert match_label("red block", CANDIDATES) == "red block"
    assert match_label("blue", CANDIDATES) == "blue bowl"
    assert match_label("the green one", CANDIDATES) == "green block"
    assert match_label("cat", CANDIDATES) is None
