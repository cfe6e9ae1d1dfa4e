"""The paper prompt profiles load, reproduce the papers' listings, and parse their own action lines.

Round trip: every example action line of each preamble is parsed by `parse_action` against an
admissible set built from the lines themselves (with test-local patterns, independent of the parser),
and every step is re-rendered from the profile's skill templates.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from planner_node.core.parsing import OutcomeKind, ParsedAction, normalize, parse_action, split_numbered_steps
from planner_node.core.prompts import PromptProfile, load_profile

REPO = Path(__file__).resolve().parents[3]
PROMPT_DIR = REPO / "config" / "prompts"
SEP = "==============="

PAPER_PROFILES = ["im_sim_object_scene", "im_real_tabletop", "im_kitchen", "im_kitchen_human", "saycan"]
ALL_PROFILES = ["im_sim_object_success", *PAPER_PROFILES]


def profile(name: str) -> PromptProfile:
    return load_profile(PROMPT_DIR, name)


# ---- loading and file hygiene ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_PROFILES)
def test_profile_loads_from_the_repo_relative_path(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    p = load_profile(Path("config/prompts"), name)
    assert p.name == name and p.preamble and p.skills and p.source and p.description
    for key in ("instruction", "action", "done"):
        assert key in p.formats


@pytest.mark.parametrize("name", PAPER_PROFILES)
def test_preamble_file_hygiene(name: str) -> None:
    text = profile(name).preamble
    assert text.endswith("\n") and not text.startswith("\n")
    assert "\n\n" not in text, "blank lines (PDF artefacts) must be removed"
    for line in text.splitlines():
        assert line == line.strip(), f"stray whitespace in {line!r}"
    assert "\r" not in text and "\t" not in text


@pytest.mark.parametrize("name", PAPER_PROFILES)
def test_yaml_header_names_its_paper_lines(name: str) -> None:
    header = (PROMPT_DIR / f"{name}.yaml").read_text(encoding="utf-8").split("\ndescription:")[0]
    assert re.search(r"L\d{3,4}-\d{3,4}", header), "the header must give the paper lines"
    assert "verbatim" in header


# ---- the preambles are the papers' listings -------------------------------------------------------

# (paper file, first line, last line, text appended after the listing)
LISTINGS = {
    "im_sim_object_scene": ("inner_monologue.txt", 1011, 1093, SEP + "\n"),
    "im_real_tabletop": ("inner_monologue.txt", 1097, 1275, ""),
    "im_kitchen": ("inner_monologue.txt", 1279, 1520, ""),
    "im_kitchen_human": ("inner_monologue.txt", 1524, 1701, ""),
    "saycan": ("saycan.txt", 493, 537, ""),
}


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("name", PAPER_PROFILES)
def test_preamble_matches_the_paper_text_up_to_line_breaks(name: str, paper_lines: Callable[[str, int, int], list[str]]) -> None:
    fname, first, last, appended = LISTINGS[name]
    lines = paper_lines(fname, first, last)
    paper = "\n".join(ln for ln in lines if ln.strip())
    pre = profile(name).preamble
    assert pre.endswith(appended)
    # same characters in the same order; only line breaks (PDF artefacts) may differ
    assert _squash(pre[: len(pre) - len(appended)]) == _squash(paper)
    # and every preamble line is made of whole paper lines
    kept = [ln for ln in lines if ln.strip()]
    joined = iter(kept)
    for line in pre[: len(pre) - len(appended)].splitlines():
        acc = next(joined)
        while acc != line:
            assert len(acc) < len(line), f"preamble line {line!r} does not start at a paper line"
            nxt = next(joined)
            acc = acc + ("" if nxt.startswith(",") or acc.endswith('["') else " ") + nxt
        assert acc == line


def test_spot_checks_im_sim_object_scene() -> None:
    pre = profile("im_sim_object_scene").preamble
    assert pre.startswith(SEP + "\nScene: There is a cyan, yellow, brown block.\n"
                                "Human: Move all the blocks to the top left corner.\n")
    assert ('Robot thought: Goal state is ["Cyan block is on the top left corner.", "Yellow block is on the top '
            'left corner.", "Brown block is on the top left corner."]\n') in pre
    assert 'Robot thought: Goal state is ["Pink block is on the bottom side.", ' in pre
    assert 'Robot thought: Brown block is not on the top left corner."\n' in pre  # paper typo kept
    assert "Robot thought: Cyan block is not on the top left corner\n" in pre  # missing period kept
    assert pre.count("Robot thought: None.\n") == 2
    assert pre.count(SEP) == 3 and pre.endswith("Robot thought: None.\n" + SEP + "\n")


def test_spot_checks_im_real_tabletop() -> None:
    pre = profile("im_real_tabletop").preamble
    assert 'Robot action: robot.pick_place("cyan block", "top left corner")\n' in pre
    assert "Robot action: robot.stop()\nSTOP\n" in pre
    assert pre.count("STOP\n") == 5 and pre.count(SEP) == 6
    assert pre.startswith(SEP + "\nTask: Move all blocks to the top left corner\n"
                                'Scene: Visible objects are ["cyan block", "yellow block", "brown block"]\n'
                                "Scene: Occluded objects are []\n")
    assert "Task: Sort pencils and markers and in different containers\n" in pre  # paper typo kept
    assert pre.endswith("STOP\n" + SEP + "\n")


def test_spot_checks_im_kitchen() -> None:
    pre = profile("im_kitchen").preamble
    assert pre.startswith("Robot: Hi there, I\u2019m a robot operating in an office kitchen.\n"
                          "You can ask me to do various tasks and I\u2019ll tell you the sequence of actions I would "
                          "do to accomplish your task.\nHuman: hold the snickers\n")
    assert "[success: no]" in pre
    assert "Robot: 1. pick up the snickers[success: no][scene: snickers]\n2. pick up the snickers\n2. done.\n" in pre
    assert "10. put down the dried fruit[scene: ]\n" in pre
    assert "7. find an dried fruit\n" in pre  # paper typo kept
    assert "3. pick up the apple[success: no]\n5. pick up the apple\n" in pre  # numbering glitch kept
    assert "9. tell you I\u2019m done.\n" in pre
    assert len(re.findall(r"^Human: ", pre, re.M)) == 16


def test_spot_checks_im_kitchen_human() -> None:
    pre = profile("im_kitchen_human").preamble
    assert ("Robot: 1. pick up the snickers and ask: Because snickers may be too thin to be picked up by my "
            "gripper, was I successful at picking it up? Human: Yes, you were successful\n") in pre
    assert "4. put down tea, Human: Actually, can you also bring me an energy bar?\n" in pre
    assert ("2. open the drawer and ask: what items are there in the drawer? Human: There is a coke and rice "
            "chips\n4. pick up the coke from the drawer and continue\n") in pre
    assert "Robot: 1. go to table and ask: What food items are there on the table? Human: There are kettle" in pre
    assert len(re.findall(r"^Human: ", pre, re.M)) == 11


def test_spot_checks_saycan() -> None:
    pre = profile("saycan").preamble
    assert pre.startswith("Robot: Hi there, I'm a robot operating in an office kitchen.\n"
                          "Robot: You can ask me to do various tasks and I'll tell you the sequence of actions I "
                          "would do to accomplish your task.\n")
    assert ("Human: How would you bring me an orange?\nRobot: 1. find an orange, 2. pick up the orange, "
            "3. bring it to you, 4. put down the orange, 5. done.\n") in pre
    assert "4. put down the sprite can, 5. find a mountain dew can" in pre
    assert "Human: I finished my drink, can you throw it away and bring me a mountain dew?\n" in pre
    assert "8. tell you I'm done.\n" in pre
    assert len(re.findall(r"^Human: ", pre, re.M)) == 16  # the paper says 17 (requirements §7.3)


# ---- the formats reproduce preamble lines ---------------------------------------------------------


def test_formats_im_sim_object_scene() -> None:
    p = profile("im_sim_object_scene")
    cats = {"top left corner": "location", "cyan block": "block"}
    goals = [p.formats["subgoal"].format(object=f"{c} block", target="top left corner")
             for c in ("Cyan", "Yellow", "Brown")]
    sep = p.formats["list_separator"]
    lines = p.preamble.splitlines()
    assert p.formats["goal_state"].format(goals=sep.join(goals)) in lines
    assert p.formats["progress"].format(completed=sep.join(goals[:2])) in lines
    assert p.formats["progress"].format(completed="") == "Scene: You have completed []"
    assert p.action("pick_place", ("cyan block", "top left corner"), cats) in lines
    assert p.instruction("Move all the blocks to the top left corner") in lines
    assert p.formats["thought"].format(thought="Yellow and brown blocks are not on the top left corner.") in lines
    assert p.done_line in lines
    assert p.objects(["brown block", "cyan block", "yellow block"]) == "Scene: There is a brown, cyan, yellow block."


def test_formats_im_real_tabletop() -> None:
    p = profile("im_real_tabletop")
    lines = p.preamble.splitlines()
    assert p.action("pick_place", ("cyan block", "top left corner"), {}) in lines
    assert p.success(True) in lines and p.success(False) in lines
    assert p.success(True) == "Successful action: True"
    assert p.done_line == "Robot action: robot.stop()" and p.formats["stop_marker"] == "STOP"
    assert p.instruction("Stack all the blocks") in lines
    assert p.objects(["brown block", "purple block"]) == 'Scene: Visible objects are ["brown block", "purple block"]'
    assert p.objects([]).replace("Visible", "Occluded") == p.formats["occluded"].format(objects="[]")
    assert p.formats["occluded"].format(objects='["cyan block"]') in lines


def test_formats_im_kitchen() -> None:
    p = profile("im_kitchen")
    f = p.formats
    line = (f["step_first"].format(n=1, action=p.skill_text("pick_up", ("snickers",), {}))
            + p.success(False) + p.objects(["snickers"]))
    assert line == "Robot: 1. pick up the snickers[success: no][scene: snickers]"
    assert line in p.preamble.splitlines()
    assert p.success(True) == ""
    assert p.objects([]) == "[scene: ]"
    assert f["step"].format(n=11, action=p.done_line) in p.preamble.splitlines()
    assert f["step"].format(n=9, action=f["done_alt"]) in p.preamble.splitlines()
    assert p.formats["instruction"].format(instruction="hold the snickers") in p.preamble.splitlines()


def test_formats_im_kitchen_human() -> None:
    p = profile("im_kitchen_human")
    f = p.formats
    line = (f["step"].format(n=2, action=p.skill_text("open_drawer", (), {}))
            + f["ask_suffix"].format(question="what items are there in the drawer?")
            + f["human_answer"].format(text="There is a coke and rice chips"))
    assert line in p.preamble.splitlines()
    line = f["step"].format(n=4, action=p.skill_text("pick_up_from_drawer", ("coke",), {})) + f["continue_suffix"]
    assert line in p.preamble.splitlines()
    line = f["step"].format(n=5, action="put down the apple") + f["human_interjection"].format(
        text="I actually don\u2019t want to have fruits. Can you bring me something else?")
    assert line in p.preamble.splitlines()


def test_formats_saycan() -> None:
    p = profile("saycan")
    f = p.formats
    plan = [("find", ("sponge",)), ("pick_up", ("sponge",)), ("go_to", ("sink",)), ("put_down", ("sponge",))]
    texts = [p.skill_text(s, a, {}) for s, a in plan] + [p.done_line]
    line = f["step_first"].format(n=1, action=texts[0]) + "".join(
        f["step_separator"] + f["step"].format(n=i + 1, action=t) for i, t in enumerate(texts) if i)
    assert line == "Robot: 1. find a sponge, 2. pick up the sponge, 3. go to the sink, 4. put down the sponge, 5. done."
    assert line in p.preamble.splitlines()
    assert f["instruction_question"].format(instruction="bring me an orange") in p.preamble.splitlines()
    assert p.formats["instruction"].format(
        instruction="I finished my drink, can you throw it away and bring me a mountain dew?") in p.preamble


# ---- round trip: the papers' own action lines parse ----------------------------------------------

SIM_ACTION = re.compile(r"^Robot action: Pick the (.+?) and place it (?:on|in) the (.+?)\.$")
REAL_ACTION = re.compile(r'^Robot action: robot\.pick_place\("([^"]+)", "([^"]+)"\)$')


def _preamble_actions(p: Any, action: re.Pattern[str]) -> tuple[list[str], dict[str, tuple[str, tuple[str, ...]]],
                                                              list[tuple[str, tuple[str, ...]]], list[str],
                                                              dict[str, str]]:
    """The profile's preamble lines; its `Robot action:` lines that `action` matches, as pick_place calls;
    and what the parser is given: the admissible calls, the object names and the profile's templates."""
    lines = p.preamble.splitlines()
    expected = {ln: ("pick_place", m.groups()) for ln in lines if (m := action.match(ln))}
    admissible = sorted(set(expected.values()))
    objects = sorted({o for _, args in admissible for o in args})
    templates = {k: v.template for k, v in p.skills.items()}
    return lines, expected, admissible, objects, templates


@pytest.mark.parametrize("name", ["im_sim_object_scene", "im_sim_object_success"])
def test_round_trip_sim(name: str) -> None:
    p = profile(name)
    lines, expected, admissible, objects, templates = _preamble_actions(p, SIM_ACTION)
    assert set(expected) == {ln for ln in lines if ln.startswith("Robot action:")} and expected
    for line in lines:
        out = parse_action(line, admissible, objects, templates)
        if line in expected:
            skill, args = expected[line]
            assert out.action == ParsedAction(skill, args), (line, out)
            cats = {args[1]: "bowl" if args[1].endswith("bowl") else "location"}
            assert p.action(skill, args, cats) == line  # and the profile renders it back
        elif line == p.done_line:
            assert out.kind is OutcomeKind.DONE, (line, out)
        else:  # Scene, Human, other Robot thought lines, separators: never an action
            assert out.kind is not OutcomeKind.ACTION, (line, out)
    # also without the profile's templates (the parser's built-in forms)
    for line, (skill, args) in expected.items():
        assert parse_action(line, admissible, objects).action == ParsedAction(skill, args)


def test_round_trip_real_tabletop() -> None:
    p = profile("im_real_tabletop")
    lines, expected, admissible, objects, templates = _preamble_actions(p, REAL_ACTION)
    assert set(expected) == {ln for ln in lines if ln.startswith("Robot action:")} - {p.done_line}
    for line in lines:
        out = parse_action(line, admissible, objects, templates)
        if line in expected:
            assert out.action == ParsedAction(*expected[line]), (line, out)
            assert p.action(*expected[line], {}) == line
            # the other spellings of requirements §7.9 parse to the same call
            obj, target = expected[line][1]
            for variant in (f"robot.pickplace({obj}, {target})", f"robot.pick_and_place('{obj}', '{target}')"):
                assert parse_action(variant, admissible, objects).action == out.action
        elif line in (p.done_line, p.formats["stop_marker"]):
            assert out.kind is OutcomeKind.DONE, (line, out)
        else:
            assert out.kind is not OutcomeKind.ACTION, (line, out)


# Test-local reading of a kitchen step: (pattern over the bare step text, skill). Order matters.
KITCHEN_FORMS = [
    (r"find (?:an? |the )?(.+)", "find"),
    (r"pick up (?:the )?(.+) from the drawer", "pick_up_from_drawer"),
    (r"pick up (?:the )?(.+)", "pick_up"),
    (r"go to (?:the )?(.+)", "go_to"),
    (r"put down (?:the )?(.+) on the (.+)", "put_down_on"),
    (r"put down (?:the )?(.+)", "put_down"),
    (r"bring it to you", "bring_to_user"),
    (r"open the drawer", "open_drawer"),
    (r"close the drawer", "close_drawer"),
    (r"put (.+) in the drawer", "put_in_drawer"),
]
DONE_STEPS = ("done.", "tell you I\u2019m done.", "tell you I'm done.")
STEP = re.compile(r"^(\d+)\. (.*)$")


def _bare_step(step_text: str) -> tuple[str, str | None, str | None]:
    """(skill text, question, human) of one step, split with test-local rules."""
    question = human = None
    if " Human: " in step_text:
        step_text, human = step_text.split(" Human: ", 1)
        step_text = step_text.removesuffix(",")
    if " and ask: " in step_text:
        step_text, question = step_text.split(" and ask: ", 1)
    step_text = step_text.removesuffix(" and continue")
    step_text = re.sub(r"\[(?:success|scene): [^\]]*\]", "", step_text)
    return step_text, question, human


def _expected(bare: str) -> tuple[str, tuple[str, ...]] | None:
    if bare in DONE_STEPS:
        return None
    for pattern, skill in KITCHEN_FORMS:
        m = re.fullmatch(pattern, bare)
        if m:
            return skill, m.groups()
    raise AssertionError(f"test table does not know the step {bare!r}")


def _kitchen_steps(p: PromptProfile) -> Iterator[tuple[str, int, str]]:
    """(text to parse, step number, the step text) for every step of the preamble."""
    for line in p.preamble.splitlines():
        if line.startswith("Human:") or "Hi there" in line or "You can ask me" in line:
            continue
        if p.formats["step_separator"] == ", ":  # SayCan: the whole plan on one Robot: line
            steps = split_numbered_steps(line)
            assert len(steps) == len(re.findall(r"(?:^|, )\d+\. ", line.removeprefix("Robot: ")))
            for k, s in enumerate(steps):
                m = STEP.match(s)
                assert m, s
                yield (line if k == 0 else s), int(m.group(1)), m.group(2)
        else:
            m = STEP.match(line.removeprefix("Robot: "))
            assert m, line
            yield line, int(m.group(1)), m.group(2)


@pytest.mark.parametrize("name", ["im_kitchen", "im_kitchen_human", "saycan"])
def test_round_trip_kitchen(name: str) -> None:
    p = profile(name)
    steps = list(_kitchen_steps(p))
    expected = [_expected(_bare_step(text)[0]) for _, _, text in steps]
    calls = {e for e in expected if e is not None}
    objects = sorted({o for _, args in calls for o in args})
    # admissible: every one-argument skill of the listing with every name, plus the listing's other calls,
    # so that the parser has to pick the right call among many
    one_arg = sorted({s for s, a in calls if len(a) == 1})
    admissible = sorted(calls | {(s, (o,)) for s in one_arg for o in objects})
    templates = {k: v.template for k, v in p.skills.items()}
    assert len(steps) > 30
    for (text, number, step_text), exp in zip(steps, expected):
        out = parse_action(text, admissible, objects, templates)
        bare, question, human = _bare_step(step_text)
        assert out.step == number, (text, out)
        assert out.question == question and out.human == human, (text, out)
        if exp is None:
            assert out.kind is OutcomeKind.DONE, (text, out)
            continue
        assert out.action == ParsedAction(*exp), (text, out)
        # the profile has a template for the skill, and it renders the same step up to articles
        assert normalize(p.skill_text(*exp, {})) == normalize(bare), (bare, p.skill_text(*exp, {}))
        # and the built-in templates of the parser cover the papers' kitchen syntax too
        assert parse_action(text, admissible, objects).action == out.action


def test_kitchen_tags_and_suffixes_are_reported() -> None:
    p = profile("im_kitchen")
    adm = [("pick_up", ("snickers",))]
    out = parse_action("Robot: 1. pick up the snickers[success: no][scene: snickers]", adm, ["snickers"],
                       {k: v.template for k, v in p.skills.items()})
    assert out.action == ParsedAction("pick_up", ("snickers",))
    assert out.feedback_tags == ("[success: no]", "[scene: snickers]") and out.step == 1
    out = parse_action("3. pick up the snickers and continue", adm, ["snickers"])
    assert out.continues and out.action == ParsedAction("pick_up", ("snickers",))
