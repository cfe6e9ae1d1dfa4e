"""LLM backends are plug-ins: a backend is a module plus configuration. A tiny fake backend in a
temporary directory, named by its dotted module path, is found, its keys are checked and it is built,
also behind a cassette; the built-ins stay listed (no ROS, no model)."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from monologue_llm.factory import ALL_KEYS, BACKENDS, make_backend, make_backend_from_params
from monologue_llm.plugin import LLM_BACKENDS

BACKEND_MODULE = '''
"""A backend that echoes the prompt's last word `repeat` times and scores by length."""
from __future__ import annotations

from monologue_llm.base import CandidateScore, Generation, ScoreResult
from monologue_llm.plugin import BackendPlugin


class EchoBackend:
    def __init__(self, repeat, log):
        self.name = f"echo:{repeat}"
        self.repeat = repeat
        self.closed = False
        log.info("echo backend built")

    def generate(self, prompt, stop=(), max_tokens=64):
        text = " " + " ".join([prompt.split()[-1]] * self.repeat)
        return Generation(text, len(prompt.split()), len(prompt.split()), self.repeat, "stop", 0.0)

    def score(self, prompt, candidates):
        scores = tuple(CandidateScore(c, -float(len(c)), 1, (-float(len(c)),)) for c in candidates)
        return ScoreResult(scores, len(prompt.split()), 0, 0.0)

    def close(self):
        self.closed = True


def check(values):
    if values["repeat"] < 1:
        raise ValueError(f"LLM config: 'echo.repeat' must be >= 1, got {values['repeat']}")


PLUGIN = BackendPlugin({"repeat": ((int,), 1)}, lambda values, log: EchoBackend(values["repeat"], log),
                       "echoes the last word", check, prefix="echo.")
'''


@pytest.fixture
def echo_backend(plugin_module: Callable[[str, str], str]) -> Iterator[str]:
    yield plugin_module("my_llms.echo", BACKEND_MODULE)
    LLM_BACKENDS.unregister("my_llms.echo")


def test_the_builtins_are_registered_plugins() -> None:
    assert BACKENDS == ("expert", "llama_cpp", "openai", "transformers")
    assert set(LLM_BACKENDS.names()) >= set(BACKENDS)
    assert {"n_ctx", "base_url", "transformers.device", "backend", "cassette_mode"} <= ALL_KEYS
    assert LLM_BACKENDS.listing().startswith("llm_backends:")


def test_a_backend_from_a_dotted_module_path(echo_backend: str) -> None:
    backend = make_backend({"backend": echo_backend, "echo": {"repeat": 2}})
    assert backend.name == "echo:2"
    assert backend.generate("pick the red block").text == " block block"
    assert [s.text for s in backend.score("p", ["a", "bb"]).scores] == ["a", "bb"]
    assert make_backend({"backend": echo_backend}).name == "echo:1"  # the plug-in's default
    with pytest.raises(ValueError, match="'echo.repeat' must be >= 1"):
        make_backend({"backend": echo_backend, "echo.repeat": 0})
    with pytest.raises(ValueError, match="'echo.repeat' must be int"):
        make_backend({"backend": echo_backend, "echo.repeat": "2"})
    with pytest.raises(ValueError, match="unknown key"):  # unknown keys are still refused
        make_backend({"backend": echo_backend, "echo.repeats": 2})


def test_a_plugin_backend_records_and_replays_through_the_cassette(echo_backend: str, tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    cfg = {"backend": echo_backend, "echo.repeat": 3, "cassette_mode": "record", "cassette_path": str(path)}
    recorder = make_backend(cfg)
    assert recorder.generate("go home").text == " home home home"
    recorder.close()
    player = make_backend({**cfg, "cassette_mode": "replay"})
    assert player.generate("go home").text == " home home home"


def test_a_node_block_needs_the_plugins_keys_too(echo_backend: str) -> None:
    block: dict[str, object] = {k: None for k in ALL_KEYS}
    with pytest.raises(ValueError, match="missing llm.echo.repeat"):
        make_backend_from_params({**block, "backend": echo_backend})


def test_unknown_backends_list_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"must be one of \('expert', 'llama_cpp', 'openai', 'transformers'"):
        make_backend({"backend": "gpt"})
    with pytest.raises(ValueError, match="my_missing_llms.x.*not found"):
        make_backend({"backend": "my_missing_llms.x"})
