"""In-process Hugging Face transformers backend (torch) with KV-cache prefix reuse.

Same interface as :class:`~monologue_llm.llama_cpp_backend.LlamaCppBackend`, for machines with a
GPU (``device="cuda"``) or for checking llama.cpp's numbers against an independent implementation.
The model comes from a local Hugging Face directory or from a GGUF file through transformers' GGUF
support (``from_pretrained(..., gguf_file=...)``, which dequantises the weights to float). Parsing a
GGUF is slow (its 262k-token vocabulary: about a minute on 2 cores), so the converted model and
tokenizer are written once to ``convert_cache_dir`` and loaded from there afterwards.

Every sequence keeps a full (not windowed) KV cache, so any prefix of what was evaluated can be
reused by the next call, including on models with sliding-window layers (Gemma 3).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .base import Generation, LLMError, Sample, SampleResult, ScoreResult, Vector, l2_normalize
from .decoding import (
    candidate_scores,
    candidate_tokens,
    check_sample_args,
    common_prefix,
    cut_sample,
    pick_token,
    sample_rng,
)

_LOG = logging.getLogger(__name__)
DTYPES: tuple[str, ...] = ("float32", "bfloat16", "float16")
_PREFILL_CHUNK = 512  # tokens per forward pass when evaluating a long prompt (bounds attention memory)
_EMBED_CACHE_SIZE = 20_000  # texts whose embedding is kept
# end-of-generation tokens besides the tokenizer's eos (chat-turn ends of common model families)
_EOG_NAMES = ("<end_of_turn>", "<|eot_id|>", "<|im_end|>", "<|end|>", "<|endoftext|>")


def _gguf_fingerprint(path: Path) -> str:
    """Short digest of a GGUF file's content and the transformers version (not its mtime: a fresh venv
    reinstalls the same model file, and the conversion takes minutes)."""
    import transformers

    h = hashlib.blake2b(digest_size=8)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 23), b""):
            h.update(chunk)
    h.update(f"|{transformers.__version__}".encode())
    return h.hexdigest()


def converted_dir(gguf_path: str | Path, cache_dir: str | Path) -> Path:
    """Where convert_gguf keeps (or will keep) the conversion of ``gguf_path``."""
    path = Path(gguf_path)
    return Path(cache_dir).expanduser() / f"{path.stem}-{_gguf_fingerprint(path)}"


def is_converted(gguf_path: str | Path, cache_dir: str | Path) -> bool:
    return _is_hf_dir(converted_dir(gguf_path, cache_dir))


def _is_hf_dir(path: Path) -> bool:
    return path.is_dir() and (path / "config.json").is_file()


def convert_gguf(gguf_path: str | Path, cache_dir: str | Path, logger: logging.Logger | None = None) -> Path:
    """A Hugging Face directory (float32 safetensors + tokenizer) converted from ``gguf_path``.

    The conversion is done once per file (keyed by name, size, mtime and transformers version) into
    ``cache_dir/<stem>-<digest>``, written to a temporary directory and renamed into place, so that
    concurrent processes and crashes never leave a partial model. Returns the directory.
    """
    log = logger or _LOG
    path = Path(gguf_path)
    if not path.is_file():
        raise LLMError(f"GGUF model file not found: {path}")
    root = Path(cache_dir).expanduser()
    target = converted_dir(path, root)
    if _is_hf_dir(target):
        return target
    t0 = time.perf_counter()
    tokenizer, model = _load_gguf(path)
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=root))
    except OSError as exc:
        raise LLMError(f"cannot write the conversion cache dir {root}: {exc}") from exc
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; the model cache is shared like the GGUF
        try:
            os.replace(tmp, target)
        except OSError:
            if not _is_hf_dir(target):  # not another process's finished conversion: a real error
                raise
    except OSError as exc:
        raise LLMError(f"writing the converted model to {target} failed: {exc}") from exc
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    log.info("converted %s to %s in %.1fs", path.name, target, time.perf_counter() - t0)
    return target


def _load_gguf(path: Path) -> tuple[Any, Any]:
    """(tokenizer, float32 model) read from a GGUF file with transformers' GGUF loader."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(
            path.parent, gguf_file=path.name, dtype=torch.float32, local_files_only=True
        )
    except Exception as exc:  # noqa: BLE001 - the loaders raise many kinds (struct.error, ...)
        raise LLMError(f"transformers could not load the GGUF file {path}: {exc}") from exc
    # the weights are dequantised floats now: drop the GGUF quantizer so the model can be saved
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    setattr(model, "hf_quantizer", None)  # noqa: B010 - typed as a module attribute by torch
    return tokenizer, model


def apply_lora(model: Any, lora_path: Path, base_gguf: Path | None) -> Any:
    """``model`` with the LoRA adapter ``lora_path`` merged into its weights (through peft): a GGUF LoRA
    (llama.cpp's format, checked against ``base_gguf`` when the model came from one) or a peft adapter
    directory. A missing, corrupt or mismatched adapter raises LoraAdapterError naming the file."""
    import torch
    from peft import LoraConfig, PeftModel, get_peft_model, set_peft_model_state_dict

    from .lora import LoraAdapterError, read_adapter

    try:
        if lora_path.is_dir():
            if not (lora_path / "adapter_config.json").is_file():
                raise LoraAdapterError(f"{lora_path} is not a peft adapter directory (no adapter_config.json)")
            peft_model = PeftModel.from_pretrained(model, lora_path, is_trainable=False)
        else:
            adapter = read_adapter(lora_path, base_gguf)
            # peft annotates lora_alpha as int but scales by the float alpha / r, as llama.cpp does
            config = LoraConfig(r=adapter.rank, lora_alpha=adapter.alpha,  # type: ignore[arg-type]
                                target_modules=adapter.hf_targets(), lora_dropout=0.0, bias="none")
            peft_model = get_peft_model(model, config)
            state = {k: torch.from_numpy(v.copy()) for k, v in adapter.hf_state_dict().items()}
            result: Any = set_peft_model_state_dict(peft_model, state)
            missing = [k for k in result.missing_keys if "lora_" in k]
            unexpected = list(result.unexpected_keys)
            if missing or unexpected:
                raise LoraAdapterError(f"{lora_path} does not fit the model: missing {missing[:3]}, unexpected "
                                       f"{unexpected[:3]}")
    except LoraAdapterError:
        raise
    except (RuntimeError, ValueError, KeyError, OSError) as exc:  # peft's size mismatches, bad configs
        raise LoraAdapterError(f"LoRA adapter {lora_path} cannot be applied to the model: {exc}") from exc
    return peft_model.merge_and_unload()


class TransformersBackend:
    """Greedy generation, candidate scoring, sampling and embeddings with a transformers model.

    ``model_path`` is a GGUF file or a local Hugging Face model directory (``config.json``,
    weights, tokenizer). ``device`` is a torch device string (``"cpu"``, ``"cuda"``,
    ``"cuda:1"``); ``dtype`` one of :data:`DTYPES`. ``reuse_prefix`` keeps the KV cache between
    calls: a call evaluates only the tokens after its longest common prefix with the cache (and
    one token before it, whose logits are needed). Candidates are scored through a token trie: a
    run of tokens shared by several candidates is evaluated once (see ``share_min_tokens``), the
    rest in padded batches of up to ``batch_size`` sequences that share the KV cache before them.
    Scores equal a from-scratch evaluation to float rounding (~1e-5 nats). Calls are serialised
    by a lock.
    """

    def __init__(
        self,
        model_path: str | Path,
        device: str = "cpu",
        dtype: str = "float32",
        n_ctx: int = 4096,
        n_threads: int | None = None,
        reuse_prefix: bool = True,
        batch_size: int = 16,
        share_min_tokens: int = 0,
        convert_cache_dir: str | Path | None = None,
        logger: logging.Logger | None = None,
        lora_path: str | Path | None = None,
    ) -> None:
        import torch

        self.log = logger or _LOG
        path = Path(model_path).expanduser()
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
        if n_ctx < 16:
            raise ValueError(f"n_ctx must be >= 16, got {n_ctx}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        try:
            dev = torch.device(device)
        except RuntimeError as exc:
            raise ValueError(f"device {device!r} is not a torch device: {exc}") from exc
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise LLMError(f"device {device!r} asked for, but this torch has no CUDA device "
                           f"(torch {torch.__version__}); use device 'cpu'")
        if n_threads is not None and n_threads > 0:
            torch.set_num_threads(n_threads)
        self._torch: Any = torch
        self._device = dev
        self._dtype = getattr(torch, dtype)
        self.n_ctx = n_ctx
        self.reuse_prefix = reuse_prefix
        self.batch_size = batch_size
        # a token run shared by several candidates gets a forward pass of its own if that saves at
        # least this many token evaluations (0: always, a full token trie; measured no faster on a CPU
        # with 24, where a forward pass costs about as much as 30 tokens because it reads every weight)
        self.share_min_tokens = share_min_tokens
        t0 = time.perf_counter()
        source = self._resolve(path, convert_cache_dir)
        self.name = f"transformers:{path.name}"
        if source is None:
            self._tok, model = _load_gguf(path)
            model = model.to(dtype=self._dtype)
        else:
            self._tok, model = self._load_dir(source)
        if lora_path:
            model = apply_lora(model, Path(lora_path).expanduser(), path if path.is_file() else None)
            self.name += f"+{Path(lora_path).name}"
        self._model: Any = model.to(self._device).eval()
        self.load_time_s = time.perf_counter() - t0
        self._bos: int | None = self._tok.bos_token_id
        pad = self._tok.pad_token_id
        self._pad = int(pad if pad is not None else (self._tok.eos_token_id or 0))
        self._eog = self._eog_ids()
        self._lock = threading.Lock()
        self._kv_tokens: list[int] = []  # tokens whose keys/values are in self._kv (batch 1)
        self._kv: list[tuple[Any, Any]] = []  # per layer (keys, values), [1, heads, len, head_dim]
        self._last_row: Any = None  # log-softmax row after self._kv_tokens (float64, on the CPU)
        self._evaluated = 0
        self._embeddings: dict[str, Vector] = {}
        self._closed = False
        self.log.info("loaded %s on %s (%s) in %.2fs (n_ctx=%d, reuse_prefix=%s, batch_size=%d)",
                      path.name, dev, dtype, self.load_time_s, n_ctx, reuse_prefix, batch_size)

    # -- loading -----------------------------------------------------------
    def _resolve(self, path: Path, convert_cache_dir: str | Path | None) -> Path | None:
        """The HF directory to load, or None to load the GGUF file directly."""
        if path.is_dir():
            if not _is_hf_dir(path):
                raise LLMError(f"{path} is not a Hugging Face model directory (no config.json)")
            return path
        if not path.is_file():
            raise LLMError(f"model not found: {path} (a GGUF file or a Hugging Face model directory)")
        if path.suffix.lower() != ".gguf":
            raise LLMError(f"{path} is neither a .gguf file nor a Hugging Face model directory")
        if convert_cache_dir is None:
            return None
        return convert_gguf(path, convert_cache_dir, self.log)

    def _load_dir(self, directory: Path) -> tuple[Any, Any]:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
            model = AutoModelForCausalLM.from_pretrained(directory, dtype=self._dtype, local_files_only=True)
        except Exception as exc:  # noqa: BLE001 - the loaders raise many kinds
            raise LLMError(f"transformers could not load the model directory {directory}: {exc}") from exc
        return tokenizer, model

    def _eog_ids(self) -> frozenset[int]:
        ids: set[int] = set()
        for source in (self._tok.eos_token_id, getattr(self._model.generation_config, "eos_token_id", None)):
            if isinstance(source, int):
                ids.add(source)
            elif isinstance(source, (list, tuple)):
                ids.update(int(i) for i in source)
        vocab = self._tok.get_vocab()
        ids.update(int(vocab[name]) for name in _EOG_NAMES if name in vocab)
        return frozenset(ids)

    # -- tokens ------------------------------------------------------------
    def tokenize(self, text: str) -> list[int]:
        """Tokens of ``text`` after the model's BOS token; special-token syntax is not parsed."""
        ids = [int(t) for t in self._tok(text, add_special_tokens=False, split_special_tokens=True)["input_ids"]]
        if self._bos is not None:
            ids.insert(0, int(self._bos))
        return ids

    def _text(self, tokens: Sequence[int]) -> str:
        return str(self._tok.decode(list(tokens), skip_special_tokens=False, clean_up_tokenization_spaces=False))

    # -- KV cache and forward passes ----------------------------------------
    def _cache(self, layers: Sequence[tuple[Any, Any]], batch: int) -> Any:
        """A DynamicCache holding ``layers`` (viewed, not copied) repeated ``batch`` times."""
        from transformers import cache_utils

        cache = cache_utils.DynamicCache()
        for keys, values in layers:
            layer: Any = cache_utils.DynamicLayer()  # type: ignore[no-untyped-call]
            layer.lazy_initialization(keys, values)
            layer.keys = keys.expand(batch, -1, -1, -1) if batch > 1 else keys
            layer.values = values.expand(batch, -1, -1, -1) if batch > 1 else values
            cache.layers.append(layer)
        return cache

    def _forward(
        self, ids: Sequence[Sequence[int]], past: Sequence[tuple[Any, Any]], keep: Sequence[int]
    ) -> tuple[Any, list[tuple[Any, Any]]]:
        """Run ``ids`` (a batch of equal-length rows) after ``past``.

        Returns (log-softmax rows [batch, len(keep), vocab] as float64 on the CPU for the relative
        positions ``keep``, the extended per-layer keys/values).
        """
        torch = self._torch
        batch = len(ids)
        if len(past) and past[0][0].shape[-2] + len(ids[0]) > self.n_ctx:
            raise LLMError(f"context overflow: {past[0][0].shape[-2] + len(ids[0])} tokens > n_ctx={self.n_ctx}")
        cache = self._cache(past, batch)
        input_ids = torch.tensor([list(r) for r in ids], dtype=torch.long, device=self._device)
        keep_t = torch.tensor(list(keep), dtype=torch.long, device=self._device)
        with torch.inference_mode():
            out = self._model(input_ids=input_ids, past_key_values=cache, use_cache=True,
                              logits_to_keep=keep_t if len(keep) else 1)
        rows = out.logits[:, : len(keep)].to(device="cpu", dtype=torch.float64).log_softmax(-1)
        layers = [(layer.keys, layer.values) for layer in out.past_key_values.layers]
        return rows, layers

    def _reset(self) -> None:
        self._kv_tokens, self._kv, self._last_row = [], [], None

    def _sync(self, toks: Sequence[int], want_from: int) -> dict[int, Any]:
        """Make the KV cache hold exactly ``toks``; return log-softmax rows by absolute position for
        every position in ``[want_from, len(toks))`` (the row at p predicts token p + 1)."""
        toks = list(toks)
        n = len(toks)
        if n > self.n_ctx:
            raise LLMError(f"context overflow: {n} tokens > n_ctx={self.n_ctx}")
        c = common_prefix(self._kv_tokens, toks) if self.reuse_prefix else 0
        if c == n == len(self._kv_tokens) and want_from == n - 1 and self._last_row is not None:
            return {n - 1: self._last_row}
        c = min(c, max(want_from, 0), n - 1)
        layers = [(k[..., :c, :], v[..., :c, :]) for k, v in self._kv] if c > 0 else []
        self._reset()
        rows: dict[int, Any] = {}
        start = c
        while start < n:
            end = min(n, start + _PREFILL_CHUNK)
            keep = [p - start for p in range(max(start, want_from), end)]
            got, layers = self._forward([toks[start:end]], layers, keep)
            self._evaluated += end - start
            for j, rel in enumerate(keep):
                rows[start + rel] = got[0, j]
            start = end
        self._kv_tokens, self._kv = toks, layers
        self._last_row = rows.get(n - 1)
        return rows

    def _begin_call(self) -> None:
        if self._closed:
            raise LLMError("backend is closed")
        self._evaluated = 0
        if not self.reuse_prefix:
            self._reset()

    # -- LLMBackend ----------------------------------------------------------
    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64) -> Generation:
        """Greedy (argmax) completion, cut before the earliest stop string."""
        if max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, got {max_tokens}")
        with self._lock:
            t0 = time.perf_counter()
            self._begin_call()
            toks = self.tokenize(prompt)
            sample = self._decode(toks, stop, max_tokens, None)
            return Generation(
                text=sample.text,
                prompt_tokens=len(toks),
                new_tokens_processed=self._evaluated,
                completion_tokens=len(sample.token_logprobs),
                finish_reason=sample.finish_reason,
                wall_time_s=time.perf_counter() - t0,
            )

    def _decode(self, toks: list[int], stop: Sequence[str], max_tokens: int, pick: Any) -> Sample:
        """Continue ``toks`` token by token; ``pick(logprob_row, seen)`` chooses (None: argmax).

        The returned sample's ``token_logprobs`` hold one entry per generated token (EOG excluded),
        cut to the tokens whose text starts before a stop string."""
        if len(toks) >= self.n_ctx:
            raise LLMError(f"prompt has {len(toks)} tokens, n_ctx is {self.n_ctx}")
        stops = [s for s in stop if s]
        out: list[int] = []
        lps: list[float] = []
        starts: list[int] = []
        text = ""
        finish = "length"
        row = self._sync(toks, len(toks) - 1)[len(toks) - 1] if max_tokens > 0 else None
        for step in range(max_tokens):
            assert row is not None
            tok = int(row.argmax()) if pick is None else int(pick(row, set(out)))
            if tok in self._eog:
                finish = "stop"
                break
            starts.append(len(text))
            out.append(tok)
            lps.append(float(row[tok]))
            text = self._text(out)
            kept = cut_sample(text, lps, starts, stops)
            if kept is not None:
                text, lps = kept
                finish = "stop"
                break
            if step == max_tokens - 1 or len(self._kv_tokens) + 1 > self.n_ctx:
                break
            pos = len(self._kv_tokens)
            row = self._sync([*self._kv_tokens, tok], pos)[pos]
        return Sample(text, tuple(lps), finish)

    def score(self, prompt: str, candidates: Sequence[str]) -> ScoreResult:
        """Sum of token log-probs of each candidate appended verbatim to ``prompt``.

        The candidate's tokens are the suffix of ``tokenize(prompt + candidate)`` after its common
        prefix with ``tokenize(prompt)`` (as in the llama.cpp backend). The prompt and the token
        prefix common to all candidates are evaluated once; the rest of the candidates in batches
        that share that KV cache (padding tokens are not counted in ``new_tokens_processed``).
        """
        with self._lock:
            t0 = time.perf_counter()
            self._begin_call()
            ptoks, fulls, firsts, active = candidate_tokens(self.tokenize, prompt, candidates, self.n_ctx)
            lps: dict[int, list[float]] = {}
            if active:
                lps = self._score_active([fulls[i] for i in active], [firsts[i] for i in active])
                lps = {active[j]: v for j, v in lps.items()}
            scores = candidate_scores(candidates, lps)
            return ScoreResult(
                scores=scores,
                prompt_tokens=len(ptoks),
                new_tokens_processed=self._evaluated,
                wall_time_s=time.perf_counter() - t0,
            )

    def _score_active(self, fulls: list[list[int]], firsts: list[int]) -> dict[int, list[float]]:
        """Log-probs of ``fulls[i][firsts[i]:]``: the prompt once, then a token trie of the candidates."""
        shared = min(firsts)
        row = self._sync(fulls[0][:shared], shared - 1)[shared - 1]  # predicts token `shared`
        lps: dict[int, dict[int, float]] = {i: {} for i in range(len(fulls))}
        self._trie(self._kv, shared, row, list(range(len(fulls))), fulls, firsts, lps)
        return {i: [v[p] for p in range(firsts[i], len(fulls[i]))] for i, v in lps.items()}

    def _trie(
        self, past: list[tuple[Any, Any]], base: int, row: Any, members: list[int],
        fulls: list[list[int]], firsts: list[int], lps: dict[int, dict[int, float]],
    ) -> None:
        """Score ``members`` (all sharing ``fulls[i][:base]``, whose keys/values are ``past``;
        ``row`` predicts token ``base``). A token run shared by several members is evaluated once;
        the rest of the single ones are evaluated together in padded batches."""
        groups: dict[int, list[int]] = {}
        for i in members:
            if len(fulls[i]) > base:
                groups.setdefault(fulls[i][base], []).append(i)
        singles: list[int] = []
        for tok, group in groups.items():
            for i in group:
                if base >= firsts[i]:
                    lps[i][base] = float(row[tok])
            group = [i for i in group if len(fulls[i]) > base + 1]
            if not group:  # every member ends with this token: nothing left to evaluate
                continue
            end = len(fulls[group[0]])
            for i in group[1:]:
                end = min(end, base + common_prefix(fulls[group[0]][base:], fulls[i][base:]))
            if (len(group) - 1) * (end - base) < self.share_min_tokens:
                singles.extend(group)  # too little shared to pay for a forward pass of its own
            else:
                run = fulls[group[0]][base:end]  # >= 1 token, shared by the whole group
                got, layers = self._forward([run], past, list(range(len(run))))
                self._evaluated += len(run)
                for j in range(len(run) - 1):
                    for i in group:
                        if base + j + 1 >= firsts[i]:
                            lps[i][base + j + 1] = float(got[0, j, fulls[i][base + j + 1]])
                self._trie(layers, end, got[0, len(run) - 1], group, fulls, firsts, lps)
        tails = sorted(singles, key=lambda k: len(fulls[k]))
        for b in range(0, len(tails), self.batch_size):
            chunk = tails[b : b + self.batch_size]
            width = max(len(fulls[i]) for i in chunk) - base - 1  # a last token needs no logits
            ids = [fulls[i][base:-1] for i in chunk]
            ids = [t + [self._pad] * (width - len(t)) for t in ids]
            got, _ = self._forward(ids, past, list(range(width)))  # row j predicts token base + j + 1
            self._evaluated += sum(len(fulls[i]) - base - 1 for i in chunk)
            for k, i in enumerate(chunk):
                for p in range(max(base + 1, firsts[i]), len(fulls[i])):
                    lps[i][p] = float(got[k, p - base - 1, fulls[i][p]])

    def sample(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64, n: int = 1,
               temperature: float = 1.0, presence_penalty: float = 0.0, seed: int = 0) -> SampleResult:
        """``n`` samples at ``temperature`` (0 = greedy), each cut before the earliest stop string.

        Sample ``i`` draws from ``numpy.random.default_rng([seed, i])``; ``presence_penalty`` is
        subtracted from the logit of every token already in the sample before the temperature is
        applied. ``token_logprobs`` are the model's own log-probabilities (temperature 1, no
        penalty) of the tokens kept in the text."""
        check_sample_args(max_tokens, n, temperature)
        with self._lock:
            t0 = time.perf_counter()
            self._begin_call()
            toks = self.tokenize(prompt)
            samples: list[Sample] = []
            for i in range(n):
                rng = sample_rng(seed, i)

                def pick(row: Any, seen: set[int], rng: Any = rng) -> int:
                    # log-softmax = logits minus a constant
                    return pick_token(row.numpy(), seen, temperature, presence_penalty, rng)

                samples.append(self._decode(toks, stop, max_tokens, pick))
            return SampleResult(
                samples=tuple(samples),
                prompt_tokens=len(toks),
                new_tokens_processed=self._evaluated,
                wall_time_s=time.perf_counter() - t0,
            )

    def embed(self, texts: Sequence[str]) -> tuple[Vector, ...]:
        """Mean-pooled (over every token, BOS included), L2-normalised last hidden layer; each text
        is embedded on its own and cached."""
        torch = self._torch
        with self._lock:
            if self._closed:
                raise LLMError("backend is closed")
            for text in dict.fromkeys(texts):
                if text in self._embeddings:
                    continue
                toks = self.tokenize(text)
                if len(toks) > self.n_ctx:
                    raise LLMError(f"text to embed has more than {self.n_ctx} tokens: {text[:80]!r}")
                ids = torch.tensor([toks], dtype=torch.long, device=self._device)
                with torch.inference_mode():
                    out = self._model(input_ids=ids, output_hidden_states=True, use_cache=False, logits_to_keep=1)
                mean = out.hidden_states[-1][0].to(device="cpu", dtype=torch.float64).mean(0)
                if len(self._embeddings) >= _EMBED_CACHE_SIZE:
                    self._embeddings.clear()
                self._embeddings[text] = l2_normalize([float(x) for x in mean])
            return tuple(self._embeddings[t] for t in texts)

    def close(self) -> None:
        """Drop the model and the KV cache (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._reset()
            self._model = None
            self._embeddings.clear()
            if self._device.type == "cuda":
                self._torch.cuda.empty_cache()

    def __enter__(self) -> TransformersBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
