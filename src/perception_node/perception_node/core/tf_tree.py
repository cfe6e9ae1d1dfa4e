"""A minimal transform tree fed from /tf and /tf_static (tf2_ros has no wheel here).

Keeps the newest transform of every child frame (no interpolation in time); `lookup` chains them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .geometry import FloatArray, invert


@dataclass
class _Edge:
    parent: str
    parent_from_child: FloatArray
    stamp_s: float
    static: bool


class TransformTree:
    def __init__(self, max_depth: int = 32) -> None:
        self._edges: dict[str, _Edge] = {}
        self.max_depth = max_depth

    def set(self, parent: str, child: str, parent_from_child: FloatArray, stamp_s: float, static: bool) -> None:
        """Add or replace the transform parent<-child (a static one is never replaced by a dynamic one)."""
        parent, child = parent.lstrip("/"), child.lstrip("/")
        old = self._edges.get(child)
        if old is not None and old.static and not static:
            return
        self._edges[child] = _Edge(parent, np.asarray(parent_from_child, dtype=np.float64), stamp_s, static)

    def _to_root(self, frame: str) -> tuple[list[str], FloatArray, float]:
        """Frames from `frame` to its root, root<-frame, and the oldest stamp of a dynamic edge (s)."""
        chain, t, oldest = [frame], np.eye(4), float("inf")
        while frame in self._edges and len(chain) <= self.max_depth:
            e = self._edges[frame]
            t = e.parent_from_child @ t
            if not e.static:
                oldest = min(oldest, e.stamp_s)
            frame = e.parent
            chain.append(frame)
        return chain, t, oldest

    def lookup(self, target: str, source: str) -> tuple[FloatArray, float] | None:
        """target<-source and the oldest dynamic stamp involved (inf if all static); None if the
        frames are not connected."""
        target, source = target.lstrip("/"), source.lstrip("/")
        if target == source:
            return np.eye(4), float("inf")
        chain_s, root_from_s, old_s = self._to_root(source)
        chain_t, root_from_t, old_t = self._to_root(target)
        if chain_s[-1] != chain_t[-1]:
            return None
        return invert(root_from_t) @ root_from_s, min(old_s, old_t)

    def frames(self) -> list[str]:
        return sorted(set(self._edges) | {e.parent for e in self._edges.values()})
