"""Names of SayCan's kitchen (SC §3.4): objects, locations, containers, skill templates and the object
categories the benchmark instructions refer to. The single source for the world, the benchmark suites
and the prompts (no rclpy).

Several copies of one object (SC Long-Horizon "move three cokes to the trash can") are instances named
`<object>#<n>` ("coke#2"); skills name the object type ("pick up the coke") and act on any instance.
"""
from __future__ import annotations

import re

# SC §3.4: the 15 objects of the chain-of-thought prompt, in its order.
OBJECTS: tuple[str, ...] = (
    "7up", "apple", "tea", "multigrain chips", "kettle chips", "jalapeno chips", "rice chips", "coke",
    "grapefruit soda", "pepsi", "redbull", "energy bar", "lime soda", "sponge", "water bottle",
)
# SC §3.4: the 5 known locations plus the robot's start ("user" is the prompt's "you") and the place in
# front of the drawers of the drawer case study (SC Listing 2: "go to the drawers").
USER, START, DRAWERS = "user", "initial position", "drawers"
PLACES: tuple[str, ...] = ("close counter", "far counter", "table", "trash", USER, START, DRAWERS)
NAV_TARGETS: tuple[str, ...] = ("close counter", "far counter", "table", "trash", DRAWERS)  # "go to the L"
# SC drawer case study (App. E.2): openable containers, at the drawers.
CONTAINERS: tuple[str, ...] = ("top drawer",)
LOCATIONS: tuple[str, ...] = PLACES + CONTAINERS  # where objects can be

# Skill templates (SC §3.4, SC Listing 2, IM §4.3); X is an object, L a location of NAV_TARGETS.
FIND, GO_TO, PICK, PUT = "find a X", "go to the L", "pick up the X", "put down the X"
BRING, OPEN, CLOSE, DONE = "bring it to you", "open the drawer", "close the drawer", "done"
PUT_IN = "put X in the drawer"  # SC Listing 2: "put orange juice in the drawer" (no article)
SKILL_TEMPLATES: tuple[str, ...] = (FIND, GO_TO, PICK, PUT, BRING, OPEN, CLOSE, PUT_IN, DONE)

# Object categories used by the instructions. Where a word is ambiguous every reasonable object is
# accepted (see the comments); the benchmark data refers to these lists by name ("@sodas").
DRINKS = ("7up", "tea", "coke", "grapefruit soda", "pepsi", "redbull", "lime soda", "water bottle")
# Carbonated soft drinks; redbull is an energy drink and not counted as a soda.
SODAS = ("7up", "coke", "grapefruit soda", "pepsi", "lime soda")
CAFFEINATED = ("tea", "coke", "pepsi", "redbull")
SUGARY = ("7up", "coke", "grapefruit soda", "pepsi", "redbull", "lime soda")  # unsweetened tea assumed
CHIPS = ("multigrain chips", "kettle chips", "jalapeno chips", "rice chips")
SNACKS = CHIPS + ("energy bar", "apple")  # the apple counts as a snack too
FOOD = SNACKS
FRUITS = ("apple",)
CLEANING = ("sponge",)
CATEGORIES: dict[str, tuple[str, ...]] = {
    "objects": OBJECTS, "drinks": DRINKS, "sodas": SODAS, "caffeinated": CAFFEINATED, "sugary": SUGARY,
    "chips": CHIPS, "snacks": SNACKS, "food": FOOD, "fruits": FRUITS, "cleaning": CLEANING,
}

_INSTANCE = re.compile(r"^(?P<type>.+?)#(?P<n>[1-9][0-9]*)$")


def object_type(name: str) -> str:
    """'coke#2' -> 'coke'; a plain object name is its own type."""
    m = _INSTANCE.match(name)
    return m.group("type") if m else name


def is_object(name: str) -> bool:
    """An object type or an instance of one ('coke', 'coke#3')."""
    return object_type(name) in OBJECTS


def article(obj: str) -> str:
    """'a' or 'an' for `obj` (SC: a/an mismatches hurt the LLM)."""
    return "an" if obj[:1].lower() in "aeiou" else "a"


def skill_text(template: str, arg: str = "") -> str:
    """The skill's words: skill_text(FIND, 'apple') == 'find an apple'."""
    if template == FIND:
        return f"find {article(arg)} {arg}"
    return template.replace("X", arg).replace("L", arg) if arg else template


def parse_skill(text: str) -> tuple[str, str]:
    """(template, argument) of a skill's words; ValueError naming the skill if it is not in the
    vocabulary (unknown template, object or location)."""
    s = " ".join(text.strip().lower().rstrip(".").split())
    if s in (BRING, OPEN, CLOSE, DONE):
        return s, ""
    if s.startswith("put ") and s.endswith(" in the drawer"):
        arg = s[len("put "):-len(" in the drawer")]
        if arg not in OBJECTS:
            raise ValueError(f"skill {text!r}: unknown object {arg!r}")
        return PUT_IN, arg
    for prefix, template, names in (("find a ", FIND, OBJECTS), ("find an ", FIND, OBJECTS),
                                    ("go to the ", GO_TO, NAV_TARGETS), ("pick up the ", PICK, OBJECTS),
                                    ("put down the ", PUT, OBJECTS)):
        if s.startswith(prefix):
            arg = s[len(prefix):]
            if arg not in names:
                raise ValueError(f"skill {text!r}: unknown {'location' if template == GO_TO else 'object'} "
                                 f"{arg!r}")
            return template, arg
    raise ValueError(f"skill {text!r} is not in the vocabulary {list(SKILL_TEMPLATES)}")
