"""The CLIP scorer on a tiny random CLIP saved to disk (no downloads), and the model loading errors."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from monologue_vision.models import ModelLoadError, resolve_model


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("transformers")
    from monologue_vision.tiny_models import tiny_clip

    return tiny_clip(tmp_path_factory.mktemp("vision") / "clip")


def test_clip_scores_whole_images_and_classifies_crops(clip_dir: Path) -> None:
    from monologue_vision.clip import ClipScorer

    clip = ClipScorer(str(clip_dir))
    image = np.random.default_rng(0).integers(0, 255, (48, 64, 3), dtype=np.uint8)
    scores = clip.score(image, ["a red block", "a blue bowl", "a table"])
    assert len(scores) == 3 and all(np.isfinite(scores))
    assert clip.logits([image, image], ["a red block"]).shape == (2, 1)
    probs = clip.classify_crops(image, [(10.0, 10.0, 30.0, 30.0), (0.0, 0.0, 5.0, 5.0)], ["block", "bowl"])
    assert probs.shape == (2, 2) and np.allclose(probs.sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="at least one"):
        clip.logits([], ["a red block"])


def test_model_paths_are_local_unless_downloads_are_allowed(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="model_path"):
        resolve_model("", False, "clip")
    with pytest.raises(ModelLoadError, match="allow_download"):
        resolve_model("openai/clip-vit-base-patch32", False, "clip")
    assert resolve_model("openai/clip-vit-base-patch32", True, "clip") == "openai/clip-vit-base-patch32"
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelLoadError, match="config.json"):
        resolve_model(str(tmp_path / "empty"), False, "clip")
    (tmp_path / "empty" / "config.json").write_text("{}")
    assert resolve_model(str(tmp_path / "empty"), False, "clip") == str(tmp_path / "empty")
