"""Loading transformers models from local directories (downloads only when explicitly allowed).

Unless `allow_download` is true, HF_HUB_OFFLINE is set, every `from_pretrained` gets
`local_files_only=True`, and a missing directory raises ModelLoadError naming the path. torch and
transformers are imported on first use (they take seconds), through importlib, so this module
type-checks and imports without them.
"""
from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from .images import RgbImage


class ModelLoadError(RuntimeError):
    """A model could not be loaded; the message names the path or setting at fault."""


def import_module(name: str) -> Any:
    """`importlib.import_module`, with a ModelLoadError naming the requirements file if it fails."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise ModelLoadError(
            f"python package {name!r} is not installed ({e}); it comes with requirements/runtime.txt") from e


def offline_mode(allow_download: bool) -> None:
    """Forbid the Hugging Face hub unless downloads are explicitly allowed (set before loading)."""
    if not allow_download:
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"


def resolve_model(path: str, allow_download: bool, what: str) -> str:
    """A local model directory, or (only with `allow_download`) a hub model id."""
    if not path.strip():
        raise ModelLoadError(f"no model path configured for {what} (parameter {what}.model_path)")
    p = Path(path).expanduser()
    if p.is_dir():
        if not (p / "config.json").is_file():
            raise ModelLoadError(f"{what} model directory {p} has no config.json (not a transformers model dir)")
        return str(p)
    if allow_download and not p.is_absolute() and not path.startswith("."):
        return path  # a hub id such as google/owlvit-base-patch32
    raise ModelLoadError(
        f"{what} model directory {p} does not exist (downloads are off: set allow_download true "
        f"to fetch a hub id, or point {what}.model_path at a local copy; see docs/perception.md)")


def from_pretrained(cls: Any, path: str, allow_download: bool, what: str) -> Any:
    """`cls.from_pretrained(path)` (local files only unless `allow_download`); ModelLoadError on failure."""
    try:
        return cls.from_pretrained(path, local_files_only=not allow_download)
    except (OSError, ValueError) as e:
        raise ModelLoadError(f"could not load {what} from {path}: {e}") from e


def to_pil(image: RgbImage) -> Any:
    """An HxWx3 uint8 RGB array as a PIL image."""
    return import_module("PIL.Image").fromarray(image, mode="RGB")


def set_threads(num_threads: int) -> None:
    """torch's CPU thread count; 0 = torch's default."""
    if num_threads > 0:
        import_module("torch").set_num_threads(num_threads)
