"""A minimal tf2-style buffer fed from /tf and /tf_static (tf2_ros has no wheel here).

Every dynamic edge keeps a time-ordered history (`cache_s` seconds); `lookup(target, source, t)`
chains the edges at time t, interpolating between the two samples around t (linear in
translation, slerp in rotation), as tf2's BufferCore does. Static edges hold at all times.
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

import numpy as np

from .geometry import FloatArray, invert, quaternion_from_matrix, transform_from_quaternion


class TransformError(LookupError):
    """No transform between the frames at the requested time."""


class ExtrapolationError(TransformError):
    """The frames are connected, but time t is outside an edge's history. `future` is True when t
    is newer than the newest sample (waiting may help), False when it is older than the cache."""

    def __init__(self, message: str, future: bool) -> None:
        super().__init__(message)
        self.future = future


@dataclass
class _Edge:
    parent: str
    static: bool
    stamps: list[float] = field(default_factory=list)       # s, ascending
    transforms: list[FloatArray] = field(default_factory=list)  # parent<-child at each stamp


def _slerp(a: FloatArray, b: FloatArray, w: float) -> FloatArray:
    """Transform a moved a fraction w (0..1) of the way to b."""
    qa, qb = np.array(quaternion_from_matrix(a)), np.array(quaternion_from_matrix(b))
    dot = float(qa @ qb)
    if dot < 0.0:  # the shorter way round
        qb, dot = -qb, -dot
    if dot > 0.9995:
        q = qa + w * (qb - qa)
    else:
        theta = math.acos(min(1.0, dot))
        q = (math.sin((1 - w) * theta) * qa + math.sin(w * theta) * qb) / math.sin(theta)
    q = q / np.linalg.norm(q)
    p = (1 - w) * a[:3, 3] + w * b[:3, 3]
    return transform_from_quaternion(p.tolist(), q.tolist())


class TransformTree:
    """Frames form a tree (each child has one parent). Times are seconds on the stamps' clock.

    `cache_s`: how much history each dynamic edge keeps (s). `tolerance_s`: how far past an edge's
    newest sample (or before its oldest) a lookup may use that end sample unchanged (s).
    """

    def __init__(self, cache_s: float, tolerance_s: float, max_depth: int = 32) -> None:
        if cache_s <= 0 or tolerance_s < 0:
            raise ValueError("cache_s must be > 0 s and tolerance_s >= 0 s")
        self.cache_s, self.tolerance_s, self.max_depth = cache_s, tolerance_s, max_depth
        self._edges: dict[str, _Edge] = {}

    def set(self, parent: str, child: str, parent_from_child: FloatArray, stamp_s: float, static: bool) -> None:
        """Add parent<-child at stamp_s (s). A static edge replaces the edge; a dynamic sample never
        replaces a static edge. A sample with a stamp already held replaces that sample."""
        parent, child = parent.lstrip("/"), child.lstrip("/")
        t = np.asarray(parent_from_child, dtype=np.float64)
        old = self._edges.get(child)
        if static:
            self._edges[child] = _Edge(parent, True, [stamp_s], [t])
            return
        if old is None or old.static or old.parent != parent:
            if old is not None and old.static:
                return
            old = self._edges[child] = _Edge(parent, False)
        i = bisect.bisect_left(old.stamps, stamp_s)
        if i < len(old.stamps) and old.stamps[i] == stamp_s:
            old.transforms[i] = t
        else:
            old.stamps.insert(i, stamp_s)
            old.transforms.insert(i, t)
        cut = bisect.bisect_left(old.stamps, old.stamps[-1] - self.cache_s)
        if cut:
            del old.stamps[:cut], old.transforms[:cut]

    def _edge_at(self, child: str, e: _Edge, t: float | None) -> FloatArray:
        if e.static or t is None:
            return e.transforms[-1]
        s = e.stamps
        if t >= s[-1]:
            if t - s[-1] <= self.tolerance_s:
                return e.transforms[-1]
            raise ExtrapolationError(
                f"{e.parent} <- {child} is known up to {s[-1]:.3f} s; asked for {t:.3f} s "
                f"({t - s[-1]:.3f} s in the future)", future=True)
        if t <= s[0]:
            if s[0] - t <= self.tolerance_s:
                return e.transforms[0]
            raise ExtrapolationError(
                f"{e.parent} <- {child} is known from {s[0]:.3f} s; asked for {t:.3f} s "
                f"({s[0] - t:.3f} s in the past)", future=False)
        i = bisect.bisect_right(s, t)
        w = (t - s[i - 1]) / (s[i] - s[i - 1])
        return _slerp(e.transforms[i - 1], e.transforms[i], w)

    def _chain(self, frame: str) -> list[str]:
        chain = [frame]
        while frame in self._edges and len(chain) <= self.max_depth:
            frame = self._edges[frame].parent
            chain.append(frame)
        return chain

    def _down_to(self, chain: list[str], t: float | None) -> FloatArray:
        """ancestor<-chain[0], where the ancestor is chain[-1]."""
        out = np.eye(4)
        for frame in chain[:-1]:
            out = self._edge_at(frame, self._edges[frame], t) @ out
        return out

    def lookup(self, target: str, source: str, t: float | None = None) -> FloatArray:
        """target<-source at time t (s; None = the newest samples). Raises TransformError if the
        frames are not connected, ExtrapolationError if t is outside an edge's history."""
        target, source = target.lstrip("/"), source.lstrip("/")
        if target == source:
            return np.eye(4)
        chain_s, chain_t = self._chain(source), self._chain(target)
        common = next((f for f in chain_s if f in set(chain_t)), None)
        if common is None:
            raise TransformError(f"{target} and {source} are not connected (known frames: {self.frames()})")
        up_s = chain_s[: chain_s.index(common) + 1]
        up_t = chain_t[: chain_t.index(common) + 1]
        return invert(self._down_to(up_t, t)) @ self._down_to(up_s, t)

    def newest_stamp(self, target: str, source: str) -> float:
        """The newest time (s) at which target<-source is known: inf if every edge between them is
        static, -inf if they are not connected."""
        chain_s, chain_t = self._chain(source.lstrip("/")), self._chain(target.lstrip("/"))
        common = next((f for f in chain_s if f in set(chain_t)), None)
        if common is None:
            return -math.inf
        frames = chain_s[: chain_s.index(common)] + chain_t[: chain_t.index(common)]
        return min((self._edges[f].stamps[-1] for f in frames if not self._edges[f].static), default=math.inf)

    def frames(self) -> list[str]:
        return sorted(set(self._edges) | {e.parent for e in self._edges.values()})
