"""ArmSkillBackend on the safety layer and the ur_rtde arm, against the fake UR5e: the exact command
sequence of IM's pick-and-place, refusals with nothing sent, cancel, faults, e-stop, approval."""
from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable

import pytest

from skills_node.core.arm_backend import ArmSkillBackend, PickPlaceConfig, SceneEntry, SceneLocator
from skills_node.core.safety import SafeArm
from skills_node.core.types import SkillError, SkillState
from skills_node.robots.ur5e.core.rtde import RtdeArm
from skills_node.robots.ur5e.testing.fake_rtde import HOME_Q, FakeUrController

PLACE_CATEGORIES = ("bowl", "plate", "location")  # place targets only (the skills node's place_categories)

LOG = logging.getLogger("test.arm_backend")
DOWN = [0.0, math.pi, 0.0]


class Feedback:
    def __init__(self) -> None:
        self.states: list[SkillState] = []
        self.texts: list[str] = []
        self.events: dict[SkillState, threading.Event] = {s: threading.Event() for s in SkillState}

    def __call__(self, state: SkillState, text: str) -> None:
        self.states.append(state)
        self.texts.append(text)
        self.events[state].set()


def run(backend: ArmSkillBackend, skill: str, *args: str, cancel: threading.Event | None = None):  # type: ignore[no-untyped-def]
    fb = Feedback()
    outcome = backend.execute(skill, list(args), fb, cancel or threading.Event())
    return outcome, fb


def in_background(backend: ArmSkillBackend, skill: str, *args: str,
                  cancel: threading.Event | None = None) -> tuple[threading.Thread, Feedback, list[object]]:
    """Start a skill on a thread; returns the thread, its feedback and a list that receives the outcome."""
    fb = Feedback()
    result: list[object] = []
    t = threading.Thread(target=lambda: result.append(
        backend.execute(skill, list(args), fb, cancel or threading.Event())))
    t.start()
    return t, fb, result


def names(commands: list[tuple[str, tuple[object, ...]]]) -> list[str]:
    return [c[0] for c in commands]


def test_pick_place_sends_im_primitive_in_order_and_moves_the_object(
        backend: ArmSkillBackend, robot: FakeUrController) -> None:
    red, plate = robot.get("red block"), robot.get("blue plate")
    pick_hover = [0.45, 0.10, 0.04 + 0.15, *DOWN]
    place_hover = [0.60, 0.15, 0.01 + 0.15, *DOWN]
    outcome, fb = run(backend, "pick_place", "red block", "blue plate")
    assert outcome.ok, outcome.message
    assert outcome.message == "placed the red block on the blue plate"
    cmds = robot.motion_commands()
    assert names(cmds) == [
        "moveL",  # 15 cm above the block
        "zeroFtSensor", "moveL", "stopL",  # descend until contact
        "setToolDigitalOut",  # suction on
        "moveL",  # lift
        "moveL",  # 15 cm above the plate
        "zeroFtSensor", "moveL", "stopL",  # descend until contact
        "setToolDigitalOut",  # release
        "moveL",  # lift
    ]
    assert cmds[0][1] == (pytest.approx(pick_hover), 0.25, 0.5, True)
    # the contact move: straight down at the contact speed, at most hover + margin (20 cm) but never
    # below the minimum height (5 mm)
    assert cmds[2][1][0] == pytest.approx([0.45, 0.10, 0.005, *DOWN])
    assert cmds[8][1][0] == pytest.approx([0.60, 0.15, 0.005, *DOWN])
    assert cmds[2][1][1:] == (0.05, 0.5, True)
    assert cmds[4][1] == (0, True) and cmds[10][1] == (0, False)
    assert cmds[5][1][0] == pytest.approx(pick_hover)
    assert cmds[6][1][0] == pytest.approx(place_hover)
    assert cmds[11][1][0] == pytest.approx(place_hover)
    # the world: the block now rests on the plate, suction is off
    assert (red.x, red.y, red.z) == pytest.approx((plate.x, plate.y, plate.top), abs=1e-6)
    assert robot.held is None and robot.tool_out[0] is False
    assert fb.states == [SkillState.MOVING_TO_PICK, SkillState.PICKING, SkillState.MOVING_TO_PLACE,
                         SkillState.PLACING, SkillState.RETREATING, SkillState.DONE]


def test_stacking_places_on_top_of_the_other_block(backend: ArmSkillBackend, robot: FakeUrController) -> None:
    outcome, _ = run(backend, "pick_place", "red block", "green block")
    assert outcome.ok, outcome.message
    red, green = robot.get("red block"), robot.get("green block")
    assert (red.x, red.y, red.z) == pytest.approx((green.x, green.y, green.top), abs=1e-6)


def test_place_goes_to_the_perceived_place_point_of_the_plate(
        backend: ArmSkillBackend, robot: FakeUrController, locator: SceneLocator) -> None:
    """IM-R: perception's place point (the part of the plate farthest from other boxes) is where the
    block goes, not the plate's centre; the pick still uses the block's centre."""
    entries = [SceneEntry(o.name, "plate" if "plate" in o.name else "block", (o.x, o.y, o.top),
                          place_point=(o.x + 0.03, o.y - 0.02, o.top) if "plate" in o.name else None)
               for o in robot.objects]
    locator.update(entries)
    outcome, _ = run(backend, "pick_place", "red block", "blue plate")
    assert outcome.ok, outcome.message
    cmds = robot.motion_commands()
    assert cmds[0][1][0] == pytest.approx([0.45, 0.10, 0.04 + 0.15, *DOWN])
    assert cmds[6][1][0] == pytest.approx([0.63, 0.13, 0.01 + 0.15, *DOWN])
    red = robot.get("red block")
    assert (red.x, red.y) == pytest.approx((0.63, 0.13), abs=1e-6)
    centre = SceneLocator(PLACE_CATEGORIES, use_place_points=False)
    centre.update(entries)
    assert centre.place_position("blue plate") == centre.position("blue plate")


def test_out_of_workspace_object_is_refused_before_anything_moves(
        backend: ArmSkillBackend, robot: FakeUrController) -> None:
    outcome, fb = run(backend, "pick_place", "far block", "blue plate")
    assert outcome.error == SkillError.OUT_OF_LIMITS
    assert "x = 0.900 m is outside the workspace" in outcome.message and "nothing moved" in outcome.message
    assert robot.motion_commands() == [] and fb.states == []
    affs = {a.args: a.affordance for a in backend.affordances(include_unaffordable=True)}
    assert affs[("far block", "blue plate")] == 0.0 and affs[("red block", "blue plate")] == 1.0
    assert ("far block", "blue plate") not in {a.args for a in backend.affordances()}


def test_place_target_outside_the_workspace_is_refused_too(
        backend: ArmSkillBackend, robot: FakeUrController) -> None:
    outcome, _ = run(backend, "pick_place", "red block", "far block")
    assert outcome.error == SkillError.OUT_OF_LIMITS and robot.motion_commands() == []


@pytest.mark.parametrize(("skill", "args", "error"), [
    ("wave", [], SkillError.UNKNOWN_SKILL),
    ("pick_place", ["red block"], SkillError.INVALID_ARGUMENTS),
    ("pick_place", ["red block", "blue\x00plate"], SkillError.INVALID_ARGUMENTS),
    ("pick_place", ["purple block", "blue plate"], SkillError.INVALID_ARGUMENTS),
    ("pick_place", ["red block", "red block"], SkillError.PRECONDITION_FAILED),
    ("pick_place", ["blue plate", "red block"], SkillError.PRECONDITION_FAILED),
])
def test_allow_list_and_argument_validation(backend: ArmSkillBackend, robot: FakeUrController, skill: str,
                                            args: list[str], error: SkillError) -> None:
    outcome, _ = run(backend, skill, *args)
    assert outcome.error == error, outcome.message
    assert robot.motion_commands() == []


def test_cancel_mid_motion_sends_stopl_and_keeps_the_object_held(
        backend: ArmSkillBackend, robot: FakeUrController) -> None:
    cancel = threading.Event()
    t, fb, result = in_background(backend, "pick_place", "red block", "blue plate", cancel=cancel)
    assert fb.events[SkillState.MOVING_TO_PLACE].wait(10.0)
    robot.set_time_scale(1.0)  # slow enough to cancel while carrying
    time.sleep(0.1)
    cancel.set()
    t.join(5.0)
    assert not t.is_alive()
    outcome = result[0]
    assert outcome.error == SkillError.CANCELED  # type: ignore[attr-defined]
    assert "the red block is still held" in outcome.message  # type: ignore[attr-defined]
    after_place_move = names(robot.motion_commands())[6:]
    assert after_place_move[:2] == ["moveL", "stopL"]
    assert robot.held is robot.get("red block")
    # the arm stopped between the two hover points
    assert 0.45 < robot.pose[0] < 0.60


def test_protective_stop_during_descent_fails_with_robot_fault(
        backend: ArmSkillBackend, robot: FakeUrController, arm: RtdeArm) -> None:
    robot.fault_below_z = 0.10  # e.g. the tool hits an unseen obstacle on the way down
    outcome, fb = run(backend, "pick_place", "red block", "blue plate")
    assert outcome.error == SkillError.ROBOT_FAULT
    assert "protective stop" in outcome.message and "descending to the red block" in outcome.message
    assert arm.status().protective_stop and not arm.status().ok
    assert SkillState.DONE not in fb.states
    # while the stop lasts, every skill fails at once and sends nothing
    before = len(robot.motion_commands())
    outcome, _ = run(backend, "pick_place", "green block", "blue plate")
    assert outcome.error == SkillError.ROBOT_FAULT and len(robot.motion_commands()) == before
    assert all(a.affordance == 0.0 for a in backend.affordances(include_unaffordable=True))


def test_recovers_after_the_protective_stop_is_unlocked(
        backend: ArmSkillBackend, robot: FakeUrController, arm: RtdeArm) -> None:
    robot.trigger_protective_stop()
    deadline = time.monotonic() + 2.0
    while not arm.status().protective_stop and time.monotonic() < deadline:
        time.sleep(0.01)
    robot.unlock_protective_stop()
    while not arm.status().ok and time.monotonic() < deadline:
        time.sleep(0.01)
    outcome, _ = run(backend, "pick_place", "red block", "blue plate")
    assert outcome.ok, outcome.message
    assert ("reuploadScript", ()) in robot.commands


def test_connection_loss_mid_skill_is_a_clear_fault_not_a_hang(
        backend: ArmSkillBackend, robot: FakeUrController) -> None:
    robot.set_time_scale(1.0)
    t, fb, result = in_background(backend, "pick_place", "red block", "blue plate")
    assert fb.events[SkillState.MOVING_TO_PICK].wait(5.0)
    time.sleep(0.05)  # the moveL is on its way
    robot.drop_connection(silent=True)  # the cable is pulled: data freezes, commands would block
    started = time.monotonic()
    t.join(10.0)
    assert not t.is_alive(), "the skill hung after the connection was lost"
    assert time.monotonic() - started < 3.0
    outcome = result[0]
    assert outcome.error == SkillError.ROBOT_FAULT  # type: ignore[attr-defined]
    assert "connection lost" in outcome.message  # type: ignore[attr-defined]


def test_heavy_object_fails_the_grasp_and_switches_suction_off(
        backend: ArmSkillBackend, robot: FakeUrController) -> None:
    outcome, _ = run(backend, "pick_place", "heavy block", "blue plate")
    assert outcome.error == SkillError.EXECUTION_FAILED
    assert outcome.message == "the suction cup could not lift the heavy block"
    assert names(robot.motion_commands())[-2:] == ["moveL", "setToolDigitalOut"]
    assert robot.motion_commands()[-1][1] == (0, False)
    assert robot.get("heavy block").x == pytest.approx(0.40)


def test_estop_during_skill_stops_latches_and_reset_releases(
        backend: ArmSkillBackend, safe_arm: SafeArm, robot: FakeUrController) -> None:
    robot.set_time_scale(1.0)
    t, fb, result = in_background(backend, "pick_place", "red block", "blue plate")
    assert fb.events[SkillState.MOVING_TO_PICK].wait(5.0)
    time.sleep(0.05)
    safe_arm.engage_estop("operator pressed e-stop")
    t.join(5.0)
    outcome = result[0]
    assert outcome.error == SkillError.ESTOP_ACTIVE  # type: ignore[attr-defined]
    assert names(robot.motion_commands())[-1] == "stopL"
    sent = len(robot.motion_commands())
    outcome, _ = run(backend, "pick_place", "red block", "blue plate")
    assert outcome.error == SkillError.ESTOP_ACTIVE and "latched" in outcome.message
    assert len(robot.motion_commands()) == sent
    assert safe_arm.reset_estop()
    robot.set_time_scale(20.0)
    outcome, _ = run(backend, "pick_place", "red block", "blue plate")
    assert outcome.ok, outcome.message


def test_home_is_a_joint_move_to_the_configured_joints(backend: ArmSkillBackend, robot: FakeUrController) -> None:
    robot.q = [math.pi, -1.2, 1.6, -1.97, -1.5708, 0.0]
    outcome, _ = run(backend, "home")
    assert outcome.ok, outcome.message
    assert robot.motion_commands() == [("moveJ", ([round(v, 6) for v in HOME_Q], 0.5, 1.0, True))]
    assert robot.q == pytest.approx(list(HOME_Q))


def test_home_outside_the_workspace_is_a_startup_error(safe_arm: SafeArm, locator: SceneLocator,
                                                       pick_config: PickPlaceConfig) -> None:
    from dataclasses import replace

    behind = replace(pick_config, home_joints=(0.0, -1.5708, 1.5708, -1.5708, -1.5708, 0.0))  # TCP at x = -0.49 m
    with pytest.raises(ValueError, match="TCP at the joint target x = -0.492 m is outside the workspace"):
        ArmSkillBackend(safe_arm, locator, behind, LOG, approval_timeout_s=30.0)


def test_skill_approval_denied_moves_nothing(safe_arm: SafeArm, locator: SceneLocator,
                                             pick_config: PickPlaceConfig, robot: FakeUrController) -> None:
    asked: list[str] = []

    class Deny:
        def approve(self, request: str, timeout_s: float) -> bool:
            asked.append(request)
            return False

    backend = ArmSkillBackend(safe_arm, locator, pick_config, LOG, skill_approval=Deny(), approval_timeout_s=30.0)
    outcome, _ = run(backend, "pick_place", "red block", "blue plate")
    assert outcome.error == SkillError.PRECONDITION_FAILED
    assert outcome.failed_precondition == "a person approves the motion"
    assert asked and asked[0].startswith("pick_place(red block, blue plate): hover at (0.450, 0.100, 0.190)")
    assert robot.motion_commands() == []


def test_busy_while_another_skill_runs(backend: ArmSkillBackend, robot: FakeUrController) -> None:
    robot.set_time_scale(1.0)
    t, fb, _ = in_background(backend, "pick_place", "red block", "blue plate")
    assert fb.events[SkillState.MOVING_TO_PICK].wait(5.0)
    outcome, _ = run(backend, "home")
    assert outcome.error == SkillError.BUSY and "another skill" in outcome.message
    robot.set_time_scale(50.0)
    t.join(10.0)
    assert not t.is_alive()


def test_descent_without_contact_fails_and_lifts_back(
        make_arm: Callable[..., RtdeArm], robot: FakeUrController, pick_config: PickPlaceConfig,
        fk: Callable[..., object], limits_for: Callable[..., object]) -> None:
    # perception reports the block 10 cm higher than it is: the descent finds nothing within its travel
    from skills_node.core.arm_backend import SceneEntry

    loc = SceneLocator(PLACE_CATEGORIES, use_place_points=True)
    loc.update([SceneEntry("red block", "block", (0.45, 0.10, 0.30)),
                SceneEntry("blue plate", "plate", (0.60, 0.15, 0.01))])
    arm = make_arm()
    safe = SafeArm(arm, limits_for(workspace_max=(0.75, 0.35, 0.6)), LOG, approval_timeout_s=30.0)  # type: ignore[arg-type]
    backend = ArmSkillBackend(safe, loc, pick_config, LOG, approval_timeout_s=30.0)
    outcome, _ = run(backend, "pick_place", "red block", "blue plate")
    assert outcome.error == SkillError.EXECUTION_FAILED
    assert outcome.message == "no contact with the red block within 20 cm of descent"
    assert names(robot.motion_commands()) == ["moveL", "zeroFtSensor", "moveL", "moveL"]
    assert robot.pose[2] == pytest.approx(0.45, abs=1e-3)


def test_return_home_ends_pick_place_with_the_home_move(safe_arm: SafeArm, locator: SceneLocator,
                                                        pick_config: PickPlaceConfig, robot: FakeUrController) -> None:
    """With return_home (the simulator's wrist camera), pick_place ends with a joint move home."""
    from dataclasses import replace

    backend = ArmSkillBackend(safe_arm, locator, replace(pick_config, return_home=True), LOG, approval_timeout_s=30.0)
    outcome, _ = run(backend, "pick_place", "red block", "blue plate")
    assert outcome.ok, outcome.message
    cmds = robot.motion_commands()
    assert names(cmds)[-2:] == ["moveL", "moveJ"] and cmds[-1][1][0] == [round(v, 6) for v in HOME_Q]
    with pytest.raises(ValueError, match="return_home needs home_joints"):
        ArmSkillBackend(safe_arm, locator, replace(pick_config, return_home=True, home_joints=()), LOG,
                        approval_timeout_s=30.0)


def test_affordances_right_after_start_up_wait_for_the_first_scene(
        safe_arm: SafeArm, pick_config: PickPlaceConfig, robot: FakeUrController) -> None:
    """The planner may ask before perception's first description reached the skills node: the answer
    then waits for it instead of offering nothing (which made the LLM stop at once)."""
    empty = SceneLocator(PLACE_CATEGORIES, use_place_points=True)
    backend = ArmSkillBackend(safe_arm, empty, pick_config, LOG, approval_timeout_s=30.0)
    entries = [SceneEntry(o.name, "plate" if "plate" in o.name else "block", (o.x, o.y, o.top)) for o in robot.objects]
    threading.Timer(0.3, lambda: empty.update(entries)).start()
    t0 = time.monotonic()
    offered = backend.affordances()
    assert 0.2 < time.monotonic() - t0 < 3.0
    assert ("pick_place", ("red block", "blue plate"), 1.0) in {(a.skill, a.args, a.affordance) for a in offered}
    never = ArmSkillBackend(safe_arm, SceneLocator(PLACE_CATEGORIES, use_place_points=True), pick_config, LOG,
                            approval_timeout_s=30.0)
    never.SCENE_WAIT_S = 0.2
    assert never.affordances() == []


def test_affordances_wait_for_an_arm_that_is_connecting(
        backend: ArmSkillBackend, safe_arm: SafeArm, monkeypatch: pytest.MonkeyPatch) -> None:
    """Right after a simulator restart its arm/command server is not discovered yet: the answer waits
    (bounded) for the connection instead of offering nothing, which made the planner say done at once."""
    from dataclasses import replace

    real = safe_arm.status
    connected_at = time.monotonic() + 0.3
    monkeypatch.setattr(safe_arm, "status", lambda: real() if time.monotonic() >= connected_at
                        else replace(real(), connected=False, detail="not discovered yet"))
    t0 = time.monotonic()
    offered = {(a.args, a.affordance) for a in backend.affordances()}
    assert 0.2 < time.monotonic() - t0 < 3.0 and (("red block", "blue plate"), 1.0) in offered
    monkeypatch.setattr(safe_arm, "status", lambda: replace(real(), connected=False, detail="gone"))
    backend.ARM_WAIT_S = 0.2
    assert backend.affordances() == []  # still not connected: nothing is affordable
