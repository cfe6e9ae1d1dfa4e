"""Fixtures: tiny random-weight transformers models built from configs and saved to a temp dir, so
the detectors load them through the same `from_pretrained(local dir)` path as real weights."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from monologue_vision.tiny_models import bytes_to_unicode as _bytes_to_unicode
from monologue_vision.tiny_models import clip_configs as _clip_configs
from monologue_vision.tiny_models import clip_tokenizer as _clip_tokenizer
from monologue_vision.tiny_models import tiny_clip

os.environ.setdefault("HF_HUB_OFFLINE", "1")
WORDS = ["red", "green", "blue", "yellow", "block", "bowl", "plate", "the", "a", "photo", "of", "."]


def _zero_box_head(model: Any) -> Any:
    """Random weights saturate the box regression (degenerate boxes); a zero output layer leaves
    the model's prior boxes (one per image patch), which are real boxes to post-process."""
    import torch

    with torch.no_grad():
        model.box_head.dense2.weight.zero_()
        model.box_head.dense2.bias.zero_()
    return model


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Directories of tiny random OWL-ViT, OWLv2, CLIP and Grounding DINO models."""
    import torch
    import transformers as tf

    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("tiny_models")
    out: dict[str, Path] = {}
    size64 = {"height": 64, "width": 64}

    d = root / "owlvit"
    tok, v = _clip_tokenizer(tf, d)
    text, vision = _clip_configs(v)
    _zero_box_head(tf.OwlViTForObjectDetection(
        tf.OwlViTConfig(text_config=text, vision_config=vision, projection_dim=32))).save_pretrained(d)
    tf.OwlViTProcessor(image_processor=tf.OwlViTImageProcessorPil(size=size64, crop_size=size64),
                       tokenizer=tok).save_pretrained(d)
    out["owlvit"] = d

    d = root / "owlv2"
    tok, v = _clip_tokenizer(tf, d)
    text, vision = _clip_configs(v)
    _zero_box_head(tf.Owlv2ForObjectDetection(
        tf.Owlv2Config(text_config=text, vision_config=vision, projection_dim=32))).save_pretrained(d)
    tf.Owlv2Processor(image_processor=tf.Owlv2ImageProcessorPil(size=size64), tokenizer=tok).save_pretrained(d)
    out["owlv2"] = d

    out["clip"] = tiny_clip(root / "clip", seed=None)  # continues the generator seeded above

    d = root / "grounding_dino"
    d.mkdir()
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    (d / "vocab.txt").write_text("\n".join(vocab) + "\n")
    bert_tok = tf.BertTokenizer(str(d / "vocab.txt"))
    cfg = tf.GroundingDinoConfig(
        backbone_config=tf.SwinConfig(embed_dim=16, depths=[1, 1], num_heads=[1, 1], window_size=4,
                                      image_size=64, out_features=["stage1", "stage2"]),
        text_config=tf.BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1,
                                  num_attention_heads=2, intermediate_size=37, max_position_embeddings=64),
        d_model=32, encoder_layers=1, decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2,
        encoder_ffn_dim=32, decoder_ffn_dim=32, num_queries=10, num_feature_levels=2, encoder_n_points=2,
        decoder_n_points=2, max_text_len=32, use_timm_backbone=False, backbone=None)
    gdino = tf.GroundingDinoForObjectDetection(cfg)
    with torch.no_grad():
        for head in gdino.bbox_embed:
            head.layers[-1].weight.zero_()
            head.layers[-1].bias.zero_()
    gdino.save_pretrained(d)
    tf.GroundingDinoProcessor(
        image_processor=tf.GroundingDinoImageProcessorPil(size={"shortest_edge": 64, "longest_edge": 96}),
        tokenizer=bert_tok).save_pretrained(d)
    out["grounding_dino"] = d
    return out


def _roberta_text_encoder_dir(tf: Any, d: Path) -> Path:
    """A tiny roberta-base look-alike: byte-level BPE tokenizer with no merges (every character a
    token, special tokens at roberta-base's ids) and a 1-layer RobertaConfig; no weights."""
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for c in _bytes_to_unicode():
        vocab[c] = len(vocab)
    vocab["<mask>"] = len(vocab)
    tf.RobertaTokenizerFast(vocab=vocab, merges=[]).save_pretrained(d)
    tf.RobertaConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=37, max_position_embeddings=130, type_vocab_size=1, pad_token_id=1,
                     bos_token_id=0, eos_token_id=2).save_pretrained(d)
    return d


@pytest.fixture(scope="session")
def tiny_mdetr(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny random MDETR saved like the official checkpoints ({"model", "args", ...}, including the
    `embeddings.position_ids` buffer transformers 4.5 saved), and its text-encoder directory. Its
    heads are set so that every query finds "red block" in the middle of the image."""
    import argparse

    import torch
    import transformers as tf

    from perception_node.core.mdetr import MdetrConfig, build_mdetr

    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("tiny_mdetr")
    text_dir = _roberta_text_encoder_dir(tf, root / "roberta")
    cfg = MdetrConfig(hidden_dim=32, nheads=4, enc_layers=1, dec_layers=2, dim_feedforward=32, num_queries=10,
                      contrastive_hdim=8, backbone_layers=(1, 1, 1, 1), backbone_width=8)
    model = build_mdetr(cfg, text_dir)
    with torch.no_grad():
        # Boxes from the bias alone: (cx, cy, w, h) = (0.5, 0.5, 0.5, 0.5), a real box to post-process.
        model.bbox_embed.layers[-1].weight.zero_()
        model.bbox_embed.layers[-1].bias.zero_()
        # Every query refers to token positions 1-9: "red block" in the caption "red block. blue bowl.
        # green block." (one token per character after <s>), with p(no object) ~ 0.
        model.class_embed.weight.zero_()
        model.class_embed.bias.fill_(-5.0)
        model.class_embed.bias[1:10] = 5.0
        model.class_embed.bias[-1] = 0.0
    state = model.state_dict()
    state["transformer.text_encoder.embeddings.position_ids"] = torch.arange(130)[None]
    ckpt = root / "tiny_mdetr_checkpoint.pth"
    torch.save({"model": state, "model_ema": None, "optimizer": {"state": {}, "param_groups": []}, "epoch": 0,
                "args": argparse.Namespace(nheads=4, backbone="resnet101", hidden_dim=32, num_queries=10)}, ckpt)
    return {"checkpoint": ckpt, "text_encoder": text_dir}
