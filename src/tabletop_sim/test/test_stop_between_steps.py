"""Issue 32: a stop does not wait for the physics thread's chunk of steps: `SimWorld.step` lets it in
between two steps (the e-stop's arm/stop reaches the world without waiting up to CHUNK_STEPS steps)."""
from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from tabletop_sim.core.arm import ArmController
from tabletop_sim.core.kinematics import HOME_Q
from tabletop_sim.core.motion import ArmError, plan_joints
from tabletop_sim.core.world import SimWorld

MakeWorld = Callable[..., tuple[SimWorld, ArmController]]
CHUNK = 400  # steps in one step() call: far more than the stop needs to get in
LIVENESS_S = 30.0  # s: bound of the waits


def test_a_stop_gets_the_world_between_two_steps_of_a_chunk(make_world: MakeWorld) -> None:
    world, arm = make_world(("red",))
    target = np.array(HOME_Q, dtype=float)
    target[0] -= 1.5
    motion = world.start(plan_joints(arm.kin, world.joint_positions(), target, 0.5, 1.0), world.generation)
    steps: list[int] = []
    original = world._step_once
    stopper = threading.Thread(target=lambda: world.stop("e-stop"), daemon=True)
    asked = threading.Event()

    def counted() -> None:
        steps.append(1)
        if len(steps) == 3:  # the stop asks for the world while this chunk holds its lock
            stopper.start()
            for _ in range(int(LIVENESS_S / 0.001)):
                if world._stop_asked.is_set():
                    asked.set()
                    break
                threading.Event().wait(0.001)
        original()

    world._step_once = counted  # type: ignore[method-assign]
    world.step(CHUNK)
    stopper.join(LIVENESS_S)
    assert asked.is_set()
    assert len(steps) == 3  # the chunk ended after the step during which the stop asked
    assert motion.done.is_set() and motion.error == ArmError.CANCELED and not world.busy()
