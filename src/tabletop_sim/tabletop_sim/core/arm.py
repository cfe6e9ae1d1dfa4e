"""The arm as a robot program sees it: ur_rtde-like blocking commands on the simulated UR5e.

    move_linear(pose, speed m/s, acceleration m/s^2)      straight TCP line (moveL)
    move_joints(q rad, speed rad/s, acceleration rad/s^2) synchronised joint move (moveJ)
    move_until_contact(direction, speed m/s, max_travel m) guarded TCP line (moveUntilContact)
    set_suction(on), holding(), stop(), tcp_pose(), joint_positions()

Poses are of the TCP (the suction cup's lip, TCP_OFFSET along tool0's z) in base_link. Every command
returns an ArmResult; nothing raises for a refused or failed command. One motion runs at a time;
stop() (from any thread) aborts the running one at once, which then returns CANCELED.

Commands are planned completely before anything moves (IK along the whole path), so an unreachable
target is refused with the arm at rest. A zero speed or acceleration means the ur_rtde default.
"""
from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .geometry import Pose, Vec, normalize_quat, quat_to_mat
from .kinematics import ArmKinematics
from .motion import ArmError, MotionError, Trajectory, plan_joints, plan_linear, plan_until_contact
from .runner import SimRunner
from .world import Motion, SimWorld

# ur_rtde's defaults for moveL / moveJ / moveUntilContact.
DEFAULT_LINEAR_SPEED = 0.25  # m/s
DEFAULT_LINEAR_ACCELERATION = 1.2  # m/s^2
DEFAULT_JOINT_SPEED = 1.05  # rad/s
DEFAULT_JOINT_ACCELERATION = 1.4  # rad/s^2
DEFAULT_CONTACT_SPEED = 0.05  # m/s
DEFAULT_CONTACT_ACCELERATION = 0.5  # m/s^2
TIMEOUT_MARGIN_S = 5.0  # s of wall time allowed beyond a motion's expected duration

ProgressFn = Callable[[float, Pose], None]  # (fraction done 0..1, TCP pose)


@dataclass(frozen=True)
class ArmResult:
    """Outcome of one command, with the arm's state after it."""

    error: ArmError
    message: str
    contact: bool  # move_until_contact: contact was made
    holding: bool  # vacuum sensor
    tcp_pose: Pose
    joint_positions: tuple[float, ...]  # rad

    @property
    def ok(self) -> bool:
        return self.error == ArmError.NONE


class ArmController:
    """Blocking arm commands over a SimWorld.

    With a running SimRunner, commands wait for the physics thread (wall time = simulated time / real-time
    factor). Without one (runner=None), the calling thread steps the physics itself as fast as it can.
    """

    def __init__(
        self,
        world: SimWorld,
        runner: SimRunner | None,
        logger: logging.Logger,
        kinematics: ArmKinematics | None = None,
    ) -> None:
        self.world = world
        self.runner = runner
        self.log = logger
        self.kin = kinematics or ArmKinematics()
        self._busy = threading.Lock()  # one motion at a time
        self._plan_lock = threading.Lock()  # ArmKinematics is not thread-safe

    # ----- queries -------------------------------------------------------------------------------
    def tcp_pose(self) -> Pose:
        return self.world.tcp_pose()

    def joint_positions(self) -> tuple[float, ...]:
        return tuple(float(v) for v in self.world.joint_positions())

    def holding(self) -> bool:
        return self.world.holding()

    # ----- commands ------------------------------------------------------------------------------
    def move_linear(self, pose: Pose, speed: float = 0.0, acceleration: float = 0.0,
                    progress: ProgressFn | None = None) -> ArmResult:
        """Straight line of the TCP to `pose` (base_link)."""
        if not pose.is_finite():
            return self._result(ArmError.INVALID, "pose must be finite")
        try:
            rot = quat_to_mat(normalize_quat(np.asarray(pose.orientation, dtype=np.float64)))
        except ValueError:
            return self._result(ArmError.INVALID, "pose orientation must be a non-zero quaternion")
        v = speed or DEFAULT_LINEAR_SPEED
        a = acceleration or DEFAULT_LINEAR_ACCELERATION
        return self._run(lambda q0: plan_linear(self.kin, q0, pose.translation(), rot, v, a), progress)

    def move_joints(self, q: Sequence[float], speed: float = 0.0, acceleration: float = 0.0,
                    progress: ProgressFn | None = None) -> ArmResult:
        """Synchronised joint move to `q` (rad)."""
        target = np.asarray(list(q), dtype=np.float64)
        if target.shape != (6,):
            return self._result(ArmError.INVALID, f"joint_positions must hold 6 angles (rad), got {len(target)}")
        v = speed or DEFAULT_JOINT_SPEED
        a = acceleration or DEFAULT_JOINT_ACCELERATION
        return self._run(lambda q0: plan_joints(self.kin, q0, target, v, a), progress)

    def move_until_contact(self, direction: Sequence[float], speed: float = 0.0, max_travel: float = 0.0,
                           acceleration: float = 0.0, progress: ProgressFn | None = None) -> ArmResult:
        """TCP line along `direction` (base_link) at `speed` until the tool force reaches the contact
        threshold (result.contact true, the arm stops there) or `max_travel` m is covered (contact false)."""
        d = np.asarray(list(direction), dtype=np.float64)
        if d.shape != (3,):
            return self._result(ArmError.INVALID, "direction must have 3 components")
        v = speed or DEFAULT_CONTACT_SPEED
        a = acceleration or DEFAULT_CONTACT_ACCELERATION
        if max_travel <= 0.0 or not math.isfinite(max_travel):
            return self._result(ArmError.INVALID, f"max_travel must be > 0 m, got {max_travel:g}")
        return self._run(lambda q0: plan_until_contact(self.kin, q0, d, v, max_travel, a), progress)

    def set_suction(self, on: bool) -> ArmResult:
        """Vacuum on or off; allowed while a motion runs (it is an output, like the real tool I/O)."""
        self.world.set_suction(on)
        state = "on" if on else "off"
        held = self.world.held_object()
        return self._result(ArmError.NONE, f"suction {state}" + (f", holding the {held}" if held else ""))

    def stop(self) -> ArmResult:
        """Abort the running motion at once; the arm holds where it is."""
        stopped = self.world.stop("stopped by a stop command")
        return self._result(ArmError.NONE, "stopped the running motion" if stopped else "no motion was running")

    def invalid(self, message: str) -> ArmResult:
        """The result of a malformed command (nothing moves)."""
        return self._result(ArmError.INVALID, message)

    # ----- execution -----------------------------------------------------------------------------
    def _run(self, plan: Callable[[Vec], Trajectory], progress: ProgressFn | None) -> ArmResult:
        if not self._busy.acquire(blocking=False):
            return self._result(ArmError.INVALID, "another motion is running; stop it or wait for it to end")
        try:
            with self.world.lock:
                q0 = self.world.joint_positions()
                generation = self.world.generation
            try:
                with self._plan_lock:
                    trajectory = plan(q0)
            except MotionError as e:
                self.log.info("motion refused: %s", e.message)
                return self._result(e.code, e.message)
            try:
                motion = self.world.start(trajectory, generation)
            except RuntimeError as e:
                return self._result(ArmError.INVALID, f"motion not started: {e}")
            self._wait(motion, progress)
            contact = motion.contact
            return self._result(motion.error, motion.message, contact)
        finally:
            self._busy.release()

    def _wait(self, motion: Motion, progress: ProgressFn | None) -> None:
        runner = self.runner
        duration = motion.trajectory.duration
        if runner is None:
            limit = motion.start_time + duration + 1.0
            while not motion.done.is_set():
                self.world.step(10)
                if self.world.time > limit:
                    self.world.stop("timed out")
                    motion.error, motion.message = ArmError.TIMEOUT, "the motion did not finish in time"
            return
        rtf = runner.real_time_factor
        budget = (duration / rtf if rtf > 0 else duration) * 3.0 + TIMEOUT_MARGIN_S
        deadline = time.monotonic() + budget
        while not motion.done.wait(0.1):
            if progress is not None:
                progress(motion.progress, self.world.tcp_pose())
            if time.monotonic() > deadline or not runner.alive:
                self.world.stop("timed out")
                motion.error = ArmError.TIMEOUT
                motion.message = (f"the motion did not finish within {budget:.1f} s of wall time"
                                  if runner.alive else "the physics thread is not running")
                return

    def _result(self, error: ArmError, message: str, contact: bool = False) -> ArmResult:
        with self.world.lock:
            return ArmResult(error, message, contact, self.world.holding(), self.world.tcp_pose(),
                             tuple(float(v) for v in self.world.joint_positions()))
