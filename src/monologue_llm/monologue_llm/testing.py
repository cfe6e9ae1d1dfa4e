"""Test support: a tiny Gemma 3 with random weights, for tests of the transformers backend, LoRA adapters
and training that must not load the 270M model (torch, transformers and tokenizers are imported here)."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def write_tiny_gemma3(directory: Path, corpus: Sequence[str], vocab_size: int = 320,
                      max_positions: int = 512, seed: int = 0) -> Path:
    """A 2-layer Gemma 3 (hidden 32, q 2x16, kv 1x16, MLP 64, one sliding-window layer) with random
    weights (torch seed `seed`) and a byte-level BPE of `vocab_size` trained on `corpus`, saved in
    `directory` as a Hugging Face model directory; returns `directory`."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(list(corpus) * 4, trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<pad>", "<eos>", "<bos>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>")
    fast.save_pretrained(directory)
    config = Gemma3TextConfig(vocab_size=fast.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                              num_attention_heads=2, num_key_value_heads=1, head_dim=16, sliding_window=8,
                              layer_types=["sliding_attention", "full_attention"],
                              max_position_embeddings=max_positions, pad_token_id=0, eos_token_id=1, bos_token_id=2)
    torch.manual_seed(seed)
    Gemma3ForCausalLM(config).save_pretrained(directory)
    return directory
