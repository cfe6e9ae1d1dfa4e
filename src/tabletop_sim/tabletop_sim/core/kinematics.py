"""UR5e forward and inverse kinematics on MuJoCo's model of the arm and its suction tool.

Inverse kinematics is damped least squares on the site Jacobian of the TCP (6 dof: position and
orientation), within the joint limits. Each instance owns its MjModel/MjData: not thread-safe, but
independent of the simulation (planning never blocks physics).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import mujoco
import numpy as np

from .geometry import Pose, Vec, rotation_error
from .model import ARM_JOINTS, robot_spec

# Home (elbow up): the TCP at (0.575, 0, 0.55) m pointing down with the nominal orientation, where the wrist
# camera, 63 cm above the table, sees the whole workspace. Joint angles (rad) in ARM_JOINTS order.
HOME_Q: tuple[float, ...] = (2.90639, -1.31152, 0.84541, -1.10468, -1.5708, -1.806)
# Parked out of the overhead camera's view: HOME_Q turned a quarter turn to the robot's left.
PARK_Q: tuple[float, ...] = (2.90639 + math.pi / 2, -1.31152, 0.84541, -1.10468, -1.5708, -1.806)

POSITION_TOLERANCE = 1e-4  # m
ORIENTATION_TOLERANCE = 1e-3  # rad


class ArmKinematics:
    """FK/IK of the TCP (suction cup lip) and tool0 (flange) in base_link."""

    def __init__(self) -> None:
        self.model = robot_spec().compile()
        self.data = mujoco.MjData(self.model)
        joints = [int(mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT, n)) for n in ARM_JOINTS]
        self._qadr = np.array([self.model.jnt_qposadr[j] for j in joints])
        self._dadr = np.array([self.model.jnt_dofadr[j] for j in joints])
        self.lower = np.array([self.model.jnt_range[j][0] for j in joints], dtype=np.float64)
        self.upper = np.array([self.model.jnt_range[j][1] for j in joints], dtype=np.float64)
        self._tcp = int(mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_SITE, "tcp"))
        self._tool0 = int(mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_SITE, "tool0_site"))
        self._jacp = np.zeros((3, self.model.nv))
        self._jacr = np.zeros((3, self.model.nv))

    def within_limits(self, q: Sequence[float] | Vec, margin: float = 0.0) -> bool:
        a = np.asarray(q, dtype=np.float64)
        return bool(np.all(a >= self.lower + margin) and np.all(a <= self.upper - margin))

    def _set(self, q: Vec) -> None:
        self.data.qpos[self._qadr] = q
        mujoco.mj_kinematics(self.model, self.data)

    def tcp(self, q: Sequence[float] | Vec) -> tuple[Vec, Vec]:
        """TCP position (m) and rotation matrix in base_link for joint angles q (rad)."""
        self._set(np.asarray(q, dtype=np.float64))
        return self.data.site_xpos[self._tcp].copy(), self.data.site_xmat[self._tcp].reshape(3, 3).copy()

    def tcp_pose(self, q: Sequence[float] | Vec) -> Pose:
        p, r = self.tcp(q)
        return Pose.from_matrix(p, r)

    def tool0_pose(self, q: Sequence[float] | Vec) -> Pose:
        self._set(np.asarray(q, dtype=np.float64))
        return Pose.from_matrix(self.data.site_xpos[self._tool0], self.data.site_xmat[self._tool0].reshape(3, 3))

    def solve(
        self,
        position: Vec,
        rotation: Vec,
        seed: Sequence[float] | Vec,
        max_iterations: int = 200,
        max_step: float = 0.3,
    ) -> Vec | None:
        """Joint angles (rad) putting the TCP at `position` (m) with `rotation`, near `seed`; None if not found.

        Damped least squares with a damping that grows when the error stops shrinking (near singularities
        and outside the reach); steps are clamped to `max_step` rad and to the joint limits.
        """
        q = np.clip(np.asarray(seed, dtype=np.float64), self.lower, self.upper)
        damping = 1e-3
        prev_err = math.inf
        for _ in range(max_iterations):
            self._set(q)
            p = self.data.site_xpos[self._tcp]
            r = self.data.site_xmat[self._tcp].reshape(3, 3)
            e = np.concatenate([position - p, rotation_error(r, rotation)])
            ep, er = float(np.linalg.norm(e[:3])), float(np.linalg.norm(e[3:]))
            if ep < POSITION_TOLERANCE and er < ORIENTATION_TOLERANCE:
                return q
            err = ep + 0.1 * er
            damping = max(1e-4, damping * 0.5) if err < prev_err else min(1.0, damping * 4.0)
            prev_err = err
            mujoco.mj_comPos(self.model, self.data)
            mujoco.mj_jacSite(self.model, self.data, self._jacp, self._jacr, self._tcp)
            jac = np.vstack([self._jacp[:, self._dadr], self._jacr[:, self._dadr]])
            dq = jac.T @ np.linalg.solve(jac @ jac.T + damping**2 * np.eye(6), e)
            norm = float(np.max(np.abs(dq)))
            if norm > max_step:
                dq *= max_step / norm
            q = np.clip(q + dq, self.lower, self.upper)
        return None

    def solve_pose(self, pose: Pose, seeds: Sequence[Sequence[float] | Vec]) -> Vec | None:
        """IK for a Pose, trying each seed in turn; the solution closest to the first seed wins."""
        best: Vec | None = None
        for seed in seeds:
            q = self.solve(pose.translation(), pose.rotation(), seed)
            if q is not None and (best is None or np.linalg.norm(q - seeds[0]) < np.linalg.norm(best - seeds[0])):
                best = q
                break
        return best
