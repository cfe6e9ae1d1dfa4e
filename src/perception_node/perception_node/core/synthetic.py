"""Exact synthetic RGB-D frames of a tabletop, for tests and benchmarks (ground truth is known).

A ray caster over a table plane (z = 0 in the base frame) and axis-aligned boxes; a bowl is an
open-topped hollow box (bottom plus four walls), a plate a thin box. Produces an rgb8 image, a
z-depth image in metres and a per-pixel object index, with the same conventions as
:mod:`perception_node.core.geometry` (optical frame, base<-camera transform).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from .geometry import FloatArray, Intrinsics, apply, invert

TABLE_RGB = (150, 120, 90)
BACKGROUND_DEPTH_M = 0.0  # no return beyond the table


@dataclass(frozen=True)
class SynthObject:
    """An object resting in the scene: centre and size in metres (base frame, axis-aligned)."""

    name: str
    category: str                          # "block", "bowl", "plate", ...
    center: tuple[float, float, float]
    size: tuple[float, float, float]
    rgb: tuple[int, int, int]
    wall_m: float = 0.006                  # bowls: wall and bottom thickness (m)

    def parts(self) -> list[tuple[FloatArray, FloatArray]]:
        """Solid axis-aligned boxes (lo, hi corners, m) making up the object."""
        c, s = np.array(self.center), np.array(self.size)
        lo, hi = c - s / 2, c + s / 2
        if self.category != "bowl":
            return [(lo, hi)]
        t = self.wall_m
        return [
            (lo, np.array([hi[0], hi[1], lo[2] + t])),                    # bottom
            (lo, np.array([lo[0] + t, hi[1], hi[2]])),                    # -x wall
            (np.array([hi[0] - t, lo[1], lo[2]]), hi),                    # +x wall
            (lo, np.array([hi[0], lo[1] + t, hi[2]])),                    # -y wall
            (np.array([lo[0], hi[1] - t, lo[2]]), hi),                    # +y wall
        ]


@dataclass(frozen=True)
class SynthFrame:
    rgb: NDArray[np.uint8]          # HxWx3
    depth_m: NDArray[np.float32]    # HxW z-depth (m), 0 = no return
    object_index: NDArray[np.int32]  # HxW index into objects, -1 = table or background
    intrinsics: Intrinsics
    base_from_camera: FloatArray    # 4x4 base<-camera_optical
    objects: tuple[SynthObject, ...] = field(default_factory=tuple)


def _ray_box(origin: FloatArray, dirs: FloatArray, lo: FloatArray, hi: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Entry distance along each ray (inf if missed) and the entry face normal axis (0, 1, 2)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / dirs
        t1 = (lo - origin) * inv
        t2 = (hi - origin) * inv
    tmin = np.minimum(t1, t2)
    tmax = np.maximum(t1, t2)
    tmin = np.nan_to_num(tmin, nan=-np.inf)
    tmax = np.nan_to_num(tmax, nan=np.inf)
    t_enter = tmin.max(axis=1)
    t_exit = tmax.min(axis=1)
    hit = (t_enter <= t_exit) & (t_exit > 1e-6) & (t_enter > 1e-6)
    return np.where(hit, t_enter, np.inf), tmin.argmax(axis=1).astype(np.float64)


def render(
    objects: Sequence[SynthObject], k: Intrinsics, base_from_camera: FloatArray,
    table_half_extent_m: float = 1.0, noise_std_m: float = 0.0, hole_fraction: float = 0.0, seed: int = 0,
) -> SynthFrame:
    """Ray-cast the scene. `noise_std_m` adds Gaussian depth noise (m); `hole_fraction` zeroes that
    fraction of depth pixels at random, like a structured-light sensor's dropouts."""
    h, w = k.height, k.width
    vv, uu = np.mgrid[0:h, 0:w]
    d_cam = np.stack([(uu.ravel() - k.cx) / k.fx, (vv.ravel() - k.cy) / k.fy, np.ones(h * w)], axis=1)
    rot = base_from_camera[:3, :3]
    dirs = d_cam @ rot.T  # not normalised: t along it is the optical z-depth
    origin = base_from_camera[:3, 3]
    best_t = np.full(h * w, np.inf)
    best_obj = np.full(h * w, -1, dtype=np.int32)
    best_axis = np.full(h * w, 2.0)
    # Table: z = 0 for |x|, |y| < table_half_extent_m (m).
    with np.errstate(divide="ignore", invalid="ignore"):
        t_table = -origin[2] / dirs[:, 2]
    hit_pt = origin + dirs * t_table[:, None]
    on_table = (t_table > 0) & (np.abs(hit_pt[:, 0]) < table_half_extent_m) & \
        (np.abs(hit_pt[:, 1]) < table_half_extent_m)
    best_t = np.where(on_table, t_table, best_t)
    for idx, obj in enumerate(objects):
        for lo, hi in obj.parts():
            t, axis = _ray_box(origin, dirs, lo, hi)
            closer = t < best_t
            best_t = np.where(closer, t, best_t)
            best_obj = np.where(closer, idx, best_obj)
            best_axis = np.where(closer, axis, best_axis)
    hit = np.isfinite(best_t)
    depth = np.where(hit, best_t, BACKGROUND_DEPTH_M)
    rgb = np.zeros((h * w, 3), dtype=np.float64)
    rgb[hit] = TABLE_RGB
    shade = np.where(best_axis == 2, 1.0, np.where(best_axis == 0, 0.8, 0.65))
    for idx, obj in enumerate(objects):
        sel = best_obj == idx
        rgb[sel] = np.array(obj.rgb, dtype=np.float64) * shade[sel, None]
    rng = np.random.default_rng(seed)
    if noise_std_m > 0:
        depth = np.where(hit, depth + rng.normal(0.0, noise_std_m, depth.shape), depth)
    if hole_fraction > 0:
        depth = np.where(rng.random(depth.shape) < hole_fraction, 0.0, depth)
    return SynthFrame(
        rgb=np.clip(rgb, 0, 255).astype(np.uint8).reshape(h, w, 3),
        depth_m=depth.astype(np.float32).reshape(h, w),
        object_index=best_obj.reshape(h, w),
        intrinsics=k,
        base_from_camera=base_from_camera,
        objects=tuple(objects),
    )


def true_box(frame: SynthFrame, index: int, min_pixels: int = 1) -> tuple[float, float, float, float] | None:
    """Tight pixel box (x_min, y_min, x_max, y_max) of an object's visible pixels, or None."""
    vs, us = np.nonzero(frame.object_index == index)
    if len(us) < min_pixels:
        return None
    return (float(us.min()), float(vs.min()), float(us.max()), float(vs.max()))


def camera_point(frame: SynthFrame, point_base: Sequence[float]) -> FloatArray:
    """A base-frame point (m) in the camera frame (m)."""
    return apply(invert(frame.base_from_camera), np.asarray(point_base, dtype=np.float64))


def block(name: str, x: float, y: float, rgb: tuple[int, int, int], edge_m: float = 0.04,
          z0: float = 0.0) -> SynthObject:
    """A cube of edge `edge_m` (m) resting at height z0 (m) with its centre above (x, y)."""
    return SynthObject(name, "block", (x, y, z0 + edge_m / 2), (edge_m, edge_m, edge_m), rgb)


def bowl(name: str, x: float, y: float, rgb: tuple[int, int, int], width_m: float = 0.12,
         height_m: float = 0.05) -> SynthObject:
    """An open square bowl (m) standing on the table with its centre above (x, y)."""
    return SynthObject(name, "bowl", (x, y, height_m / 2), (width_m, width_m, height_m), rgb)
