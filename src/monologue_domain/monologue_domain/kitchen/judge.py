"""Success of a kitchen skill judged on the world state after it (no rclpy).

The engineered success detector of a simulated kitchen ("Engineered success detectors can operate
on ground-truth state in simulation", IM §3.3): each skill's effect is checked on the KitchenState
after the skill, e.g. from a scene description with `kitchen.scene.state_from_scene`. The household
(kitchen.household) has its own rules, chosen by the state.
"""
from __future__ import annotations

from collections.abc import Sequence

from .layout import DRAWERS, DRAWERS_LOCATION, USER, object_type
from .skills import SKILLS, skill_text
from .state import KitchenState


def judge(skill: str, args: Sequence[str], after: KitchenState,
          drawers: Sequence[str] = DRAWERS) -> tuple[bool, str]:
    """(success, explanation) of `skill(args)` given the state after it. A household state (one with
    states["robot"], the robot's posture: kitchen.household) is judged by the household's rules."""
    if "robot" in after.states:
        from .household import judge_household

        return judge_household(skill, args, after)
    if skill not in SKILLS or len(args) != SKILLS[skill][0]:
        return False, f"no kitchen rule for {skill}({', '.join(args)})"
    a = tuple(args)
    text = skill_text(skill, a)
    where = after.object_locations
    mine = [o for o in where if o == a[0] or object_type(o) == a[0]] if a else []
    if skill in ("find", "pick_up", "put_down", "put_in_drawer") and not mine:
        return False, f"{text}: there is no {a[0]} in the scene"
    held = after.holding if after.holding in mine else None
    if skill == "find":
        places = {DRAWERS_LOCATION if where[o] in drawers else where[o] for o in mine}
        ok = held is not None or after.robot_location in places
        return ok, f"{text}: the robot is at the {after.robot_location}, the {a[0]} at the {', '.join(sorted(places))}"
    if skill == "go_to":
        ok = after.robot_location == a[0]
        return ok, f"{text}: the robot is at the {after.robot_location}"
    if skill == "pick_up":
        return held is not None, f"{text}: the hand holds {'the ' + after.holding if after.holding else 'nothing'}"
    if skill == "put_down":
        ok = held is None and any(where[o] == after.robot_location for o in mine)
        hand = "it is still in the hand" if held else "the hand is empty"
        return ok, f"{text}: {hand}, the robot at the {after.robot_location}"
    if skill == "bring_to_user":
        ok = after.robot_location == USER and after.holding is not None
        return ok, (f"{text}: the robot is at the {after.robot_location} holding "
                    f"{'the ' + after.holding if after.holding else 'nothing'}")
    if skill in ("open_drawer", "close_drawer"):
        is_open = a[0] in after.open_containers
        ok = is_open == (skill == "open_drawer")
        return ok, f"{text}: the {a[0]} is {'open' if is_open else 'closed'}"
    # put_in_drawer
    ok = held is None and any(where[o] == a[1] for o in mine)
    return ok, f"{text}: {'it is still in the hand' if held else 'the hand is empty'}"


__all__ = ["judge"]
