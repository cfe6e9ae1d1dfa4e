"""Eye-in-hand (hand-eye) calibration of a wrist camera with a ChArUco board (ROS-free).

* :mod:`.board`: the board (squares, marker size in m, ArUco dictionary), its printable image, detection and
  the board's pose in the camera (solvePnP on the interpolated ChArUco corners);
* :mod:`.poses`: planning 15-20 arm poses that vary the rotation, and refusing degenerate pose sets;
* :mod:`.handeye`: ``cv2.calibrateHandEye`` with a method choice and the residuals;
* :mod:`.store`: the per-robot calibration file (transform, date, method, residuals, sample count),
  its default path and ``calibration_status`` for the preflight check.

OpenCV (``cv2``) is imported by :mod:`.board` and :mod:`.handeye` only: :mod:`.store` (what the bring-up
loads) and :mod:`.poses` need numpy and PyYAML alone.
"""
from __future__ import annotations
