"""A persistent embedding cache: one SQLite file per model, shared by processes.

CAPE grounds every plan step against all admissible actions of a scene (about 420 texts in the
household); embedding them with the embedded model costs minutes on two cores, once per planner
process. `EmbeddingStore` keeps the vectors on disk, keyed by a fingerprint of the model file (size
and SHA-256 of its first and last MiB) and of how vectors are made, so a later process (a restarted
node, the next benchmark variant) reads them in milliseconds. A store that cannot be opened or read
is logged and bypassed: embeddings are then computed as without it.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import struct
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from .base import Vector

_CHUNK = 1 << 20  # bytes hashed at each end of the model file
_SCHEMA = "CREATE TABLE IF NOT EXISTS embeddings (text TEXT PRIMARY KEY, dim INTEGER, vec BLOB)"
_BUSY_TIMEOUT_S = 30.0  # s a writer waits for another process's lock


def model_fingerprint(path: Path, method: str) -> str:
    """Hex digest naming a model file's content and the embedding ``method`` (e.g. "mean-l2")."""
    size = path.stat().st_size
    h = hashlib.sha256(f"{method}|{size}|".encode())
    with path.open("rb") as f:
        h.update(f.read(_CHUNK))
        if size > _CHUNK:
            f.seek(max(_CHUNK, size - _CHUNK))
            h.update(f.read(_CHUNK))
    return h.hexdigest()[:24]


def _pack(vec: Vector) -> bytes:
    return struct.pack(f"<{len(vec)}d", *vec)


def _unpack(dim: int, blob: bytes) -> Vector:
    return tuple(struct.unpack(f"<{dim}d", blob))


class EmbeddingStore:
    """text -> vector for one model, in ``<directory>/<fingerprint>.sqlite`` (float64, exact)."""

    def __init__(self, directory: Path, fingerprint: str, logger: logging.Logger | None = None) -> None:
        self.log = logger or logging.getLogger(__name__)
        self.path = Path(directory).expanduser() / f"{fingerprint}.sqlite"
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(str(self.path), timeout=_BUSY_TIMEOUT_S, check_same_thread=False)
            db.execute(_SCHEMA)
            db.commit()
            self._db = db
        except (OSError, sqlite3.Error) as exc:
            self.log.warning("embedding cache %s not usable (%s); embeddings are not kept on disk", self.path, exc)

    @property
    def usable(self) -> bool:
        return self._db is not None

    def _disable(self, what: str, exc: Exception) -> None:
        self.log.warning("embedding cache %s: %s failed (%s); no longer used", self.path, what, exc)
        if self._db is not None:
            try:
                self._db.close()
            except sqlite3.Error:
                pass
        self._db = None

    def get_many(self, texts: Iterable[str]) -> dict[str, Vector]:
        """The stored vectors of ``texts`` (missing ones are left out)."""
        wanted = list(dict.fromkeys(texts))
        out: dict[str, Vector] = {}
        with self._lock:
            if self._db is None or not wanted:
                return out
            try:
                for i in range(0, len(wanted), 500):  # SQLite's bound-parameter limit
                    part = wanted[i:i + 500]
                    marks = ",".join("?" * len(part))
                    rows = self._db.execute(f"SELECT text, dim, vec FROM embeddings WHERE text IN ({marks})", part)
                    for text, dim, blob in rows:
                        if len(blob) == 8 * dim:
                            out[text] = _unpack(dim, blob)
            except (sqlite3.Error, struct.error) as exc:
                self._disable("reading", exc)
                return {}
        return out

    def put_many(self, items: Mapping[str, Vector] | Sequence[tuple[str, Vector]]) -> None:
        """Store vectors (an existing text is overwritten)."""
        pairs = list(items.items()) if isinstance(items, Mapping) else list(items)
        with self._lock:
            if self._db is None or not pairs:
                return
            try:
                self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)",
                                     [(t, len(v), _pack(v)) for t, v in pairs])
                self._db.commit()
            except sqlite3.Error as exc:
                self._disable("writing", exc)

    def __len__(self) -> int:
        with self._lock:
            if self._db is None:
                return 0
            try:
                return int(self._db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
            except sqlite3.Error:
                return 0

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


__all__ = ["EmbeddingStore", "model_fingerprint"]
