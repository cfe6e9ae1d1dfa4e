"""parse_action accepts every action syntax of the papers (requirements §7.8, §7.9) and rejects the rest."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner_node.core.parsing import (
    MAX_INPUT_CHARS,
    OutcomeKind,
    ParsedAction,
    ParseOutcome,
    normalize,
    parse_action,
    split_numbered_steps,
)

TABLE_OBJECTS = ["red block", "blue block", "cyan block", "blue bowl", "red bowl", "top left corner"]
TABLE = [
    ("pick_place", (block, target))
    for block in ("red block", "blue block", "cyan block")
    for target in ("red block", "blue block", "cyan block", "blue bowl", "red bowl", "top left corner")
    if block != target
]
KITCHEN_OBJECTS = ["coke", "apple", "energy bar", "dried fruit", "counter", "table", "trash", "orange juice"]
KITCHEN = [
    *[("find", (o,)) for o in ("coke", "apple", "energy bar", "dried fruit")],
    *[("pick_up", (o,)) for o in ("coke", "apple", "energy bar", "dried fruit")],
    *[("put_down", (o,)) for o in ("coke", "apple", "energy bar", "dried fruit")],
    *[("go_to", (o,)) for o in ("counter", "table", "trash")],
    ("bring_to_user", ()),
    ("open_drawer", ()),
    ("close_drawer", ()),
    ("put_in_drawer", ("orange juice",)),
    ("pick_up_from_drawer", ("coke",)),
    ("put_down_on", ("coke", "table")),
]


def table(text: str) -> ParseOutcome:
    return parse_action(text, TABLE, TABLE_OBJECTS)


def kitchen(text: str) -> ParseOutcome:
    return parse_action(text, KITCHEN, KITCHEN_OBJECTS)


def assert_action(out: ParseOutcome, skill: str, *args: str) -> None:
    assert out.kind is OutcomeKind.ACTION, out
    assert out.is_action and not out.is_done and not out.is_rejected
    assert out.action == ParsedAction(skill, tuple(args))
    assert out.reason == ""


def assert_rejected(out: ParseOutcome, *fragments: str) -> None:
    assert out.kind is OutcomeKind.REJECTED, out
    assert out.is_rejected and out.action is None
    for f in fragments:
        assert f in out.reason, out.reason


# ---- code style (IM Listing 2, IM Fig. 3, SayCan open source) -------------------------------------


@pytest.mark.parametrize("text", [
    'robot.pick_place("red block", "blue bowl")',
    "robot.pick_place('red block', 'blue bowl')",
    'robot.pick_place("red block", \'blue bowl\')',
    "robot.pickplace(red block, blue bowl)",
    "robot.pick_and_place(red block, blue bowl)",
    'robot.pick_and_place("red block", "blue bowl")',
    '  robot . pick_place (  "red block" ,   "blue bowl"  )  ',
    'robot.pick_place("Red Block", "BLUE BOWL")',
    'robot.pick_place("the red block", "the blue bowl")',
    'robot.pick_place("red  block", "blue bowl")',
    'Robot action: robot.pick_place("red block", "blue bowl")',
    'robot action:robot.pick_place("red block", "blue bowl")',
    'Robot: robot.pickplace(red block, blue bowl)',
    'Robot Action: robot.pick_place("red block", "blue bowl").',
    'robot.pick_place("red block", "blue bowl");',
    "robot.pick_place(\u201cred block\u201d, \u201cblue bowl\u201d)",
    "pick_place(red block, blue bowl)",
    "Robot action: robot.pick_place(\"red block\", \"blue bowl\")\nSuccessful action: True",
])
def test_code_style_variants(text: str) -> None:
    assert_action(table(text), "pick_place", "red block", "blue bowl")


def test_code_style_location_target() -> None:
    assert_action(table('robot.pick_place("cyan block", "top left corner")'),
                  "pick_place", "cyan block", "top left corner")


def test_code_style_other_skill_by_name() -> None:
    assert_action(kitchen('robot.pick_up("coke")'), "pick_up", "coke")
    assert_action(kitchen("robot.bring_to_user()"), "bring_to_user")
    assert_action(kitchen("robot.put_down_on(coke, table)"), "put_down_on", "coke", "table")


# ---- natural language (IM Listing 1, IM Fig. 3) ---------------------------------------------------


@pytest.mark.parametrize("text", [
    "Pick the red block and place it in the blue bowl.",
    "Pick the red block and place it on the blue bowl.",
    "Pick up red block and place it in blue bowl.",
    "Pick up the red block and put it in the blue bowl",
    "pick up the red block and put it into the blue bowl",
    "PICK THE RED BLOCK AND PLACE IT IN THE BLUE BOWL.",
    "Robot action: Pick the red block and place it in the blue bowl.",
    "Robot: Pick up red block and place it in blue bowl.",
    "Robot action:   Pick  the red   block and place it in the blue bowl .",
    "Pick the red block and place it on top of the blue bowl.",
])
def test_natural_language_variants(text: str) -> None:
    assert_action(table(text), "pick_place", "red block", "blue bowl")


def test_natural_language_location() -> None:
    assert_action(table("Robot action: Pick the cyan block and place it on the top left corner."),
                  "pick_place", "cyan block", "top left corner")


# ---- kitchen steps (IM Listings 3-4, SayCan Listing 1) --------------------------------------------


@pytest.mark.parametrize(("text", "skill", "args", "step"), [
    ("3. pick up the coke", "pick_up", ("coke",), 3),
    ("pick up the coke", "pick_up", ("coke",), None),
    ("Pick Up The Coke.", "pick_up", ("coke",), None),
    ("  12.   pick   up the coke  ", "pick_up", ("coke",), 12),
    ("2.pick up the coke", "pick_up", ("coke",), 2),
    ("2) pick up the coke", "pick_up", ("coke",), 2),
    ("1. find a coke", "find", ("coke",), 1),
    ("1. find an apple", "find", ("apple",), 1),
    ("1. find the apple", "find", ("apple",), 1),
    ("5. find an dried fruit", "find", ("dried fruit",), 5),  # the papers' own typo
    ("find energy bar", "find", ("energy bar",), None),
    ("2. go to counter", "go_to", ("counter",), 2),
    ("2. go to the counter.", "go_to", ("counter",), 2),
    ("3. bring it to you", "bring_to_user", (), 3),
    ("4. put down the apple", "put_down", ("apple",), 4),
    ("Robot: 1. pick up the coke", "pick_up", ("coke",), 1),
    ("2. open the drawer", "open_drawer", (), 2),
    ("5. close the drawer", "close_drawer", (), 5),
    ("3. put orange juice in the drawer", "put_in_drawer", ("orange juice",), 3),
    ("4. pick up the coke from the drawer", "pick_up_from_drawer", ("coke",), 4),
    ("5. put down the coke on the table", "put_down_on", ("coke", "table"), 5),
])
def test_kitchen_plain_steps(text: str, skill: str, args: tuple[str, ...], step: int | None) -> None:
    out = kitchen(text)
    assert_action(out, skill, *args)
    assert out.step == step


def test_kitchen_continue_suffix() -> None:
    out = kitchen("3. pick up the coke and continue")
    assert_action(out, "pick_up", "coke")
    assert out.continues and out.question is None and out.human is None and out.step == 3


def test_kitchen_ask_suffix_returns_the_question() -> None:
    out = kitchen("2. open the drawer and ask: what items are there in the drawer?")
    assert_action(out, "open_drawer")
    assert out.question == "what items are there in the drawer?"
    assert not out.continues and out.human is None


def test_kitchen_ask_with_inline_human_answer() -> None:
    out = kitchen("Robot: 1. go to counter and ask: Do you have a preference? Human: I don\u2019t want sugar")
    assert_action(out, "go_to", "counter")
    assert out.question == "Do you have a preference?"
    assert out.human == "I don\u2019t want sugar"


def test_kitchen_human_interjection() -> None:
    out = kitchen("4. put down the coke, Human: Actually, can you also bring me an energy bar?")
    assert_action(out, "put_down", "coke")
    assert out.human == "Actually, can you also bring me an energy bar?"
    assert out.question is None


def test_kitchen_feedback_tags_are_split_off() -> None:
    out = kitchen("Robot: 1. pick up the coke[success: no][scene: coke, apple]")
    assert_action(out, "pick_up", "coke")
    assert out.feedback_tags == ("[success: no]", "[scene: coke, apple]")
    out = kitchen("10. put down the apple[scene: ]")
    assert_action(out, "put_down", "apple")
    assert out.feedback_tags == ("[scene: ]",)


def test_several_steps_on_one_line_take_the_first() -> None:
    out = kitchen("Robot: 1. find a coke, 2. pick up the coke, 3. done.")
    assert_action(out, "find", "coke")
    assert out.step == 1 and out.remainder == "2. pick up the coke, 3. done."


def test_templates_from_a_profile_extend_the_defaults() -> None:
    adm = [("wipe", ("table",))]
    out = parse_action("3. wipe down the table", adm, ["table"], templates={"wipe": "wipe down the {0}"})
    assert_action(out, "wipe", "table")
    # without a template, a skill matches as its name's words followed by its arguments
    assert_action(parse_action("wipe the table", adm, ["table"]), "wipe", "table")


def test_split_numbered_steps() -> None:
    assert split_numbered_steps("Robot: 1. find a coke, 2. pick up the coke, 3. done.") == [
        "1. find a coke", "2. pick up the coke", "3. done."]
    assert split_numbered_steps("Robot: 4. put down the sprite can, 5. find a can") == [
        "4. put down the sprite can", "5. find a can"]


def test_normalize() -> None:
    assert normalize("  Pick up  THE Coke. ") == "pick up coke"
    assert normalize("find an apple!") == "find apple"
    assert normalize("tell you I\u2019m done.") == "tell you i'm done"


# ---- termination (requirements §7.8) --------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "robot.stop()",
    "Robot action: robot.stop()",
    "Robot action: robot.stop()\nSTOP",
    "robot.stop();",
    "STOP",
    "stop",
    "done",
    "done.",
    "Done.",
    "2. done.",
    "11. done.",
    "Robot: 2. done.",
    "9. tell you I\u2019m done.",
    "8. tell you I'm done.",
    "Robot thought: None.",
    "Robot thought: None",
    "Robot thought: I'm done.",
    "Robot thought: I\u2019m done.",
    "Robot thought:",
    "Robot action:",
    "",
    "   ",
    "\n\n",
])
def test_termination_variants(text: str) -> None:
    out = table(text)
    assert out.kind is OutcomeKind.DONE, out
    assert out.is_done and out.action is None and out.reason


def test_numbered_done_keeps_the_step_number() -> None:
    out = kitchen("7. done.")
    assert out.is_done and out.step == 7


# ---- rejections -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "fragments"), [
    ("Pick the purple cube and place it on the blue bowl.", ("unknown object 'purple cube'",)),
    ('robot.pick_place("purple cube", "blue bowl")', ("unknown object 'purple cube'",)),
    ('robot.pick_place("red block", "green bowl")', ("unknown object 'green bowl'",)),
    ("robot.pick_place('red block', 'red block')", ("pick_place(red block, red block) is not admissible",)),
    ("Pick the red block and place it on the red block.", ("pick_place(red block, red block) is not admissible",)),
    # strict names: no dropped "block", no plural, no partial names
    ('robot.pick_place("red", "blue bowl")', ("unknown object 'red'",)),
    ('robot.pick_place("red blocks", "blue bowl")', ("unknown object 'red blocks'",)),
    ("Pick the red and place it in the blue bowl.", ("unknown object 'red'",)),
    # empty and malformed arguments
    ('robot.pick_place("", "blue bowl")', ("empty argument 1",)),
    ("robot.pick_place(red block, )", ("empty argument 2",)),
    ("robot.pick_place(red block,, blue bowl)", ("empty argument 2",)),
    ('robot.pick_place("red block")', ("pick_place takes 2",)),
    ("robot.pick_place()", ("pick_place takes 2",)),
    ('robot.pick_place("red block, "blue bowl")', ("malformed arguments",)),
    ('robot.pick_place("red block", "blue bowl"', ("malformed call",)),
    ('robot.pick_place("red block", "blue bowl") and robot.stop()', ("malformed",)),
    ("robot.stop(now)", ("takes no arguments",)),
    ("robot.fly(red block)", ("unknown skill 'fly'",)),
    # not actions
    ("Robot thought: Goal state is [\"Red block is in the blue bowl.\"]", ("robot thought",)),
    ("Human: move the blocks", ("'Human' line",)),
    ("Scene: There is a red block.", ("'Scene' line",)),
    ("Successful action: True", ("'Successful action' line",)),
    ("I will now move the red block.", ("unrecognised action",)),
    ("the.", ("no action",)),
])
def test_table_rejections(text: str, fragments: tuple[str, ...]) -> None:
    assert_rejected(table(text), *fragments)


@pytest.mark.parametrize(("text", "fragments"), [
    ("3. pick up the sprite", ("unknown object 'sprite'",)),
    ("go to the kitchen", ("unknown object 'kitchen'",)),
    ("pick up the counter", ("pick_up(counter) is not admissible",)),
    ("3. pick up the coke please", ("unknown object 'coke please'",)),
    ("2. open the drawer and ask:", ("empty question",)),
    ("3. and continue", ("no skill",)),
    ("4. dance", ("unrecognised action 'dance'",)),
    ("put down coke on the counter", ("put_down_on(coke, counter) is not admissible",)),
])
def test_kitchen_rejections(text: str, fragments: tuple[str, ...]) -> None:
    assert_rejected(kitchen(text), *fragments)


@pytest.mark.parametrize("text", [
    "robot.pick_place(\"red block\", \"blue bowl\")\x00",
    "\x07done",
    "pick up\x1b[31m the coke",
    "red\u200bblock",
    "\ufeffdone",
    "robot.stop()\x7f",
    "\ud800",
    "\ufffd\ufffd",
])
def test_control_and_binary_characters_are_rejected(text: str) -> None:
    assert_rejected(table(text), "control or binary character")


def test_overlong_input_is_rejected() -> None:
    line = "Pick the red block and place it in the blue bowl."
    ok = line + " " * (MAX_INPUT_CHARS - len(line))
    assert len(ok) == MAX_INPUT_CHARS
    assert table(ok).is_action
    assert_rejected(table(ok + " "), "too long")
    assert_rejected(table("robot.stop()" + " " * 1000), "too long")


def test_unicode_text_is_rejected_not_crashed() -> None:
    assert_rejected(table("把红色积木放进蓝色碗里"), "unrecognised action")
    assert_rejected(table("Pick the 红色积木 and place it in the blue bowl."), "unknown object")


def test_empty_admissible_set() -> None:
    assert_rejected(parse_action('robot.pick_place("red block", "blue bowl")', [], []), "unknown object")
    assert_rejected(parse_action('robot.pick_place("red block", "blue bowl")', [], ["red block", "blue bowl"]),
                    "not admissible")
    assert parse_action("done", [], []).is_done


# ---- properties -----------------------------------------------------------------------------------

VOCAB = [
    "robot.", "pick_place", "pickplace", "pick_and_place", "stop", "(", ")", '"', "'", ",", ".", " ",
    "red block", "blue bowl", "top left corner", "purple cube", "Pick the ", " and place it on the ",
    "Pick up ", " in ", "Robot action: ", "Robot: ", "Robot thought: ", "None", "done", "STOP", "1. ",
    "3. ", "pick up the ", "coke", "find a ", " and continue", " and ask: ", "Human: ", ", ",
    "[success: no]", "[scene: ", "]", "\n", "\t", "\x00", "\u200b", "红", "é", "{0}", "\\",
]
ALL_ADMISSIBLE = TABLE + KITCHEN
ALL_OBJECTS = TABLE_OBJECTS + KITCHEN_OBJECTS


def _check(text: str) -> None:
    out = parse_action(text, ALL_ADMISSIBLE, ALL_OBJECTS)
    assert isinstance(out, ParseOutcome)
    assert not out.reason.startswith("internal parser error"), (text, out)
    if out.kind is OutcomeKind.ACTION:
        assert out.action is not None
        assert (out.action.skill, out.action.args) in ALL_ADMISSIBLE
    else:
        assert out.action is None
        assert out.reason
    if out.kind is OutcomeKind.REJECTED:
        assert out.reason


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=600))
def test_arbitrary_text_never_raises_and_actions_are_admissible(text: str) -> None:
    _check(text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(VOCAB), max_size=25).map("".join))
def test_structured_text_never_raises_and_actions_are_admissible(text: str) -> None:
    _check(text)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(TABLE), st.sampled_from(['"', "'", ""]), st.sampled_from(["pick_place", "pickplace",
                                                                                 "pick_and_place"]))
def test_every_admissible_call_round_trips(pair: tuple[str, tuple[str, ...]], quote: str, name: str) -> None:
    skill, (obj, target) = pair
    out = table(f"robot.{name}({quote}{obj}{quote}, {quote}{target}{quote})")
    assert_action(out, skill, obj, target)


NAME_POOL = ["red block", "blue bowl", "cyan block", "top left corner", "red bowl", "purple cube", "red", "coke",
             "table", "sprite"]
SYNTAXES = [
    'robot.pick_place("{a}", "{b}")', "robot.pickplace({a}, {b})", "robot.pick_and_place('{a}', '{b}')",
    "Pick the {a} and place it on the {b}.", "Pick up {a} and place it in {b}.", "Pick up the {a} and put it in the {b}",
    "pick up the {a}", "find a {a}", "put down the {a} on the {b}", "go to {b}",
]


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["", "Robot action: ", "Robot: ", "robot action:", "3. ", "Robot: 1. "]),
    st.sampled_from(SYNTAXES),
    st.sampled_from(NAME_POOL),
    st.sampled_from(NAME_POOL),
    st.sampled_from(["", ".", " and continue", " and ask: where is it?", ", Human: stop", "[success: no]"]),
    st.booleans(),
)
def test_near_valid_lines_parse_exactly_or_are_rejected(
    prefix: str, syntax: str, a: str, b: str, suffix: str, upper: bool,
) -> None:
    text = prefix + syntax.format(a=a, b=b) + suffix
    if upper:
        text = text.upper()
    _check(text)
    out = parse_action(text, ALL_ADMISSIBLE, ALL_OBJECTS)
    if out.is_action:
        assert out.action is not None
        # the parsed arguments are exactly the names that were written, in order
        assert all(arg in (a, b) for arg in out.action.args), (text, out)
    elif syntax in SYNTAXES[:6] and ("pick_place", (a, b)) in TABLE:  # the pick-and-place spellings
        pytest.fail(f"admissible call not parsed: {text!r} -> {out}")
