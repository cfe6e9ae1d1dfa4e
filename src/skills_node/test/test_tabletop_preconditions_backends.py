"""The tabletop's preconditions (monologue_domain.tabletop_preconditions) through the skills node's backends:
the kinematic backend (robot sim_kinematic) and the arm backend on the fake UR5e (robot ur5e; robot sim runs
the same ArmSkillBackend on the MuJoCo arm) refuse the same situations with the same code and the same
failed_precondition line, and a refused skill sends nothing to the fake robot."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator

import pytest

from monologue_domain.kinematic_world import TabletopWorld, world_with
from monologue_domain.tabletop_preconditions import TableThing
from skills_node.core.arm_backend import ArmSkillBackend, PickPlaceConfig, SceneEntry, SceneLocator
from skills_node.core.safety import SafeArm, SafetyLimits
from skills_node.core.types import SkillError, SkillOutcome, SkillState
from skills_node.robots.kinematic.core.backend import SimBackend
from skills_node.robots.ur5e.core.rtde import RtdeArm
from skills_node.robots.ur5e.testing.fake_rtde import FakeObject, FakeUrController

LOG = logging.getLogger("test.tabletop_preconditions")
PLACE_CATEGORIES = ("bowl", "plate", "location")
# name, centre x, y (m), category; the blue block starts on the red block, the far block is beyond the workspace
LAYOUT = [("red block", 0.45, 0.10, "block"), ("green block", 0.55, -0.10, "block"),
          ("red bowl", 0.60, 0.15, "bowl"), ("far block", 0.90, 0.0, "block")]
SIZE = {"block": 0.04, "bowl": 0.01}  # m, the fake's boxes (a flat bowl)


def fake_objects() -> list[FakeObject]:
    objs = [FakeObject(n, x, y, size=SIZE[c]) for n, x, y, c in LAYOUT]
    objs.append(FakeObject("blue block", 0.45, 0.10, size=0.04, z=0.04))  # on the red block
    return objs


def perceived(robot: FakeUrController, hidden: tuple[str, ...] = ()) -> list[SceneEntry]:
    """What perception would report: every object's top centre (m), `hidden` ones remembered but not visible."""
    cats = {n: c for n, _x, _y, c in LAYOUT} | {"blue block": "block"}
    return [*(SceneEntry(o.name, cats[o.name], (o.x, o.y, o.top), visible=o.name not in hidden) for o in robot.objects),
            SceneEntry("middle", "location", (0.50, 0.0, 0.0))]


class LimitsReach:
    """The kinematic world has no arm; for this comparison it asks the arm's SafetyLimits about the point
    15 cm above the thing (the hover pose), as the arm backend does."""

    def __init__(self, limits: SafetyLimits) -> None:
        self.limits = limits

    def unreachable(self, thing: TableThing, place: bool) -> str | None:
        x, y, z = thing.position
        try:
            self.limits.check_position(x, y, z + 0.15)
        except Exception as e:  # MotionRefused
            return str(getattr(e, "reason", e))
        return None


@pytest.fixture
def robot_objects() -> list[FakeObject]:
    """The conftest's fake robot (and the arm fixtures on it) hosts this scene."""
    return fake_objects()


@pytest.fixture
def arm_backend(robot: FakeUrController, make_arm, fk, pick_config: PickPlaceConfig,  # type: ignore[no-untyped-def]
                limits_for) -> Iterator[tuple[ArmSkillBackend, SceneLocator]]:
    arm: RtdeArm = make_arm()
    safe = SafeArm(arm, limits_for(), LOG, forward_kinematics=fk, approval_timeout_s=30.0)
    locator = SceneLocator(PLACE_CATEGORIES, use_place_points=True)
    locator.update(perceived(robot))
    yield ArmSkillBackend(safe, locator, pick_config, LOG, approval_timeout_s=30.0), locator


def kinematic(limits: SafetyLimits) -> tuple[SimBackend, TabletopWorld]:
    objects = [(n, (x, y, 0.02 if c == "block" else 0.0)) for n, x, y, c in LAYOUT]
    w = world_with([*objects, ("blue block", (0.45, 0.10, 0.06))], reach=LimitsReach(limits))
    return SimBackend(w, LOG, phase_duration_s=0.0), w


def run(backend: SimBackend | ArmSkillBackend, obj: str, target: str) -> tuple[SkillOutcome, list[SkillState]]:
    states: list[SkillState] = []
    out = backend.execute("pick_place", [obj, target], lambda s, _t: states.append(s), threading.Event())
    return out, states


CASES = [
    ("red bowl", "middle", SkillError.PRECONDITION_FAILED,
     "not_pickable: I cannot pick up the red bowl because I can only put things on the red bowl"),
    ("green block", "green block", SkillError.PRECONDITION_FAILED,
     "same_object: I cannot place the green block on the green block because nothing can be placed on itself"),
    ("red block", "red bowl", SkillError.PRECONDITION_FAILED,
     "not_clear: I cannot pick up the red block because the blue block is on top of it"),
    ("far block", "red bowl", SkillError.OUT_OF_LIMITS,
     "not_reachable: I cannot pick up the far block because the far block is out of my reach"),
    ("green block", "far block", SkillError.OUT_OF_LIMITS,
     "not_reachable: I cannot place the green block on the far block because the far block is out of my reach"),
]


@pytest.mark.parametrize("obj, target, error, line", CASES)
def test_both_backends_refuse_alike_and_nothing_moves(arm_backend: tuple[ArmSkillBackend, SceneLocator],
                                                     robot: FakeUrController, limits_for,  # type: ignore[no-untyped-def]
                                                     obj: str, target: str, error: SkillError, line: str) -> None:
    sim, world = kinematic(limits_for())
    before = [(o.name, o.x, o.y, o.z) for o in world.objects]
    k_out, k_states = run(sim, obj, target)
    a_out, a_states = run(arm_backend[0], obj, target)
    assert (k_out.error, k_out.failed_precondition) == (error, line), k_out
    assert (a_out.error, a_out.failed_precondition) == (error, line), a_out
    assert k_out.message.startswith(line.split(": ", 1)[1]) and a_out.message.startswith(line.split(": ", 1)[1])
    assert "nothing moved" in a_out.message
    assert k_states == [] and a_states == []
    assert robot.motion_commands() == []  # nothing was sent to the fake UR5e
    assert [(o.name, o.x, o.y, o.z) for o in world.objects] == before
    # and the refused instance is not afforded by either
    for backend in (sim, arm_backend[0]):
        affs = {a.args: a.affordance for a in backend.affordances(include_unaffordable=True)}
        assert affs.get((obj, target), 0.0) == 0.0


def test_unknown_names_stay_invalid_arguments(arm_backend: tuple[ArmSkillBackend, SceneLocator],
                                              robot: FakeUrController, limits_for) -> None:  # type: ignore[no-untyped-def]
    sim, _ = kinematic(limits_for())
    for backend in (sim, arm_backend[0]):
        out, _ = run(backend, "purple block", "red bowl")
        assert out.error == SkillError.INVALID_ARGUMENTS and out.failed_precondition == ""
    assert robot.motion_commands() == []


def test_an_occluded_object_is_not_visible(arm_backend: tuple[ArmSkillBackend, SceneLocator],
                                           robot: FakeUrController) -> None:
    backend, locator = arm_backend
    locator.update(perceived(robot, hidden=("green block",)))
    out, _ = run(backend, "green block", "red bowl")
    assert out.error == SkillError.PRECONDITION_FAILED
    assert out.failed_precondition == "not_visible: I cannot pick up the green block because I cannot see the green block"
    out, _ = run(backend, "blue block", "green block")
    assert out.failed_precondition == ("not_visible: I cannot place the blue block on the green block because I "
                                       "cannot see the green block")
    assert robot.motion_commands() == []


def test_a_held_object_blocks_every_pick_until_it_is_released(arm_backend: tuple[ArmSkillBackend, SceneLocator],
                                                             robot: FakeUrController) -> None:
    """A cancel while carrying leaves the block on the suction cup: the next pick_place is hand_full (the
    held block named), nothing is sent, and no pick_place is afforded."""
    backend, _ = arm_backend
    cancel = threading.Event()
    states: list[SkillState] = []
    carrying = threading.Event()

    def feedback(state: SkillState, _text: str) -> None:
        states.append(state)
        if state == SkillState.MOVING_TO_PLACE:
            carrying.set()

    result: list[SkillOutcome] = []
    t = threading.Thread(target=lambda: result.append(
        backend.execute("pick_place", ["green block", "red bowl"], feedback, cancel)))
    t.start()
    assert carrying.wait(10.0)
    robot.set_time_scale(1.0)
    time.sleep(0.05)
    cancel.set()
    t.join(5.0)
    assert result and result[0].error == SkillError.CANCELED, result
    assert robot.held is robot.get("green block")
    sent = len(robot.motion_commands())
    out, fb = run(backend, "blue block", "middle")
    assert out.error == SkillError.PRECONDITION_FAILED and fb == []
    assert out.failed_precondition == "hand_full: I cannot pick up the blue block because I am already holding the green block"
    assert len(robot.motion_commands()) == sent
    assert all(a.affordance == 0.0 for a in backend.affordances(include_unaffordable=True))
