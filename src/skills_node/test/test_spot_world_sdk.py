"""SpotRobot's odometry, camera and arm API (robots/spot/core/robot.py) on the real bosdyn-client against FakeSpot hosting a
kitchen (testing/fake_spot_world.py): body pose and odom walks (with recovery after an interrupted walk), hand
images an oracle can use, ManipulationApi grasps (and how they fail), put down, drawers, and faults mid-grasp /
mid-arm-motion (lease taken, e-stop, cancel): every one ends with a clear error, never a hang."""
from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable

import numpy as np
import pytest
from bosdyn.api import manipulation_api_pb2  # type: ignore[import-untyped, unused-ignore]

from monologue_domain.kitchen.state import HELD
from monologue_domain.kitchen.world import DEFAULT_PLACEMENTS, make_state
from skills_node.core.arm import ArmFault, FaultKind, MotionInterrupted, MotionRefused, Refusal
from skills_node.robots.spot.core.robot import (
    GraspFailed,
    SpotCredentials,
    SpotFault,
    SpotFaultCause,
    SpotImage,
    SpotRobot,
    SpotSettings,
)
from skills_node.robots.spot.testing.fake_spot import COLOR_SOURCE, DEPTH_SOURCE, FakeSpot
from skills_node.robots.spot.testing.fake_spot_world import STAND_POSES, FakeKitchen, color_of

LOG = logging.getLogger("test.spot.world")
USER, PASSWORD = "operator", "s3cret-Spot-passw0rd"
W, H, F = 320, 240, 276.0  # px
ARM_S = 5.0  # s, timeout of arm / gripper / grasp commands in these tests


def settings_for(fake: FakeSpot, **overrides: object) -> SpotSettings:
    values: dict[str, object] = dict(
        hostname="127.0.0.1", port=fake.port, client_name="monologue-test", ca_cert_path=str(fake.ca_cert_path),
        rpc_timeout_s=1.0, connect_timeout_s=5.0, command_timeout_s=5.0, feedback_period_s=0.02,
        take_lease=False, lease_check_period_s=0.2, estop_timeout_s=3.0, max_linear_velocity=0.5,
        max_angular_velocity=0.8, max_arm_reach=1.0,
    )
    values.update(overrides)
    return SpotSettings(**values)  # type: ignore[arg-type]


Make = Callable[..., tuple[SpotRobot, FakeSpot, FakeKitchen]]


@pytest.fixture
def make(standing_spot: Callable[..., SpotRobot]) -> Make:
    """make(time_scale=0.05, world=None) -> a standing SpotRobot connected to a FakeSpot hosting a kitchen."""
    def _make(time_scale: float = 0.05, world: FakeKitchen | None = None) -> tuple[SpotRobot, FakeSpot, FakeKitchen]:
        kitchen = world or FakeKitchen()
        fake = FakeSpot(username=USER, password=PASSWORD, world=kitchen, time_scale=time_scale, image_size=(W, H),
                        focal_length_px=F).start()
        return standing_spot(fake, settings_for(fake), SpotCredentials(USER, PASSWORD)), fake, kitchen

    return _make


@pytest.fixture
def spot(make: Make) -> tuple[SpotRobot, FakeSpot, FakeKitchen]:
    return make()


def project(image: SpotImage, p: tuple[float, float, float]) -> tuple[float, float]:
    """Pixel of the odom point `p` in `image` (pinhole, optical frame)."""
    (tx, ty, tz), (qx, qy, qz, qw) = image.odom_from_sensor
    r = np.array([[1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)],
                  [2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)],
                  [2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)]])
    c = r.T @ (np.asarray(p) - np.array([tx, ty, tz]))
    assert c[2] > 0
    return (image.fx * c[0] / c[2] + image.cx, image.fy * c[1] / c[2] + image.cy)


def at_far_counter() -> FakeKitchen:
    return FakeKitchen(make_state(DEFAULT_PLACEMENTS, robot_location="far counter"))


def walk_to(robot: SpotRobot, location: str) -> None:
    robot.go_to_odom(*STAND_POSES[location], timeout_s=20.0)


def pick(robot: SpotRobot, world: FakeKitchen, obj: str) -> SpotImage:
    image = robot.get_images([COLOR_SOURCE])[0]
    robot.pick_in_image(image, project(image, world.position_of(obj)), timeout_s=ARM_S)
    return image


def carry(robot: SpotRobot, world: FakeKitchen, obj: str, start: str, to: str) -> None:
    """Walk to `start`, pick `obj` there, hold it in the carry pose and walk to `to`."""
    walk_to(robot, start)
    pick(robot, world, obj)
    robot.arm_carry(timeout_s=ARM_S)
    walk_to(robot, to)


# ---- odometry ------------------------------------------------------------------------------------

def test_body_pose_and_go_to_odom_walk_the_kitchen(spot: tuple[SpotRobot, FakeSpot, FakeKitchen]) -> None:
    robot, fake, world = spot
    assert robot.body_pose() == pytest.approx((0.0, 0.0, 0.0))
    walk_to(robot, "far counter")
    assert robot.body_pose() == pytest.approx(STAND_POSES["far counter"], abs=1e-6)
    assert fake.body_pose == pytest.approx(STAND_POSES["far counter"], abs=1e-6)
    kind, request = fake.commands()[-1]
    traj = request.command.synchronized_command.mobility_command.se2_trajectory_request
    assert kind == "trajectory" and traj.se2_frame_name == "odom"
    assert world.state().robot_location == "far counter"
    walk_to(robot, "table")
    assert world.state().robot_location == "table"
    assert world.state().visited == {"initial position", "far counter", "table"}


def test_walk_takes_distance_over_speed_scaled(make: Make) -> None:
    robot, _, _ = make(time_scale=0.1)
    t0 = time.monotonic()
    robot.go_to_odom(2.0, 0.0, 0.0, timeout_s=10.0)  # 2 m at 0.5 m/s (the mobility limit): 4 s * 0.1
    elapsed = time.monotonic() - t0
    assert 0.35 < elapsed < 1.5


def test_interrupted_walk_recovers_from_odometry(make: Make) -> None:
    robot, fake, world = make(time_scale=0.2)
    cancel = threading.Event()
    fake.when("RobotCommandFeedback", cancel.set, after=fake.calls.count("RobotCommandFeedback") + 5)
    with pytest.raises(MotionInterrupted):
        robot.go_to_odom(*STAND_POSES["far counter"], timeout_s=20.0, cancel=cancel)
    assert fake.commands()[-1][0] == "stop"
    x, y, _ = robot.body_pose()
    goal = STAND_POSES["far counter"]
    assert 0.05 < math.dist((x, y), goal[:2]) < math.dist((0.0, 0.0), goal[:2]) - 0.05  # somewhere on the way
    assert (x, y) == pytest.approx(fake.body_pose[:2], abs=1e-6)  # and it stays there
    robot.go_to_odom(*goal, timeout_s=20.0)  # the same odom target still means the same place: no restart
    assert robot.body_pose() == pytest.approx(goal, abs=1e-6)
    assert world.state().robot_location == "far counter"


# ---- images --------------------------------------------------------------------------------------

def test_hand_images_show_the_objects_where_the_ground_truth_is(spot: tuple[SpotRobot, FakeSpot, FakeKitchen]) -> None:
    robot, fake, world = spot
    walk_to(robot, "far counter")
    before = time.time()
    color, depth = robot.get_images([COLOR_SOURCE, DEPTH_SOURCE])
    assert fake.calls.count("GetImage") == 1  # both in one request
    assert (color.source, color.encoding, color.width, color.height) == (COLOR_SOURCE, "rgb8", W, H)
    assert (depth.source, depth.encoding, depth.depth_scale) == (DEPTH_SOURCE, "16UC1", 1000.0)
    assert len(color.data) == W * H * 3 and len(depth.data) == W * H * 2
    assert (color.fx, color.fy, color.cx, color.cy) == (F, F, W / 2, H / 2)
    assert color.frame_name == "hand_color_image_sensor"
    assert before - 1.0 < color.stamp_s < time.time() + 0.1
    (bx, by, _), _ = color.odom_from_body
    assert (bx, by) == pytest.approx(STAND_POSES["far counter"][:2])
    assert color.odom_from_sensor == depth.odom_from_sensor
    rgb = np.frombuffer(color.data, np.uint8).reshape(H, W, 3)
    mm = np.frombuffer(depth.data, "<u2").reshape(H, W)
    truth = {o.name: o for o in world.ground_truth()}
    for name in world.objects_at("far counter"):
        u, v = (int(round(c)) for c in project(color, truth[name].position))
        assert tuple(rgb[v, u]) == color_of(name), name
        assert 0.3 < mm[v, u] / 1000.0 < 1.5, name  # m: the can is within reach in front of the camera
    assert color.response.shot.transforms_snapshot.child_to_parent_edge_map  # raw response kept for grasps


def test_jpeg_colour_images_are_decoded(spot: tuple[SpotRobot, FakeSpot, FakeKitchen]) -> None:
    robot, fake, world = spot
    walk_to(robot, "close counter")
    raw = robot.get_images([COLOR_SOURCE])[0]
    fake.raw_color = False
    jpeg = robot.get_images([COLOR_SOURCE])[0]
    assert jpeg.response.shot.image.format == 1  # Image.FORMAT_JPEG
    assert (jpeg.encoding, jpeg.width, jpeg.height, len(jpeg.data)) == ("rgb8", W, H, W * H * 3)
    a = np.frombuffer(raw.data, np.uint8).astype(int)
    b = np.frombuffer(jpeg.data, np.uint8).astype(int)
    assert np.mean(np.abs(a - b)) < 6.0  # lossy, but the same picture


def test_unknown_image_source_is_a_clear_error(spot: tuple[SpotRobot, FakeSpot, FakeKitchen]) -> None:
    robot, _, _ = spot
    with pytest.raises(SpotFault) as err:
        robot.get_images(["frontleft_fisheye_image"])
    assert err.value.cause == SpotFaultCause.COMMAND_FAILED
    assert "UnknownImageSource" in str(err.value)


# ---- grasps --------------------------------------------------------------------------------------

def test_pick_in_image_grasps_the_object_at_the_pixel(spot: tuple[SpotRobot, FakeSpot, FakeKitchen]) -> None:
    robot, fake, world = spot
    walk_to(robot, "far counter")
    assert not robot.holding() and not robot.status().holding
    n = len(fake.calls)
    image = pick(robot, world, "pepsi")
    assert robot.holding() and robot.status().holding and fake.holding
    assert "holding an item" in robot.status().describe()
    assert world.state().holding == "pepsi" and world.state().object_locations["pepsi"] == HELD
    grasp_calls = [c for c in fake.calls[n:] if c.startswith("Manipulation")]
    assert grasp_calls[0] == "ManipulationApi" and set(grasp_calls[1:]) == {"ManipulationApiFeedback"}
    request = next(c for c in fake._s.commands.values() if c.kind == "grasp").request
    sent = request.pick_object_in_image
    assert sent.frame_name_image_sensor == "hand_color_image_sensor"
    assert sent.transforms_snapshot_for_camera == image.response.shot.transforms_snapshot
    assert sent.camera_model.intrinsics.focal_length.x == F
    assert request.lease.sequence  # the lease wallet's lease went along


@pytest.mark.parametrize(("aim", "state"), [
    ("counter", "MANIP_STATE_GRASP_PLANNING_NO_SOLUTION"),  # the surface: nothing graspable there
    ("sky", "MANIP_STATE_GRASP_FAILED_TO_RAYCAST_INTO_MAP"),
    ("injected", "MANIP_STATE_GRASP_FAILED"),
])
def test_failed_grasp_is_grasp_failed_not_a_fault(spot: tuple[SpotRobot, FakeSpot, FakeKitchen], aim: str,
                                                  state: str) -> None:
    robot, fake, world = spot
    if aim == "sky":  # at the start, nothing ahead: the hand looking straight ahead sees sky above the horizon
        robot.arm_reach(0.6, 0.0, 0.3, timeout_s=ARM_S)
    else:
        walk_to(robot, "far counter")
    image = robot.get_images([COLOR_SOURCE])[0]
    pixel = {"counter": (W / 2, H - 5.0), "sky": (W / 2, 1.0)}.get(aim) or project(image, world.position_of("coke"))
    if aim == "injected":
        fake.fail_next_grasp(manipulation_api_pb2.MANIP_STATE_GRASP_FAILED)
    with pytest.raises(GraspFailed) as err:
        robot.pick_in_image(image, pixel, timeout_s=ARM_S)
    assert err.value.state == state
    assert not isinstance(err.value, ArmFault)
    assert not robot.holding() and robot.status().ok  # the robot is fine
    assert world.state().holding is None


def test_pick_outside_the_image_is_refused(spot: tuple[SpotRobot, FakeSpot, FakeKitchen]) -> None:
    robot, fake, _ = spot
    image = robot.get_images([COLOR_SOURCE])[0]
    with pytest.raises(MotionRefused) as err:
        robot.pick_in_image(image, (W + 10.0, 5.0), timeout_s=ARM_S)
    assert err.value.refusal == Refusal.INVALID_TARGET
    assert "ManipulationApi" not in fake.calls


# ---- arm, put down, drawers ----------------------------------------------------------------------

def test_pick_carry_put_down_on_another_surface(spot: tuple[SpotRobot, FakeSpot, FakeKitchen]) -> None:
    robot, fake, world = spot
    carry(robot, world, "coke", "far counter", "table")
    assert world.state().holding == "coke"
    robot.arm_reach(0.75, 0.0, 0.33, timeout_s=ARM_S)  # above the table (0.75 m high; body at 0.52 m)
    robot.gripper_open(timeout_s=ARM_S)
    robot.arm_stow(timeout_s=ARM_S)
    state = world.state()
    assert state.holding is None and state.object_locations["coke"] == "table"
    assert not robot.holding()
    x, y, z = world.position_of("coke")
    assert (x, y, z) == pytest.approx((2.5, -1.75, 0.81))  # 0.75 m ahead of the table's stand pose, on the top
    kinds = [k for k, _ in fake.commands()]
    assert kinds[-4:] == ["trajectory", "arm_pose", "gripper_open", "stow"]
    _, reach = fake.commands()[-3]
    cart = reach.command.synchronized_command.arm_command.arm_cartesian_command
    assert cart.root_frame_name == "body"
    p = cart.pose_trajectory_in_task.points[-1].pose
    assert (p.position.x, p.position.y, p.position.z, p.rotation.w) == pytest.approx((0.75, 0.0, 0.33, 1.0))
    # the image shows it there now
    image = robot.get_images([COLOR_SOURCE])[0]
    u, v = (int(round(c)) for c in project(image, world.position_of("coke")))
    assert tuple(np.frombuffer(image.data, np.uint8).reshape(H, W, 3)[v, u]) == color_of("coke")


def test_put_down_on_the_floor_at_the_user(spot: tuple[SpotRobot, FakeSpot, FakeKitchen]) -> None:
    robot, _, world = spot
    carry(robot, world, "apple", "close counter", "user")
    robot.arm_reach(0.75, 0.0, -0.3, timeout_s=ARM_S)
    robot.gripper_open(timeout_s=ARM_S)
    assert world.state().object_locations["apple"] == "user"
    assert world.position_of("apple")[2] == pytest.approx(0.06)


def test_arm_reach_beyond_the_limit_is_refused_before_sending(spot: tuple[SpotRobot, FakeSpot, FakeKitchen]) -> None:
    robot, fake, _ = spot
    before = len(fake.commands())
    for target in ((1.1, 0.0, 0.0), (0.8, 0.5, 0.5), (math.nan, 0.0, 0.0)):
        with pytest.raises(MotionRefused) as err:
            robot.arm_reach(*target, timeout_s=ARM_S)
        assert err.value.refusal == Refusal.INVALID_TARGET
    assert "reach limit 1.00 m" in str(err.value) or "not finite" in str(err.value)
    assert len(fake.commands()) == before


def test_open_drawer_put_in_close(spot: tuple[SpotRobot, FakeSpot, FakeKitchen]) -> None:
    robot, fake, world = spot
    carry(robot, world, "sponge", "close counter", "drawers")
    # the drawer cannot be opened with a full hand: put the sponge on the cabinet first
    robot.arm_reach(0.9, 0.0, 0.2, timeout_s=ARM_S)
    robot.gripper_open(timeout_s=ARM_S)
    robot.arm_stow(timeout_s=ARM_S)
    assert world.state().object_locations["sponge"] == "drawers"
    handle = world.handle_box("top drawer").center
    image = robot.get_images([COLOR_SOURCE])[0]
    robot.pick_in_image(image, project(image, handle), timeout_s=ARM_S)
    assert robot.holding() and world.state().holding is None  # a handle, not an object
    hx, hy, hz, _ = fake.hand_pose
    robot.arm_reach(hx - 0.3, hy, hz, timeout_s=ARM_S)  # pull
    robot.gripper_open(timeout_s=ARM_S)
    robot.arm_stow(timeout_s=ARM_S)
    assert world.state().open_containers == {"top drawer"}
    # put the sponge in
    pick(robot, world, "sponge")
    handle = world.handle_box("top drawer").center  # (x, y, z) odom; the robot faces -y: body x = -odom y
    bx, by, _ = robot.body_pose()
    robot.arm_reach(-(handle[1] - by) + 0.15, handle[0] - bx, handle[2] - 0.52 + 0.15, timeout_s=ARM_S)
    robot.gripper_open(timeout_s=ARM_S)
    robot.arm_stow(timeout_s=ARM_S)
    assert world.state().object_locations["sponge"] == "top drawer"
    # close it
    image = robot.get_images([COLOR_SOURCE])[0]
    robot.pick_in_image(image, project(image, world.handle_box("top drawer").center), timeout_s=ARM_S)
    hx, hy, hz, _ = fake.hand_pose
    robot.arm_reach(hx + 0.3, hy, hz, timeout_s=ARM_S)  # push
    robot.gripper_open(timeout_s=ARM_S)
    robot.arm_stow(timeout_s=ARM_S)
    assert world.state().open_containers == frozenset()
    assert not {o.name: o for o in world.ground_truth()}["sponge"].visible


# ---- faults mid-grasp and mid-arm-motion ---------------------------------------------------------

def _grasp_with(make: Make, fault: Callable[[SpotRobot, FakeSpot], None],
                cancel: threading.Event | None = None) -> tuple[SpotRobot, FakeSpot, FakeKitchen, BaseException]:
    robot, fake, world = make(time_scale=1.0, world=at_far_counter())  # a 2 s grasp: the fault lands in the middle
    image = robot.get_images([COLOR_SOURCE])[0]
    fake.when("ManipulationApiFeedback", lambda: fault(robot, fake), after=3)
    t0 = time.monotonic()
    with pytest.raises((SpotFault, MotionInterrupted, GraspFailed)) as err:
        robot.pick_in_image(image, project(image, world.position_of("coke")), timeout_s=10.0, cancel=cancel)
    assert time.monotonic() - t0 < 1.5  # not the 2 s of the grasp, not the timeout
    assert world.state().holding is None
    return robot, fake, world, err.value


def test_lease_taken_mid_grasp_is_lease_lost(make: Make) -> None:
    robot, fake, _, err = _grasp_with(make, lambda r, f: f.take_lease_as("tablet"))
    assert isinstance(err, SpotFault) and err.cause == SpotFaultCause.LEASE_LOST
    assert err.kind == FaultKind.LEASE_LOST
    assert robot.lease_lost


def test_estop_mid_grasp_is_estop(make: Make) -> None:
    robot, fake, _, err = _grasp_with(make, lambda r, f: r.estop_cut())
    assert isinstance(err, SpotFault) and err.cause == SpotFaultCause.ESTOP
    assert not fake.motors_on


def test_cancel_mid_grasp_stops(make: Make) -> None:
    cancel = threading.Event()
    _, fake, _, err = _grasp_with(make, lambda r, f: cancel.set(), cancel=cancel)
    assert isinstance(err, MotionInterrupted)
    assert fake.commands()[-1][0] == "stop"


def test_estop_mid_arm_reach_is_estop(make: Make) -> None:
    robot, fake, _ = make(time_scale=1.0)
    fake.when("RobotCommandFeedback", robot.estop_cut, after=fake.calls.count("RobotCommandFeedback") + 3)
    t0 = time.monotonic()
    with pytest.raises(SpotFault) as err:
        robot.arm_reach(0.7, 0.0, 0.2, timeout_s=10.0)
    assert err.value.cause == SpotFaultCause.ESTOP
    assert time.monotonic() - t0 < 1.5


def test_lease_taken_mid_gripper_is_lease_lost(make: Make) -> None:
    robot, fake, _ = make(time_scale=4.0)  # a 2 s gripper motion
    fake.when("RobotCommandFeedback", lambda: fake.take_lease_as("tablet"),
              after=fake.calls.count("RobotCommandFeedback") + 3)
    with pytest.raises(SpotFault) as err:
        robot.gripper_close(timeout_s=10.0)
    assert err.value.cause == SpotFaultCause.LEASE_LOST


def test_silent_robot_mid_grasp_is_connection_lost(make: Make) -> None:
    robot, fake, world = make(time_scale=1.0, world=at_far_counter())
    image = robot.get_images([COLOR_SOURCE])[0]
    fake.when("ManipulationApiFeedback", fake.go_silent, after=2)
    t0 = time.monotonic()
    with pytest.raises(SpotFault) as err:
        robot.pick_in_image(image, project(image, world.position_of("coke")), timeout_s=10.0)
    assert err.value.cause == SpotFaultCause.CONNECTION_LOST
    assert time.monotonic() - t0 < 3.0
    fake.resume()


# ---- issue 31: a grasp the robot reports as done that left the object where it was ------------------------------

def _coke_pixels(robot: SpotRobot) -> int:
    """Pixels of the coke's colour in the hand camera's image now."""
    image = robot.get_images([COLOR_SOURCE])[0]
    rgb = np.frombuffer(image.data, np.uint8).reshape(image.height, image.width, 3)
    return int(np.all(rgb == np.array(color_of("coke"), np.uint8), axis=-1).sum())


@pytest.mark.parametrize("phantom", [False, True])
def test_the_hand_camera_shows_what_the_grasp_really_did(make: Make, phantom: bool) -> None:
    robot, fake, world = make(world=at_far_counter())
    where = world.position_of("coke")
    assert _coke_pixels(robot) > 0
    if phantom:
        fake.phantom_next_grasp()
    pick(robot, world, "coke")
    robot.arm_carry(timeout_s=ARM_S)
    assert robot.holding()  # the robot's own report: holding an item, either way
    if phantom:  # ... but the coke is still on the counter, and the hand camera (carry pose) sees it there
        assert world.state().holding is None and world.position_of("coke") == where
        assert _coke_pixels(robot) > 0
    else:
        assert world.state().holding == "coke" and _coke_pixels(robot) == 0
    robot.gripper_open(timeout_s=ARM_S)  # the phantom ends when the gripper opens
    assert not robot.holding()
