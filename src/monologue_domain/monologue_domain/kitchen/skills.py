"""SayCan's kitchen skill families (SC §3.4, SC Listings 1-2) and CAPE-style precondition errors
(no rclpy).

Skill names and their argument counts are what GetAffordances / ExecuteSkill carry; `text` renders
a skill the way the `saycan` and `im_kitchen` prompt profiles do (config/prompts/*.yaml, checked by
a test), for the first-person error messages.

Precondition errors (CAPE §2, requirements_statler_cape_multitalk.md §2.1/§2.3) travel in
ExecuteSkill's `failed_precondition` as one stable line:

    <proposition>: I cannot <skill text> because <reason>
    e.g. "hand_full: I cannot pick up the apple because I am already holding the coke"

`<proposition>` is a key of PROPOSITIONS (which gives the CAPE difficulty level); the part after
": " is CAPE's explicit-cause message (Z_E), and the part before " because " CAPE's implicit-cause
message (Z_I). The skill and arguments are those of the request. `parse_precondition` inverts it.
"""
from __future__ import annotations

from dataclasses import dataclass

# skill name -> (argument count, text as in the saycan profile; {0}/{1} arguments, {a0} article)
SKILLS: dict[str, tuple[int, str]] = {
    "find": (1, "find {a0} {0}"),
    "go_to": (1, "go to the {0}"),
    "pick_up": (1, "pick up the {0}"),
    "put_down": (1, "put down the {0}"),
    "bring_to_user": (0, "bring it to you"),
    "open_drawer": (1, "open the drawer"),  # argument: which drawer ("top drawer")
    "close_drawer": (1, "close the drawer"),
    "put_in_drawer": (2, "put {0} in the drawer"),  # object, drawer
}


def article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def skill_text(skill: str, args: tuple[str, ...] | list[str]) -> str:
    """SayCan's words for a skill instance, e.g. ("pick_up", ["coke"]) -> "pick up the coke"."""
    _, template = SKILLS[skill]
    extra = {f"a{i}": article(a) for i, a in enumerate(args)}
    return template.format(*args, **extra)


# proposition -> (CAPE difficulty level 1-4, the CAPE error type it corresponds to)
# Levels (CAPE Tables III-V): 1 no correction needed, 2 one-step correction, 3 multi-step correction,
# 4 long-term planning with ambiguous resolution. The source disagrees with itself on "open an open
# thing" (its definition says D1, its table D2); the table is followed here.
PROPOSITIONS: dict[str, tuple[int, str]] = {
    "already_holding": (1, "agent is already holding X"),
    "already_there": (1, "agent is already at X"),
    "already_open": (2, "X is opened twice"),
    "already_closed": (2, "X is closed twice"),
    "not_open": (2, "X is not open"),
    "not_near": (3, "agent is not close to X"),
    "not_holding": (3, "agent is not holding X"),
    "hand_empty": (3, "agent is not holding anything"),
    "inside_closed": (4, "X is inside another closed object"),
    "hand_full": (4, "agent does not have a free hand"),
    # the household model's (kitchen.household)
    "sitting": (1, "agent is sitting"),
    "already_sitting": (1, "agent is already sitting"),
    "already_standing": (1, "agent is already standing"),
    "not_grabbable": (1, "X is not movable"),
    "not_openable": (1, "X cannot be opened"),
    "not_receptacle": (1, "X is not a receptacle"),
    "not_switchable": (1, "X is not switchable"),
    "already_on": (2, "X is turned on twice"),
    "already_off": (2, "X is turned off twice"),
    "too_many": (4, "too many things on X"),
    "door_closed": (4, "door between room X and room Y is closed"),
}


# The household's skills (kitchen.household): skill -> (argument count, text)
HOUSEHOLD_SKILLS: dict[str, tuple[int, str]] = {
    "stand_up": (0, "stand up"), "sit_down": (0, "sit down"), "walk_to": (1, "walk to the {0}"),
    "find": (1, "find the {0}"), "pick_up": (1, "pick up the {0}"), "put": (2, "put the {0} on the {1}"),
    "put_in": (2, "put the {0} in the {1}"), "drop": (1, "drop the {0}"), "touch": (1, "touch the {0}"),
    "look_at": (1, "look at the {0}"), "open": (1, "open the {0}"), "close": (1, "close the {0}"),
    "turn_on": (1, "turn on the {0}"), "turn_off": (1, "turn off the {0}"),
}


@dataclass(frozen=True)
class PreconditionError:
    """One violated precondition of a skill instance."""

    skill: str
    args: tuple[str, ...]
    proposition: str  # a key of PROPOSITIONS
    reason: str  # first person, e.g. "I am already holding the coke"

    @property
    def difficulty(self) -> int:
        """CAPE difficulty level, 1-4."""
        return PROPOSITIONS[self.proposition][0]

    @property
    def implicit(self) -> str:
        """CAPE Z_I: "I cannot pick up the apple"."""
        if self.skill in SKILLS and len(self.args) == SKILLS[self.skill][0]:
            return f"I cannot {skill_text(self.skill, self.args)}"
        return f"I cannot {HOUSEHOLD_SKILLS[self.skill][1].format(*self.args)}"

    @property
    def explicit(self) -> str:
        """CAPE Z_E: "I cannot pick up the apple because I am already holding the coke"."""
        return f"{self.implicit} because {self.reason}"

    @property
    def text(self) -> str:
        """The `failed_precondition` line: "<proposition>: <explicit>"."""
        return f"{self.proposition}: {self.explicit}"


def parse_precondition(text: str) -> tuple[str, int, str]:
    """(proposition, difficulty, explicit message) of a `failed_precondition` line; ValueError if
    it is not one."""
    prop, sep, message = text.partition(": ")
    if not sep or prop not in PROPOSITIONS:
        raise ValueError(f"not a kitchen precondition error: {text!r}")
    return prop, PROPOSITIONS[prop][0], message


__all__ = ["HOUSEHOLD_SKILLS", "PROPOSITIONS", "SKILLS", "PreconditionError", "parse_precondition", "skill_text"]
