"""The ChArUco calibration board: definition, printable image, detection and pose in the camera.

Board frame (OpenCV's): origin at the board's outer top-left corner as printed, x along the
`squares_x` direction, y along `squares_y` (down the printed image), z into the board. Lengths in m.
"""
from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from .transforms import Mat, make_transform

DICTIONARIES: dict[str, int] = {
    "DICT_4X4_50": cv2.aruco.DICT_4X4_50,
    "DICT_4X4_100": cv2.aruco.DICT_4X4_100,
    "DICT_5X5_50": cv2.aruco.DICT_5X5_50,
    "DICT_5X5_100": cv2.aruco.DICT_5X5_100,
    "DICT_6X6_50": cv2.aruco.DICT_6X6_50,
    "DICT_6X6_250": cv2.aruco.DICT_6X6_250,
}
MIN_CORNERS = 6  # ChArUco corners needed for a pose (solvePnP on fewer is unreliable)


@dataclass(frozen=True)
class BoardSpec:
    """A ChArUco board. The default fits an A4 sheet: 7 x 5 squares of 35 mm (245 x 175 mm)."""

    squares_x: int = 7
    squares_y: int = 5
    square_length: float = 0.035  # m, side of a chessboard square (measure it on the print)
    marker_length: float = 0.026  # m, side of an ArUco marker inside a white square
    dictionary: str = "DICT_4X4_50"

    def validate(self) -> None:
        problems = []
        if self.squares_x < 3 or self.squares_y < 3:
            problems.append(f"at least 3 x 3 squares (got {self.squares_x} x {self.squares_y})")
        if not 0.0 < self.marker_length < self.square_length:
            problems.append(f"0 < marker_length ({self.marker_length} m) < square_length ({self.square_length} m)")
        if self.dictionary not in DICTIONARIES:
            problems.append(f"dictionary {self.dictionary!r} is not one of {sorted(DICTIONARIES)}")
        if problems:
            raise ValueError("ChArUco board: " + "; ".join(problems))

    @property
    def size(self) -> tuple[float, float]:
        """Board extent (m) along x and y."""
        return self.squares_x * self.square_length, self.squares_y * self.square_length

    def cv_board(self) -> cv2.aruco.CharucoBoard:
        self.validate()
        dictionary = cv2.aruco.getPredefinedDictionary(DICTIONARIES[self.dictionary])
        return cv2.aruco.CharucoBoard((self.squares_x, self.squares_y), self.square_length, self.marker_length,
                                      dictionary)

    def image(self, px_per_square: int = 100, margin_px: int = 0) -> npt.NDArray[np.uint8]:
        """Printable greyscale image (H, W): the board exactly fills it when margin_px is 0."""
        w, h = self.squares_x * px_per_square, self.squares_y * px_per_square
        board = self.cv_board()
        try:
            img = np.asarray(board.generateImage((w, h), marginSize=0), dtype=np.uint8)
        except cv2.error:  # OpenCV 4.13 fails an ROI check at some sizes (60 px per square): draw at 2x, shrink
            big = np.asarray(board.generateImage((2 * w, 2 * h), marginSize=0), dtype=np.uint8)
            img = np.asarray(cv2.resize(big, (w, h), interpolation=cv2.INTER_AREA), dtype=np.uint8)
        return np.pad(img, margin_px, constant_values=255) if margin_px > 0 else img  # white margin


@dataclass(frozen=True)
class BoardObservation:
    """The board seen in one image."""

    camera_from_board: Mat  # 4x4: board frame in the camera's optical frame (m)
    corners: int  # ChArUco corners used
    reprojection_px: float  # RMS reprojection error of those corners (px)


class BoardDetector:
    """Detects the board in images of one camera (pinhole intrinsics K, OpenCV distortion coefficients)."""

    def __init__(self, spec: BoardSpec, camera_matrix: Mat, distortion: npt.ArrayLike | None = None) -> None:
        self.spec = spec
        self.board = spec.cv_board()
        self.detector = cv2.aruco.CharucoDetector(self.board)
        self.camera_matrix = np.asarray(camera_matrix, dtype=np.float64).reshape(3, 3)
        self.distortion = (np.zeros(5) if distortion is None
                           else np.asarray(distortion, dtype=np.float64).ravel())

    def detect(self, image: npt.NDArray[np.uint8]) -> BoardObservation | None:
        """The board's pose from an RGB (H, W, 3) or grey (H, W) image; None when fewer than MIN_CORNERS
        ChArUco corners are found."""
        grey = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY) if image.ndim == 3 else image
        corners, ids, _, _ = self.detector.detectBoard(grey)
        if corners is None or ids is None or len(ids) < MIN_CORNERS:
            return None
        obj, img = self.board.matchImagePoints(corners, ids)  # type: ignore[call-overload]  # stubs want a list
        if obj is None or len(obj) < MIN_CORNERS:
            return None
        ok, rvec, tvec = cv2.solvePnP(obj, img, self.camera_matrix, self.distortion, flags=cv2.SOLVEPNP_IPPE)
        if not ok:
            return None
        rvec, tvec = cv2.solvePnPRefineLM(obj, img, self.camera_matrix, self.distortion, rvec, tvec)
        projected, _ = cv2.projectPoints(obj, rvec, tvec, self.camera_matrix, self.distortion)
        err = float(np.sqrt(np.mean(np.sum((projected.reshape(-1, 2) - img.reshape(-1, 2)) ** 2, axis=1))))
        rot, _ = cv2.Rodrigues(rvec)
        t = np.asarray(tvec, dtype=np.float64).ravel()
        return BoardObservation(make_transform(np.asarray(rot, dtype=np.float64), t), len(obj), err)
