"""`monologue-calibrate --auto` against the running MuJoCo simulator (issue 31): the board on the table,
the wrist camera's mount perturbed by a known transform that /tf does not know; the command moves the arm
through arm/command, reads /tf at each image's stamp, and writes a file whose mount is the true one within
2 mm and 0.2 deg. One simulator process, one CLI run (~30 s)."""
from __future__ import annotations

import math
import os
import signal
import subprocess
from pathlib import Path

import pytest

from monologue_vision.calibration.handeye import transform_error
from monologue_vision.calibration.store import read_calibration
from monologue_vision.calibration.transforms import make_transform, quat_to_matrix

pytestmark = [pytest.mark.system, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[1]
OFFSET = (0.004, -0.006, 0.003, math.radians(1.5), math.radians(-1.0), math.radians(2.0))


def test_calibrate_auto_recovers_the_perturbed_sim_mount(ros_domain: int, tmp_path: Path) -> None:
    from monologue_bringup.up import package_prefix
    from tabletop_sim.core.model import wrist_camera_mount

    env = dict(os.environ, ROS_DOMAIN_ID=str(ros_domain), MUJOCO_GL=os.environ.get("MUJOCO_GL", "egl"))
    sim_log = (tmp_path / "sim.log").open("w")
    sim = subprocess.Popen(
        [str(package_prefix("tabletop_sim") / "lib" / "tabletop_sim" / "tabletop_sim"), "--ros-args", "-r", "__node:=tabletop_sim",
         "--params-file", str(REPO / "config" / "monologue.yaml"),
         "--params-file", str(REPO / "config" / "robots" / "sim.yaml"),
         "-p", "sim.calibration_board:=true", "-p", f"camera.mount_offset:={list(OFFSET)}",
         "-p", "sim.num_blocks:=0", "-p", "sim.num_bowls:=0", "-p", "sim.seed:=3",
         "-p", "camera.rate:=10.0", "-p", "real_time_factor:=10.0"],
        env=env, stdout=sim_log, stderr=subprocess.STDOUT, start_new_session=True)
    out = tmp_path / "calibration" / "sim.yaml"
    try:
        run = subprocess.run(
            ["monologue-calibrate", "robot:=sim", "--auto", "poses:=12", f"out:={out}", "timeout:=60"],
            env=env, capture_output=True, text=True, timeout=240)
    finally:
        os.killpg(sim.pid, signal.SIGINT)
        try:
            sim.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(sim.pid, signal.SIGKILL)
            sim.wait(timeout=10)
        sim_log.close()
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:] + (tmp_path / "sim.log").read_text()[-2000:]
    assert "residuals (board pose in the base frame across samples)" in run.stdout
    cal = read_calibration(out)
    assert cal.samples == 12 and cal.method == "tsai" and cal.residuals["translation_rms_mm"] < 1.0
    truth = make_transform(*reversed(wrist_camera_mount(OFFSET)))
    mm, deg = transform_error(make_transform(quat_to_matrix(cal.rotation), cal.translation), truth)
    assert mm < 2.0 and deg < 0.2, (mm, deg, run.stdout)
