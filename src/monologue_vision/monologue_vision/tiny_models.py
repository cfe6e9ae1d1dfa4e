"""Tiny random-weight transformers models built from configs, for tests (no downloads).

Saved to a local directory, they load through the same `from_pretrained(local dir)` path as real
weights. Used by the tests of monologue_vision, perception_node and success_detector_node.
"""
from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any


def bytes_to_unicode() -> list[str]:
    """The byte-level BPE alphabet (GPT-2 / CLIP): one printable character per byte value."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def clip_tokenizer(tf: Any, d: Path, max_length: int = 16) -> tuple[Any, int]:
    """A byte-level BPE CLIP tokenizer with no merges (every character is a token), saved in `d`;
    returns it and its vocabulary size. `tf` is the transformers module."""
    chars = bytes_to_unicode()
    vocab: dict[str, int] = {}
    for suffix in ("", "</w>"):
        for c in chars:
            vocab[c + suffix] = len(vocab)
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    d.mkdir(parents=True, exist_ok=True)
    (d / "vocab.json").write_text(json.dumps(vocab))
    (d / "merges.txt").write_text("#version: 0.2\n")
    # model_max_length as in the real tokenizers: 16 for OWL-ViT, 77 for CLIP.
    return tf.CLIPTokenizer(str(d / "vocab.json"), str(d / "merges.txt"), model_max_length=max_length), len(vocab)


def clip_configs(v: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Text and vision config kwargs of a 1-layer CLIP-style model with vocabulary size `v`."""
    text = dict(vocab_size=v, hidden_size=32, intermediate_size=37, num_hidden_layers=1, num_attention_heads=4,
                max_position_embeddings=16, bos_token_id=v - 2, eos_token_id=v - 1, pad_token_id=v - 1)
    vision = dict(hidden_size=32, intermediate_size=37, num_hidden_layers=1, num_attention_heads=4,
                  image_size=64, patch_size=16)
    return text, vision


def tiny_clip(d: Path, seed: int | None = 0) -> Path:
    """Save a tiny random CLIP (32 px images, 77-token texts) with its processor into `d`; returns `d`.
    Its weights come from torch's global generator, seeded with `seed` first unless it is None."""
    torch: Any = importlib.import_module("torch")  # imported when used (seconds), untyped
    tf: Any = importlib.import_module("transformers")
    if seed is not None:
        torch.manual_seed(seed)
    tok, v = clip_tokenizer(tf, d, max_length=77)
    text, vision = clip_configs(v)
    text["max_position_embeddings"] = 77
    vision["image_size"] = 32
    tf.CLIPModel(tf.CLIPConfig(text_config=text, vision_config=vision, projection_dim=32)).save_pretrained(d)
    tf.CLIPProcessor(image_processor=tf.CLIPImageProcessorPil(size={"shortest_edge": 32},
                                                                crop_size={"height": 32, "width": 32}),
                     tokenizer=tok).save_pretrained(d)
    return d
