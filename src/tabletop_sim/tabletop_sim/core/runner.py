"""Steps a SimWorld in a background thread, paced to a real-time factor of the wall clock.

real_time_factor = 2 runs 2 s of simulated time per wall-clock second; 0 runs as fast as the CPU
allows. While no motion runs and every object is at rest, physics is not stepped at all (nothing
would change), so an idle simulator costs no CPU.
"""
from __future__ import annotations

import logging
import math
import threading
import time

from .world import SimWorld

CHUNK_STEPS = 10  # physics steps per lock acquisition


class SimRunner:
    def __init__(self, world: SimWorld, real_time_factor: float, logger: logging.Logger) -> None:
        if not math.isfinite(real_time_factor) or real_time_factor < 0.0:
            raise ValueError(f"real_time_factor must be >= 0 (0 = as fast as possible), got {real_time_factor}")
        self.world = world
        self.real_time_factor = real_time_factor
        self.log = logger
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sim-physics", daemon=True)
        self.steps = 0  # physics steps taken (for statistics)
        self.lag_s = 0.0  # wall time (s) the simulation fell behind the requested factor, in total

    def start(self) -> SimRunner:
        self._thread.start()
        return self

    def close(self, timeout_s: float = 2.0) -> None:
        self._stop.set()
        with self.world.changed:
            self.world.changed.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        world = self.world
        anchor_wall = time.monotonic()
        anchor_sim = world.time
        generation = world.generation
        while not self._stop.is_set():
            with world.changed:
                if world.settled():
                    world.changed.wait(0.1)
                    anchor_wall, anchor_sim, generation = time.monotonic(), world.time, world.generation
                    continue
                if world.generation != generation:  # reset: time restarts at 0
                    anchor_wall, anchor_sim, generation = time.monotonic(), world.time, world.generation
                world.step(CHUNK_STEPS)
            self.steps += CHUNK_STEPS
            if self.real_time_factor == 0.0:
                time.sleep(0)  # let waiting threads take the lock
                continue
            ahead = (world.time - anchor_sim) / self.real_time_factor - (time.monotonic() - anchor_wall)
            if ahead > 0.0:
                self._stop.wait(ahead)
            elif ahead < -0.1:  # CPU-bound: do not try to catch up in a burst
                self.lag_s += -ahead
                anchor_wall, anchor_sim = time.monotonic(), world.time
        self.log.debug("physics thread stopped after %d steps", self.steps)
