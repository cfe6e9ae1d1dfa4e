"""Validated settings of the simulator node (built from its ROS parameters; no rclpy here)."""
from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass

from monologue_domain.scene_spec import SceneSpec, make_spec

from .camera import CAMERAS
from .world import WorldConfig

MAX_IMAGE_SIZE = (1920, 1080)  # px


@dataclass(frozen=True)
class SimSettings:
    seed: int  # scene seed actually used (a random one if the parameter was -1)
    spec: SceneSpec
    place_noise_std: float  # m
    pixel_noise_std: float  # 8-bit intensity units
    camera_mode: str  # "wrist" or "overhead"
    image_width: int  # px
    image_height: int  # px
    camera_rate: float  # Hz (wall clock)
    fovy_deg: float  # deg, vertical field of view
    real_time_factor: float  # simulated s per wall s; 0 = as fast as possible
    timestep: float  # s, physics step
    contact_force: float  # N, threshold of move until contact
    protective_stop_force: float  # N
    ground_truth_rate: float  # Hz
    joint_state_rate: float  # Hz

    def world_config(self) -> WorldConfig:
        """The physics world's configuration from these settings (the arm starts at WorldConfig's home_q)."""
        return WorldConfig(
            timestep=self.timestep, contact_force=self.contact_force, protective_stop_force=self.protective_stop_force,
            place_noise_std=self.place_noise_std, image_width=self.image_width, image_height=self.image_height,
            fovy_deg=self.fovy_deg, seed=self.seed,
        )


def settings_from_parameters(p: Mapping[str, object]) -> SimSettings:
    """Check every parameter; raise ValueError listing all problems at once."""
    errors: list[str] = []

    def num(name: str, low: float, high: float, low_open: bool = False) -> float:
        value = p[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            errors.append(f"{name} must be a number, got {value!r}")
            return low
        v = float(value)
        if not math.isfinite(v) or v < low or v > high or (low_open and v == low):
            errors.append(f"{name} must be in {'(' if low_open else '['}{low:g}, {high:g}], got {v:g}")
        return v

    def strings(name: str) -> tuple[str, ...]:
        value = p[name]
        if not isinstance(value, (list, tuple)) or not all(isinstance(s, str) for s in value):
            errors.append(f"{name} must be a list of strings, got {value!r}")
            return ()
        return tuple(s.strip() for s in value if s.strip())

    seed = int(num("sim.seed", -1, 2**31 - 1))
    if seed < 0:
        seed = random.SystemRandom().randrange(1_000_000)
    num_blocks = int(num("sim.num_blocks", 0, 4))
    num_bowls = int(num("sim.num_bowls", 0, 3))
    mode = str(p["camera.mode"])
    if mode not in CAMERAS:
        errors.append(f"camera.mode must be one of {CAMERAS}, got {mode!r}")
    place_noise_std = num("sim.place_noise_std", 0.0, 0.2)
    pixel_noise_std = num("sim.pixel_noise_std", 0.0, 100.0)
    width = int(num("camera.width", 16, MAX_IMAGE_SIZE[0]))
    height = int(num("camera.height", 16, MAX_IMAGE_SIZE[1]))
    camera_rate = num("camera.rate", 0.0, 30.0, low_open=True)
    fovy = num("camera.fovy", 10.0, 120.0)
    rtf = num("real_time_factor", 0.0, 1000.0)
    timestep = num("physics.timestep", 0.0005, 0.005)
    contact_force = num("physics.contact_force", 0.5, 100.0)
    protective = num("physics.protective_stop_force", 10.0, 1000.0)
    gt_rate = num("ground_truth_rate", 0.0, 100.0, low_open=True)
    js_rate = num("joint_state_rate", 0.0, 500.0, low_open=True)
    blocks, bowls, heavy = strings("sim.block_colors"), strings("sim.bowl_colors"), strings("sim.heavy_blocks")
    matching = p["sim.matching_bowls"]
    if not isinstance(matching, bool):
        errors.append(f"sim.matching_bowls must be true or false, got {matching!r}")
    spec: SceneSpec | None = None
    if not errors:
        try:
            spec = make_spec(seed, num_blocks, num_bowls, bool(matching), blocks, bowls, heavy)
        except ValueError as e:
            errors.append(f"scene: {e}")
    if errors or spec is None:
        raise ValueError("invalid tabletop_sim parameters:\n  " + "\n  ".join(errors))
    return SimSettings(
        seed=seed, spec=spec, place_noise_std=place_noise_std, pixel_noise_std=pixel_noise_std,
        camera_mode=mode, image_width=width, image_height=height, camera_rate=camera_rate, fovy_deg=fovy,
        real_time_factor=rtf, timestep=timestep, contact_force=contact_force, protective_stop_force=protective,
        ground_truth_rate=gt_rate, joint_state_rate=js_rate,
    )
