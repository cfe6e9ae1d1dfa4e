"""In-process llama.cpp backend (llama-cpp-python) with KV-cache prefix reuse.

The backend drives llama.cpp's C API directly (batches, ``llama_decode``,
``llama_memory_seq_rm``) instead of ``Llama.create_completion`` so that it can
(1) request logits only where they are needed, (2) trim the KV cache back to a
shared prefix between candidates and between calls, (3) count exactly how many
tokens were evaluated and (4) stay bit-identical to a from-scratch evaluation.
With ``tree_scoring`` the candidates of one :meth:`LlamaCppBackend.score` call are
decoded together instead: a token trie of their suffixes, one KV-cache sequence
per candidate sharing the prompt's cells, in multi-sequence batches.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import math
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .base import Generation, LLMError, Sample, SampleResult, ScoreResult, Vector, l2_normalize
from .decoding import (
    candidate_scores,
    candidate_tokens,
    check_sample_args,
    common_prefix,
    cut_sample,
    pick_token,
    sample_rng,
    stop_at,
)
from .embedding_store import EmbeddingStore, model_fingerprint
from .lora import read_adapter

_LOG = logging.getLogger(__name__)
_PREFILL_SLICE = 128  # tokens evaluated per lock hold by prefill()
_ROW_CACHE_SIZE = 8  # full logits rows (1 MiB each for Gemma 3) kept by context
_LP_CACHE_SIZE = 200_000  # (context, token) -> logprob entries kept
# llama.cpp CPU matmul kernels differ for batches of fewer than 8 tokens (measured on
# llama-cpp-python 0.3.36 / AVX-512), so a decode split into batches of >= 8 tokens
# reproduces a from-scratch decode of the whole text bit for bit.
_MIN_BATCH = 8
_LOAD_LOCK = threading.Lock()
_EMBED_N_CTX = 512  # tokens per embedded text (admissible actions and plan steps are short)
_EMBED_CACHE_SIZE = 20_000  # texts whose embedding is kept
_GRAMMAR_CACHE_SIZE = 32  # compiled GBNF grammars (llama.cpp grammar samplers) kept by text
_GRAMMAR_TOP_K = 64  # most likely tokens checked against the grammar before the whole vocabulary is masked
_TREE_SEQS = 256  # KV-cache sequences with tree scoring (llama.cpp's maximum): prompt, filler, 254 candidates
# trie batches (tokens and logits rows) are padded with filler to a multiple of this, so no batch has
# fewer than 8 rows (the CPU kernels for those differ; see _MIN_BATCH)
_TREE_PAD = _MIN_BATCH

FloatArray = npt.NDArray[np.float32]


def _context_key(tokens: npt.NDArray[np.int32], end: int) -> bytes:
    """Digest of ``tokens[:end]`` (the context that produced a logits row)."""
    return hashlib.blake2b(tokens[:end].tobytes(), digest_size=16).digest()


def _logprob(row: FloatArray, token: int) -> float:
    """Natural-log softmax probability of ``token`` under the logits ``row``."""
    return float(row[token]) - _logsumexp(row)


def _logsumexp(row: FloatArray) -> float:
    """Natural-log normaliser of a logits row, as ``_logprob`` computes it."""
    top = float(row.max())
    return top + math.log(float(np.exp(row - top, dtype=np.float64).sum()))


def _log_softmax(row: FloatArray) -> npt.NDArray[np.float64]:
    """Natural-log softmax of a logits row (float64)."""
    r = row.astype(np.float64)
    top = float(r.max())
    return r - (top + math.log(float(np.exp(r - top).sum())))


def _load_without_repack(llama_cpp: Any, n_seq_max: int = 1, **kwargs: Any) -> Any:
    """``llama_cpp.Llama(**kwargs)`` with runtime weight repacking disabled.

    Repacked CPU kernels compute rows in groups of 4, which makes logits depend
    on how a text is split into decode batches (and was slower here).
    ``Llama`` has no argument for ``use_extra_bufts`` nor (outside embedding
    mode) for ``n_seq_max``, so the default parameters are patched while the
    model loads. ``n_seq_max > 1`` gives one KV cache of ``n_ctx`` cells shared
    by that many sequences (``kv_unified``).
    """
    low = llama_cpp.llama_cpp
    original = low.llama_model_default_params
    original_ctx = low.llama_context_default_params

    def patched() -> Any:
        params = original()
        params.use_extra_bufts = False
        return params

    def patched_ctx() -> Any:
        params = original_ctx()
        if n_seq_max > 1:
            params.n_seq_max = n_seq_max
            params.kv_unified = True
        return params

    with _LOAD_LOCK:
        low.llama_model_default_params = patched
        low.llama_context_default_params = patched_ctx
        try:
            return llama_cpp.Llama(**kwargs)
        finally:
            low.llama_model_default_params = original
            low.llama_context_default_params = original_ctx


class LlamaCppBackend:
    """Greedy generation and candidate scoring with a local GGUF model.

    ``reuse_prefix`` keeps the KV cache (and log-probs already computed)
    between calls: a call only evaluates the tokens after its longest common
    prefix with what is cached. Within one :meth:`score` call the prompt is
    evaluated once; each candidate then re-evaluates at most 7 prompt-tail tokens.

    ``batch_invariant`` (default) decodes in batches of >= 8 tokens and only
    reuses cache entries computed that way, so scores are bit-identical to a
    from-scratch evaluation of prompt+candidate and independent of earlier
    calls (and of ``reuse_prefix``); off, scores may differ by ~0.1 nats.

    ``tree_scoring`` decodes all candidates of a :meth:`score` call at once:
    each candidate is a KV-cache sequence that shares the prompt's cells, and
    a suffix token shared by several candidates (a trie node) is evaluated
    once for all of them. The prompt is still evaluated as above, so a
    candidate's score depends only on the prompt and the candidate set (not on
    earlier calls); it matches a from-scratch evaluation within
    ``TREE_TOLERANCE`` nats (attention sums run over a cache layout with other
    candidates' cells masked in between). Calls are serialised by a lock.
    """

    # nats per candidate, tree vs from-scratch: llama.cpp's CPU kernels round differently when masked cells lie
    # between a token's own (measured up to 0.52 over 60 candidates; flash attention vs not, both from
    # scratch, differ by up to 0.8)
    TREE_TOLERANCE = 0.6

    def __init__(
        self,
        model_path: str | Path,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        seed: int = 0,
        logger: logging.Logger | None = None,
        reuse_prefix: bool = True,
        n_batch: int = 512,
        batch_invariant: bool = True,
        embedding_cache_dir: str | Path | None = None,
        tree_scoring: bool = False,
        flash_attn: bool | None = None,
        lora_path: str | Path | None = None,
    ) -> None:
        import llama_cpp

        self._lc: Any = llama_cpp
        self.log = logger or _LOG
        path = Path(model_path)
        if not path.is_file():
            raise LLMError(f"GGUF model file not found: {path}")
        if n_ctx < 16:
            raise ValueError(f"n_ctx must be >= 16, got {n_ctx}")
        # a LoRA adapter is checked against the model first: a bad one is an error naming it, never ignored
        self._lora = str(read_adapter(lora_path, path).path) if lora_path else None
        self.name = f"llama_cpp:{path.name}" + (f"+{Path(lora_path).name}" if lora_path else "")
        self._path = path
        self._n_threads = n_threads
        self._embedder: Any = None  # a second Llama in embedding mode, loaded on first embed()
        self._embeddings: dict[str, Vector] = {}
        self._embedding_cache_dir = Path(embedding_cache_dir).expanduser() if embedding_cache_dir else None
        self._store: EmbeddingStore | None = None  # opened with the embedding context
        self.reuse_prefix = reuse_prefix
        self.n_ctx = n_ctx
        self._n_batch = max(_MIN_BATCH * 2, min(n_batch, n_ctx))
        self._min_batch = _MIN_BATCH if batch_invariant else 1
        self._lock = threading.Lock()
        self.tree_scoring = tree_scoring
        # llama.cpp reserves an output row per sequence in a batch: at most half of n_batch sequences
        self._tree_seqs = min(_TREE_SEQS, self._n_batch // 2) if tree_scoring else 1
        self.flash_attn = bool(flash_attn)  # off: the prompt's KV cache stays bit-identical to a from-scratch pass
        t0 = time.perf_counter()
        try:
            self._llm: Any = _load_without_repack(
                llama_cpp,
                n_seq_max=self._tree_seqs,
                model_path=str(path),
                n_ctx=n_ctx,
                n_batch=self._n_batch,
                n_ubatch=self._n_batch,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                seed=seed,
                logits_all=False,
                swa_full=True,  # keep every SWA cell so any prefix can be reused
                flash_attn=self.flash_attn,
                lora_path=self._lora,
                verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise LLMError(f"llama.cpp could not load {path}" + (f" with the LoRA adapter {self._lora}" if self._lora
                           else "") + f": {exc}") from exc
        if getattr(self._llm.model_params, "use_extra_bufts", False):
            self.log.warning("weight repacking is active: scores depend on batch splits")
        self._ctx = self._llm.ctx
        self._mem = llama_cpp.llama_get_memory(self._ctx)
        self._vocab = llama_cpp.llama_model_get_vocab(self._llm.model)
        self._n_vocab = int(self._llm.n_vocab())
        self._n_swa = int(llama_cpp.llama_model_n_swa(self._llm.model))
        self._batch: Any = llama_cpp.llama_batch_init(self._n_batch, 0, 1)
        # tokens of a trie batch belong to up to _TREE_SEQS - 1 candidate sequences
        self._tree_batch: Any = llama_cpp.llama_batch_init(self._n_batch, 0, self._tree_seqs) if tree_scoring else None
        self._kv: list[int] = []  # tokens currently in the KV cache (seq 0)
        self._canon = 0  # length of the cache prefix computed in batches >= min_batch
        # canonical results keyed by context content, independent of the KV cache
        self._rows: dict[bytes, FloatArray] = {}
        self._lps: dict[tuple[bytes, int], float] = {}
        self._evaluated = 0  # tokens decoded during the current call
        self._calls = 0  # calls begun (prefill slices included): prefill() yields to any other call
        self._prompt_len = 0  # tokens of the current call's prompt
        self._prompt_evaluated = 0  # of _evaluated, tokens at prompt positions
        self.last_prompt_evaluated = 0  # prompt tokens decoded by the last score() call (bench_planner reads it)
        self._grammars: dict[str, Any] = {}  # GBNF text -> llama.cpp grammar sampler
        self._cand: Any = None  # token-data array for grammar masking, built on first use
        self._closed = False
        self.log.info(
            "loaded %s in %.2fs (n_ctx=%d, n_vocab=%d, n_swa=%d, reuse_prefix=%s, tree_scoring=%s)",
            path.name, time.perf_counter() - t0, n_ctx, self._n_vocab, self._n_swa,
            reuse_prefix, tree_scoring,
        )

    # -- tokens ----------------------------------------------------------
    def tokenize(self, text: str) -> list[int]:
        """Tokens of ``text`` with BOS; special-token syntax is not parsed."""
        toks = self._llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
        return [int(t) for t in toks]

    def _piece(self, token: int) -> bytes:
        size = 64
        while True:
            buf = ctypes.create_string_buffer(size)
            n = int(self._lc.llama_token_to_piece(self._vocab, token, buf, size, 0, False))
            if n >= 0:
                return buf.raw[:n]
            size = -n

    # -- KV cache --------------------------------------------------------
    def _reset(self) -> None:
        self._lc.llama_memory_clear(self._mem, True)
        self._kv = []
        self._canon = 0

    def _trim(self, n: int) -> int:
        """Keep the first ``n`` cached tokens (or none, if that fails); return the count."""
        if n >= len(self._kv):
            return len(self._kv)
        if n <= 0:
            self._reset()
            return 0
        if not self._lc.llama_memory_seq_rm(self._mem, 0, n, -1):
            self.log.debug("partial KV removal unsupported; re-evaluating from scratch")
            self._reset()
            return 0
        pos_min = int(self._lc.llama_memory_seq_pos_min(self._mem, 0))
        if not (pos_min == 0 or (self._n_swa > 0 and 0 <= pos_min < n - self._n_swa)):
            self.log.debug("KV cache lost positions < %d (SWA); re-evaluating", pos_min)
            self._reset()
            return 0
        del self._kv[n:]
        self._canon = min(self._canon, n)
        return n

    def _chunks(self, n: int) -> list[tuple[int, int]]:
        """Split ``n`` tokens into decode batches of <= n_batch, none below min_batch."""
        out: list[tuple[int, int]] = []
        s = 0
        while s < n:
            e = min(n, s + self._n_batch)
            if 0 < n - e < self._min_batch:
                e = n - self._min_batch
            out.append((s, e))
            s = e
        return out

    def _eval(
        self, tokens: Sequence[int], want: Sequence[int]
    ) -> dict[int, tuple[FloatArray, bool]]:
        """Append ``tokens`` to the KV cache.

        Returns ``{relative position: (logits row, canonical)}`` for ``want``;
        a row is canonical if its decode batch had at least ``min_batch`` tokens.
        """
        if len(self._kv) + len(tokens) > self.n_ctx:
            raise LLMError(
                f"context overflow: {len(self._kv) + len(tokens)} tokens > n_ctx={self.n_ctx}"
            )
        want_set = set(want)
        rows: dict[int, tuple[FloatArray, bool]] = {}
        batch = self._batch
        for start, end in self._chunks(len(tokens)):
            base = len(self._kv)
            batch.n_tokens = end - start
            for i in range(end - start):
                batch.token[i] = tokens[start + i]
                batch.pos[i] = base + i
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = 0
                batch.logits[i] = (start + i) in want_set
            rc = int(self._lc.llama_decode(self._ctx, batch))
            if rc != 0:
                self._reset()
                raise LLMError(f"llama_decode failed with code {rc}")
            self._kv.extend(int(t) for t in tokens[start:end])
            self._evaluated += end - start
            self._prompt_evaluated += max(0, min(len(self._kv), self._prompt_len) - base)
            canonical = end - start >= self._min_batch
            if canonical and base == self._canon:
                self._canon = len(self._kv)
            for i in range(end - start):
                if (start + i) in want_set:
                    ptr = self._lc.llama_get_logits_ith(self._ctx, i)
                    row = np.ctypeslib.as_array(ptr, shape=(self._n_vocab,)).copy()
                    rows[start + i] = (row, canonical)
        return rows

    def _ensure(
        self, toks: Sequence[int], limit: int, want: Sequence[int]
    ) -> dict[int, tuple[FloatArray, bool]]:
        """Make the KV cache hold exactly ``toks``, reusing at most ``limit`` cached tokens.

        Only the canonically computed cache prefix is reused and every decode
        batch has at least ``min_batch`` tokens (backing off into the cached
        prefix if needed), so results do not depend on the cache history.
        Returns rows (by absolute position) for ``want`` positions >= ``limit``.
        """
        c = min(limit, common_prefix(self._kv, toks), self._canon, len(toks))
        if len(toks) - c < self._min_batch:
            c = max(0, len(toks) - self._min_batch)
        c = self._trim(c)
        if c == len(toks):
            return {}
        rows = self._eval(toks[c:], [p - c for p in want if p >= c])
        return {c + rel: val for rel, val in rows.items()}

    def _remember_row(self, key: bytes, row: FloatArray) -> None:
        self._rows[key] = row
        while len(self._rows) > _ROW_CACHE_SIZE:
            del self._rows[next(iter(self._rows))]

    def _remember_lp(self, key: tuple[bytes, int], lp: float) -> None:
        self._lps[key] = lp
        if len(self._lps) > _LP_CACHE_SIZE:
            for old in list(self._lps)[: _LP_CACHE_SIZE // 10]:
                del self._lps[old]

    def _begin_call(self) -> None:
        if self._closed:
            raise LLMError("backend is closed")
        self._calls += 1
        self._evaluated = 0
        self._prompt_len = 0
        self._prompt_evaluated = 0
        if not self.reuse_prefix:
            self._reset()
            self._rows.clear()
            self._lps.clear()

    def _row_after(self, toks: Sequence[int], exact: bool) -> FloatArray:
        """Logits predicting the token after ``toks``.

        ``exact`` also leaves exactly ``toks`` (canonically computed) in the KV
        cache, as generation continues from there.
        """
        key = _context_key(np.asarray(toks, dtype=np.int32), len(toks))
        row = self._rows.get(key)
        if row is not None:
            if not exact:
                return row
            cached = min(common_prefix(self._kv, toks), self._canon)
            if cached == len(toks) and self._trim(len(toks)) == len(toks):
                return row
        last = len(toks) - 1
        new_row, canonical = self._ensure(toks, last, [last])[last]
        if canonical:
            self._remember_row(key, new_row)
        return new_row

    def _score_tokens(self, toks: Sequence[int], first: int) -> list[float]:
        """Log-probs of ``toks[first:]``, each given the tokens before it."""
        arr = np.asarray(toks, dtype=np.int32)
        n = len(toks)
        needed = range(first - 1, n - 1)  # positions of the logits used
        keys = {p: (_context_key(arr, p + 1), toks[p + 1]) for p in needed}
        out: dict[int, float] = {}
        for p in needed:
            lp = self._lps.get(keys[p])
            if lp is None and keys[p][0] in self._rows:
                lp = _logprob(self._rows[keys[p][0]], toks[p + 1])
                self._remember_lp(keys[p], lp)
            if lp is not None:
                out[p] = lp
        missing = [p for p in needed if p not in out]
        if missing:
            # the last token needs no logits, but a text shorter than min_batch is
            # decoded whole (in one batch, like a from-scratch evaluation would be)
            upto = n if n <= self._min_batch else n - 1
            rows = self._ensure(toks[:upto], missing[0], missing)
            for p in missing:
                row, canonical = rows[p]
                out[p] = _logprob(row, toks[p + 1])
                if canonical:
                    self._remember_lp(keys[p], out[p])
        return [out[p] for p in needed]

    # -- tree scoring ----------------------------------------------------
    def _score_tree(
        self, ptoks: Sequence[int], fulls: Sequence[Sequence[int]], firsts: Sequence[int],
        active: Sequence[int],
    ) -> dict[int, list[float]]:
        """Log-probs of ``fulls[i][firsts[i]:]`` for every ``i`` in ``active``, all decoded together.

        The KV cache keeps the prompt's first ``P = min(firsts)`` tokens (sequence 0). Each
        candidate's tokens after them form a path in a trie; a trie node is one batch token at
        position ``P + depth`` that belongs to the sequences of every candidate through it, so it
        attends to the prompt and to its own ancestors only. Candidates are taken in groups that fit
        the cache and the sequence limit; a group's sequences are removed once it is scored.
        """
        first = min(firsts[i] for i in active)
        last_row = self._row_after(ptoks[:first], exact=True)  # the cache now holds exactly ptoks[:first]
        last_lse = _logsumexp(last_row)
        out: dict[int, list[float]] = {}
        order = sorted(active, key=lambda k: list(fulls[k]))  # neighbours share the longest prefixes
        budget = self.n_ctx - first - 2 * _TREE_PAD * (1 + self.n_ctx // self._n_batch)  # filler cells
        group: list[int] = []
        nodes = 0
        for i in order:
            extra = len(fulls[i]) - first - (common_prefix(fulls[group[-1]], fulls[i]) - first if group else 0)
            if extra > budget:
                raise LLMError(f"prompt+candidate has {len(fulls[i])} tokens, n_ctx is {self.n_ctx}")
            if group and (nodes + extra > budget or len(group) == self._tree_seqs - 2):
                out.update(self._tree_group(group, fulls, firsts, first, last_row, last_lse))
                group, nodes = [], len(fulls[i]) - first
            else:
                nodes += extra
            group.append(i)
        if group:
            out.update(self._tree_group(group, fulls, firsts, first, last_row, last_lse))
        return out

    def _tree_group(
        self, group: Sequence[int], fulls: Sequence[Sequence[int]], firsts: Sequence[int], first: int,
        last_row: FloatArray, last_lse: float,
    ) -> dict[int, list[float]]:
        """One trie batch for the candidates ``group`` (sequences 1..len(group)); see _score_tree."""
        tokens: list[int] = []
        depths: list[int] = []
        seqs: list[list[int]] = []
        need: list[bool] = []
        children: list[dict[int, int]] = [{}]  # children[0] is the root's; node k's are children[k + 1]
        paths: dict[int, list[int]] = {}
        for seq, i in enumerate(group, start=1):
            toks, parent, path = fulls[i], 0, []
            for d, tok in enumerate(toks[first:]):
                k = children[parent].get(tok)
                if k is None:
                    k = len(tokens)
                    children[parent][tok] = k
                    children.append({})
                    tokens.append(tok)
                    depths.append(d)
                    seqs.append([])
                    need.append(False)
                seqs[k].append(seq)
                if firsts[i] - 1 <= first + d <= len(toks) - 2:  # predicts a token of the candidate
                    need[k] = True
                path.append(k)
                parent = k + 1
            paths[i] = path
        # parents before children; a leaf (a candidate's last token) predicts nothing and is not decoded
        order = sorted((k for k in range(len(tokens)) if children[k + 1]), key=lambda k: depths[k])
        wanted: dict[int, set[int]] = {}  # node -> tokens whose log-prob is read from its row
        for i in group:
            for p in range(max(firsts[i] - 1, first), len(fulls[i]) - 1):
                wanted.setdefault(paths[i][p - first], set()).add(fulls[i][p + 1])
        lps: dict[tuple[int, int], float] = {}
        lc, batch = self._lc, self._tree_batch
        pad_seq = len(group) + 1  # filler tokens of their own sequence, seen by no candidate
        pad_pos = first
        if not order:  # every candidate is one token long: the prompt's row scores them all
            return {i: [float(last_row[fulls[i][first]]) - last_lse] for i in group}
        for s in range(1, pad_seq + 1):
            lc.llama_memory_seq_cp(self._mem, 0, s, -1, -1)
        try:
            for start in range(0, len(order), self._n_batch - 2 * _TREE_PAD):
                chunk = order[start:start + self._n_batch - 2 * _TREE_PAD]
                pad_out = -sum(need[k] for k in chunk) % _TREE_PAD  # filler outputs (logits rows)
                pad = pad_out + -(len(chunk) + pad_out) % _TREE_PAD
                batch.n_tokens = len(chunk) + pad
                for b, k in enumerate(chunk):
                    batch.token[b] = tokens[k]
                    batch.pos[b] = first + depths[k]
                    batch.n_seq_id[b] = len(seqs[k])
                    ids = batch.seq_id[b]
                    for j, s in enumerate(seqs[k]):
                        ids[j] = s
                    batch.logits[b] = need[k]
                for b in range(len(chunk), len(chunk) + pad):
                    batch.token[b] = tokens[chunk[-1]]
                    batch.pos[b] = pad_pos
                    batch.n_seq_id[b] = 1
                    batch.seq_id[b][0] = pad_seq
                    batch.logits[b] = b - len(chunk) < pad_out
                    pad_pos += 1
                rc = int(lc.llama_decode(self._ctx, batch))
                if rc != 0:
                    raise LLMError(f"llama_decode failed with code {rc} (tree scoring)")
                self._evaluated += len(chunk)
                self._prompt_evaluated += sum(first + depths[k] < self._prompt_len for k in chunk)
                for b, k in enumerate(chunk):
                    if need[k]:
                        row = np.ctypeslib.as_array(lc.llama_get_logits_ith(self._ctx, b), shape=(self._n_vocab,))
                        lse = _logsumexp(row)
                        for tok in wanted.get(k, ()):
                            lps[(k, tok)] = float(row[tok]) - lse
        finally:
            for s in range(1, pad_seq + 1):
                lc.llama_memory_seq_rm(self._mem, s, -1, -1)
        out: dict[int, list[float]] = {}
        for i in group:
            toks = fulls[i]
            vals = []
            for p in range(firsts[i] - 1, len(toks) - 1):
                if p == first - 1:
                    vals.append(float(last_row[toks[p + 1]]) - last_lse)
                else:
                    vals.append(lps[(paths[i][p - first], toks[p + 1])])
            out[i] = vals
        return out

    # -- LLMBackend ------------------------------------------------------
    accepts_grammar = True  # generate() takes a GBNF grammar

    def _grammar_sampler(self, grammar: str) -> Any:
        """The compiled (cached) llama.cpp grammar sampler of GBNF text ``grammar``, reset."""
        smpl = self._grammars.pop(grammar, None)
        if smpl is None:
            smpl = self._lc.llama_sampler_init_grammar(self._vocab, grammar.encode("utf-8"), b"root")
            if not smpl:
                raise LLMError(f"invalid GBNF grammar (llama.cpp could not parse it): {grammar[:200]!r}")
            while len(self._grammars) >= _GRAMMAR_CACHE_SIZE:
                self._lc.llama_sampler_free(self._grammars.pop(next(iter(self._grammars))))
        else:
            self._lc.llama_sampler_reset(smpl)
        self._grammars[grammar] = smpl  # most recently used last
        return smpl

    def _constrained_argmax(self, smpl: Any, row: FloatArray) -> int:
        """The most likely token of ``row`` that the grammar sampler ``smpl`` admits next.

        The unconstrained argmax is checked alone first (llama.cpp's own shortcut), then the 64 most likely
        tokens; only when the grammar rejects all of them is the whole vocabulary masked (~25-120 ms for
        Gemma 3's 262k tokens).
        """
        lc = self._lc
        if self._cand is None:
            data = np.recarray((self._n_vocab,), dtype=np.dtype(
                [("id", np.intc), ("logit", np.single), ("p", np.single)], align=True))
            arr = lc.llama_token_data_array(
                data=data.ctypes.data_as(lc.llama_token_data_p), size=self._n_vocab, selected=-1, sorted=False)
            self._cand = (data, arr, np.arange(self._n_vocab, dtype=np.intc))
        data, arr, ids = self._cand
        best = int(np.argmax(row))
        data.id[0], data.logit[0], data.p[0] = best, row[best], 0.0
        arr.size, arr.selected, arr.sorted = 1, -1, False
        lc.llama_sampler_apply(smpl, ctypes.byref(arr))
        if math.isfinite(float(data.logit[0])):
            return best
        # the best admitted token among the top _GRAMMAR_TOP_K is the best admitted token overall
        top = np.argpartition(row, -_GRAMMAR_TOP_K)[-_GRAMMAR_TOP_K:]
        k = len(top)
        data.id[:k] = top
        data.logit[:k] = row[top]
        data.p[:k] = 0.0
        arr.size, arr.selected, arr.sorted = k, -1, False
        lc.llama_sampler_apply(smpl, ctypes.byref(arr))
        logits = data.logit[: int(arr.size)]
        if len(logits) and np.isfinite(logits).any():
            return int(data.id[int(np.argmax(logits))])
        data.id[:] = ids
        data.logit[:] = row
        data.p[:] = 0.0
        arr.size, arr.selected, arr.sorted = self._n_vocab, -1, False
        lc.llama_sampler_apply(smpl, ctypes.byref(arr))
        logits = data.logit[: int(arr.size)]
        i = int(np.argmax(logits))
        if not math.isfinite(float(logits[i])):
            raise LLMError("the grammar admits no next token")
        return int(data.id[i])

    @property
    def closed(self) -> bool:
        return self._closed

    def prefill(self, text: str) -> int:
        """Evaluate ``text`` into the KV cache now (a static prompt preamble, when the planner starts), so
        the first call whose prompt starts with it evaluates only the rest. Returns the tokens evaluated
        (0 without ``reuse_prefix``: nothing is kept between calls then). It stops as soon as another call
        has run: that call evaluated what it needed, and a further slice would trim the cache back to the
        preamble, making the next call evaluate its whole prompt again."""
        with self._lock:
            toks = [] if self.closed or not self.reuse_prefix else self.tokenize(text)
            seen = self._calls
        if not toks or len(toks) > self.n_ctx:
            return 0
        done = 0
        # in slices, releasing the lock between them: a call or close() waits one slice at most
        for end in range(min(len(toks), _PREFILL_SLICE), len(toks) + _PREFILL_SLICE, _PREFILL_SLICE):
            with self._lock:
                if self.closed or self._calls != seen:  # close() or another call ran between two slices
                    break
                self._begin_call()
                self._ensure(toks[: min(end, len(toks))], len(toks), [])
                done += self._evaluated
                seen = self._calls
        return done

    def generate(
        self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64, grammar: str | None = None
    ) -> Generation:
        """Greedy (argmax) completion, cut before the earliest stop string.

        ``grammar`` (GBNF text, llama.cpp's format, rule ``root``) restricts every token to those the
        grammar admits; the model may end only where the grammar is complete (or at ``max_tokens`` /
        a stop string). An invalid grammar raises LLMError.
        """
        if max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, got {max_tokens}")
        stops = [s for s in stop if s]
        with self._lock:
            t0 = time.perf_counter()
            self._begin_call()
            smpl = self._grammar_sampler(grammar) if grammar else None
            toks = self.tokenize(prompt)
            if len(toks) >= self.n_ctx:
                raise LLMError(f"prompt has {len(toks)} tokens, n_ctx is {self.n_ctx}")
            out: list[int] = []
            raw = b""
            text = ""
            finish = "length"
            row = self._row_after(toks, exact=True) if max_tokens > 0 else None
            for step in range(max_tokens):
                assert row is not None
                tok = int(np.argmax(row)) if smpl is None else self._constrained_argmax(smpl, row)
                if self._lc.llama_vocab_is_eog(self._vocab, tok):
                    finish = "stop"
                    break
                if smpl is not None:
                    self._lc.llama_sampler_accept(smpl, tok)
                out.append(tok)
                raw += self._piece(tok)
                text = raw.decode("utf-8", errors="ignore")
                cut = stop_at(text, stops)
                if cut is not None:
                    text = text[:cut]
                    finish = "stop"
                    break
                if step == max_tokens - 1 or len(self._kv) >= self.n_ctx:
                    break
                row = self._eval([tok], [0])[0][0]  # batch of 1: not canonical
            return Generation(
                text=text,
                prompt_tokens=len(toks),
                new_tokens_processed=self._evaluated,
                completion_tokens=len(out),
                finish_reason=finish,
                wall_time_s=time.perf_counter() - t0,
            )

    def score(self, prompt: str, candidates: Sequence[str]) -> ScoreResult:
        """Sum of token log-probs of each candidate appended verbatim to ``prompt``.

        The candidate's tokens are the suffix of ``tokenize(prompt + candidate)``
        after its common prefix with ``tokenize(prompt)``, so a token that merges
        the end of the prompt with the candidate start is scored as candidate.
        """
        with self._lock:
            t0 = time.perf_counter()
            self._begin_call()
            ptoks, fulls, firsts, active = candidate_tokens(self.tokenize, prompt, candidates, self.n_ctx)
            self._prompt_len = len(ptoks)
            lps: dict[int, list[float]] = {}
            if active:
                if self.tree_scoring:
                    lps = self._score_tree(ptoks, fulls, firsts, active)
                else:
                    shared = min(firsts[i] for i in active)
                    self._row_after(ptoks[:shared], exact=False)  # evaluate the prompt once
                    # lexicographic order makes neighbours share the longest prefixes
                    for i in sorted(active, key=lambda k: fulls[k]):
                        lps[i] = self._score_tokens(fulls[i], firsts[i])
            scores = candidate_scores(candidates, lps)
            self.last_prompt_evaluated = self._prompt_evaluated
            return ScoreResult(
                scores=scores,
                prompt_tokens=len(ptoks),
                new_tokens_processed=self._evaluated,
                wall_time_s=time.perf_counter() - t0,
            )

    def sample(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64, n: int = 1,
               temperature: float = 1.0, presence_penalty: float = 0.0, seed: int = 0) -> SampleResult:
        """``n`` samples at ``temperature`` (0 = greedy), each cut before the earliest stop string.

        Sample ``i`` draws from ``numpy.random.default_rng([seed, i])``, so a request is
        reproducible. ``presence_penalty`` is subtracted from the logit of every token already in the
        sample before the temperature is applied (OpenAI's definition, over the generated tokens).
        ``token_logprobs`` are the model's own log-probabilities (temperature 1, no penalty) of the
        tokens kept in the text.
        """
        check_sample_args(max_tokens, n, temperature)
        stops = [s for s in stop if s]
        with self._lock:
            t0 = time.perf_counter()
            self._begin_call()
            toks = self.tokenize(prompt)
            if len(toks) >= self.n_ctx:
                raise LLMError(f"prompt has {len(toks)} tokens, n_ctx is {self.n_ctx}")
            samples: list[Sample] = []
            for i in range(n):
                rng = sample_rng(seed, i)
                row = self._row_after(toks, exact=True)
                raw = b""
                text = ""
                lps: list[float] = []
                starts: list[int] = []  # character offset where each kept token's text starts
                seen: set[int] = set()
                finish = "length"
                for step in range(max_tokens):
                    logp = _log_softmax(row)
                    tok = pick_token(row, seen, temperature, presence_penalty, rng, np.float64)
                    if self._lc.llama_vocab_is_eog(self._vocab, tok):
                        finish = "stop"
                        break
                    starts.append(len(text))
                    lps.append(float(logp[tok]))
                    seen.add(tok)
                    raw += self._piece(tok)
                    text = raw.decode("utf-8", errors="ignore")
                    kept = cut_sample(text, lps, starts, stops)
                    if kept is not None:
                        text, lps = kept
                        finish = "stop"
                        break
                    if step == max_tokens - 1 or len(self._kv) >= self.n_ctx:
                        break
                    row = self._eval([tok], [0])[0][0]
                samples.append(Sample(text, tuple(lps), finish))
            return SampleResult(
                samples=tuple(samples),
                prompt_tokens=len(toks),
                new_tokens_processed=self._evaluated,
                wall_time_s=time.perf_counter() - t0,
            )

    def embed(self, texts: Sequence[str]) -> tuple[Vector, ...]:
        """Mean-pooled, L2-normalised embeddings of the model's last hidden layer.

        A second llama.cpp context in embedding mode is loaded on the first call. Each text is
        embedded on its own (so a vector never depends on which texts came with it) and cached.
        """
        with self._lock:
            if self._closed:
                raise LLMError("backend is closed")
            if self._embedder is None:
                try:
                    self._embedder = _load_without_repack(
                        self._lc,
                        model_path=str(self._path),
                        embedding=True,
                        pooling_type=self._lc.LLAMA_POOLING_TYPE_MEAN,
                        n_ctx=_EMBED_N_CTX,
                        n_batch=_EMBED_N_CTX,
                        n_ubatch=_EMBED_N_CTX,
                        n_threads=self._n_threads,
                        n_threads_batch=self._n_threads,
                        lora_path=self._lora,
                        verbose=False,
                    )
                except (ValueError, RuntimeError) as exc:
                    raise LLMError(f"llama.cpp could not load {self._path} for embeddings: {exc}") from exc
                if self._embedding_cache_dir is not None:
                    lora = f"|lora={model_fingerprint(Path(self._lora), '')}" if self._lora else ""
                    fingerprint = model_fingerprint(self._path, f"mean-l2|n_ctx={_EMBED_N_CTX}{lora}")
                    self._store = EmbeddingStore(self._embedding_cache_dir, fingerprint, self.log)
            found = {t: self._embeddings[t] for t in dict.fromkeys(texts) if t in self._embeddings}
            missing = [t for t in dict.fromkeys(texts) if t not in found]
            if missing and self._store is not None:
                found.update(self._store.get_many(missing))
                missing = [t for t in missing if t not in found]
            computed: dict[str, Vector] = {}
            for text in missing:
                if len(self._embedder.tokenize(text.encode("utf-8"))) > _EMBED_N_CTX:
                    raise LLMError(f"text to embed has more than {_EMBED_N_CTX} tokens: {text[:80]!r}")
                raw = self._embedder.embed(text, normalize=False)
                computed[text] = l2_normalize([float(x) for x in raw])
            if computed and self._store is not None:
                self._store.put_many(computed)
            found.update(computed)
            if len(self._embeddings) + len(found) > _EMBED_CACHE_SIZE:
                self._embeddings.clear()
            self._embeddings.update(found)
            return tuple(found[t] for t in texts)

    def close(self) -> None:
        """Free the batch, context and model (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for smpl in self._grammars.values():
                self._lc.llama_sampler_free(smpl)
            self._grammars.clear()
            self._lc.llama_batch_free(self._batch)
            if self._tree_batch is not None:
                self._lc.llama_batch_free(self._tree_batch)
            self._llm.close()
            if self._embedder is not None:
                self._embedder.close()
            if self._store is not None:
                self._store.close()

    def __enter__(self) -> LlamaCppBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
