"""Validated settings of the simulator node (built from its ROS parameters; no rclpy here)."""
from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass

from monologue_common.core.settings import ParamReader
from monologue_domain.scene_spec import SceneSpec, make_spec
from monologue_domain.statler_domains import SCENES, DomainSettings, DomainTruth, domain_spec

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
    num_blocks: int  # configured random block count (sim/reset without counts uses it)
    num_bowls: int  # configured random bowl count
    domain: DomainSettings = DomainSettings()  # Statler's domain (`sim.scene`; "tabletop" = none)
    calibration_board: bool = False  # a ChArUco board on the table (hand-eye calibration, monologue-calibrate)
    camera_mount_offset: tuple[float, ...] = (0.0,) * 6  # wrist camera mount error: x, y, z m, rotation vector rad
    expert_truth_dir: str = ""  # llm:=expert only: where the ground truth is also written for the expert stand-in
    realtime_priority: int = 0  # SCHED_FIFO priority of the simulator's threads (1-99), 0 = normal scheduling
    unused: tuple[str, ...] = ()  # parameters set but never read (typos; the node warns)

    def world_config(self) -> WorldConfig:
        """The physics world's configuration from these settings (the arm starts at WorldConfig's home_q)."""
        return WorldConfig(
            timestep=self.timestep, contact_force=self.contact_force, protective_stop_force=self.protective_stop_force,
            place_noise_std=self.place_noise_std, image_width=self.image_width, image_height=self.image_height,
            fovy_deg=self.fovy_deg, seed=self.seed, calibration_board=self.calibration_board,
            camera_mount_offset=self.camera_mount_offset,
        )


def settings_from_parameters(p: Mapping[str, object]) -> SimSettings:
    """Check every parameter; raise ValueError listing all problems at once."""
    r = ParamReader(p, "tabletop_sim")
    seed = r.integer("sim.seed", -1, 2**31 - 1)
    if seed < 0:
        seed = random.SystemRandom().randrange(1_000_000)
    num_blocks = r.integer("sim.num_blocks", 0, 4)
    num_bowls = r.integer("sim.num_bowls", 0, 3)
    mode = r.string("camera.mode", choices=CAMERAS)
    place_noise_std = r.number("sim.place_noise_std", 0.0, 0.2)
    pixel_noise_std = r.number("sim.pixel_noise_std", 0.0, 100.0)
    width = r.integer("camera.width", 16, MAX_IMAGE_SIZE[0])
    height = r.integer("camera.height", 16, MAX_IMAGE_SIZE[1])
    camera_rate = r.number("camera.rate", 0.0, 30.0, low_open=True)
    fovy = r.number("camera.fovy", 10.0, 120.0)
    rtf = r.number("real_time_factor", 0.0, 1000.0)
    timestep = r.number("physics.timestep", 0.0005, 0.005)
    contact_force = r.number("physics.contact_force", 0.5, 100.0)
    protective = r.number("physics.protective_stop_force", 10.0, 1000.0)
    gt_rate = r.number("ground_truth_rate", 0.0, 100.0, low_open=True)
    js_rate = r.number("joint_state_rate", 0.0, 500.0, low_open=True)
    expert_truth_dir = r.string("expert_truth_dir")
    realtime_priority = r.integer("realtime_priority", 0, 99) if r.has("realtime_priority") else 0
    # Hand-eye calibration: the board on the table, and the wrist camera's true mount off the nominal one
    # (which /tf keeps publishing) by x, y, z m and a rotation vector rad.
    board = r.boolean("sim.calibration_board")
    offset = r.numbers("camera.mount_offset", 6)
    r.check(len(offset) != 6 or (max(abs(v) for v in offset[:3]) <= 0.05 and max(abs(v) for v in offset[3:]) <= 0.2),
            f"camera.mount_offset: at most 0.05 m and 0.2 rad per component, got {list(offset)}")
    blocks, bowls, heavy = r.strings("sim.block_colors"), r.strings("sim.bowl_colors"), r.strings("sim.heavy_blocks")
    matching = r.boolean("sim.matching_bowls")
    domain = DomainSettings(
        scene=r.string("sim.scene", choices=SCENES), cup_colors=r.strings("sim.cup_colors"),
        covered_blocks=r.strings("sim.covered_blocks"), dirty_blocks=r.strings("sim.dirty_blocks"),
        block_weights=r.numbers("sim.block_weights"))
    spec: SceneSpec | None = None
    if not r.errors:
        try:
            spec = domain_spec(domain, make_spec(seed, num_blocks, num_bowls, matching, blocks, bowls, heavy))
            spec.validate()
            DomainTruth.create(domain, spec, seed)  # checks dirty blocks and weights against the scene
        except ValueError as e:
            r.check(False, f"scene: {e}")
    r.finish()
    assert spec is not None
    return SimSettings(
        seed=seed, spec=spec, place_noise_std=place_noise_std, pixel_noise_std=pixel_noise_std,
        camera_mode=mode, image_width=width, image_height=height, camera_rate=camera_rate, fovy_deg=fovy,
        real_time_factor=rtf, timestep=timestep, contact_force=contact_force, protective_stop_force=protective,
        ground_truth_rate=gt_rate, joint_state_rate=js_rate, num_blocks=num_blocks, num_bowls=num_bowls, domain=domain,
        expert_truth_dir=expert_truth_dir, calibration_board=board,
        camera_mount_offset=tuple(offset) if len(offset) == 6 else (0.0,) * 6, realtime_priority=realtime_priority,
        unused=tuple(r.unused(ignore=("use_sim_time", "start_type_description_service", "llm"))),
    )
