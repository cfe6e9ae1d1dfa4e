"""SayCan's kitchen skills on Spot (robots/spot/core/skills.py `SpotKitchenSkills`) on the real bosdyn-client
(robots/spot/core/robot.py `SpotRobot`) against FakeSpot hosting a FakeKitchen (robots/spot/testing/fake_spot.py, fake_spot_world.py):
the gRPC robot's images, odometry, grasps and the world's ground truth agree.

Perception is stood in for by `Eye`: it reads the hand camera through SpotRobot.get_images, projects the
world's ground truth into the colour image and keeps what the depth image confirms (what perception's oracle
detector does), and feeds the skills' SceneBuffer in odom. Asserted: the world's state after each skill, the
command sequences sent, the kitchen's precondition lines, affordances from the belief, faults (grasp failure,
lease taken mid-pick, e-stop mid-walk, GraphNav stuck), cancel and recovery without a restart, the approval
gate."""
from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from monologue_common.core.settings import ParamReader, flatten
from monologue_domain.kitchen.state import HELD
from monologue_domain.kitchen.world import KitchenWorld, make_state
from monologue_domain.scene import SceneObject
from monologue_domain.skills import SkillError, SkillState
from skills_node.robots.spot.core.robot import PASSWORD_ENV, USERNAME_ENV, SpotCredentials, SpotRobot, SpotSettings
from skills_node.robots.spot.core.skills import SceneBuffer, SpotKitchenSettings, SpotKitchenSkills, project
from skills_node.robots.spot.settings import SpotBackendSettings, read
from skills_node.robots.spot.testing.fake_spot import FakeSpot
from skills_node.robots.spot.testing.fake_spot_world import FakeKitchen

LOG = logging.getLogger("test.spot_skills")
CONFIG = Path(__file__).resolve().parents[3] / "config"
PASSWORD = "s3cret-skills-pw"
START = {"coke": "far counter", "apple": "table", "sponge": "close counter"}


def settings_for(fake: FakeSpot, **overrides: object) -> SpotBackendSettings:
    tree = yaml.safe_load((CONFIG / "robots" / "spot.yaml").read_text())["skills"]["ros__parameters"]
    params = flatten(tree)
    params.update({"spot.hostname": "127.0.0.1", "spot.port": fake.port, "spot.ca_cert_path": str(fake.ca_cert_path),
                   # generous (s): the fake ray-casts the hand images, slow on 2 loaded cores; no test here
                   # waits for a timeout to expire
                   "spot.rpc_timeout": 20.0, "spot.feedback_period": 0.02, "spot.lease_check_period": 0.2,
                   "spot.command_timeout": 30.0, "spot.go_to_time_margin": 20.0, "spot.look_timeout": 20.0,
                   "spot.arm_timeout": 30.0, "spot.grasp_timeout": 30.0})
    params.update(overrides)
    r = ParamReader(params, "skills")
    s = read(r)
    assert s is not None, r.errors
    return s


class Eye:
    """Perception's oracle detector in miniature: every `period_s` it takes the hand images, keeps the ground
    truth objects whose centre projects into the colour image where the depth image shows them (within 5 cm),
    and updates the SceneBuffer (odom, m); objects seen before and not now stay, not visible."""

    def __init__(self, robot: SpotRobot, world: FakeKitchen, scene: SceneBuffer, period_s: float = 0.1) -> None:
        self._robot, self._world, self._scene, self._period = robot, world, scene, period_s
        self._memory: dict[str, SceneObject] = {}
        self._stop = threading.Event()
        self.frames = 0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._period):
            try:
                color, depth = self._robot.get_images(["hand_color_image", "hand_depth_in_hand_color_frame"])
            except Exception:  # noqa: BLE001 - a fault test takes the robot away: perception sees nothing
                continue
            d = np.frombuffer(depth.data, dtype="<u2").reshape(depth.height, depth.width) / depth.depth_scale
            from skills_node.robots.spot.core.skills import point_in

            seen: set[str] = set()
            for o in self._world.ground_truth():
                if o.is_location or not o.visible:
                    continue
                px = project(color, o.position)
                if px is None:
                    continue
                z = point_in(color.odom_from_sensor, o.position)[2]
                measured = d[int(px[1]), int(px[0])]
                if measured > 0 and abs(measured - z) < max(o.size) / 2 + 0.05:
                    self._memory[o.name] = replace(o, visible=True)
                    seen.add(o.name)
            for name, o in list(self._memory.items()):
                if name not in seen:
                    self._memory[name] = replace(o, visible=False)
            self.frames += 1
            self._scene.update(list(self._memory.values()))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)


class Rig:
    def __init__(self, fake: FakeSpot, world: FakeKitchen, robot: SpotRobot, skills: SpotKitchenSkills,
                 scene: SceneBuffer, s: SpotKitchenSettings) -> None:
        self.fake, self.world, self.robot, self.skills, self.scene, self.settings = fake, world, robot, skills, scene, s
        self.start = len(fake.commands())  # after power on and stand

    def run(self, skill: str, *args: str, cancel: threading.Event | None = None) -> Any:
        fb: list[tuple[SkillState, str]] = []
        out = self.skills.execute(skill, list(args), lambda st, t: fb.append((st, t)), cancel or threading.Event())
        self.feedback = fb
        return out

    def affordances(self) -> dict[str, float]:
        return {a.description: a.affordance for a in self.skills.affordances(include_unaffordable=True)}

    def kinds(self, since: int | None = None) -> list[str]:
        return [k for k, _ in self.fake.commands()[self.start if since is None else since:]]


@contextmanager
def make_rig(placements: dict[str, str], at: str = "initial position", approval: Any = None,
             **overrides: object) -> Iterator[Rig]:
    world = FakeKitchen(make_state(placements, at))
    with FakeSpot(username="operator", password=PASSWORD, world=world, time_scale=0.05) as fake:
        s = settings_for(fake, **{"spot.start_location": at, **overrides})
        assert isinstance(s.robot, SpotSettings)
        creds = SpotCredentials.from_env({USERNAME_ENV: "operator", PASSWORD_ENV: PASSWORD})
        with SpotRobot(s.robot, creds, LOG) as robot:
            robot.power_on()
            robot.stand()
            scene = SceneBuffer()
            skills = SpotKitchenSkills(robot, s.skills, scene, LOG, approval=approval, approval_timeout_s=1.0)
            skills.anchor()
            eye = Eye(robot, world, scene)
            try:
                yield Rig(fake, world, robot, skills, scene, s.skills)
            finally:
                eye.close()


@pytest.fixture
def rig() -> Iterator[Rig]:
    with make_rig(START) as r:
        yield r


def wait_seen(rig: Rig, obj: str, timeout_s: float = 30.0) -> None:
    import time

    deadline = time.monotonic() + timeout_s
    while not any(o.name == obj and o.visible for o in rig.scene.latest().objects):
        assert time.monotonic() < deadline, f"the eye never saw the {obj}: {rig.scene.latest().objects}"
        time.sleep(0.05)


def test_go_to_pick_up_bring_and_put_down(rig: Rig) -> None:
    aff = rig.affordances()
    # at the start nothing is seen yet: find scans, nothing can be picked, go to anywhere
    assert aff["find(coke)"] == 1.0 and aff["pick_up(coke)"] == 0.0 and aff["go_to(far counter)"] == 1.0
    assert aff["go_to(initial position)"] == pytest.approx(0.1) and aff["bring_to_user()"] == 0.0

    out = rig.run("go_to", "far counter")
    assert out.ok, out.message
    assert rig.kinds() == ["trajectory"]
    traj = rig.fake.commands()[-1][1].command.synchronized_command.mobility_command.se2_trajectory_request
    assert traj.se2_frame_name == "odom"
    assert rig.world.state().robot_location == "far counter" and rig.skills.location == "far counter"
    wait_seen(rig, "coke")
    aff = rig.affordances()
    assert aff["pick_up(coke)"] == 1.0 and aff["find(coke)"] == pytest.approx(0.1)  # found: already there

    before = len(rig.fake.commands())
    out = rig.run("pick_up", "coke")
    assert out.ok, out.message
    assert rig.world.state().holding == "coke" and rig.world.state().object_locations["coke"] == HELD
    assert rig.kinds(before) == ["grasp", "carry"]  # ManipulationApi PickObjectInImage, then carry
    assert "ManipulationApi" in rig.fake.calls
    assert rig.skills.held == "coke"

    out = rig.run("pick_up", "apple")
    assert out.error == SkillError.PRECONDITION_FAILED
    assert out.failed_precondition == "hand_full: I cannot pick up the apple because I am already holding the coke"
    aff = rig.affordances()
    assert aff["bring_to_user()"] == 1.0 and aff["put_down(coke)"] == 1.0 and aff["pick_up(apple)"] == 0.0
    assert aff["sit()"] == 0.0  # not while holding

    out = rig.run("bring_to_user")
    assert out.ok, out.message
    state = rig.world.state()
    assert state.robot_location == "user" and state.holding == "coke"
    before = len(rig.fake.commands())
    out = rig.run("put_down", "coke")
    assert out.ok, out.message
    assert rig.kinds(before) == ["arm_pose", "gripper_open", "stow"]
    state = rig.world.state()
    assert state.holding is None and state.object_locations["coke"] == "user"
    assert rig.affordances()["put_down(coke)"] == 0.0


def test_preconditions_are_the_kitchen_worlds(rig: Rig) -> None:
    """Every skill instance's affordance on Spot equals the kitchen world's on the world's own state (the
    completed-skill cap aside), once perception has seen the objects."""
    for place, obj in (("table", "apple"), ("close counter", "sponge"), ("far counter", "coke")):
        assert rig.run("go_to", place).ok
        wait_seen(rig, obj)
    truth = KitchenWorld.from_state(rig.world.state(), completed_affordance=0.1)
    ours = rig.affordances()
    for a in truth.affordances(include_unaffordable=True):
        if a.description in ours:
            assert (ours[a.description] > 0) == (a.affordance > 0), a.description
    out = rig.run("put_down", "apple")
    assert (out.error, out.failed_precondition) == (
        SkillError.PRECONDITION_FAILED, "not_holding: I cannot put down the apple because I am not holding the apple")
    out = rig.run("open_drawer", "top drawer")
    assert out.failed_precondition == "not_near: I cannot open the drawer because I am not near the top drawer"
    out = rig.run("go_to", "moon")
    assert out.error == SkillError.INVALID_ARGUMENTS and rig.fake.commands()[-1][0] != "stop"


def test_find_scans_the_search_locations() -> None:
    # 3 s per look (5 s by default): a look at a place without the apple waits all of it, and a loaded
    # machine (2 cores, parallel tests) delays the eye's scenes by well over a second
    with make_rig(START, **{"spot.look_timeout": 3.0}) as rig:
        out = rig.run("find", "apple")  # never seen: close counter, far counter, then the table
        assert out.ok, out.message
        assert out.message == "found the apple at the table"
        assert rig.kinds() == ["trajectory"] * 3
        assert rig.world.state().robot_location == "table"
        out = rig.run("find", "coke")  # seen on the way: straight to the far counter
        assert out.ok and rig.world.state().robot_location == "far counter"


def test_drawers_open_put_in_and_close() -> None:
    with make_rig({"coke": "drawers", "apple": "table"}, at="drawers") as rig:
        wait_seen(rig, "coke")
        assert rig.run("pick_up", "coke").ok
        out = rig.run("put_in_drawer", "coke", "top drawer")
        assert out.failed_precondition == ("not_open: I cannot put coke in the drawer because the top drawer is "
                                           "closed")
        out = rig.run("open_drawer", "top drawer")
        assert out.failed_precondition == "hand_full: I cannot open the drawer because I am holding the coke"
        assert rig.run("put_down", "coke").ok
        out = rig.run("open_drawer", "top drawer")
        assert out.ok, out.message
        assert rig.world.is_open("top drawer")
        assert rig.affordances()["open_drawer(top drawer)"] == 0.0
        wait_seen(rig, "coke")
        assert rig.run("pick_up", "coke").ok
        out = rig.run("put_in_drawer", "coke", "top drawer")
        assert out.ok, out.message
        assert rig.world.state().object_locations["coke"] == "top drawer"
        out = rig.run("close_drawer", "top drawer")
        assert out.ok, out.message
        assert not rig.world.is_open("top drawer")
        out = rig.run("pick_up", "coke")
        assert out.failed_precondition == ("inside_closed: I cannot pick up the coke because the coke is inside the "
                                           "closed top drawer")


def test_a_failed_grasp_fails_the_skill_and_a_retry_works() -> None:
    with make_rig(START, at="far counter") as rig:
        wait_seen(rig, "coke")
        rig.fake.fail_next_grasp()
        out = rig.run("pick_up", "coke")
        assert out.error == SkillError.EXECUTION_FAILED and "grasp" in out.message
        assert rig.world.state().holding is None and rig.robot.status().ok
        out = rig.run("pick_up", "coke")
        assert out.ok, out.message
        assert rig.world.state().holding == "coke"


def test_cancel_mid_walk_then_recover_from_odometry() -> None:
    with make_rig(START) as rig:
        rig.fake.time_scale = 1.0  # a walk of several seconds
        cancel = threading.Event()
        done = threading.Event()

        def cancel_a_third_of_the_way() -> None:  # by distance walked (1.3 m in 6.5 s), not by time or RPC count
            deadline = time.monotonic() + 120.0
            while not done.is_set() and time.monotonic() < deadline:
                if math.dist(rig.fake.body_pose[:2], (0.0, 0.0)) > 0.4:
                    cancel.set()
                    return
                time.sleep(0.01)
        watcher = threading.Thread(target=cancel_a_third_of_the_way, daemon=True)
        watcher.start()
        try:
            out = rig.run("go_to", "trash", cancel=cancel)
        finally:
            done.set()
            watcher.join(timeout=5.0)
        assert out.error == SkillError.CANCELED
        assert rig.kinds()[-2:] == ["trajectory", "stop"]
        assert rig.skills.location is None  # between two locations
        pose = rig.fake.body_pose
        assert math.dist(pose[:2], (0.0, 0.0)) > 0.05 and math.dist(pose[:2], (0.5, -1.2)) > 0.3
        aff = rig.affordances()
        assert aff["go_to(trash)"] == 1.0 and aff["go_to(initial position)"] == 1.0
        rig.fake.time_scale = 0.05
        out = rig.run("go_to", "trash")  # no restart: the walk starts from the odometry pose
        assert out.ok, out.message
        assert rig.world.state().robot_location == "trash" and rig.skills.location == "trash"
        goal = rig.fake.commands()[-1][1].command.synchronized_command.mobility_command.se2_trajectory_request
        point = goal.trajectory.points[-1].pose
        assert (point.position.x, point.position.y) == pytest.approx((0.5, -1.2), abs=1e-6)


def test_lease_taken_mid_pick_is_a_robot_fault() -> None:
    with make_rig(START, at="far counter") as rig:
        wait_seen(rig, "coke")
        rig.fake.time_scale = 1.0  # the grasp takes 2 s
        rig.fake.when("ManipulationApiFeedback", lambda: rig.fake.take_lease_as("tablet"), after=2)
        out = rig.run("pick_up", "coke")
        assert out.error == SkillError.ROBOT_FAULT and "lease" in out.message
        assert rig.fake.lease_owner == "tablet" and rig.skills.affordances() == []


def test_estop_mid_walk_then_reset_and_go_on() -> None:
    with make_rig(START) as rig:
        rig.fake.time_scale = 1.0

        def estop() -> None:  # what the ROS bridge does on `estop`: latch, then cut Spot's e-stop
            rig.skills.estop_latched, rig.skills.estop_reason = True, "estop topic"
            threading.Thread(target=rig.robot.estop_cut, daemon=True).start()

        rig.fake.when("RobotCommandFeedback", estop, after=5)
        out = rig.run("go_to", "table")
        assert out.error == SkillError.ESTOP_ACTIVE and "estop topic" in out.message
        assert not rig.fake.motors_on and rig.skills.affordances() == []
        rig.robot.estop_release()  # what estop_reset does
        rig.skills.estop_latched = False
        rig.robot.power_on()
        rig.fake.time_scale = 0.05
        out = rig.run("go_to", "table")  # stands up first, walks from where the e-stop left it
        assert out.ok, out.message
        assert rig.world.state().robot_location == "table"


def test_graph_nav_waypoints_and_a_stuck_robot() -> None:
    waypoints = ["far counter=wp-far-counter", "table=wp-table"]
    with make_rig(START, **{"spot.waypoints": waypoints}) as rig:
        out = rig.run("go_to", "far counter")
        assert out.ok, out.message
        assert "NavigateTo" in rig.fake.calls and rig.world.state().robot_location == "far counter"
        assert rig.skills.location == "far counter"
        rig.fake.fail_next_navigation()
        out = rig.run("go_to", "table")
        assert out.error == SkillError.ROBOT_FAULT and "stuck" in out.message
        out = rig.run("go_to", "table")  # recovers: navigate again from where it stopped
        assert out.ok, out.message
        assert rig.world.state().robot_location == "table"
        out = rig.run("go_to", "trash")  # no waypoint: odom
        assert out.ok and rig.kinds()[-1] == "trajectory"


class Gate:
    def __init__(self, answer: bool) -> None:
        self.answer, self.asked = answer, []  # type: ignore[var-annotated]

    def approve(self, request: str, timeout_s: float) -> bool:
        self.asked.append(request)
        return bool(self.answer)


def test_approval_gate() -> None:
    no = Gate(False)
    with make_rig(START, approval=no) as rig:
        out = rig.run("go_to", "table")
        assert out.error == SkillError.PRECONDITION_FAILED and "approve" in out.failed_precondition
        assert no.asked == ["go to the table"] and rig.kinds() == []
        assert math.dist(rig.fake.body_pose[:2], (0.0, 0.0)) < 1e-6
    yes = Gate(True)
    with make_rig(START, approval=yes) as rig:
        assert rig.run("go_to", "table").ok and yes.asked == ["go to the table"]


def test_hand_images_as_ros_messages() -> None:
    """robots/spot/ros.camera_messages: rgb8 colour, 16UC1 mm depth aligned to it, CameraInfo from the intrinsics, and
    the TF odom -> body -> sensor, all with the colour image's stamp; the depth at the coke's pixel is its
    distance along the optical axis."""
    from skills_node.robots.spot.core.skills import compose3, point_in
    from skills_node.robots.spot.ros import camera_messages

    with make_rig(START, at="far counter") as rig:
        color, depth = rig.robot.get_images(["hand_color_image", "hand_depth_in_hand_color_frame"])
        msgs, tf = camera_messages(color, depth, "camera")
        by = dict(msgs)
        image, info = by["camera/color/image_raw"], by["camera/color/camera_info"]
        dmsg = by["camera/aligned_depth_to_color/image_raw"]
        assert (image.encoding, image.width, image.height, len(image.data)) == ("rgb8", 640, 480, 640 * 480 * 3)
        assert (dmsg.encoding, dmsg.step, dmsg.is_bigendian) == ("16UC1", 1280, 0)
        assert list(info.k) == pytest.approx([color.fx, 0, color.cx, 0, color.fy, color.cy, 0, 0, 1])
        frames = {m.header.frame_id for m in (image, info, dmsg)}
        assert frames == {"hand_color_image_sensor"} and len({(m.header.stamp.sec, m.header.stamp.nanosec)
                                                               for m in (image, info, dmsg, *tf)}) == 1
        assert [(t.header.frame_id, t.child_frame_id) for t in tf] == [("odom", "body"),
                                                                       ("body", "hand_color_image_sensor")]

        def pose(t: Any) -> Any:
            r, q = t.transform.translation, t.transform.rotation
            return ((r.x, r.y, r.z), (q.x, q.y, q.z, q.w))

        chained = compose3(pose(tf[0]), pose(tf[1]))
        assert chained[0] == pytest.approx(color.odom_from_sensor[0], abs=1e-6)
        coke = rig.world.position_of("coke")
        u, v = project(color, coke) or (-1.0, -1.0)
        mm = np.frombuffer(bytes(dmsg.data), dtype="<u2").reshape(480, 640)[int(v), int(u)]
        expected = point_in(color.odom_from_sensor, coke)[2]  # m along the optical axis to the can's centre
        assert abs(mm / 1000.0 - expected) < 0.05
