"""Object memory: what is visible now, and what was seen before but is not visible any more.

IM real tabletop (IM App. A.2, Listing 2): "a list of currently visible objects and a list of
previously visible objects that are no longer visible. We may add new objects to the currently
visible objects list if, after a robot action, MDETR detects an object that we have not seen
before." A block covered by another one (the bottom of a tower) moves from the visible to the
occluded list and stays there, at its last known position, until it is detected again.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from .scene import SceneObject


@dataclass
class _Track:
    obj: SceneObject
    first_seen_s: float
    last_seen_s: float
    misses: int = 0  # consecutive updates without a detection


class ObjectMemory:
    """Tracks objects by name (names are unique within a scene, as the candidate list is).

    `miss_updates_to_occlude`: consecutive updates without a detection before an object counts as
    occluded (1 = at once, as in the paper; more tolerates a detector that flickers on a video
    stream). `forget_after_s`: drop an occluded object after this long (s); None = never.
    """

    def __init__(self, miss_updates_to_occlude: int, forget_after_s: float | None = None) -> None:
        if miss_updates_to_occlude < 1:
            raise ValueError("miss_updates_to_occlude must be >= 1")
        if forget_after_s is not None and forget_after_s <= 0:
            raise ValueError("forget_after_s must be > 0 s or None")
        self.miss_updates_to_occlude = miss_updates_to_occlude
        self.forget_after_s = forget_after_s
        self._tracks: dict[str, _Track] = {}  # insertion order = first-seen order

    def update(self, observed: Sequence[SceneObject], stamp_s: float,
               in_view: Callable[[SceneObject], bool] | None = None) -> list[SceneObject]:
        """Merge one observation (the objects detected in a frame, time in s); returns every known
        object, in first-seen order, with `visible` set.

        `in_view(obj)`: whether the camera could have seen a known object now (its last position is
        in the field of view). An undetected object out of view keeps its state: a moving wrist
        camera that looks elsewhere does not make the table's objects "occluded". None = all in view.
        """
        seen = set()
        for o in observed:
            if o.name in seen:
                raise ValueError(f"object {o.name!r} observed twice in one update")
            seen.add(o.name)
            t = self._tracks.get(o.name)
            if t is None:
                self._tracks[o.name] = _Track(replace(o, visible=True), stamp_s, stamp_s)
            else:
                t.obj, t.last_seen_s, t.misses = replace(o, visible=True), stamp_s, 0
        for name, t in list(self._tracks.items()):
            if name in seen or (in_view is not None and not in_view(t.obj)):
                continue
            t.misses += 1
            if t.misses >= self.miss_updates_to_occlude:
                t.obj = replace(t.obj, visible=False)
            if self.forget_after_s is not None and stamp_s - t.last_seen_s > self.forget_after_s:
                del self._tracks[name]
        return self.objects()

    def note_moved(self, name: str, position: tuple[float, float, float]) -> None:
        """After a successful pick_place, remember an object at its new position (m) even if it is
        now hidden (e.g. put under something)."""
        t = self._tracks.get(name)
        if t is not None:
            t.obj = replace(t.obj, position=position)

    def objects(self) -> list[SceneObject]:
        return [t.obj for t in self._tracks.values()]

    def visible(self) -> list[str]:
        return [t.obj.name for t in self._tracks.values() if t.obj.visible]

    def occluded(self) -> list[str]:
        return [t.obj.name for t in self._tracks.values() if not t.obj.visible]

    def reset(self) -> None:
        """Forget everything (a new episode or a new scene)."""
        self._tracks.clear()
