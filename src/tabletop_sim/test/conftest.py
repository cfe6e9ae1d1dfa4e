"""Fixtures of the simulator's unit tests. MuJoCo renders headless through EGL."""
from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")  # before anything imports mujoco

import pytest  # noqa: E402

from monologue_domain.robots import node_parameters  # noqa: E402
from monologue_domain.scene_spec import SceneSpec, layout_scene  # noqa: E402
from tabletop_sim.core.arm import ArmController  # noqa: E402
from tabletop_sim.core.config import settings_from_parameters  # noqa: E402
from tabletop_sim.core.kinematics import ArmKinematics  # noqa: E402
from tabletop_sim.core.world import SimWorld, WorldConfig  # noqa: E402

LOG = logging.getLogger("tabletop_sim.test")
CONFIG = Path(__file__).resolve().parents[3] / "config"


@pytest.fixture(scope="session")
def world_config() -> WorldConfig:
    """The physics world the simulator node builds from config/monologue.yaml and robots/sim.yaml."""
    params = node_parameters(CONFIG, "tabletop_sim", ["monologue.yaml", "robots/sim.yaml"])
    return settings_from_parameters(params).world_config()


@pytest.fixture(scope="session")
def kinematics() -> ArmKinematics:
    return ArmKinematics()


@pytest.fixture
def make_world(kinematics: ArmKinematics,
               world_config: WorldConfig) -> Iterator[Callable[..., tuple[SimWorld, ArmController]]]:
    """make_world(blocks, bowls, heavy=(), seed=3, **WorldConfig fields) -> (world, inline arm controller);
    the WorldConfig fields not given are the YAML's.

    The controller steps physics in the calling thread (no real-time pacing), so tests run as fast as
    the CPU allows and are deterministic.
    """

    def make(
        blocks: tuple[str, ...], bowls: tuple[str, ...] = (), heavy: tuple[str, ...] = (), seed: int = 3,
        **config: object,
    ) -> tuple[SimWorld, ArmController]:
        layout = layout_scene(SceneSpec(blocks, bowls, heavy), seed)
        world = SimWorld(layout, replace(world_config, seed=seed, **config), LOG)  # type: ignore[arg-type]
        world.step(50)  # let the objects settle on the table
        return world, ArmController(world, None, LOG, kinematics)

    yield make



def _pick_place(arm: ArmController, world: SimWorld, obj: str, target: tuple[float, float]) -> list[str]:
    """IM's primitive (core.primitive) on `obj`, onto whatever is at `target` (x, y m); then 0.5 s of
    settling. Returns one "step: ERROR contact=.. holding=.." line per step."""
    from tabletop_sim.core.primitive import pick_and_place

    x, y, z = next(o.position for o in world.objects() if o.name == obj)
    top = max([0.0] + [o.position[2] + o.size[2] / 2 if o.category == "block" else o.position[2] + o.size[2]
                       for o in world.objects()
                       if o.name != obj and abs(o.position[0] - target[0]) < 0.06 and abs(o.position[1] - target[1]) < 0.06])
    outcome = pick_and_place(arm, (x, y, z + 0.02), (target[0], target[1], top))
    world.step(250)
    return [f"{name}: {r.error.name} contact={r.contact} holding={r.holding}" for name, r in outcome.steps]


@pytest.fixture
def pick_place() -> Callable[[ArmController, SimWorld, str, tuple[float, float]], list[str]]:
    return _pick_place
