"""`monologue-calibrate`: eye-in-hand calibration of the wrist camera with a ChArUco board (issue 31).

    monologue-calibrate robot:=ur5e|spot_realsense|sim [--auto] [method:=tsai] [poses:=16] [distance:=0.35]
                        [out:=<file>] [tcp_offset:=<m>] [timeout:=30] [tool_frame:=tool0]
                        [base_frame:=base|base_link] [--list-methods]

tool_frame is the link the camera is mounted on (UR5e: tool0; Spot's arm: hand), base_frame its parent
on /tf, which must not move while the arm does (UR5e: base or base_link; Spot: body, standing still).

With the graph (or just the camera and the arm's /tf) running: finds the board in the camera image, plans
`poses` flange poses around it (rotation about three axes, monologue_vision.calibration.poses), and for each
one prints the target and waits for Enter while you jog the arm there (or, with --auto, moves the arm
through the graph's `arm/command` action: the MuJoCo simulator, a UR5e driver node). At each pose it takes
the next image captured after the arm stopped, the flange pose base -> tool0 from /tf at that image's
stamp, and the board's pose in the image. It refuses a degenerate pose set, solves with
cv2.calibrateHandEye (method), prints the residuals, and writes the calibration file that the bring-up
loads (default ~/.ros/monologue/calibration/<robot>.yaml; monologue_vision.calibration.store).

Topics: camera/color/image_raw, camera/color/camera_info (the robot's camera node), /tf, /tf_static.
"""
from __future__ import annotations

import datetime as dt
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sensor_msgs.msg import CameraInfo, Image

from monologue_vision.calibration.board import BoardDetector, BoardObservation, BoardSpec
from monologue_vision.calibration.handeye import METHODS, HandEyeResult, Sample, solve
from monologue_vision.calibration.poses import DegeneratePoseSet, check_pose_set, describe_pose, plan_poses
from monologue_vision.calibration.store import Calibration, default_calibration_path, write_calibration
from monologue_vision.calibration.transforms import Mat, make_transform, matrix_to_quat, quat_to_matrix

BASE_FRAMES = ("base", "base_link")  # the flange's parent on /tf (the UR controller's base, or the sim's)
OPTICAL_FRAME = "camera_color_optical_frame"
SETTLE_S = 0.3  # s after a motion before an image counts (the arm at rest)
BOARD_SEARCH_S = 10.0  # s: how long the first look for the board goes on over fresh frames
TF_HISTORY = 2000  # flange transforms kept for lookups at an image's stamp


@dataclass
class Args:
    robot: str = "ur5e"
    auto: bool = False
    method: str = "tsai"
    poses: int = 16
    distance: float = 0.35  # m, camera to board centre
    out: str = ""  # "" = default_calibration_path(robot)
    tcp_offset: float = -1.0  # m along tool0 z to the TCP that arm/command moves; < 0 = /tf_static tool0->tcp or 0
    timeout: float = 30.0  # s, for each wait (camera, motion)
    tool_frame: str = "tool0"  # the link the camera is mounted on
    base_frames: tuple[str, ...] = BASE_FRAMES  # its parent on /tf (fixed while the arm moves)


# The `key:=value` arguments and their defaults (strings, as on the command line).
DEFAULTS: dict[str, str] = {
    "robot": "ur5e", "auto": "false", "method": "tsai", "poses": "16", "distance": "0.35", "out": "",
    "tcp_offset": "-1", "timeout": "30", "tool_frame": "tool0", "base_frame": "",
}


def parse_args(argv: Sequence[str]) -> Args:
    """`key:=value` items (DEFAULTS) and --auto; ValueError naming a bad item."""
    from .graph import parse_launch_args

    v, rest = parse_launch_args(argv, DEFAULTS)
    unknown = [r for r in rest if r != "--auto"]
    if unknown:
        raise ValueError(f"unknown argument(s) {unknown} (use key:=value or --auto; keys {sorted(DEFAULTS)})")
    if v["method"] not in METHODS:
        raise ValueError(f"method:={v['method']} is not one of {sorted(METHODS)}")
    a = Args(robot=v["robot"], auto="--auto" in rest or v["auto"].lower() in ("1", "true", "yes"),
             method=v["method"], poses=int(v["poses"]), distance=float(v["distance"]), out=v["out"],
             tcp_offset=float(v["tcp_offset"]), timeout=float(v["timeout"]), tool_frame=v["tool_frame"] or "tool0",
             base_frames=(v["base_frame"],) if v["base_frame"] else BASE_FRAMES)
    if not 3 <= a.poses <= 60 or not 0.1 <= a.distance <= 1.5 or a.timeout <= 0.0:
        raise ValueError("poses:= 3..60, distance:= 0.1..1.5 m, timeout:= > 0 s")
    return a


def calibration_from(result: HandEyeResult, robot: str, now: dt.datetime | None = None,
                     tool_frame: str = "tool0") -> Calibration:
    x = result.tool_from_camera
    return Calibration(
        robot=robot, parent_frame=tool_frame, translation=(float(x[0, 3]), float(x[1, 3]), float(x[2, 3])),
        rotation=matrix_to_quat(x[:3, :3]), date=now or dt.datetime.now(dt.UTC), method=result.method,
        samples=result.samples,
        residuals={"translation_rms_mm": result.translation_rms_mm, "translation_max_mm": result.translation_max_mm,
                   "rotation_rms_deg": result.rotation_rms_deg, "rotation_max_deg": result.rotation_max_deg})


def report(result: HandEyeResult) -> str:
    x = result.tool_from_camera
    q = matrix_to_quat(x[:3, :3])
    return (f"{result.method}, {result.samples} samples: mount -> {OPTICAL_FRAME} translation "
            f"[{x[0, 3]:.4f}, {x[1, 3]:.4f}, {x[2, 3]:.4f}] m, rotation [{q[0]:.5f}, {q[1]:.5f}, {q[2]:.5f}, "
            f"{q[3]:.5f}]\nresiduals (board pose in the base frame across samples): translation "
            f"{result.translation_rms_mm:.2f} mm RMS / {result.translation_max_mm:.2f} mm max, rotation "
            f"{result.rotation_rms_deg:.3f} deg RMS / {result.rotation_max_deg:.3f} deg max")


def _interpolate(history: Sequence[tuple[float, Mat]], t: float, tolerance: float = 0.1) -> Mat | None:
    """The flange pose at stamp t (s) from stamped poses: exact, or interpolated between two neighbours
    (translation linear, rotation by projecting the blend); None when t is not covered within tolerance s."""
    if not history:
        return None
    stamps = [s for s, _ in history]
    i = int(np.searchsorted(stamps, t))
    if i < len(stamps) and abs(stamps[i] - t) < 1e-6:
        return history[i][1]
    if 0 < i < len(stamps):
        (t0, a), (t1, b) = history[i - 1], history[i]
        u = (t - t0) / (t1 - t0) if t1 > t0 else 0.0
        r = (1 - u) * a[:3, :3] + u * b[:3, :3]
        uu, _, vt = np.linalg.svd(r)
        return make_transform(uu @ vt, (1 - u) * a[:3, 3] + u * b[:3, 3])
    nearest = history[0] if i == 0 else history[-1]
    return nearest[1] if abs(nearest[0] - t) <= tolerance else None


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if "--list-methods" in args_list:
        print("\n".join(sorted(METHODS)))
        return 0
    if "-h" in args_list or "--help" in args_list:
        print(__doc__)
        return 0
    try:
        args = parse_args(args_list)
        out = Path(args.out).expanduser() if args.out else default_calibration_path(args.robot)
    except ValueError as e:
        print(f"monologue-calibrate: {e}", file=sys.stderr)
        return 2
    import rclpy

    rclpy.init(args=None)
    try:
        session = _Session(args)
        try:
            return session.run(out)
        finally:
            session.node.destroy_node()
    except (RuntimeError, ValueError) as e:
        print(f"monologue-calibrate: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("monologue-calibrate: interrupted; nothing written", file=sys.stderr)
        return 130
    finally:
        from rclpy.utilities import ok

        if ok():
            rclpy.shutdown()


class _Session:
    """The ROS side: camera, /tf, and the arm action for --auto."""

    def __init__(self, args: Args) -> None:
        from rclpy.node import Node
        from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
        from tf2_msgs.msg import TFMessage

        self.args = args
        self.node = Node("monologue_calibrate")
        self.image: Image | None = None
        self.info: CameraInfo | None = None
        self.flange: list[tuple[float, Mat]] = []  # (stamp s, base <- tool0)
        self.static: dict[tuple[str, str], Mat] = {}
        qos = QoSProfile(depth=2, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT)
        static_qos = QoSProfile(depth=100, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                                durability=DurabilityPolicy.TRANSIENT_LOCAL)
        tf_qos = QoSProfile(depth=100, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
        self.node.create_subscription(Image, "camera/color/image_raw", self._on_image, qos)
        self.node.create_subscription(CameraInfo, "camera/color/camera_info", self._on_info, qos)
        self.node.create_subscription(TFMessage, "/tf", self._on_tf, tf_qos)
        self.node.create_subscription(TFMessage, "/tf_static", self._on_static, static_qos)
        self.arm = None
        if args.auto:
            from monologue_common.actions import ActionClient
            from monologue_interfaces.action import ArmCommand

            self.arm = ActionClient(self.node, ArmCommand, "arm/command")

    # ----- callbacks ---------------------------------------------------------------------------------
    def _on_image(self, msg: Image) -> None:
        self.image = msg

    def _on_info(self, msg: CameraInfo) -> None:
        self.info = msg

    @staticmethod
    def _matrix(t: object) -> Mat:
        tr = t.transform  # type: ignore[attr-defined]
        q = (tr.rotation.x, tr.rotation.y, tr.rotation.z, tr.rotation.w)
        return make_transform(quat_to_matrix(q), (tr.translation.x, tr.translation.y, tr.translation.z))

    def _on_tf(self, msg: object) -> None:
        for t in msg.transforms:  # type: ignore[attr-defined]
            if (t.child_frame_id.lstrip("/") == self.args.tool_frame
                    and t.header.frame_id.lstrip("/") in self.args.base_frames):
                stamp = t.header.stamp.sec + 1e-9 * t.header.stamp.nanosec
                if self.flange and stamp < self.flange[-1][0]:
                    continue  # out of order: drop (a lookup needs sorted stamps)
                self.flange.append((stamp, self._matrix(t)))
                del self.flange[:-TF_HISTORY]

    def _on_static(self, msg: object) -> None:
        for t in msg.transforms:  # type: ignore[attr-defined]
            self.static[(t.header.frame_id.lstrip("/"), t.child_frame_id.lstrip("/"))] = self._matrix(t)

    # ----- waiting ----------------------------------------------------------------------------------
    def _spin_until(self, done: Callable[[], bool], what: str, timeout: float | None = None) -> None:
        import rclpy

        deadline = time.monotonic() + (timeout or self.args.timeout)
        while not done():
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out after {timeout or self.args.timeout:g} s waiting for {what}")
            rclpy.spin_once(self.node, timeout_sec=0.05)

    def nominal_mount(self) -> Mat:
        """tool frame -> optical frame from /tf_static (through camera_link when published that way)."""
        tool = self.args.tool_frame
        direct = self.static.get((tool, OPTICAL_FRAME))
        if direct is not None:
            return direct
        for (parent, child), m in self.static.items():
            if parent == tool and (child, OPTICAL_FRAME) in self.static:
                return m @ self.static[(child, OPTICAL_FRAME)]
        raise RuntimeError(f"no {tool} -> {OPTICAL_FRAME} on /tf_static (is the robot's graph running?)")

    def capture(self, after: float) -> tuple[BoardObservation | None, Mat | None, float]:
        """The first image stamped after `after` (s, ROS time): (board seen or None, base <- tool0 at its stamp)."""
        def fresh() -> bool:
            return self.image is not None and _stamp(self.image) > after
        self._spin_until(fresh, "a camera image (camera/color/image_raw)")
        image = self.image
        assert image is not None
        stamp = _stamp(image)
        self._spin_until(lambda: bool(self.flange) and self.flange[-1][0] >= stamp - 1e-6,
                         f"/tf {self.args.tool_frame} at the image's stamp", timeout=5.0)
        from monologue_vision.images import decode_color

        rgb = decode_color(bytes(image.data), image.width, image.height, image.encoding, image.step)
        return self.detector.detect(np.asarray(rgb, dtype=np.uint8)), _interpolate(self.flange, stamp), stamp

    def move(self, tool: Mat, tcp_offset: float) -> None:
        from geometry_msgs.msg import Point, Pose, Quaternion

        from monologue_interfaces.action import ArmCommand

        assert self.arm is not None
        tcp = tool @ make_transform(np.eye(3), (0.0, 0.0, tcp_offset))
        q = matrix_to_quat(tcp[:3, :3])
        goal = ArmCommand.Goal(command=ArmCommand.Goal.MOVE_LINEAR, speed=0.2, acceleration=0.5,
                               pose=Pose(position=Point(x=float(tcp[0, 3]), y=float(tcp[1, 3]), z=float(tcp[2, 3])),
                                         orientation=Quaternion(x=q[0], y=q[1], z=q[2], w=q[3])))
        if not self.arm.wait_for_server(timeout_sec=self.args.timeout):
            raise RuntimeError("no arm/command action server (--auto needs the simulator or a UR5e driver node)")
        sent = self.arm.send_goal_async(goal)
        self._spin_until(sent.done, "arm/command to accept the goal")
        handle = sent.result()
        if handle is None or not handle.accepted:
            raise RuntimeError("arm/command refused the goal")
        done = handle.get_result_async()
        self._spin_until(done.done, "the arm to reach the pose", timeout=self.args.timeout + 30.0)
        result = done.result().result
        if result.error_code != ArmCommand.Result.ERROR_NONE:
            raise RuntimeError(f"arm/command failed: {result.message}")

    # ----- the procedure ----------------------------------------------------------------------------
    def run(self, out: Path) -> int:
        a = self.args
        self._spin_until(lambda: self.info is not None, "camera/color/camera_info")
        assert self.info is not None
        k = np.asarray(self.info.k, dtype=np.float64).reshape(3, 3)
        dist = np.asarray(self.info.d, dtype=np.float64) if len(self.info.d) else None
        self.spec = BoardSpec()
        self.detector = BoardDetector(self.spec, k, dist)
        self._spin_until(lambda: bool(self.static) and self._has_mount(),
                         f"/tf_static {a.tool_frame} -> {OPTICAL_FRAME}")
        nominal = self.nominal_mount()
        # the first frames of a camera that just started can show nothing yet (a simulator's first render, an
        # exposure settling): look at fresh frames for up to BOARD_SEARCH_S before giving up
        deadline, stamp = time.monotonic() + BOARD_SEARCH_S, -1.0
        seen, flange, stamp = self.capture(after=stamp)
        while (seen is None or flange is None) and time.monotonic() < deadline:
            seen, flange, stamp = self.capture(after=stamp)
        if seen is None or flange is None:
            raise RuntimeError(f"the ChArUco board is not in view (looked for {BOARD_SEARCH_S:g} s): place it under "
                               "the camera (docs/ur5e.md)")
        sx, sy = self.spec.size
        center = (flange @ nominal @ seen.camera_from_board @ np.array([sx / 2, sy / 2, 0.0, 1.0]))[:3]
        normal = -(flange @ nominal @ seen.camera_from_board)[:3, 2]  # board z points into the board
        tcp_offset = a.tcp_offset if a.tcp_offset >= 0.0 else float(
            self.static.get((a.tool_frame, "tcp"), np.eye(4))[2, 3])
        plan = plan_poses(center, nominal, count=a.poses, distance=a.distance, board_normal=normal)
        print(f"board at [{center[0]:.3f}, {center[1]:.3f}, {center[2]:.3f}] m; {len(plan)} poses planned "
              f"({'moving the arm' if a.auto else 'jog the arm to each, then press Enter'})", flush=True)
        samples: list[Sample] = []
        for i, tool in enumerate(plan, start=1):
            print(f"pose {i}/{len(plan)}: {a.tool_frame} in {'/'.join(a.base_frames)}: {describe_pose(tool)}",
                  flush=True)
            if a.auto:
                self.move(tool, tcp_offset)
            else:
                input("  at the pose? Enter to capture (Ctrl-C aborts) ")
            time.sleep(SETTLE_S)
            now = self.node.get_clock().now().nanoseconds * 1e-9
            seen, flange, _ = self.capture(after=now)
            if seen is None or flange is None:
                print("  board not seen (or no /tf at the image's stamp): skipped", flush=True)
                continue
            samples.append(Sample(flange, seen.camera_from_board))
            print(f"  {seen.corners} corners, reprojection {seen.reprojection_px:.2f} px", flush=True)
        pose_report = check_pose_set([s.base_from_tool for s in samples])
        if not pose_report.ok:
            raise DegeneratePoseSet("refused, nothing written: " + "; ".join(pose_report.problems))
        result = solve(samples, a.method)
        print(report(result), flush=True)
        path = write_calibration(out, calibration_from(result, a.robot, tool_frame=a.tool_frame))
        print(f"wrote {path} (the bring-up loads it at the next start)", flush=True)
        return 0

    def _has_mount(self) -> bool:
        try:
            self.nominal_mount()
            return True
        except RuntimeError:
            return False


def _stamp(msg: object) -> float:
    s = msg.header.stamp  # type: ignore[attr-defined]
    return float(s.sec) + 1e-9 * float(s.nanosec)


if __name__ == "__main__":
    raise SystemExit(main())
