"""The tabletop's pick_place preconditions in CAPE's form (monologue_domain.tabletop_preconditions): every
proposition, their order, the failed_precondition line, the codes, and the kinematic world's use of them."""
from __future__ import annotations

import pytest

from monologue_domain.kinematic_world import world_with
from monologue_domain.kitchen.skills import PROPOSITIONS as KITCHEN
from monologue_domain.skills import SkillError, SkillRejected
from monologue_domain.tabletop_preconditions import (
    PROPOSITIONS,
    TableThing,
    TabletopPrecondition,
    check_pick_place,
    things_on_top,
    unknown_argument,
)


def scene(**changes: TableThing) -> dict[str, TableThing]:
    things = {
        "red block": TableThing("red block", "block", (0.40, 0.10, 0.02)),
        "blue block": TableThing("blue block", "block", (0.60, -0.10, 0.02)),
        "red bowl": TableThing("red bowl", "bowl", (0.55, 0.20, 0.0), pickable=False),
        "middle": TableThing("middle", "location", (0.50, 0.0, 0.0), pickable=False),
    }
    things.update(changes)
    return things


class Box:
    """Reach: x beyond `x_max` (m) is out of the arm's limits."""

    def __init__(self, x_max: float) -> None:
        self.x_max = x_max
        self.asked: list[tuple[str, bool]] = []

    def unreachable(self, thing: TableThing, place: bool) -> str | None:
        self.asked.append((thing.name, place))
        x = thing.position[0]
        return f"x = {x:.3f} m is outside the workspace" if x > self.x_max else None


def check(things: dict[str, TableThing], obj: str, target: str, held: str | None = None,
          reach: Box | None = None) -> TabletopPrecondition | None:
    return check_pick_place(things, obj, target, held=held, reach=reach)


def test_nothing_violated() -> None:
    assert check(scene(), "red block", "red bowl", reach=Box(0.7)) is None
    assert check(scene(), "red block", "blue block") is None


@pytest.mark.parametrize("things, obj, target, held, reach, line", [
    (scene(), "red bowl", "middle", None, None,
     "not_pickable: I cannot pick up the red bowl because I can only put things on the red bowl"),
    (scene(), "red block", "red block", None, None,
     "same_object: I cannot place the red block on the red block because nothing can be placed on itself"),
    (scene(), "red block", "red bowl", "blue block", None,
     "hand_full: I cannot pick up the red block because I am already holding the blue block"),
    (scene(), "red block", "red bowl", "something", None,
     "hand_full: I cannot pick up the red block because I am already holding something"),
    (scene(**{"red block": TableThing("red block", "block", (0.4, 0.1, 0.02), visible=False)}),
     "red block", "middle", None, None, "not_visible: I cannot pick up the red block because I cannot see the red block"),
    (scene(**{"red bowl": TableThing("red bowl", "bowl", (0.55, 0.2, 0.0), visible=False, pickable=False)}),
     "red block", "red bowl", None, None,
     "not_visible: I cannot place the red block on the red bowl because I cannot see the red bowl"),
    (scene(**{"blue block": TableThing("blue block", "block", (0.41, 0.11, 0.06))}), "red block", "middle", None,
     None, "not_clear: I cannot pick up the red block because the blue block is on top of it"),
    (scene(), "blue block", "middle", None, Box(0.55),
     "not_reachable: I cannot pick up the blue block because the blue block is out of my reach"),
    (scene(), "red block", "red bowl", None, Box(0.5),
     "not_reachable: I cannot place the red block on the red bowl because the red bowl is out of my reach"),
])
def test_each_proposition_and_its_line(things: dict[str, TableThing], obj: str, target: str, held: str | None,
                                       reach: Box | None, line: str) -> None:
    found = check(things, obj, target, held, reach)
    assert found is not None and found.text == line
    prop, _, explicit = line.partition(": ")
    assert found.proposition == prop and found.explicit == explicit
    assert found.implicit == explicit.split(" because ")[0]
    assert found.difficulty == PROPOSITIONS[prop][0] and 1 <= found.difficulty <= 4


def test_codes_and_the_refusal() -> None:
    covered = check(scene(**{"blue block": TableThing("blue block", "block", (0.4, 0.1, 0.06))}), "red block", "middle")
    assert covered is not None and covered.error == SkillError.PRECONDITION_FAILED
    e = covered.rejected()
    assert isinstance(e, SkillRejected) and e.error == SkillError.PRECONDITION_FAILED
    assert e.failed_precondition == covered.text and e.message.startswith(covered.explicit)
    far = check(scene(), "blue block", "middle", reach=Box(0.5))
    assert far is not None and far.error == SkillError.OUT_OF_LIMITS  # the interface's code, nothing moved
    assert "x = 0.600 m is outside the workspace" in far.rejected().message
    assert far.rejected().failed_precondition == far.text


def test_first_violation_wins_in_a_fixed_order() -> None:
    hidden_and_covered = scene(**{"red block": TableThing("red block", "block", (0.4, 0.1, 0.02), visible=False),
                                  "blue block": TableThing("blue block", "block", (0.4, 0.1, 0.06))})
    found = check(hidden_and_covered, "red block", "middle", held="something")
    assert found is not None and found.proposition == "hand_full"
    found = check(hidden_and_covered, "red block", "middle")
    assert found is not None and found.proposition == "not_visible"
    reach = Box(0.0)
    assert check(scene(), "red bowl", "red bowl", reach=reach) is not None and reach.asked == []  # no motion asked


def test_stacks_from_positions_or_from_the_backend() -> None:
    stack = scene(**{"blue block": TableThing("blue block", "block", (0.42, 0.11, 0.06)),
                     "green block": TableThing("green block", "block", (0.41, 0.09, 0.10))})
    assert things_on_top(stack, "red block") == ["blue block", "green block"]
    found = check(stack, "red block", "middle")
    assert found is not None and found.reason == "the blue block and the green block are on top of it"
    # beside it (5 cm apart in x-y) or level with it is not on it
    beside = scene(**{"blue block": TableThing("blue block", "block", (0.45, 0.10, 0.06))})
    level = scene(**{"blue block": TableThing("blue block", "block", (0.41, 0.10, 0.03))})
    assert things_on_top(beside, "red block") == [] and things_on_top(level, "red block") == []
    # a backend that knows (ground truth) says so itself
    told = scene(**{"red block": TableThing("red block", "block", (0.4, 0.1, 0.02), on_top=("red cup",))})
    assert things_on_top(told, "red block") == ["red cup"]


def test_unknown_names_are_invalid_arguments_not_preconditions() -> None:
    e = unknown_argument(scene(), "purple block", "middle")
    assert e is not None and e.error == SkillError.INVALID_ARGUMENTS and "purple block" in e.message
    e = unknown_argument(scene(), "red block", "roof")
    assert e is not None and e.error == SkillError.INVALID_ARGUMENTS
    assert unknown_argument(scene(), "red block", "middle") is None


def test_levels_agree_with_the_kitchen_where_the_propositions_are_shared() -> None:
    for prop in set(PROPOSITIONS) & set(KITCHEN):
        assert PROPOSITIONS[prop][0] == KITCHEN[prop][0], prop


def test_the_kinematic_world_refuses_with_the_shared_lines() -> None:
    w = world_with([("red block", (0.40, 0.10, 0.02)), ("blue block", (0.60, -0.10, 0.02)),
                    ("red bowl", (0.55, 0.20, 0.0))])
    w.pick_place("blue block", "red block")
    with pytest.raises(SkillRejected) as e:
        w.pick_place("red block", "red bowl")
    assert e.value.error == SkillError.PRECONDITION_FAILED
    assert e.value.failed_precondition == "not_clear: I cannot pick up the red block because the blue block is on top of it"
    with pytest.raises(SkillRejected) as e:
        w.check_pick_place("red bowl", "middle")
    assert e.value.failed_precondition.startswith("not_pickable: ")
    with pytest.raises(SkillRejected) as e:
        w.check_pick_place("purple block", "middle")
    assert e.value.error == SkillError.INVALID_ARGUMENTS
    w.reach = Box(0.5)
    with pytest.raises(SkillRejected) as e:
        w.check_pick_place("blue block", "top side")  # the blue block sits on the red block at x = 0.40
    assert e.value.error == SkillError.OUT_OF_LIMITS
    assert e.value.failed_precondition == ("not_reachable: I cannot place the blue block on the top side because "
                                           "the top side is out of my reach")
    assert w.precondition("blue block", "middle") is None
