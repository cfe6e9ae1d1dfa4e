"""A SkillBackend for a real or simulated arm: IM's scripted suction pick-and-place (IM §4.2, A.2).

pick_place(object, target): move `hover_height` (15 cm) above the object, descend slowly until
contact (about 5 N), switch suction on, lift, move above the target, descend until contact,
release, lift. home(): joint move to the configured home joints. Before the first motion,
pick_place's preconditions (monologue_domain.tabletop_preconditions, shared with the kinematic world:
pickable, not on itself, suction cup free, visible, nothing on top, reachable within this arm's safety
limits) are checked and every waypoint is checked against the safety limits, so a refused skill moves
nothing. Positions are metres in the robot base frame.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from monologue_domain.scene import SceneObject
from monologue_domain.tabletop_preconditions import TableThing, check_pick_place, unknown_argument

from .arm import ArmFault, FaultKind, MotionInterrupted, MotionRefused, Refusal, TcpPose, Vector3
from .backend import FeedbackFn
from .safety import Approval, ApprovalGate, SafeArm, SkillRule
from .types import Affordance, ObjectState, SkillError, SkillOutcome, SkillRejected, SkillState

DOWN: Vector3 = (0.0, 0.0, -1.0)
PICK_PLACE = SkillRule("pick_place", ("object", "target"))
HOME = SkillRule("home")
SKILL_RULES = (PICK_PLACE, HOME)


class ObjectLocator(Protocol):
    """Where things are: from perception's scene description on the robot, from the simulator in sim."""

    def position(self, name: str) -> Vector3 | None:
        """Centre (pick point) of `name` in the base frame (m), or None if it is not known now."""
        ...

    def place_position(self, name: str) -> Vector3 | None:
        """Where to put things onto `name` in the base frame (m), or None if it is not known now."""
        ...

    def objects(self) -> list[str]:
        """Visible objects that may be picked."""
        ...

    def places(self) -> list[str]:
        """Place targets that are not pickable: plates, bowls, named table locations."""
        ...

    def things(self) -> dict[str, TableThing]:
        """Everything known for the preconditions: visible and remembered (occluded) entries, with
        their pick points (m) and whether they are pickable."""
        ...

    def wait_until_ready(self, timeout_s: float) -> bool:
        """Wait (at most timeout_s, s) until the first scene description arrived; True if it has."""
        ...


SceneEntry = SceneObject  # one thing in a scene description: pick / place point in the base frame, m


class SceneLocator:
    """ObjectLocator over the latest scene description. Thread-safe.

    Visible entries whose category is in `place_categories` are place targets only; every other
    visible entry is a pickable object (and a place target: stacking). Remembered but occluded
    entries are neither (their positions may be stale); the preconditions see them as not visible.
    """

    def __init__(self, place_categories: Sequence[str], use_place_points: bool) -> None:
        self._place_categories = frozenset(place_categories)
        self._use_place_points = use_place_points
        self._lock = threading.Lock()
        self._entries: dict[str, SceneEntry] = {}
        self._known: dict[str, SceneEntry] = {}  # visible and remembered
        self._ready = threading.Event()

    def update(self, entries: Sequence[SceneEntry]) -> None:
        with self._lock:
            self._entries = {e.name: e for e in entries if e.visible}
            self._known = {e.name: e for e in entries}
        self._ready.set()

    def things(self) -> dict[str, TableThing]:
        with self._lock:
            known = list(self._known.values())
        return {e.name: TableThing(e.name, e.category, e.position, visible=e.visible,
                                   pickable=e.category not in self._place_categories) for e in known}

    def wait_until_ready(self, timeout_s: float) -> bool:
        return self._ready.wait(timeout_s)

    def position(self, name: str) -> Vector3 | None:
        with self._lock:
            entry = self._entries.get(name)
        return entry.position if entry is not None else None

    def place_position(self, name: str) -> Vector3 | None:
        """Where to place onto `name`: its place point if perception gave one, else its position (m)."""
        with self._lock:
            entry = self._entries.get(name)
        if entry is None:
            return None
        return entry.place_point if entry.place_point is not None and self._use_place_points else entry.position

    def objects(self) -> list[str]:
        with self._lock:
            return [e.name for e in self._entries.values() if e.category not in self._place_categories]

    def places(self) -> list[str]:
        with self._lock:
            return [e.name for e in self._entries.values() if e.category in self._place_categories]


@dataclass(frozen=True)
class PickPlaceConfig:
    """Parameters of the scripted primitive: the skills node's `<backend>.*` pick-and-place parameters
    (defaults in config/robots/*.yaml only)."""

    hover_height: float  # m above the pick / place point (IM §4.2)
    orientation: Vector3  # rad, TCP rotation vector at pick and place (tool z down)
    speed: float  # m/s, travel moves
    acceleration: float  # m/s^2, travel moves
    contact_speed: float  # m/s, slow descent until contact
    contact_margin: float  # m searched below the expected pick / place point
    joint_speed: float  # rad/s, home move
    joint_acceleration: float  # rad/s^2, home move
    home_joints: tuple[float, ...]  # rad; empty = no home skill
    grip_delay_s: float  # s for the vacuum to build up before lifting
    release_delay_s: float  # s for the vacuum to vent before lifting
    check_grasp: bool  # after lifting, fail the skill if holding() is False
    return_home: bool  # end pick_place at home_joints (a wrist camera then sees the workspace again)

    def __post_init__(self) -> None:
        for name in ("hover_height", "speed", "acceleration", "contact_speed", "joint_speed",
                     "joint_acceleration"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0")
        for name in ("contact_margin", "grip_delay_s", "release_delay_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        if self.home_joints and len(self.home_joints) != 6:
            raise ValueError(f"home_joints needs 6 values (rad), got {len(self.home_joints)}")


@dataclass(frozen=True)
class _Plan:
    obj: str
    target: str
    pick_hover: TcpPose
    pick_travel: float  # m, longest descent onto the object
    place_hover: TcpPose
    place_travel: float  # m


class _Step(Exception):
    """Internal: a step ended the skill with this outcome."""

    def __init__(self, error: SkillError, message: str, failed_precondition: str = "") -> None:
        super().__init__(message)
        self.error, self.message, self.failed_precondition = error, message, failed_precondition


class ArmSkillBackend:
    """SkillBackend over a SafeArm and an ObjectLocator."""

    RESTOP_PERIOD_S = 0.05  # s between repeated stop() calls after a cancel
    SCENE_WAIT_S = 5.0  # s to wait for the first scene description (start-up) before answering
    ARM_WAIT_S = 5.0  # s to wait for a disconnected arm to connect before answering affordances

    def __init__(
        self,
        arm: SafeArm,
        locator: ObjectLocator,
        config: PickPlaceConfig,
        logger: logging.Logger,
        skill_approval: ApprovalGate | None = None,
        *,
        approval_timeout_s: float,
    ) -> None:
        allowed = {r.name for r in arm.limits.skills}
        unknown = allowed - {r.name for r in SKILL_RULES}
        if unknown:
            raise ValueError(f"the allow-list names skills this backend does not have: {sorted(unknown)}")
        if config.return_home and not config.home_joints:
            raise ValueError("return_home needs home_joints")
        if "home" in allowed and not config.home_joints:
            raise ValueError("home is allowed but no home_joints are configured")
        if config.home_joints:
            try:
                arm.check_joint_target(config.home_joints, config.joint_speed, config.joint_acceleration)
            except MotionRefused as e:
                raise ValueError(f"home_joints / joint speeds are refused by the safety limits: {e.reason}") from e
        try:
            arm.limits.check_motion_settings(config.speed, config.acceleration, config.contact_speed)
        except MotionRefused as e:
            raise ValueError(f"the pick-and-place speeds are refused by the safety limits: {e.reason}") from e
        self._arm = arm
        self._locator = locator
        self._cfg = config
        self._log = logger
        self._approval = Approval(skill_approval, approval_timeout_s)
        self._busy = threading.Lock()
        self._held_name: str | None = None  # what the suction cup took last, while it may still hold it

    # ----- SkillBackend: queries ------------------------------------------------------------
    def skill_names(self) -> Sequence[str]:
        return tuple(r.name for r in self._arm.limits.skills)

    def objects(self) -> list[str]:
        return self._locator.objects()

    def locations(self) -> list[str]:
        return self._locator.places()

    def ground_truth(self) -> list[ObjectState] | None:
        return None

    def affordances(self, include_unaffordable: bool = False) -> list[Affordance]:
        """pick_place(object, target) for every visible object and target: 1.0 when the whole motion is
        within the limits and the arm can move, else 0.0. home() is an operator skill and not offered."""
        if "pick_place" not in self.skill_names():
            return []
        if not self._locator.wait_until_ready(self.SCENE_WAIT_S):  # right after start-up
            self._log.warning("no scene description within %.1f s: no pick_place is affordable", self.SCENE_WAIT_S)
        status = self._arm.status()
        deadline = time.monotonic() + self.ARM_WAIT_S
        while not status.connected and not self._arm.estop_latched and time.monotonic() < deadline:
            time.sleep(0.1)  # s; a (re)connecting arm: a restarted simulator's server not discovered yet
            status = self._arm.status()
        if not status.connected:
            self._log.warning("the arm is not connected (%s): no pick_place is affordable", status.detail)
        can_move = not self._arm.estop_latched and status.ok
        held = self._held_now() if can_move else None
        objects = self._locator.objects()
        out: list[Affordance] = []
        for obj in objects:
            for target in objects + self._locator.places():
                if target == obj:
                    continue
                value = 0.0
                if can_move:
                    try:
                        self._plan(obj, target, held)
                        value = 1.0
                    except (SkillRejected, MotionRefused):
                        value = 0.0
                if value > 0.0 or include_unaffordable:
                    out.append(Affordance("pick_place", (obj, target), value))
        return out

    # ----- SkillBackend: execution ----------------------------------------------------------
    def execute(
        self, skill: str, args: Sequence[str], feedback: FeedbackFn, cancel: threading.Event
    ) -> SkillOutcome:
        start = time.monotonic()

        def outcome(error: SkillError, message: str, failed_precondition: str = "") -> SkillOutcome:
            if error != SkillError.NONE:
                self._log.warning("%s(%s) failed: %s: %s", skill, ", ".join(args), error.name, message)
            return SkillOutcome(error, message, failed_precondition, time.monotonic() - start)

        try:
            self._arm.limits.check_skill(skill, args)
        except SkillRejected as e:
            return outcome(e.error, e.message, e.failed_precondition)
        if not self._busy.acquire(blocking=False):
            return outcome(SkillError.BUSY, "another skill is running")
        done = threading.Event()
        watcher = threading.Thread(target=self._stop_on_cancel, args=(cancel, done), name="skill-cancel",
                                   daemon=True)
        try:
            if self._arm.estop_latched:
                return outcome(SkillError.ESTOP_ACTIVE, f"the software e-stop is latched ({self._arm.estop_reason})")
            watcher.start()
            if skill == "pick_place":
                message = self._pick_place(args[0], args[1], feedback, cancel)
            else:
                message = self._home(feedback, cancel)
            feedback(SkillState.DONE, message)
            self._log.info("%s(%s): %s", skill, ", ".join(args), message)
            return outcome(SkillError.NONE, message)
        except _Step as e:
            return outcome(e.error, e.message, e.failed_precondition)
        except Exception as e:  # a bug or an unexpected library error: stop, report, keep serving
            self._log.exception("%s(%s) raised", skill, ", ".join(args))
            try:
                self._arm.stop()
            except Exception as stop_error:
                self._log.error("stop() failed: %s", stop_error)
            return outcome(SkillError.EXECUTION_FAILED, f"internal error: {type(e).__name__}: {e}; the arm was stopped")
        finally:
            done.set()
            self._busy.release()

    def _stop_on_cancel(self, cancel: threading.Event, done: threading.Event) -> None:
        """On cancel, stop the arm; repeat until the skill returns, so a command that was being sent
        at the moment of the cancel is stopped too."""
        while not done.is_set():
            if cancel.wait(0.01):
                self._log.warning("skill cancelled: stopping the arm")
                while not done.is_set():
                    try:
                        self._arm.stop()
                    except Exception as e:
                        self._log.error("stop() after cancel failed: %s", e)
                    done.wait(self.RESTOP_PERIOD_S)
                return

    # ----- planning -------------------------------------------------------------------------
    def _held_now(self) -> str | None:
        """What the suction cup holds now ("something" if it is not known which object), or None; None too
        when the arm cannot be read (the skill's first motion then reports the fault)."""
        try:
            holding = self._arm.holding()
        except ArmFault:
            return None
        if not holding:
            self._held_name = None
            return None
        return self._held_name or "something"

    def unreachable(self, thing: TableThing, place: bool) -> str | None:
        """tabletop_preconditions.Reach from this arm's own safety limits: why the hover pose or the
        guarded descent at `thing`'s pick (place) point would be refused, or None. Refusals that are
        not about the position (speeds: a configuration error) propagate as MotionRefused."""
        try:
            self._hover_and_travel(thing.name, place)
        except SkillRejected:
            return None  # not visible: the preconditions say so first
        except MotionRefused as e:
            if e.refusal in (Refusal.WORKSPACE, Refusal.MIN_HEIGHT, Refusal.CONTACT_TRAVEL, Refusal.INVALID_TARGET):
                return e.reason
            raise
        return None

    def _plan(self, obj: str, target: str, held: str | None) -> _Plan:
        """Waypoints of pick_place(obj, target), every one checked against the limits, after the tabletop's
        preconditions (monologue_domain.tabletop_preconditions; raises SkillRejected / MotionRefused)."""
        self._locator.wait_until_ready(self.SCENE_WAIT_S)
        things = self._locator.things()
        unknown = unknown_argument(things, obj, target)
        if unknown is not None:
            raise unknown
        violated = check_pick_place(things, obj, target, held=held, reach=self)
        if violated is not None:
            raise violated.rejected()
        pick_hover, pick_travel = self._hover_and_travel(obj)
        place_hover, place_travel = self._hover_and_travel(target, place=True)
        return _Plan(obj, target, pick_hover, pick_travel, place_hover, place_travel)

    def _descent(self, planned: float) -> float:
        """The planned descent (m), shortened so it ends at the minimum height from where the TCP
        actually is (a hover pose is reached only to within the controller's tolerance)."""
        room = self._arm.tcp_pose().z - self._arm.limits.min_height
        return max(min(planned, room), 1e-4)

    def _hover_and_travel(self, name: str, place: bool = False) -> tuple[TcpPose, float]:
        p = self._locator.place_position(name) if place else self._locator.position(name)
        if p is None:
            raise SkillRejected(SkillError.PRECONDITION_FAILED, f"the position of the {name} is not known",
                                failed_precondition=f"the {name} is visible")
        c, lim = self._cfg, self._arm.limits
        hover = TcpPose(p[0], p[1], p[2] + c.hover_height, *c.orientation)
        lim.check_linear(hover, c.speed, c.acceleration)
        travel = min(c.hover_height + c.contact_margin, hover.z - lim.min_height, lim.max_contact_travel)
        if travel <= 0:
            raise MotionRefused(Refusal.MIN_HEIGHT, f"no room to descend onto the {name} above the minimum height")
        lim.check_contact(hover, DOWN, c.contact_speed, travel)
        return hover, travel

    # ----- skills ---------------------------------------------------------------------------
    def _pick_place(self, obj: str, target: str, feedback: FeedbackFn, cancel: threading.Event) -> str:
        c = self._cfg
        try:
            plan = self._plan(obj, target, self._held_now())
        except SkillRejected as e:
            raise _Step(e.error, e.message, e.failed_precondition) from e
        except MotionRefused as e:
            raise _Step(SkillError.OUT_OF_LIMITS, f"pick_place({obj}, {target}) refused, nothing moved: "
                                                  f"{e.reason}") from e
        self._ask_approval(f"pick_place({obj}, {target}): hover at {plan.pick_hover}, descend at most "
                           f"{plan.pick_travel:.3f} m, suction on, lift, hover at {plan.place_hover}, descend at "
                           f"most {plan.place_travel:.3f} m, release, lift")
        held = False

        def run(phase: str, action: Callable[[], object]) -> object:
            return self._guarded(phase, action, cancel, obj if held else "")

        feedback(SkillState.MOVING_TO_PICK, f"moving {c.hover_height * 100:.0f} cm above the {obj}")
        run(f"moving above the {obj}", lambda: self._arm.move_linear(plan.pick_hover, c.speed, c.acceleration))
        feedback(SkillState.PICKING, f"descending to the {obj} and switching suction on")
        touched = run(f"descending to the {obj}",
                      lambda: self._arm.move_until_contact(DOWN, c.contact_speed, self._descent(plan.pick_travel)))
        if not touched:
            run(f"lifting above the {obj}", lambda: self._arm.move_linear(plan.pick_hover, c.speed, c.acceleration))
            raise _Step(SkillError.EXECUTION_FAILED,
                        f"no contact with the {obj} within {plan.pick_travel * 100:.0f} cm of descent")
        run("switching suction on", lambda: self._arm.set_suction(True))
        held = True
        self._held_name = obj
        self._pause(c.grip_delay_s, cancel, obj)
        run(f"lifting the {obj}", lambda: self._arm.move_linear(plan.pick_hover, c.speed, c.acceleration))
        if c.check_grasp and not self._arm.holding():
            run("switching suction off", lambda: self._arm.set_suction(False))
            raise _Step(SkillError.EXECUTION_FAILED, f"the suction cup could not lift the {obj}")
        feedback(SkillState.MOVING_TO_PLACE, f"carrying the {obj} to {c.hover_height * 100:.0f} cm above the {target}")
        run(f"carrying the {obj} above the {target}",
            lambda: self._arm.move_linear(plan.place_hover, c.speed, c.acceleration))
        feedback(SkillState.PLACING, f"lowering the {obj} onto the {target} and releasing suction")
        touched = run(f"lowering the {obj} onto the {target}",
                      lambda: self._arm.move_until_contact(DOWN, c.contact_speed, self._descent(plan.place_travel)))
        if not touched:
            self._log.warning("no contact while placing the %s on the %s; releasing %.0f cm lower than planned",
                              obj, target, c.contact_margin * 100)
        run("switching suction off", lambda: self._arm.set_suction(False))
        held = False
        self._held_name = None
        self._pause(c.release_delay_s, cancel, "")
        feedback(SkillState.RETREATING, "lifting to hover height")
        run("lifting after the release", lambda: self._arm.move_linear(plan.place_hover, c.speed, c.acceleration))
        if c.return_home:
            run("moving home", lambda: self._arm.move_joints(c.home_joints, c.joint_speed, c.joint_acceleration))
        return f"placed the {obj} on the {target}"

    def _home(self, feedback: FeedbackFn, cancel: threading.Event) -> str:
        c = self._cfg
        self._ask_approval(f"home: joint move to {list(c.home_joints)} rad")
        feedback(SkillState.RETREATING, "moving to the home joint positions")
        self._guarded("moving home", lambda: self._arm.move_joints(c.home_joints, c.joint_speed,
                                                                    c.joint_acceleration), cancel, "")
        return "the arm is at home"

    # ----- helpers --------------------------------------------------------------------------
    def _ask_approval(self, request: str) -> None:
        if not self._approval.granted(request):
            raise _Step(SkillError.PRECONDITION_FAILED, "a person did not approve the skill; nothing moved",
                        failed_precondition="a person approves the motion")

    def _pause(self, seconds: float, cancel: threading.Event, held: str) -> None:
        if seconds > 0 and cancel.wait(seconds):
            raise _Step(SkillError.CANCELED, self._with_held("cancelled; motion stopped", held))

    def _guarded(self, phase: str, action: Callable[[], object], cancel: threading.Event, held: str) -> object:
        """Run one arm command, turning arm errors into the skill's outcome."""
        if cancel.is_set():
            raise _Step(SkillError.CANCELED, self._with_held(f"cancelled before {phase}; motion stopped", held))
        try:
            return action()
        except MotionInterrupted as e:
            if cancel.is_set():
                raise _Step(SkillError.CANCELED, self._with_held(f"cancelled while {phase}; motion stopped",
                                                                 held)) from e
            if self._arm.estop_latched:
                raise _Step(SkillError.ESTOP_ACTIVE, self._with_held(
                    f"software e-stop while {phase} ({self._arm.estop_reason}); motion stopped", held)) from e
            raise _Step(SkillError.ROBOT_FAULT, self._with_held(f"motion stopped while {phase}: {e}", held)) from e
        except MotionRefused as e:
            if e.refusal == Refusal.ESTOP:
                raise _Step(SkillError.ESTOP_ACTIVE, self._with_held(f"{phase} refused: {e.reason}", held)) from e
            if e.refusal == Refusal.NOT_APPROVED:
                raise _Step(SkillError.PRECONDITION_FAILED, self._with_held(f"{phase} refused: {e.reason}", held),
                            failed_precondition="a person approves the motion") from e
            raise _Step(SkillError.OUT_OF_LIMITS, self._with_held(f"{phase} refused: {e.reason}", held)) from e
        except ArmFault as e:
            error = SkillError.TIMEOUT if e.kind == FaultKind.TIMEOUT else SkillError.ROBOT_FAULT
            raise _Step(error, self._with_held(f"{e} (while {phase})", held)) from e

    @staticmethod
    def _with_held(message: str, held: str) -> str:
        return f"{message}; the {held} is still held by the suction cup" if held else message
