"""Choosing what a benchmark runs: named groups of items (families, task sets), the first few of each."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def first_of_groups(known: Sequence[str], chosen: Sequence[str], members: Callable[[str], Sequence[T]],
                    limit: int | None, what: str, where: str = "") -> list[T]:
    """The first `limit` members (all when None) of every group of `chosen`, in the order of `known`.
    ValueError on a group that is not known ("unknown <what> [...]<where>; choose from [...]") or a
    limit below 1."""
    bad = [g for g in chosen if g not in known]
    if bad:
        raise ValueError(f"unknown {what} {bad}{where}; choose from {list(known)}")
    if limit is not None and limit < 1:
        raise ValueError("--instructions must be >= 1")
    out: list[T] = []
    for group in known:
        if group in chosen:
            out += members(group)[:limit]
    return out
