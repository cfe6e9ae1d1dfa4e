"""MDETR (Kamath et al. 2021) inference in plain torch: no torchvision, no timm.

Mirrors the structure, module names and inference behaviour of github.com/ashkamath/mdetr (Apache
License 2.0, (c) Aishwarya Kamath & Nicolas Carion, parts (c) Facebook, Inc. from DETR):
models/mdetr.py (MDETR, MLP), models/transformer.py (Transformer, TransformerEncoder/Decoder and
their layers, FeatureResizer), models/backbone.py (FrozenBatchNorm2d, Backbone, Joiner),
models/position_encoding.py (PositionEmbeddingSine), util/misc.py (NestedTensor),
datasets/transforms.py (the resize rule) and util/box_ops.py. The ResNet body has torchvision's
attribute layout (conv1, bn1, layer1..layer4, downsample.0/1), so the released ResNet-101
checkpoints (e.g. pretrained_resnet101_checkpoint.pth, state dict under "model") load with
``load_state_dict(strict=True)``. The text encoder is transformers' RobertaModel built from a
roberta-base config; its weights come from the checkpoint.

Inference only: no losses, no QA heads (GQA/CLEVR), no segmentation head, no EfficientNet backbones,
post-norm transformer only (MDETR's default).
"""
from __future__ import annotations

import argparse
import copy
import importlib
import logging
import math
import pickle
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from numpy.typing import NDArray
from torch import Tensor, nn

# hubconf.py entry points whose checkpoints this module loads (ResNet-101 + contrastive align heads).
MODEL_NAMES = ("mdetr_resnet101", "mdetr_resnet101_refcoco", "mdetr_resnet101_refcocoplus",
               "mdetr_resnet101_refcocog")
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MdetrConfig:
    """Architecture; the defaults are hubconf's mdetr_resnet101 (`_make_detr("resnet101")`)."""

    hidden_dim: int = 256
    nheads: int = 8
    enc_layers: int = 6
    dec_layers: int = 6
    dim_feedforward: int = 2048
    num_queries: int = 100
    num_classes: int = 255                      # token positions; +1 logit for "no object"
    contrastive_hdim: int = 64
    backbone_layers: tuple[int, ...] = (3, 4, 23, 3)   # bottleneck blocks per stage: ResNet-101
    backbone_width: int = 64                    # stem channels (torchvision: 64)

    @property
    def num_channels(self) -> int:
        """Channels of the backbone's last stage (2048 for ResNet-101)."""
        return _num_channels(self.backbone_layers, self.backbone_width)

    @classmethod
    def from_state_dict(cls, state: Mapping[str, Tensor], nheads: int = 8) -> MdetrConfig:
        """The architecture of an MDETR state dict, read from its key names and shapes (the number of
        attention heads is not visible in them). Raises ValueError when a key is missing."""
        def shape(key: str) -> tuple[int, ...]:
            if key not in state:
                raise ValueError(f"not an MDETR ResNet checkpoint: no {key!r} in its state dict")
            return tuple(state[key].shape)

        def count(prefix: str) -> int:
            pat = re.compile(re.escape(prefix) + r"(\d+)\.")
            return len({m.group(1) for k in state if (m := pat.match(k))})

        num_queries, hidden_dim = shape("query_embed.weight")
        stages = tuple(count(f"backbone.0.body.layer{i}.") for i in range(1, 5))
        return cls(
            hidden_dim=hidden_dim, nheads=nheads,
            enc_layers=count("transformer.encoder.layers."), dec_layers=count("transformer.decoder.layers."),
            dim_feedforward=shape("transformer.encoder.layers.0.linear1.weight")[0], num_queries=num_queries,
            num_classes=shape("class_embed.weight")[0] - 1,
            contrastive_hdim=shape("contrastive_align_projection_image.weight")[0],
            backbone_layers=stages, backbone_width=shape("backbone.0.body.conv1.weight")[0])


class NestedTensor:
    """Padded image batch and its padding mask (True on padded pixels), as util/misc.py."""

    def __init__(self, tensors: Tensor, mask: Tensor) -> None:
        self.tensors, self.mask = tensors, mask

    def decompose(self) -> tuple[Tensor, Tensor]:
        return self.tensors, self.mask

    @classmethod
    def from_tensor_list(cls, tensor_list: Sequence[Tensor] | Tensor) -> NestedTensor:
        """Zero-pad 3xHxW images to the largest size of the batch."""
        if tensor_list[0].ndim != 3:
            raise ValueError("expected 3xHxW image tensors")
        shapes = [img.shape for img in tensor_list]
        c, h, w = (max(s[i] for s in shapes) for i in range(3))
        tensor = tensor_list[0].new_zeros((len(shapes), c, h, w))
        mask = torch.ones((len(shapes), h, w), dtype=torch.bool, device=tensor.device)
        for img, pad_img, m in zip(tensor_list, tensor, mask):
            pad_img[: img.shape[0], : img.shape[1], : img.shape[2]].copy_(img)
            m[: img.shape[1], : img.shape[2]] = False
        return cls(tensor, mask)


# ------------------------------------------------------------------------------------ backbone --

class FrozenBatchNorm2d(nn.Module):
    """BatchNorm2d with fixed statistics and affine parameters (eps inside the rsqrt)."""

    weight: Tensor
    bias: Tensor
    running_mean: Tensor
    running_var: Tensor

    def __init__(self, n: int) -> None:
        super().__init__()
        self.register_buffer("weight", torch.ones(n))
        self.register_buffer("bias", torch.zeros(n))
        self.register_buffer("running_mean", torch.zeros(n))
        self.register_buffer("running_var", torch.ones(n))

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any) -> None:
        state_dict.pop(prefix + "num_batches_tracked", None)  # torchvision BatchNorm2d checkpoints
        super()._load_from_state_dict(state_dict, prefix, *args)

    def forward(self, x: Tensor) -> Tensor:
        scale = self.weight.reshape(1, -1, 1, 1) * (self.running_var.reshape(1, -1, 1, 1) + 1e-5).rsqrt()
        bias = self.bias.reshape(1, -1, 1, 1) - self.running_mean.reshape(1, -1, 1, 1) * scale
        return x * scale + bias


def _num_channels(layers: Sequence[int], width: int) -> int:
    """Output channels of a bottleneck ResNet: width doubles per stage, times the expansion 4."""
    return (width << (len(layers) - 1)) * Bottleneck.expansion


def _conv(cin: int, cout: int, kernel: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, kernel, stride=stride, padding=kernel // 2, bias=False)


class Bottleneck(nn.Module):
    """torchvision's ResNet v1.5 bottleneck (stride on the 3x3 convolution)."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None) -> None:
        super().__init__()
        self.conv1, self.bn1 = _conv(inplanes, planes, 1), FrozenBatchNorm2d(planes)
        self.conv2, self.bn2 = _conv(planes, planes, 3, stride), FrozenBatchNorm2d(planes)
        self.conv3 = _conv(planes, planes * self.expansion, 1)
        self.bn3 = FrozenBatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)  # type: ignore[no-any-return]


class ResNetBody(nn.Module):
    """torchvision's ResNet up to layer4 (what IntermediateLayerGetter keeps: no avgpool, no fc)."""

    def __init__(self, layers: Sequence[int] = (3, 4, 23, 3), width: int = 64) -> None:
        super().__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = FrozenBatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        for i, blocks in enumerate(layers):
            setattr(self, f"layer{i + 1}", self._make_layer(width * 2 ** i, blocks, 1 if i == 0 else 2))
        self.num_stages = len(layers)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def _make_layer(self, planes: int, blocks: int, stride: int) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * Bottleneck.expansion:
            downsample = nn.Sequential(_conv(self.inplanes, planes * Bottleneck.expansion, 1, stride),
                                       FrozenBatchNorm2d(planes * Bottleneck.expansion))
        layers = [Bottleneck(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * Bottleneck.expansion
        layers += [Bottleneck(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        for i in range(self.num_stages):
            x = getattr(self, f"layer{i + 1}")(x)
        return x


class Backbone(nn.Module):
    """ResNet with frozen BatchNorm; returns the last stage and its downsampled padding mask."""

    def __init__(self, layers: Sequence[int] = (3, 4, 23, 3), width: int = 64) -> None:
        super().__init__()
        self.body = ResNetBody(layers, width)
        self.num_channels = _num_channels(layers, width)

    def forward(self, tensor_list: NestedTensor) -> list[NestedTensor]:
        x = self.body(tensor_list.tensors)
        mask = F.interpolate(tensor_list.mask[None].float(), size=x.shape[-2:]).bool()[0]
        return [NestedTensor(x, mask)]


class PositionEmbeddingSine(nn.Module):
    """DETR's sine position embedding of the (unpadded) pixel coordinates, normalised to [0, 2 pi]."""

    def __init__(self, num_pos_feats: int = 64, temperature: int = 10000, normalize: bool = False,
                 scale: float | None = None) -> None:
        super().__init__()
        if scale is not None and not normalize:
            raise ValueError("normalize should be True if scale is passed")
        self.num_pos_feats, self.temperature, self.normalize = num_pos_feats, temperature, normalize
        self.scale = 2 * math.pi if scale is None else scale

    def forward(self, tensor_list: NestedTensor) -> Tensor:
        x, mask = tensor_list.decompose()
        not_mask = ~mask
        y_embed = not_mask.cumsum(1, dtype=torch.float32)
        x_embed = not_mask.cumsum(2, dtype=torch.float32)
        if self.normalize:
            eps = 1e-6
            y_embed = y_embed / (y_embed[:, -1:, :] + eps) * self.scale
            x_embed = x_embed / (x_embed[:, :, -1:] + eps) * self.scale
        dim_t = torch.arange(self.num_pos_feats, dtype=torch.float32, device=x.device)
        dim_t = self.temperature ** (2 * (dim_t // 2) / self.num_pos_feats)
        pos_x = x_embed[:, :, :, None] / dim_t
        pos_y = y_embed[:, :, :, None] / dim_t
        pos_x = torch.stack((pos_x[:, :, :, 0::2].sin(), pos_x[:, :, :, 1::2].cos()), dim=4).flatten(3)
        pos_y = torch.stack((pos_y[:, :, :, 0::2].sin(), pos_y[:, :, :, 1::2].cos()), dim=4).flatten(3)
        return torch.cat((pos_y, pos_x), dim=3).permute(0, 3, 1, 2)


class Joiner(nn.Sequential):
    """backbone (index 0) + position embedding (index 1): hence the `backbone.0.body.*` keys."""

    def __init__(self, backbone: Backbone, position_embedding: PositionEmbeddingSine) -> None:
        super().__init__(backbone, position_embedding)

    def forward(self, tensor_list: NestedTensor) -> tuple[list[NestedTensor], list[Tensor]]:
        xs = self[0](tensor_list)
        return xs, [self[1](x).to(x.tensors.dtype) for x in xs]


# --------------------------------------------------------------------------------- transformer --

def _with_pos(tensor: Tensor, pos: Tensor | None) -> Tensor:
    return tensor if pos is None else tensor + pos


class TransformerEncoderLayer(nn.Module):
    """Post-norm DETR encoder layer (position added to queries and keys)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1) -> None:
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, nhead, dropout=dropout)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout)

    def forward(self, src: Tensor, src_key_padding_mask: Tensor | None = None, pos: Tensor | None = None) -> Tensor:
        q = k = _with_pos(src, pos)
        src2 = self.self_attn(q, k, value=src, key_padding_mask=src_key_padding_mask)[0]
        src = self.norm1(src + self.dropout1(src2))
        src2 = self.linear2(self.dropout(F.relu(self.linear1(src))))
        return self.norm2(src + self.dropout2(src2))  # type: ignore[no-any-return]


class TransformerDecoderLayer(nn.Module):
    """MDETR's decoder layer: self-attention, cross-attention to the image+text memory, FFN (the
    official layer has no norm2/dropout2: its text cross-attention is commented out)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1) -> None:
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, nhead, dropout=dropout)
        self.cross_attn_image = nn.MultiheadAttention(d_model, nhead, dropout=dropout)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1, self.norm3, self.norm4 = nn.LayerNorm(d_model), nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout1, self.dropout3, self.dropout4 = nn.Dropout(dropout), nn.Dropout(dropout), nn.Dropout(dropout)

    def forward(self, tgt: Tensor, memory: Tensor, memory_key_padding_mask: Tensor | None = None,
                pos: Tensor | None = None, query_pos: Tensor | None = None) -> Tensor:
        q = k = _with_pos(tgt, query_pos)
        tgt = self.norm1(tgt + self.dropout1(self.self_attn(q, k, value=tgt)[0]))
        tgt2 = self.cross_attn_image(query=_with_pos(tgt, query_pos), key=_with_pos(memory, pos), value=memory,
                                     key_padding_mask=memory_key_padding_mask)[0]
        tgt = self.norm3(tgt + self.dropout3(tgt2))
        tgt2 = self.linear2(self.dropout(F.relu(self.linear1(tgt))))
        return self.norm4(tgt + self.dropout4(tgt2))  # type: ignore[no-any-return]


def _clones(module: nn.Module, n: int) -> nn.ModuleList:
    return nn.ModuleList([copy.deepcopy(module) for _ in range(n)])


class TransformerEncoder(nn.Module):
    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers

    def forward(self, src: Tensor, src_key_padding_mask: Tensor | None = None, pos: Tensor | None = None) -> Tensor:
        for layer in self.layers:
            src = layer(src, src_key_padding_mask=src_key_padding_mask, pos=pos)
        return src


class TransformerDecoder(nn.Module):
    """Returns the normalised output of every layer (return_intermediate=True, as hubconf builds it)."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: nn.LayerNorm) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, memory_key_padding_mask: Tensor | None = None,
                pos: Tensor | None = None, query_pos: Tensor | None = None) -> Tensor:
        intermediate = []
        for layer in self.layers:
            tgt = layer(tgt, memory, memory_key_padding_mask=memory_key_padding_mask, pos=pos, query_pos=query_pos)
            intermediate.append(self.norm(tgt))
        return torch.stack(intermediate)


class FeatureResizer(nn.Module):
    """Linear projection + LayerNorm (+ dropout) from the text encoder's width to d_model."""

    def __init__(self, input_feat_size: int, output_feat_size: int, dropout: float, do_ln: bool = True) -> None:
        super().__init__()
        self.do_ln = do_ln
        self.fc = nn.Linear(input_feat_size, output_feat_size, bias=True)
        self.layer_norm = nn.LayerNorm(output_feat_size, eps=1e-12)
        self.dropout = nn.Dropout(dropout)

    def forward(self, encoder_features: Tensor) -> Tensor:
        x = self.fc(encoder_features)
        return self.dropout(self.layer_norm(x) if self.do_ln else x)  # type: ignore[no-any-return]


class Transformer(nn.Module):
    """DETR transformer whose encoder runs over the image features concatenated with the RoBERTa
    features of the caption (resized to d_model); the decoder attends to both."""

    def __init__(self, text_encoder: Any, tokenizer: Any, d_model: int = 256, nhead: int = 8,
                 num_encoder_layers: int = 6, num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1) -> None:
        super().__init__()
        self.encoder = TransformerEncoder(TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout),
                                          num_encoder_layers)
        self.decoder = TransformerDecoder(TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout),
                                          num_decoder_layers, nn.LayerNorm(d_model))
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        self.tokenizer = tokenizer
        self.text_encoder = text_encoder
        self.expander_dropout = 0.1
        self.resizer = FeatureResizer(int(text_encoder.config.hidden_size), d_model, self.expander_dropout)
        self.d_model, self.nhead = d_model, nhead

    def encode(self, src: Tensor, mask: Tensor, query_embed: Tensor, pos_embed: Tensor,
               text: Sequence[str]) -> dict[str, Any]:
        """Encode image features (N x C x H x W) with the captions; the memory cache of the official
        `encode_and_save=True` pass."""
        bs = src.shape[0]
        src = src.flatten(2).permute(2, 0, 1)
        pos_embed = pos_embed.flatten(2).permute(2, 0, 1)
        query_embed = query_embed.unsqueeze(1).repeat(1, bs, 1)
        mask = mask.flatten(1)
        tokenized = self.tokenizer(list(text), padding="longest", return_tensors="pt").to(src.device)
        encoded_text = self.text_encoder(input_ids=tokenized["input_ids"], attention_mask=tokenized["attention_mask"])
        text_memory = encoded_text.last_hidden_state.transpose(0, 1)         # sequence first
        text_attention_mask = tokenized["attention_mask"].ne(1).bool()       # True = padding
        text_memory_resized = self.resizer(text_memory)
        src = torch.cat([src, text_memory_resized], dim=0)
        mask = torch.cat([mask, text_attention_mask], dim=1)
        pos_embed = torch.cat([pos_embed, torch.zeros_like(text_memory_resized)], dim=0)
        img_memory = self.encoder(src, src_key_padding_mask=mask, pos=pos_embed)
        return {
            "text_memory_resized": text_memory_resized,
            "text_memory": img_memory[-len(text_memory_resized):],
            "img_memory": img_memory,
            "mask": mask,
            "text_attention_mask": text_attention_mask,
            "pos_embed": pos_embed,
            "query_embed": query_embed,
            "tokenized": tokenized,
        }

    def decode(self, memory_cache: Mapping[str, Any]) -> Tensor:
        """Decoder outputs of every layer: layers x N x queries x d_model."""
        query_embed = memory_cache["query_embed"]
        hs: Tensor = self.decoder(torch.zeros_like(query_embed), memory_cache["img_memory"],
                          memory_key_padding_mask=memory_cache["mask"], pos=memory_cache["pos_embed"],
                          query_pos=query_embed)
        return hs.transpose(1, 2)


# ----------------------------------------------------------------------------------------- MDETR --

class MLP(nn.Module):
    """Very simple multi-layer perceptron (ReLU between layers)."""

    def __init__(self, input_dim: int, hidden_dim: int, output_dim: int, num_layers: int) -> None:
        super().__init__()
        self.num_layers = num_layers
        h = [hidden_dim] * (num_layers - 1)
        self.layers = nn.ModuleList(nn.Linear(n, k) for n, k in zip([input_dim] + h, h + [output_dim]))

    def forward(self, x: Tensor) -> Tensor:
        for i, layer in enumerate(self.layers):
            x = F.relu(layer(x)) if i < self.num_layers - 1 else layer(x)
        return x


class MDETR(nn.Module):
    """Modulated detection: boxes for the phrases of a caption. `pred_logits` are over the caption's
    token positions (num_classes) plus "no object"; `pred_boxes` are (cx, cy, w, h) in [0, 1]."""

    def __init__(self, cfg: MdetrConfig, text_encoder: Any, tokenizer: Any) -> None:
        super().__init__()
        self.cfg = cfg
        self.num_queries = cfg.num_queries
        self.transformer = Transformer(text_encoder, tokenizer, cfg.hidden_dim, cfg.nheads, cfg.enc_layers,
                                       cfg.dec_layers, cfg.dim_feedforward)
        hidden_dim = cfg.hidden_dim
        self.class_embed = nn.Linear(hidden_dim, cfg.num_classes + 1)
        self.bbox_embed = MLP(hidden_dim, hidden_dim, 4, 3)
        self.query_embed = nn.Embedding(cfg.num_queries, hidden_dim)
        backbone = Backbone(cfg.backbone_layers, cfg.backbone_width)
        self.input_proj = nn.Conv2d(backbone.num_channels, hidden_dim, kernel_size=1)
        self.backbone = Joiner(backbone, PositionEmbeddingSine(hidden_dim // 2, normalize=True))
        self.contrastive_align_projection_image = nn.Linear(hidden_dim, cfg.contrastive_hdim)
        self.contrastive_align_projection_text = nn.Linear(hidden_dim, cfg.contrastive_hdim)

    def forward(self, samples: NestedTensor | Tensor | Sequence[Tensor], captions: Sequence[str],
                encode_and_save: bool = True, memory_cache: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The official two-pass call: `encode_and_save=True` returns the memory cache, then
        `encode_and_save=False, memory_cache=...` returns pred_logits, pred_boxes, proj_queries,
        proj_tokens and tokenized."""
        if not isinstance(samples, NestedTensor):
            samples = NestedTensor.from_tensor_list(samples)
        if encode_and_save:
            features, pos = self.backbone(samples)
            src, mask = features[-1].decompose()
            return self.transformer.encode(self.input_proj(src), mask, self.query_embed.weight, pos[-1], captions)
        if memory_cache is None:
            raise ValueError("the decoding pass needs the memory_cache of the encoding pass")
        hs = self.transformer.decode(memory_cache)
        outputs_class = self.class_embed(hs)
        outputs_coord = self.bbox_embed(hs).sigmoid()
        proj_queries = F.normalize(self.contrastive_align_projection_image(hs), p=2, dim=-1)
        proj_tokens = F.normalize(
            self.contrastive_align_projection_text(memory_cache["text_memory"]).transpose(0, 1), p=2, dim=-1)
        return {"pred_logits": outputs_class[-1], "pred_boxes": outputs_coord[-1], "proj_queries": proj_queries[-1],
                "proj_tokens": proj_tokens, "tokenized": memory_cache["tokenized"]}


# ---------------------------------------------------------------------------------- loading --

def read_checkpoint(path: str | Path) -> tuple[dict[str, Tensor], Any]:
    """The "model" state dict of an MDETR checkpoint and its training "args" (None when absent).
    Loads with torch's weights-only unpickler (argparse.Namespace allowed, for "args"); a
    checkpoint holding other classes is unpickled in full, with a warning."""
    try:
        with torch.serialization.safe_globals([argparse.Namespace]):
            ckpt = torch.load(str(path), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        if "global" not in str(e):  # not a disallowed class: a damaged or foreign file
            raise
        _log.warning("%s holds objects beyond tensors and argparse args: unpickling it in full "
                     "(load only checkpoints you trust)", path)
        ckpt = torch.load(str(path), map_location="cpu", weights_only=False)
    if isinstance(ckpt, dict) and isinstance(ckpt.get("model"), Mapping):
        return dict(ckpt["model"]), ckpt.get("args")
    if isinstance(ckpt, dict) and "query_embed.weight" in ckpt:
        return ckpt, None
    raise ValueError(f"{path} is neither an MDETR checkpoint (a dict with 'model') nor a state dict")


def load_state_dict(model: MDETR, state: Mapping[str, Tensor]) -> None:
    """`load_state_dict(strict=True)`, after dropping entries for buffers the current transformers
    no longer saves (RoBERTa's `embeddings.position_ids`, persistent in transformers 4.5)."""
    non_persistent = {name for name, _ in model.named_buffers()} - set(model.state_dict())
    model.load_state_dict({k: v for k, v in state.items() if k not in non_persistent}, strict=True)


def build_mdetr(cfg: MdetrConfig, text_encoder_dir: str | Path) -> MDETR:
    """An MDETR with random weights: RoBERTa config and tokenizer from a local roberta-base directory."""
    tf = importlib.import_module("transformers")
    d = str(text_encoder_dir)
    text_config = tf.RobertaConfig.from_pretrained(d, local_files_only=True)
    tokenizer = tf.RobertaTokenizerFast.from_pretrained(d, local_files_only=True)
    return MDETR(cfg, tf.RobertaModel(text_config), tokenizer)


def load_mdetr(checkpoint: str | Path, text_encoder_dir: str | Path) -> MDETR:
    """MDETR in eval mode with the checkpoint's weights; the architecture is read from the
    checkpoint's state dict (heads from its args when present, else 8)."""
    state, args = read_checkpoint(checkpoint)
    cfg = MdetrConfig.from_state_dict(state, nheads=int(getattr(args, "nheads", 8)))
    model = build_mdetr(cfg, text_encoder_dir)
    load_state_dict(model, state)
    return model.eval()


# ------------------------------------------------------------------------- pre/post-processing --

def resized_size(height: int, width: int, size: int = 800, max_size: int | None = 1333) -> tuple[int, int]:
    """(h, w) with the shorter side `size` unless the longer would exceed `max_size` (DETR's rule)."""
    if max_size is not None:
        lo, hi = float(min(width, height)), float(max(width, height))
        if hi / lo * size > max_size:
            size = int(round(max_size * lo / hi))
    if (width <= height and width == size) or (height <= width and height == size):
        return height, width
    if width < height:
        return int(size * height / width), size
    return size, int(size * width / height)


def image_tensor(image: NDArray[np.uint8], size: int = 800, max_size: int | None = 1333) -> Tensor:
    """HxWx3 uint8 RGB -> 1x3xH'xW' float, resized (PIL bilinear, as torchvision on PIL images) and
    ImageNet-normalised."""
    from PIL import Image

    h, w = resized_size(image.shape[0], image.shape[1], size, max_size)
    pil = Image.fromarray(np.ascontiguousarray(image)).resize((w, h), Image.Resampling.BILINEAR)
    a = (np.asarray(pil, dtype=np.float32) / 255.0 - np.array(MEAN, np.float32)) / np.array(STD, np.float32)
    return torch.from_numpy(np.ascontiguousarray(a.transpose(2, 0, 1)))[None]


def box_cxcywh_to_xyxy(x: Tensor) -> Tensor:
    cx, cy, w, h = x.unbind(-1)
    return torch.stack([cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h], dim=-1)


def positive_map(tokenized: Any, spans: Sequence[tuple[int, int]], num_tokens: int = 256) -> Tensor:
    """len(spans) x num_tokens bool: the token positions of each character span of caption 0 (as
    MDETR's create_positive_map, with its fallbacks for characters that map to no token)."""
    out = torch.zeros((len(spans), num_tokens), dtype=torch.bool)

    def token(char: int, step: int) -> int | None:
        for c in (char, char + step, char + 2 * step):
            pos = tokenized.char_to_token(0, c) if c >= 0 else None
            if pos is not None:
                return int(pos)
        return None

    for j, (beg, end) in enumerate(spans):
        beg_pos, end_pos = token(beg, 1), token(end - 1, -1)
        if beg_pos is not None and end_pos is not None:
            out[j, beg_pos: min(end_pos + 1, num_tokens)] = True
    return out


@dataclass(frozen=True)
class PhraseBox:
    phrase: int                                # index into the spans of the positive map
    score: float                               # 1 - p(no object)
    box: tuple[float, float, float, float]     # x_min, y_min, x_max, y_max (px)


def grounded_boxes(outputs: Mapping[str, Tensor], pos_map: Tensor, width: int, height: int,
                   threshold: float = 0.7, min_phrase_prob: float = 0.1) -> list[PhraseBox]:
    """Boxes of image 0 whose 1 - p(no object) exceeds `threshold` (as MDETR's demo), each with the
    phrase whose tokens get the most of its probability; a box whose best phrase gets less than
    `min_phrase_prob` (the demo's token threshold) refers to none and is dropped."""
    prob = outputs["pred_logits"][0].softmax(-1)                     # queries x (tokens + no object)
    scores = 1 - prob[:, -1]
    mass = prob[:, : pos_map.shape[1]] @ pos_map.to(prob.dtype).T    # queries x phrases
    boxes = box_cxcywh_to_xyxy(outputs["pred_boxes"][0]) * torch.tensor([width, height, width, height])
    out = []
    for q in (scores > threshold).nonzero().flatten().tolist():
        if mass.shape[1] == 0 or float(mass[q].max()) < min_phrase_prob:
            continue
        b = boxes[q].tolist()
        out.append(PhraseBox(int(mass[q].argmax()), float(scores[q]), (b[0], b[1], b[2], b[3])))
    return out
