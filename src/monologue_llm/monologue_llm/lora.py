"""LoRA adapters for the embedded model (issue 30): the GGUF LoRA format llama.cpp loads, read and checked
against the base model before either backend applies it.

The format is llama.cpp's (convert_lora_to_gguf.py): `general.type` = "adapter", `adapter.type` = "lora",
`adapter.lora.alpha`, `general.architecture` as the base model's, and for each adapted weight `<w>` of the base
GGUF (`blk.<i>.attn_q.weight`, ...) two tensors `<w>.lora_a` (torch shape [rank, in]) and `<w>.lora_b` ([out,
rank]); the update is `scale * alpha / rank * B @ A`. Ours add `monologue.lora.rank` and
`monologue.base_model.sha256` (the base GGUF's content), so a mismatched adapter is refused by name instead of
silently changing (or not changing) the model.

Every problem raises :class:`LoraAdapterError` naming the adapter file: missing, not a GGUF file (corrupt), not
a LoRA adapter, made for another architecture or base model file, inconsistent ranks, or tensors whose shapes do
not fit the base model's weights.
"""
from __future__ import annotations

import hashlib
import mmap
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .base import LLMError

KEY_RANK = "monologue.lora.rank"
KEY_BASE_SHA256 = "monologue.base_model.sha256"
KEY_BASE_NAME = "monologue.base_model.name"
KEY_TARGETS = "monologue.lora.targets"
# GGUF tensor name <-> Hugging Face module (Gemma 3 / Llama layout), as llama.cpp's converter maps them
HF_TO_GGUF: dict[str, str] = {
    "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}
GGUF_TO_HF: dict[str, str] = {v: k for k, v in HF_TO_GGUF.items()}
_GGUF_NAME = re.compile(r"^blk\.(\d+)\.([a-z_]+)\.weight\.lora_([ab])$")
_SHA_CACHE: dict[tuple[str, int, int], str] = {}


class LoraAdapterError(LLMError):
    """A LoRA adapter that cannot be applied (the message names the file)."""


@dataclass(frozen=True)
class LoraAdapter:
    """A GGUF LoRA adapter read from `path`: per base weight name, (A [rank, in], B [out, rank]) as float32."""

    path: Path
    alpha: float
    rank: int
    architecture: str
    base_sha256: str  # "" when the adapter does not say
    weights: dict[str, tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]]

    @property
    def scaling(self) -> float:
        """alpha / rank: the factor llama.cpp and peft apply to B @ A."""
        return self.alpha / self.rank

    def hf_state_dict(self) -> dict[str, npt.NDArray[np.float32]]:
        """The weights as peft names them (`base_model.model.model.layers.<i>.self_attn.q_proj.lora_A.weight`)."""
        out: dict[str, npt.NDArray[np.float32]] = {}
        for name, (a, b) in self.weights.items():
            layer, kind = name.split(".")[1], name.split(".")[2]
            stem = f"base_model.model.model.layers.{layer}.{GGUF_TO_HF[kind]}"
            out[f"{stem}.lora_A.weight"] = a
            out[f"{stem}.lora_B.weight"] = b
        return out

    def hf_targets(self) -> list[str]:
        """The module names peft targets (q_proj, ...)."""
        return sorted({GGUF_TO_HF[n.split(".")[2]].split(".")[1] for n in self.weights})


def file_sha256(path: Path) -> str:
    """sha256 of a file's content (cached per path, size and mtime)."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _SHA_CACHE:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 22), b""):
                h.update(chunk)
        _SHA_CACHE[key] = h.hexdigest()
    return _SHA_CACHE[key]


def _field(reader: Any, key: str) -> Any:
    f = reader.fields.get(key)
    return None if f is None else f.contents()


def _reader(path: Path, what: str) -> Any:
    from gguf import GGUFReader

    try:
        return GGUFReader(path)
    except Exception as exc:  # noqa: BLE001 - a corrupt file raises struct/value/index errors
        raise LoraAdapterError(f"{what} {path} is not a readable GGUF file (corrupt or truncated): {exc}") from exc


# GGUF value types -> struct format of a scalar (8 string, 9 array: variable size)
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_BASE_CACHE: dict[tuple[str, int, int], tuple[str, dict[str, tuple[int, ...]]]] = {}


def _skip_value(buf: memoryview, off: int, vtype: int) -> tuple[Any, int]:
    """(the value, or None for an array, and the offset after it) of a GGUF value at `off`."""
    if vtype in _SCALARS:
        fmt = _SCALARS[vtype]
        return struct.unpack_from(fmt, buf, off)[0], off + struct.calcsize(fmt)
    if vtype == 8:
        (n,) = struct.unpack_from("<Q", buf, off)
        return bytes(buf[off + 8: off + 8 + n]).decode("utf-8", "replace"), off + 8 + n
    if vtype == 9:
        etype, count = struct.unpack_from("<IQ", buf, off)
        off += 12
        if etype in _SCALARS:
            return None, off + count * struct.calcsize(_SCALARS[etype])
        for _ in range(count):
            _, off = _skip_value(buf, off, etype)
        return None, off
    raise ValueError(f"unknown GGUF value type {vtype}")


def base_weight_shapes(base_path: Path) -> tuple[str, dict[str, tuple[int, ...]]]:
    """(architecture, {tensor name: torch-order shape}) of a base model GGUF, from its header only (the gguf
    library's reader parses the whole 262k-token vocabulary in Python: a minute on a busy machine)."""
    st = base_path.stat()
    key = (str(base_path.resolve()), st.st_size, st.st_mtime_ns)
    if key in _BASE_CACHE:
        return _BASE_CACHE[key]
    try:
        with open(base_path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            buf = memoryview(mm)
            try:
                magic, _version, n_tensors, n_kv = struct.unpack_from("<4sIQQ", buf, 0)
                if magic != b"GGUF":
                    raise ValueError("no GGUF magic")
                off, arch = 24, ""
                for _ in range(n_kv):
                    name, off = _skip_value(buf, off, 8)
                    (vtype,) = struct.unpack_from("<I", buf, off)
                    value, off = _skip_value(buf, off + 4, vtype)
                    if name == "general.architecture":
                        arch = str(value)
                shapes: dict[str, tuple[int, ...]] = {}
                for _ in range(n_tensors):
                    name, off = _skip_value(buf, off, 8)
                    (n_dims,) = struct.unpack_from("<I", buf, off)
                    dims = struct.unpack_from(f"<{n_dims}Q", buf, off + 4)
                    off += 4 + 8 * n_dims + 4 + 8  # dims, type, data offset
                    shapes[str(name)] = tuple(int(d) for d in reversed(dims))
            finally:
                buf.release()
    except (OSError, ValueError, struct.error) as exc:
        raise LoraAdapterError(f"base model {base_path} is not a readable GGUF file: {exc}") from exc
    _BASE_CACHE[key] = (arch, shapes)
    return arch, shapes


def read_adapter(path: str | Path, base_path: str | Path | None = None) -> LoraAdapter:
    """Read and check the GGUF LoRA adapter `path` (against the base model GGUF `base_path` if given)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise LoraAdapterError(f"LoRA adapter file not found: {path}")
    reader = _reader(path, "LoRA adapter")
    gtype, atype = _field(reader, "general.type"), _field(reader, "adapter.type")
    if gtype != "adapter" or atype != "lora":
        raise LoraAdapterError(f"{path} is not a LoRA adapter (general.type={gtype!r}, adapter.type={atype!r})")
    alpha = _field(reader, "adapter.lora.alpha")
    arch = str(_field(reader, "general.architecture") or "")
    if alpha is None or not arch:
        raise LoraAdapterError(f"{path}: adapter.lora.alpha or general.architecture missing")
    pairs: dict[str, dict[str, npt.NDArray[np.float32]]] = {}
    for t in reader.tensors:
        m = _GGUF_NAME.match(t.name)
        if m is None or m.group(2) not in GGUF_TO_HF:
            raise LoraAdapterError(f"{path}: unexpected tensor {t.name!r} (only attention/MLP projection LoRA pairs)")
        shape = tuple(int(x) for x in reversed(t.shape.tolist()))  # torch order
        try:
            arr = np.asarray(t.data, dtype=np.float32).reshape(shape)
        except ValueError as exc:
            raise LoraAdapterError(f"{path}: tensor {t.name!r} has type {t.tensor_type.name} (want F32/F16)") from exc
        pairs.setdefault(t.name.rsplit(".", 1)[0], {})[m.group(3)] = arr
    if not pairs:
        raise LoraAdapterError(f"{path}: no LoRA tensors")
    declared = _field(reader, KEY_RANK)
    ranks: set[int] = set()
    weights: dict[str, tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]] = {}
    for name, ab in sorted(pairs.items()):
        if set(ab) != {"a", "b"}:
            raise LoraAdapterError(f"{path}: {name} has lora_{'a' if 'a' in ab else 'b'} without its partner")
        a, b = ab["a"], ab["b"]
        if a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[1]:
            raise LoraAdapterError(f"{path}: {name}: lora_a {a.shape} and lora_b {b.shape} disagree on the rank")
        ranks.add(int(a.shape[0]))
        weights[name] = (a, b)
    if len(ranks) != 1:
        raise LoraAdapterError(f"{path}: tensors of different ranks {sorted(ranks)}")
    rank = ranks.pop()
    if declared is not None and int(declared) != rank:
        raise LoraAdapterError(f"{path}: {KEY_RANK}={declared} but its tensors have rank {rank}")
    adapter = LoraAdapter(path, float(alpha), rank, arch, str(_field(reader, KEY_BASE_SHA256) or ""), weights)
    if base_path is not None:
        check_against_base(adapter, Path(base_path))
    return adapter


def check_against_base(adapter: LoraAdapter, base_path: Path) -> None:
    """LoraAdapterError unless `adapter` was made for the base model GGUF `base_path`."""
    arch, shapes = base_weight_shapes(base_path)
    path = adapter.path
    if arch != adapter.architecture:
        raise LoraAdapterError(f"{path} is for architecture {adapter.architecture!r}, the base model {base_path.name} "
                               f"is {arch!r}")
    if adapter.base_sha256 and adapter.base_sha256 != file_sha256(base_path):
        raise LoraAdapterError(f"{path} was trained on another base model file than {base_path.name} "
                               f"(sha256 {adapter.base_sha256[:12]}... != {file_sha256(base_path)[:12]}...)")
    for name, (a, b) in adapter.weights.items():
        want = shapes.get(name)
        if want is None:
            raise LoraAdapterError(f"{path}: {name} is not a weight of the base model {base_path.name}")
        got = (b.shape[0], a.shape[1])
        if got != want:
            raise LoraAdapterError(f"{path}: {name}: the adapter's update is {got}, the base weight {want} "
                                   f"(made for another model)")
