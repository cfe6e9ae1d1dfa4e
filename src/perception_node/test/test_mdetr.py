"""core/mdetr.py: the official MDETR parameter names (so released checkpoints load strictly), the
DETR resize rule, normalisation, frozen BatchNorm, and the phrase grounding of the post-processing."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from perception_node.core.mdetr import (
    MDETR,
    Backbone,
    FrozenBatchNorm2d,
    MdetrConfig,
    build_mdetr,
    grounded_boxes,
    image_tensor,
    positive_map,
    resized_size,
)
from perception_node.core.object_detectors import caption_spans

# roberta-base's config.json (the fields that shape the model).
ROBERTA_BASE = {"model_type": "roberta", "architectures": ["RobertaForMaskedLM"], "vocab_size": 50265,
                "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
                "max_position_embeddings": 514, "type_vocab_size": 1, "layer_norm_eps": 1e-05, "pad_token_id": 1,
                "bos_token_id": 0, "eos_token_id": 2}

# Keys of the official model (hubconf mdetr_resnet101 = models/mdetr.py MDETR + models/transformer.py
# Transformer + models/backbone.py Joiner(Backbone(torchvision resnet101)), and transformers'
# RobertaModel), with their shapes: read from the official source.
OFFICIAL_KEYS = {
    "backbone.0.body.conv1.weight": (64, 3, 7, 7),
    "backbone.0.body.bn1.weight": (64,),
    "backbone.0.body.bn1.running_mean": (64,),
    "backbone.0.body.layer1.0.conv1.weight": (64, 64, 1, 1),
    "backbone.0.body.layer1.0.downsample.0.weight": (256, 64, 1, 1),
    "backbone.0.body.layer1.0.downsample.1.running_var": (256,),
    "backbone.0.body.layer2.3.conv2.weight": (128, 128, 3, 3),
    "backbone.0.body.layer3.0.downsample.0.weight": (1024, 512, 1, 1),
    "backbone.0.body.layer3.22.conv3.weight": (1024, 256, 1, 1),
    "backbone.0.body.layer4.2.bn3.bias": (2048,),
    "input_proj.weight": (256, 2048, 1, 1),
    "input_proj.bias": (256,),
    "query_embed.weight": (100, 256),
    "class_embed.weight": (256, 256),
    "class_embed.bias": (256,),
    "bbox_embed.layers.0.weight": (256, 256),
    "bbox_embed.layers.1.bias": (256,),
    "bbox_embed.layers.2.weight": (4, 256),
    "contrastive_align_projection_image.weight": (64, 256),
    "contrastive_align_projection_image.bias": (64,),
    "contrastive_align_projection_text.weight": (64, 256),
    "transformer.encoder.layers.0.self_attn.in_proj_weight": (768, 256),
    "transformer.encoder.layers.5.self_attn.out_proj.weight": (256, 256),
    "transformer.encoder.layers.5.linear1.weight": (2048, 256),
    "transformer.encoder.layers.5.linear2.weight": (256, 2048),
    "transformer.encoder.layers.5.norm2.bias": (256,),
    "transformer.decoder.layers.0.self_attn.in_proj_bias": (768,),
    "transformer.decoder.layers.5.cross_attn_image.in_proj_weight": (768, 256),
    "transformer.decoder.layers.5.cross_attn_image.out_proj.bias": (256,),
    "transformer.decoder.layers.5.norm1.weight": (256,),
    "transformer.decoder.layers.5.norm3.weight": (256,),
    "transformer.decoder.layers.5.norm4.bias": (256,),
    "transformer.decoder.norm.weight": (256,),
    "transformer.resizer.fc.weight": (256, 768),
    "transformer.resizer.layer_norm.bias": (256,),
    "transformer.text_encoder.embeddings.word_embeddings.weight": (50265, 768),
    "transformer.text_encoder.embeddings.position_embeddings.weight": (514, 768),
    "transformer.text_encoder.encoder.layer.11.attention.self.query.weight": (768, 768),
    "transformer.text_encoder.encoder.layer.11.output.LayerNorm.weight": (768,),
    "transformer.text_encoder.pooler.dense.weight": (768, 768),
}
# Not in the official model: its decoder layer has no norm2 (the text cross-attention is commented
# out), its encoder no final norm (post-norm), IntermediateLayerGetter drops avgpool/fc, no CLS
# token, QA heads or isfinal head in mdetr_resnet101.
ABSENT = ("transformer.decoder.layers.0.norm2.weight", "transformer.decoder.layers.0.cross_attn_text.in_proj_weight",
          "transformer.encoder.norm.weight", "backbone.0.body.fc.weight", "transformer.CLS.weight",
          "qa_embed.weight", "isfinal_embed.weight")


def test_default_config_is_hubconf_mdetr_resnet101() -> None:
    cfg = MdetrConfig()
    assert (cfg.hidden_dim, cfg.nheads, cfg.enc_layers, cfg.dec_layers, cfg.dim_feedforward) == (256, 8, 6, 6, 2048)
    assert (cfg.num_queries, cfg.num_classes, cfg.contrastive_hdim) == (100, 255, 64)
    assert cfg.backbone_layers == (3, 4, 23, 3) and cfg.backbone_width == 64 and cfg.num_channels == 2048
    body = Backbone().body.state_dict()
    assert len({k.split(".")[1] for k in body if k.startswith("layer3.")}) == 23
    assert not any(k.startswith(("fc.", "avgpool.")) for k in body)
    assert sum(v.numel() for k, v in body.items() if not k.endswith(("running_mean", "running_var"))) == 42_500_160


@pytest.mark.slow
def test_full_model_state_dict_has_the_official_names(tiny_mdetr: dict[str, Path], tmp_path: Path) -> None:
    """The default model (ResNet-101 + roberta-base, random weights) has the official key names and
    shapes, 185.4 M parameters, and its architecture is read back from its state dict."""
    (tmp_path / "config.json").write_text(json.dumps(ROBERTA_BASE))
    for f in ("tokenizer.json", "tokenizer_config.json"):  # the tokenizer does not shape the model
        (tmp_path / f).write_bytes((tiny_mdetr["text_encoder"] / f).read_bytes())
    torch.manual_seed(0)
    model = build_mdetr(MdetrConfig(), tmp_path)
    state = model.state_dict()
    for key, shape in OFFICIAL_KEYS.items():
        assert key in state, key
        assert tuple(state[key].shape) == shape, key
    assert not set(ABSENT) & set(state)
    # Outside RoBERTa (whose count depends on the transformers version) the official model has 721 keys.
    assert len([k for k in state if not k.startswith("transformer.text_encoder.")]) == 721
    assert round(sum(p.numel() for p in model.parameters()) / 1e6, 1) == 185.4
    assert MdetrConfig.from_state_dict(state) == MdetrConfig()


def test_frozen_batchnorm_is_batchnorm_in_eval_and_drops_num_batches_tracked() -> None:
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm2d(6).eval()
    with torch.no_grad():
        for t in (bn.weight, bn.bias, bn.running_mean):
            t.copy_(torch.randn(6))
        bn.running_var.copy_(torch.rand(6) + 0.5)
    frozen = FrozenBatchNorm2d(6)
    frozen.load_state_dict(bn.state_dict(), strict=True)  # has num_batches_tracked
    x = torch.randn(2, 6, 5, 4)
    assert torch.allclose(frozen(x), bn(x), atol=1e-5)


def test_resize_rule_and_normalisation() -> None:
    assert resized_size(480, 640) == (800, 1066)       # shorter side 800
    assert resized_size(500, 2000) == (333, 1332)      # longer side capped at 1333
    assert resized_size(800, 600) == (1066, 800)
    assert resized_size(800, 1000) == (800, 1000)      # already the size
    mean = np.array([0.485, 0.456, 0.406]) * 255
    img = np.broadcast_to(np.round(mean).astype(np.uint8), (480, 640, 3)).copy()
    x = image_tensor(img)
    assert x.shape == (1, 3, 800, 1066) and x.dtype == torch.float32
    assert float(x.abs().max()) < 0.01                 # the ImageNet mean maps to 0
    x = image_tensor(np.full((480, 640, 3), 255, np.uint8))
    assert torch.allclose(x[0, :, 0, 0], torch.tensor([(1 - 0.485) / 0.229, (1 - 0.456) / 0.224, (1 - 0.406) / 0.225]))


def test_caption_spans() -> None:
    text, spans = caption_spans(["Red block", " ", "blue bowl.", "red"])
    assert text == "red block. blue bowl. red."
    assert [(i, text[b:e]) for i, b, e in spans] == [(0, "red block"), (2, "blue bowl"), (3, "red")]


def test_phrase_grounding_from_logits(tiny_mdetr: dict[str, Path]) -> None:
    """Each kept query gets the candidate whose tokens hold most of its probability mass; queries
    below the threshold (mostly "no object") are dropped; boxes are scaled to pixels."""
    import transformers as tf

    tok = tf.RobertaTokenizerFast.from_pretrained(str(tiny_mdetr["text_encoder"]))
    candidates = ["red block", "blue bowl", "green block"]
    text, spans = caption_spans(candidates)
    tokenized = tok([text], return_tensors="pt")
    pos = positive_map(tokenized, [(b, e) for _, b, e in spans], 255)
    assert pos.shape == (3, 255)
    # Every character of a name is one token here: "red block" = 9 tokens from position 1 (after <s>).
    assert pos.sum(1).tolist() == [9, 9, 11] and pos[0, 1:10].all() and not pos[0, 10:].any()
    logits = torch.full((1, 4, 256), -10.0)
    logits[0, 0, pos[1].nonzero().flatten()] = 5.0     # query 0 -> "blue bowl"
    logits[0, 1, -1] = 10.0                            # query 1 -> no object
    logits[0, 2, pos[2].nonzero().flatten()] = 5.0     # query 2 -> "green block", but also "block" of "red block"
    logits[0, 2, pos[0].nonzero().flatten()[-5:]] = 4.0
    logits[0, 3, 10] = 5.0                             # query 3 -> the "." after "red block": no phrase
    boxes = torch.tensor([[[0.5, 0.5, 0.2, 0.4], [0.1, 0.1, 0.1, 0.1], [0.25, 0.75, 0.5, 0.5], [0.5, 0.5, 1, 1]]])
    found = grounded_boxes({"pred_logits": logits, "pred_boxes": boxes}, pos, 640, 480, threshold=0.7)
    assert [g.phrase for g in found] == [1, 2]
    assert np.allclose(found[0].box, (256, 144, 384, 336)) and np.allclose(found[1].box, (0, 240, 320, 480))
    assert all(0.99 < g.score <= 1.0 for g in found)


def test_two_pass_call_returns_the_official_outputs(tiny_mdetr: dict[str, Path]) -> None:
    """model(img, captions) -> memory cache; model(..., encode_and_save=False, memory_cache) -> outputs."""
    from perception_node.core.mdetr import load_mdetr

    model = load_mdetr(tiny_mdetr["checkpoint"], tiny_mdetr["text_encoder"])
    assert isinstance(model, MDETR) and not model.training
    x = torch.zeros(1, 3, 64, 96)
    with torch.no_grad():
        memory = model(x, ["red block."])
        out = model(x, ["red block."], encode_and_save=False, memory_cache=memory)
    n_tokens = memory["tokenized"]["input_ids"].shape[1]
    assert out["pred_logits"].shape == (1, 10, 256) and out["pred_boxes"].shape == (1, 10, 4)
    assert out["proj_queries"].shape == (1, 10, 8) and out["proj_tokens"].shape == (1, n_tokens, 8)
    assert memory["img_memory"].shape == (2 * 3 + n_tokens, 1, 32)   # 64x96 px -> 2x3 features, then the text
    with pytest.raises(ValueError, match="memory_cache"):
        model(x, ["red block."], encode_and_save=False)
