"""The shared LLM block of config/llm/*.yaml (`/**`: every node) is the only source of the nodes'
llm.* values: it sets every key the factory knows, and make_backend_from_params fills in nothing."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from monologue_llm.base import LLMBackend
from monologue_llm.cassette import request_key
from monologue_llm.factory import ALL_KEYS, flatten_llm_config, make_backend_from_params

CONFIG = Path(__file__).resolve().parents[3] / "config"
LLM_FILES = sorted((CONFIG / "llm").glob("*.yaml"))


def _block(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text())
    # the /** block (every node), and at most the planner's settings that suit the model (e.g. MultiTalk's
    # planner_decoding: generate for a model that writes its answers)
    assert {"/**"} <= set(doc) <= {"/**", "planner"}, f"{path.name}: the /** block and planner only, got {sorted(doc)}"
    assert "llm" not in doc.get("planner", {}).get("ros__parameters", {}), f"{path.name}: llm.* belongs in /**"
    params = doc["/**"]["ros__parameters"]
    assert set(params) == {"llm"}, f"{path.name}: only llm.*, got {sorted(params)}"
    block: dict[str, Any] = params["llm"]
    return block


@pytest.mark.parametrize("path", LLM_FILES, ids=[p.stem for p in LLM_FILES])
def test_every_llm_file_sets_every_key(path: Path) -> None:
    assert set(flatten_llm_config(_block(path))) == ALL_KEYS  # `transformers:` is a sub-block


def test_the_llm_files_differ_in_the_backend_only() -> None:
    blocks = {p.stem: flatten_llm_config(_block(p)) for p in LLM_FILES}
    assert {b["backend"] for b in blocks.values()} == {"llama_cpp", "openai", "expert"}
    # the tuned embedded model (issue 30) is the embedded one with its LoRA adapter, for both in-process backends
    lora = ("lora_path", "transformers.lora_path")
    tuned = blocks.pop("embedded_tuned")
    assert tuned["lora_path"] == tuned["transformers.lora_path"] != ""
    assert {k: v for k, v in tuned.items() if k not in lora} == {k: v for k, v in blocks["embedded"].items()
                                                                 if k not in lora}
    assert all(b[k] == "" for b in blocks.values() for k in lora)
    rest = [{k: v for k, v in b.items() if k != "backend"} for b in blocks.values()]
    assert all(r == rest[0] for r in rest)


def test_no_other_config_file_sets_llm_values() -> None:
    for path in sorted(CONFIG.rglob("*.yaml")):
        if path.parent.name == "llm":
            continue
        doc = yaml.safe_load(path.read_text()) or {}
        for node, section in doc.items() if isinstance(doc, dict) else ():
            params = section.get("ros__parameters", {}) if isinstance(section, dict) else {}
            assert "llm" not in params, f"{path.relative_to(CONFIG)}: {node} sets llm.*"


def test_from_params_needs_the_whole_block(tmp_path: Path) -> None:
    block = _block(CONFIG / "llm" / "embedded.yaml")
    partial = {k: v for k, v in block.items() if k not in ("n_ctx", "seed")}
    with pytest.raises(ValueError, match=r"missing llm\.n_ctx, llm\.seed"):
        make_backend_from_params(partial)
    cassette = tmp_path / "c.jsonl"
    args = {"stop": [], "max_tokens": 4}
    cassette.write_text(json.dumps({
        "key": request_key("generate", "hi", args), "kind": "generate", "prompt": "hi", "args": args,
        "response": {"text": " there", "prompt_tokens": 2, "new_tokens_processed": 2, "completion_tokens": 1,
                     "finish_reason": "stop", "wall_time_s": 0.1}}) + "\n")
    backend = make_backend_from_params({**block, "cassette_mode": "replay", "cassette_path": str(cassette)})
    assert isinstance(backend, LLMBackend)
    assert backend.generate("hi", max_tokens=4).text == " there"
