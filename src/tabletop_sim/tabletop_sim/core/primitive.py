"""IM's pick-and-place primitive on the arm API, as the skills use it on the real arm.

hover HOVER above the object, move until contact down, suction on, lift (the vacuum sensor must report
holding), carry to HOVER above the place point, move until contact down, suction off, lift. Used by the
tests and the benchmark; the skills node runs the same sequence over the `arm/command` action.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .arm import ArmController, ArmResult
from .geometry import TOOL_DOWN_QUAT, Pose

HOVER = 0.15  # m above the object's top
DOWN = (0.0, 0.0, -1.0)


@dataclass(frozen=True)
class Speeds:
    linear: float = 0.5  # m/s
    acceleration: float = 2.0  # m/s^2
    contact: float = 0.1  # m/s, approach speed of the moves until contact
    max_travel: float = 0.3  # m, longest move until contact


@dataclass
class PickPlaceOutcome:
    picked: bool = False  # the vacuum held the object after lifting
    placed: bool = False  # released at the place point
    steps: list[tuple[str, ArmResult]] = field(default_factory=list)

    @property
    def failure(self) -> str:
        """The first failed step and its message, or "" if every step succeeded."""
        bad = next(((n, r) for n, r in self.steps if not r.ok), None)
        return f"{bad[0]}: {bad[1].error.name}: {bad[1].message}" if bad else ""


def pick_and_place(
    arm: ArmController,
    pick: tuple[float, float, float],
    place: tuple[float, float, float],
    speeds: Speeds = Speeds(),
) -> PickPlaceOutcome:
    """Pick the object whose top is at `pick` (x, y, z in m, base_link) and place it with its bottom at
    about `place` (the top of what it goes on). Stops at the first failed step or a pick that does not
    hold (the suction is switched off then)."""
    out = PickPlaceOutcome()

    def run(name: str, result: ArmResult) -> bool:
        out.steps.append((name, result))
        return result.ok

    above_pick = Pose((pick[0], pick[1], pick[2] + HOVER), TOOL_DOWN_QUAT)
    above_place = Pose((place[0], place[1], place[2] + HOVER), TOOL_DOWN_QUAT)
    v, a = speeds.linear, speeds.acceleration
    if not (run("hover", arm.move_linear(above_pick, v, a))
            and run("descend", arm.move_until_contact(DOWN, speeds.contact, speeds.max_travel))
            and run("suction on", arm.set_suction(True))
            and run("lift", arm.move_linear(above_pick, v, a))):
        arm.set_suction(False)
        return out
    if not out.steps[-1][1].holding:
        run("suction off", arm.set_suction(False))
        return out
    out.picked = True
    if (run("carry", arm.move_linear(above_place, v, a))
            and run("descend", arm.move_until_contact(DOWN, speeds.contact, speeds.max_travel))
            and run("suction off", arm.set_suction(False))):
        out.placed = True
        run("retreat", arm.move_linear(above_place, v, a))
    return out
