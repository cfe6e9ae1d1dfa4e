"""Offscreen RGB-D rendering of the wrist or overhead camera (OpenGL through MuJoCo; MUJOCO_GL=egl headless).

One render pass gives colour and depth, so depth is aligned to colour by construction (the same
pinhole camera, like the RealSense driver's aligned_depth_to_color). Segmentation ids (the scene's
SceneObject.segmentation_id per pixel, 0 elsewhere) take a second pass and are rendered on request.

A CameraRenderer owns an OpenGL context, which is bound to the thread that created it: create and use
each renderer from one thread.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np
import numpy.typing as npt

from .geometry import Pose
from .world import SimWorld

CAMERAS: tuple[str, ...] = ("wrist", "overhead")


@dataclass(frozen=True)
class Intrinsics:
    """Pinhole intrinsics in pixels; pixel (0, 0) is the centre of the top-left pixel (OpenCV/ROS)."""

    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float

    def matrix(self) -> npt.NDArray[np.float64]:
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])

    def project(self, p_camera: npt.NDArray[np.float64]) -> tuple[float, float]:
        """Pixel (u, v) of a point in the optical frame (x right, y down, z forward; m)."""
        return (self.fx * float(p_camera[0]) / float(p_camera[2]) + self.cx,
                self.fy * float(p_camera[1]) / float(p_camera[2]) + self.cy)


def intrinsics(width: int, height: int, fovy_deg: float) -> Intrinsics:
    """Intrinsics of MuJoCo's symmetric perspective camera with vertical field of view fovy (deg)."""
    f = (height / 2.0) / math.tan(math.radians(fovy_deg) / 2.0)
    return Intrinsics(width, height, f, f, (width - 1) / 2.0, (height - 1) / 2.0)


@dataclass(frozen=True)
class CameraFrame:
    """One rendered frame."""

    rgb: npt.NDArray[np.uint8]  # (H, W, 3)
    depth: npt.NDArray[np.float32]  # (H, W) m along the optical axis; NaN where nothing is seen
    segmentation: npt.NDArray[np.int32] | None  # (H, W) scene segmentation ids, 0 = not an object
    intrinsics: Intrinsics
    pose: Pose  # optical frame in base_link at render time
    sim_time: float  # s


class CameraRenderer:
    def __init__(
        self,
        world: SimWorld,
        camera: str,
        width: int,
        height: int,
        pixel_noise_std: float,
        seed: int,
    ) -> None:
        """pixel_noise_std: N(0, std) added to every colour channel, in 8-bit intensity units (0..255);
        `seed` seeds that noise."""
        if camera not in CAMERAS:
            raise ValueError(f"unknown camera {camera!r}; choose one of {CAMERAS}")
        if width > world.config.image_width or height > world.config.image_height:
            raise ValueError(f"image {width}x{height} px exceeds the world's render buffer "
                             f"{world.config.image_width}x{world.config.image_height} px")
        if width < 16 or height < 16:
            raise ValueError("image width and height must be at least 16 px")
        if pixel_noise_std < 0.0:
            raise ValueError("pixel_noise_std must be >= 0")
        self.world = world
        self.camera = camera
        self.intrinsics = intrinsics(width, height, world.config.fovy_deg)
        self.pixel_noise_std = pixel_noise_std
        self._rng = np.random.default_rng(seed)
        self._gl = mujoco.GLContext(world.config.image_width, world.config.image_height)
        self._gl.make_current()
        self._generation = -1
        self._context: mujoco.MjrContext | None = None
        self._scene: mujoco.MjvScene | None = None
        self._option = mujoco.MjvOption()
        self._cam = mujoco.MjvCamera()
        self._cam.type = mujoco.mjtCamera.mjCAMERA_FIXED
        self._rect = mujoco.MjrRect(0, 0, width, height)
        self._rgb = np.empty((height, width, 3), dtype=np.uint8)
        self._depth = np.empty((height, width), dtype=np.float32)
        # The last clean render (rgb, depth, segmentation or None) and the world revision it shows.
        self._cache: tuple[npt.NDArray[np.uint8], npt.NDArray[np.float32], npt.NDArray[np.int32] | None] | None = None
        self._cache_revision = -1

    def _bind(self) -> None:
        """(Re)create the GPU context when the world's model changed (scene reset)."""
        model = self.world.model
        if self._context is not None:
            self._context.free()
        self._context = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_100)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._context)
        self._context.readDepthMap = mujoco.mjtDepthMap.mjDEPTH_ZEROFAR
        self._scene = mujoco.MjvScene(model, maxgeom=2000)
        self._cam.fixedcamid = self.world.index.cameras[self.camera]
        self._generation = self.world.generation
        self._cache = None
        self._near = float(model.vis.map.znear * model.stat.extent)
        self._far = float(model.vis.map.zfar * model.stat.extent)

    def render(self, segmentation: bool = False) -> CameraFrame:
        """Colour and depth (one pass), and segmentation ids if asked (a second pass).

        While nothing in the world changed since the last call (same world.revision), the last clean
        images are reused without rendering; pixel noise is still drawn anew for every frame.
        """
        self._gl.make_current()
        world = self.world
        with world.lock:
            if world.generation != self._generation:
                self._bind()
            assert self._scene is not None and self._context is not None
            fresh = self._cache is None or world.revision != self._cache_revision
            if fresh:
                mujoco.mjv_updateScene(world.model, world.data, self._option, None, self._cam,
                                       mujoco.mjtCatBit.mjCAT_ALL, self._scene)
                self._cache_revision = world.revision
            pose = world.camera_pose(self.camera)
            sim_time = world.time
            seg_lut = world.index.geom_segmentation
        if fresh or self._cache is None:
            mujoco.mjr_render(self._rect, self._scene, self._context)
            mujoco.mjr_readPixels(self._rgb, self._depth, self._rect, self._context)
            self._cache = (np.flipud(self._rgb).copy(), self._linear_depth(np.flipud(self._depth)), None)
        clean_rgb, depth, seg = self._cache
        if segmentation and seg is None:
            seg = self._segmentation(seg_lut)
            self._cache = (clean_rgb, depth, seg)
        rgb = clean_rgb
        if self.pixel_noise_std > 0.0:
            noisy = clean_rgb.astype(np.float32) + self._rng.normal(0.0, self.pixel_noise_std, clean_rgb.shape)
            rgb = np.clip(np.rint(noisy), 0, 255).astype(np.uint8)
        return CameraFrame(rgb.copy(), depth.copy(), seg.copy() if segmentation and seg is not None else None,
                           self.intrinsics, pose, sim_time)

    def _linear_depth(self, buffer: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Reverse-Z depth buffer -> metres along the optical axis (as mujoco.Renderer computes it)."""
        near, far = np.float32(self._near), np.float32(self._far)
        c = np.float32(-0.5) * (-(far + near) / (far - near)) - np.float32(0.5)
        d = np.float32(-0.5) * (-(np.float32(2) * far * near) / (far - near))
        z = d / (buffer.astype(np.float64) + c)
        z[(buffer <= 0.0) | (z >= far * 0.999)] = np.nan
        return z.astype(np.float32)

    def _segmentation(self, geom_lut: npt.NDArray[np.int32]) -> npt.NDArray[np.int32]:
        assert self._scene is not None and self._context is not None
        scene = self._scene
        flags = scene.flags.copy()
        scene.flags[mujoco.mjtRndFlag.mjRND_SEGMENT] = True
        scene.flags[mujoco.mjtRndFlag.mjRND_IDCOLOR] = True
        try:
            mujoco.mjr_render(self._rect, scene, self._context)
            mujoco.mjr_readPixels(self._rgb, None, self._rect, self._context)
        finally:
            np.copyto(scene.flags, flags)
        img = np.flipud(self._rgb).astype(np.int64)
        segid = img[..., 0] + img[..., 1] * 256 + img[..., 2] * 65536  # 0 = background, else geom segid + 1
        lut = np.zeros(scene.ngeom + 1, dtype=np.int32)
        for i in range(scene.ngeom):
            g = scene.geoms[i]
            if g.segid >= 0 and g.objtype == mujoco.mjtObj.mjOBJ_GEOM and 0 <= g.objid < geom_lut.size:
                lut[g.segid + 1] = geom_lut[g.objid]
        return np.asarray(lut[np.clip(segid, 0, scene.ngeom)], dtype=np.int32)

    def close(self) -> None:
        if self._context is not None:
            self._gl.make_current()
            self._context.free()
            self._context = None
        self._gl.free()
