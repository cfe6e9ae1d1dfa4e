"""The expert stand-in's Statler formats (monologue_llm.expert.formats.statler, statler_cups) on the
prompt files of config/prompts, with a world truth written as the kinematic backend writes it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from monologue_domain.expert.channel import write_world
from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.scene_spec import SceneSpec
from monologue_domain.statler_domains import DomainSettings, DomainTruth, domain_spec
from monologue_llm.expert.backend import ExpertBackend
from monologue_llm.expert.format import ExpertError, Query, Truth
from monologue_llm.expert.formats.statler import RESPONDER
from monologue_llm.expert.formats.statler_cups import RESPONDER as CUPS

PROMPTS = Path(__file__).resolve().parents[3] / "config" / "prompts"


def prompt_file(stem: str) -> str:
    text = (PROMPTS / f"{stem}.txt").read_text(encoding="utf-8")
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#%"))


def channel(tmp_path: Path, settings: DomainSettings, blocks: tuple[str, ...], bowls: tuple[str, ...]) -> Truth:
    spec = domain_spec(settings, SceneSpec(blocks, bowls))
    w = TabletopWorld.from_spec(spec, 0)
    truth = DomainTruth.create(settings, spec, 0)
    assert truth is not None
    w.observer = truth
    w.settle()
    write_world(tmp_path, "kinematic", w.snapshot(),
                extra={"statler": {**truth.to_json(w), "order": [o.name for o in w.objects]}})
    return Truth(tmp_path, 1.0)


def state(objects: list[str], **entries: dict[str, object]) -> str:
    lines = [f"# \"objects\": {json.dumps(objects)},", "# \"relations\": [],"]
    lines += [f"# {json.dumps(o)}: {json.dumps(entries.get(o.replace(' ', '_'), {}))}," for o in objects]
    return "# state = {\n" + "\n".join(lines)[:-1] + "\n# }\n"


DIS = ["red block", "blue block", "green block", "yellow bowl", "disinfector"]


def test_statler_reader_uncovers_and_updates(tmp_path: Path) -> None:
    truth = channel(tmp_path, DomainSettings("covers", ("orange",), ("red",)), ("red", "blue"), ("green",))
    prompt = prompt_file("statler_covers_reader") + state(["blue block", "green bowl", "orange cup"]) + \
        "# query: Put the red block in the green bowl\n"
    q = Query("generate", prompt, truth)
    assert RESPONDER.claims(q) and not RESPONDER.claims(Query("score", prompt, truth, ("a",)))
    ans = RESPONDER.answer(q)
    assert ans.text == ('put_first_on_second("orange cup", "table")\nput_first_on_second("red block", "green bowl")\n'
                        'update_wm("Put the orange cup on the table and the red block in the green bowl")\n')
    assert ans.wrong and ans.wrong[0] != ans.text


def test_cap_answers_a_statement_with_noop_and_a_question_with_say(tmp_path: Path) -> None:
    truth = channel(tmp_path, DomainSettings("disinfection", dirty_blocks=("red",)), ("red", "blue", "green"),
                    ("yellow",))
    head = prompt_file("cap_policies") + f"# objects = {json.dumps(DIS)}\n"
    assert RESPONDER.answer(Query("generate", head + "# query: The red block is dirty\n", truth)).text == "noop()\n"
    asked = head + "# query: The red block is dirty\nnoop()\n# query: Is the red block dirty?\n" \
        "# NOTE: the previous answer was rejected: no call\n"
    assert RESPONDER.answer(Query("generate", asked, truth)).text == 'say("Yes, the red block is dirty")\n'


def test_unified_writes_the_state_after_its_moves_and_the_writer_the_state_now(tmp_path: Path) -> None:
    truth = channel(tmp_path, DomainSettings("disinfection", dirty_blocks=("red",)), ("red", "blue", "green"),
                    ("yellow",))
    now = state(DIS, red_block={"is": ["dirty"]}, disinfector={"contains": []})
    unified = prompt_file("statler_unified") + now + "# query: Put the blue block on the red block\n"
    text = RESPONDER.answer(Query("generate", unified, truth)).text
    code, new = text.split("# state = {\n")
    assert code == 'put_first_on_second("blue block", "red block")\n'
    assert '# "blue block": {"is": ["dirty"]},' in new and '# "green block": {},' in new  # contagion; unnamed
    assert '# "relations": [["blue block is on red block"]],' in new and new.endswith("# }\n")
    writer = prompt_file("statler_writer") + now + "# query: The red block is dirty\n# state = {\n"
    body = RESPONDER.answer(Query("generate", writer, truth)).text
    assert body.startswith('# "objects": ["red block", "blue block", "green block", "yellow bowl", "disinfector"],')
    assert '# "red block": {"is": ["dirty"]},' in body and '# "blue block": {},' in body  # still on the table


def test_a_world_without_a_statler_truth_and_other_formats_are_not_answered(tmp_path: Path) -> None:
    write_world(tmp_path, "kinematic", [])
    prompt = prompt_file("cap_policies") + "# objects = []\n# query: Put the red block in the bowl\n"
    with pytest.raises(ExpertError, match="no Statler domain state"):
        RESPONDER.answer(Query("generate", prompt, Truth(tmp_path, 1.0)))
    assert not RESPONDER.claims(Query("generate", "Human: put the red block in the bowl\nRobot:", Truth(tmp_path)))


@pytest.mark.parametrize(("demo", "expected"), [
    ("cups = [True, False, False]\n", "cups = [False, False, True]\n"),  # plain: the final state
    ("cups = [False, True, False]\ncups = [True, False, False]\n",
     "cups = [False, True, False]\ncups = [False, False, True]\n"),  # CoT: every state
])
def test_cup_game_styles(tmp_path: Path, demo: str, expected: str) -> None:
    prompt = ("# Initial state\ncups = [False, True, False]\nSwapping cup 0 with cup 1\nSwapping cup 0 with cup 1\n"
              + demo + "\n# Initial state\ncups = [True, False, False]\nSwapping cup 0 with cup 1\n"
              "Swapping cup 1 with cup 2\n")
    q = Query("generate", prompt, Truth(tmp_path))
    assert CUPS.claims(q) and CUPS.answer(q).text == expected
    state_style = ("# Initial state\ncups = [False, True, False]\nSwapping cup 0 with cup 1\ncups = [True, False, False]\n"
                   "Swapping cup 0 with cup 1\ncups = [False, True, False]\n\n# Initial state\n"
                   "cups = [True, False, False]\nSwapping cup 0 with cup 1\ncups = [False, True, False]\n"
                   "Swapping cup 1 with cup 2\n")
    assert CUPS.answer(Query("generate", state_style, Truth(tmp_path))).text == "cups = [False, False, True]\n"


def test_the_backend_picks_the_statler_format(tmp_path: Path) -> None:
    truth = channel(tmp_path, DomainSettings("weights", block_weights=(2.0, 1.0)), ("red", "blue"), ("pink",))
    llm = ExpertBackend(tmp_path)
    prompt = prompt_file("statler_weights_reader") + state(["red block", "blue block", "pink bowl"]) + \
        "# query: Which block is the heaviest?\n"
    gen = llm.generate(prompt, stop=("# query:", "===", "# state ="))
    assert gen.text == 'say("The red block is the heaviest")\n' and truth.directory == tmp_path


def test_nothing_left_to_move_is_a_noop_not_an_empty_answer(tmp_path: Path) -> None:
    """Regression: a plan with no move (no dirty block left) gave only a `# THINK:` line, which the loop
    rejects ("no call: only comments")."""
    truth = channel(tmp_path, DomainSettings("disinfection", dirty_blocks=("red",)), ("red", "blue", "green"),
                    ("yellow",))
    prompt = prompt_file("cap_policies") + f"# objects = {json.dumps(DIS)}\n" \
        "# query: Put all the clean blocks in the yellow bowl\nput_first_on_second(\"blue block\", \"yellow bowl\")\n" \
        "# query: Put all the dirty blocks in the red bowl\n"
    with pytest.raises(ExpertError):  # there is no red bowl
        RESPONDER.answer(Query("generate", prompt, truth))
    done = prompt.replace("in the red bowl", "on the table").replace("dirty blocks", "clean blocks")
    text = RESPONDER.answer(Query("generate", done, truth)).text  # every clean block is on the table already
    assert text.endswith("noop()\n") and text.startswith("# THINK: The clean blocks are")
