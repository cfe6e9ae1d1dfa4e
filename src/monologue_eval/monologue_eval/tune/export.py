"""Export a trained peft LoRA adapter as a GGUF LoRA adapter that llama.cpp loads (issue 30).

    python -m monologue_eval.tune export --adapter runs/tune/train-X/adapter --out adapter.gguf

The file follows llama.cpp's convert_lora_to_gguf.py (written with the `gguf` library): `general.type` =
"adapter", `adapter.type` = "lora", `adapter.lora.alpha`, the base model's `general.architecture`, and per
adapted weight `blk.<i>.<attn_q|attn_k|attn_v|attn_output|ffn_gate|ffn_up|ffn_down>.weight.lora_a` ([rank, in])
and `.lora_b` ([out, rank]). It adds `monologue.lora.rank`, `monologue.base_model.sha256` and
`monologue.base_model.name`, which monologue_llm.lora checks when a backend loads the adapter. The written
file is read back and checked against the base model before the command succeeds.
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from monologue_llm.lora import (
    HF_TO_GGUF,
    KEY_BASE_NAME,
    KEY_BASE_SHA256,
    KEY_RANK,
    KEY_TARGETS,
    base_weight_shapes,
    file_sha256,
    read_adapter,
)

_PEFT_NAME = re.compile(r"^(?:base_model\.model\.)?model\.layers\.(\d+)\."
                        r"(self_attn\.[qkvo]_proj|mlp\.(?:gate|up|down)_proj)\.lora_([AB])\.weight$")
OUTTYPES = ("f32", "f16")


def gguf_tensors(state: dict[str, Any]) -> dict[str, Any]:
    """peft tensor names -> llama.cpp's (`blk.<i>.attn_q.weight.lora_a`); ValueError for anything else."""
    out: dict[str, Any] = {}
    for name, tensor in state.items():
        m = _PEFT_NAME.match(name)
        if m is None:
            raise ValueError(f"unexpected adapter tensor {name!r} (only attention/MLP projection LoRA weights)")
        out[f"blk.{m.group(1)}.{HF_TO_GGUF[m.group(2)]}.weight.lora_{m.group(3).lower()}"] = tensor
    return out


def export(adapter_dir: Path, out: Path, base: str = "", outtype: str = "f32") -> dict[str, Any]:
    """Write `adapter_dir` (peft: adapter_config.json + adapter_model.safetensors) as the GGUF LoRA `out`."""
    import gguf
    from safetensors.numpy import load_file

    from monologue_llm.model_files import embedded_model_path

    if outtype not in OUTTYPES:
        raise ValueError(f"outtype must be one of {OUTTYPES}, got {outtype!r}")
    cfg = json.loads((adapter_dir / "adapter_config.json").read_text())
    state = load_file(str(adapter_dir / "adapter_model.safetensors"))
    base_path = Path(base) if base else embedded_model_path()
    arch, _ = base_weight_shapes(base_path)
    tensors = gguf_tensors(state)
    rank = int(cfg["r"])
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    w = gguf.GGUFWriter(str(tmp), arch)
    w.add_type(gguf.GGUFType.ADAPTER)
    w.add_string(gguf.Keys.Adapter.TYPE, "lora")
    w.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(cfg["lora_alpha"]))
    w.add_uint32(KEY_RANK, rank)
    w.add_string(KEY_BASE_SHA256, file_sha256(base_path))
    w.add_string(KEY_BASE_NAME, base_path.name)
    w.add_string(KEY_TARGETS, ",".join(sorted(cfg.get("target_modules") or [])))
    dtype = np.float32 if outtype == "f32" else np.float16
    for name in sorted(tensors):
        w.add_tensor(name, np.ascontiguousarray(tensors[name].astype(dtype)))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    adapter = read_adapter(tmp, base_path)  # refuse to publish a file the backends would refuse
    tmp.replace(out)
    return {"out": str(out), "bytes": out.stat().st_size, "rank": adapter.rank, "alpha": adapter.alpha,
            "tensors": len(tensors), "outtype": outtype, "base_model": base_path.name}


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--adapter", type=Path, required=True, help="peft adapter directory (train's <out>/adapter)")
    ap.add_argument("--out", type=Path, required=True, help="GGUF LoRA file to write")
    ap.add_argument("--base", default="", help="base model GGUF ('' = the embedded Gemma 3 270M)")
    ap.add_argument("--outtype", choices=OUTTYPES, default="f32", help="tensor type")


def main(ns: argparse.Namespace) -> int:
    print(json.dumps(export(ns.adapter, ns.out, ns.base, ns.outtype), indent=2))
    return 0
