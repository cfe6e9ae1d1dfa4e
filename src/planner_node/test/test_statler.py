"""Statler and its baselines with a scripted LLM: the code whitelist (nothing is exec'd), lenient
state parsing, the reader/writer loop over the kinematic tabletop through the episode runner, the
re-prompt bound, resume, and the prompt files rebuilt from ../shared/papers/statler.txt."""
from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.scene_spec import SceneSpec
from monologue_domain.transcript import EventKind, load_episode
from monologue_llm.base import Generation, LLMError
from planner_node.core import strategies
from planner_node.core.episode import EpisodeError
from planner_node.core.ports import SceneItem
from planner_node.core.runner import GoalRequest
from planner_node.core.strategies.statler.code import CAP_FUNCTIONS, CodeRejected, parse_code
from planner_node.core.strategies.statler.loop import HEADER_PREFIX, load_prompt, mentioned_objects
from planner_node.core.strategies.statler.settings import StatlerSettings
from planner_node.core.strategies.statler.state import (
    Expression,
    StateParseError,
    initial_state,
    parse_state,
    render_state,
)

REPO = Path(__file__).resolve().parents[3]
PROMPTS = REPO / "config" / "prompts"
STATLER_PROMPTS = ["statler_reader", "statler_writer", "statler_auto_writer", "statler_unified", "cap_policies",
                   "cap_cot"] + [f"{stem}_{domain}" for domain in ("covers", "weights") for stem in ("cap", "cap_cot")] \
    + [f"statler_{domain}_{role}" for domain in ("covers", "weights")
       for role in ("reader", "writer", "auto_writer", "unified")]


# ---- the code whitelist -----------------------------------------------------------------------------------


def test_paper_code_is_accepted_with_thoughts_and_stray_indentation() -> None:
    # S Prompt 14 l.674-682: indented lines, THINK comments, a blank line
    code = ('  # THINK: In the gray bowl, we have orange block and red block\n'
            ' put_first_on_second("black block", "blue bowl")\n\n'
            ' update_wm("Put the black block in the blue bowl")\n')
    p = parse_code(code)
    assert [(c.function, c.args) for c in p.calls] == [
        ("put_first_on_second", ("black block", "blue bowl")), ("update_wm", ("Put the black block in the blue bowl",))]
    assert p.thoughts == ("In the gray bowl, we have orange block and red block",)
    assert parse_code('```python\nsay("no")\n```').calls[0].args == ("no",)
    assert parse_code('say("a\\x00b")  # \x00').calls[0].args == ("ab",)  # no NUL reaches the transcript


@pytest.mark.parametrize("code, reason", [
    ("import os", "import"),
    ("from os import system", "importfrom"),
    ('os.system("rm -rf /")', "attribute"),
    ('exec("put_first_on_second(1, 2)")', "exec() is not an allowed"),
    ('eval("1")', "eval() is not an allowed"),
    ('__import__("os")', "__import__() is not an allowed"),
    ('pick("cyan block")', "pick() is not an allowed"),
    ('for b in ["a"]:\n    put_first_on_second(b, "table")', "for statement"),
    ('if True:\n    noop()', "if statement"),
    ("x = 1", "assign statement"),
    ('say(text="hi")', "keyword"),
    ('say(f"{1}")', "string literals"),
    ("put_first_on_second(a, b)", "string literals"),
    ('say("a" + "b")', "string literals"),
    ('put_first_on_second("cyan block")', "takes 2 argument"),
    ("noop(1)", "takes 0 argument"),
    ('say("a")[0]', "not a expr statement"),
    ("put_first_on_second(", "not valid Python"),
    ("# THINK: nothing to do", "only comments"),
    ("", "empty"),
])
def test_whitelist_rejects(code: str, reason: str) -> None:
    with pytest.raises(CodeRejected, match=re.escape(reason)):
        parse_code(code)


def test_cap_whitelist_has_no_update_wm() -> None:
    with pytest.raises(CodeRejected, match="update_wm"):
        parse_code('update_wm("x")', CAP_FUNCTIONS)
    assert parse_code("noop()", CAP_FUNCTIONS).calls[0].function == "noop"


# ---- the state ------------------------------------------------------------------------------------------


def test_lenient_parsing_of_the_papers_own_states() -> None:
    # S Prompt 14 l.650-668: `# world_state =`, a missing opening quote, expressions, trailing commas
    text = ('# world_state = {\n'
            '# "objects": ["black block", "orange block", green block", " cyan block"],\n'
            '# "relations": [],\n'
            '# "black block": {"weight": red_block.weight},\n'
            '# "orange block": {"weight": red_block.weight / 2},\n'
            '# "cyan block": {"is": ["dirty"], "seen": true, "x": null},\n'
            '# }\n# query: whatever comes next\n')
    s = parse_state(text)
    assert s["objects"] == ["black block", "orange block", "green block", "cyan block"]
    assert s["orange block"]["weight"] == "red_block.weight / 2"
    assert isinstance(s["orange block"]["weight"], Expression)
    assert s["cyan block"] == {"is": ["dirty"], "seen": True, "x": None}
    rendered = render_state(s)
    assert '# "orange block": {"weight": red_block.weight / 2},' in rendered
    assert parse_state(rendered) == s  # round trip keeps the expression as an expression
    assert json.loads(json.dumps(s))["orange block"]["weight"] == "red_block.weight / 2"


def test_paper_prompt5_state_with_indentation_and_trailing_comma() -> None:
    text = ('# state = {\n#     "objects": ["cyan block", "yellow block"],\n'
            '#     "relations": [["cyan block is on yellow block"]],\n#     "cyan block": {"is": ["dirty"]},\n'
            '#     "yellow block": {},\n# }')
    s = parse_state(text)
    assert s["relations"] == [["cyan block is on yellow block"]] and s["yellow block"] == {}


@pytest.mark.parametrize("text, message", [
    ("there is nothing here", "no state found"),
    ('# state = {\n# "objects": ["a"],\n', "do not close"),
    ('# state = {"objects": [1, 2]}', '"objects" must be a list of names'),
    ('# state = {"a": open("/etc/passwd")}', "unsupported value"),
    ('# state = {"a": [x for x in y]}', "unsupported value"),
    ('# state = {"a" "b"}', "must be a dict"),
    ('# state = {"a": }', "the state is not a dict:"),
    ('# state = {1: "a"}', "keys must be strings"),
])
def test_state_errors_are_clear(text: str, message: str) -> None:
    with pytest.raises(StateParseError, match=re.escape(message)):
        parse_state(text)


def test_nul_bytes_are_dropped() -> None:
    assert parse_state('# state = {"a\x00": [1]}') == {"a": [1]}


def test_state_size_is_bounded() -> None:
    with pytest.raises(StateParseError, match="more than 100"):
        parse_state("# state = {" + " " * 200 + "}", max_chars=100)


def test_initial_state_from_the_scene() -> None:
    s = initial_state([SceneItem("cyan block", "block"), SceneItem("disinfector", "bowl"),
                       SceneItem("middle", "location")])
    assert s == {"objects": ["cyan block", "disinfector"], "relations": [], "cyan block": {},
                 "disinfector": {"contains": []}}


# ---- the loop through the runner ------------------------------------------------------------------------


class ScriptedCoder:
    """A scripted LLM for the Statler family: reader answers and writer answers, one per call, in
    order (a writer prompt ends with `# state = {`). Every prompt is kept."""

    name = "scripted-coder"

    def __init__(self, reader: Sequence[str] = (), writer: Sequence[str] = ()) -> None:
        self.reader, self.writer = list(reader), list(writer)
        self.reader_prompts: list[str] = []
        self.writer_prompts: list[str] = []

    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64) -> Generation:
        if prompt.endswith("# state = {\n"):
            self.writer_prompts.append(prompt)
            queue = self.writer
        else:
            self.reader_prompts.append(prompt)
            queue = self.reader
        if not queue:
            raise LLMError("the script has no more answers")
        text = queue.pop(0)
        for s in stop:  # as a backend does: the text ends before a stop string
            text = text.split(s)[0]
        return Generation(text, len(prompt) // 4, len(prompt) // 4, len(text) // 4, "stop", 0.0)

    def score(self, prompt: str, candidates: Sequence[str]) -> Any:
        raise LLMError("Statler does not score")

    def close(self) -> None:
        pass


def world() -> TabletopWorld:
    return TabletopWorld.from_spec(SceneSpec(("cyan", "yellow", "brown"), ("green",)), seed=1)


def state_text(**objects: dict[str, Any]) -> str:
    """A writer answer (after `# state = {`): the three blocks and the bowl, with `objects` changed."""
    names = ["cyan block", "yellow block", "brown block", "green bowl"]
    body = [f'# "objects": {json.dumps(names)},', '# "relations": [],']
    body += [f'# "{n}": {json.dumps(objects.get(n.replace(" ", "_"), {}))},' for n in names]
    return "\n".join(body) + "\n# }\n"


def run(make_runner: Callable[..., Any], llm: ScriptedCoder, ports: Any, instruction: str,
        strategy: str = "statler", **overrides: object) -> Any:
    runner = make_runner(llm, ports, **overrides)
    return runner.execute(GoalRequest(instruction, strategy=strategy))


def statler_events(out: Any, kind: str) -> list[Any]:
    return [e for e in out.events if e.data.get("statler") == kind]


def test_information_question_and_action(make_runner, world_ports) -> None:  # type: ignore[no-untyped-def]
    w = world()
    ports = world_ports(w)
    before = {o.name: (o.x, o.y, o.z) for o in w.objects}
    llm = ScriptedCoder(
        reader=['update_wm("The cyan block is dirty")\n',
                '# THINK: the cyan block is dirty and the yellow block is not\nsay("The cyan block is dirty")\n',
                'put_first_on_second("cyan block", "green bowl")\nupdate_wm("Put the cyan block in the green bowl")\n'],
        writer=[state_text(cyan_block={"is": ["dirty"]}),
                state_text(cyan_block={"is": ["dirty"]}, green_bowl={"contains": ["cyan block"]})])
    out = run(make_runner, llm, ports,
              "The cyan block is dirty\nWhich block is dirty?\nPut the cyan block in the green bowl")
    assert out.result.error == EpisodeError.NONE, out.result.reason
    # query 1 (information) and query 2 (question) moved nothing; query 3 moved the cyan block
    assert ports.executed == [("pick_place", ("cyan block", "green bowl"))]
    assert w.is_on("cyan block", "green bowl")
    assert all((o.x, o.y, o.z) == before[o.name] for o in w.objects if o.name != "cyan block")
    states = statler_events(out, "state")
    assert [e.data["query_index"] for e in states] == [-1, 0, 2]  # initial, after q1, after q3; q2 kept it
    assert states[0].data["world_state"]["cyan block"] == {}
    assert states[1].data["world_state"]["cyan block"] == {"is": ["dirty"]}
    assert states[2].data["world_state"]["green bowl"] == {"contains": ["cyan block"]}
    assert states[2].text.startswith("# state = {\n# \"objects\"")
    said = statler_events(out, "say")
    assert [e.text for e in said] == ["The cyan block is dirty"] and said[0].data["query_index"] == 1
    code = statler_events(out, "code")
    assert code[1].data["thoughts"] == ["the cyan block is dirty and the yellow block is not"]
    actions = [e for e in out.events if e.kind == EventKind.ROBOT_ACTION]
    assert [(e.text, e.data["query_index"]) for e in actions] == [
        ('put_first_on_second("cyan block", "green bowl")', 2)]
    # the reader sees the state the writer wrote (stored outside the LLM), not the transcript
    assert '# "cyan block": {"is": ["dirty"]},' in llm.reader_prompts[1]
    assert "# query: Which block is dirty?\n" in llm.reader_prompts[1]
    assert "The cyan block is dirty\nupdate_wm" not in llm.reader_prompts[1]  # no history (reader_history off)
    assert llm.writer_prompts[0].endswith("# query: The cyan block is dirty\n# state = {\n")
    assert llm.writer_prompts[0].startswith("In the following, the robot deals with dirty and clean blocks.")
    assert HEADER_PREFIX not in llm.writer_prompts[0] and HEADER_PREFIX not in llm.reader_prompts[0]
    # the state is persisted with the transcript
    stored = load_episode(out.path)
    assert [e.data["world_state"] for e in stored.events if e.data.get("statler") == "state"][-1] == \
        states[-1].data["world_state"]
    assert out.transcript.events[-1].kind == EventKind.EPISODE_END


def test_table_is_a_free_location(make_runner, world_ports) -> None:  # type: ignore[no-untyped-def]
    ports = world_ports(world())
    llm = ScriptedCoder(reader=['put_first_on_second("cyan block", "table")\n'
                                'put_first_on_second("the Yellow block", "the table")\n'
                                'put_first_on_second("cyan block", "Table")\n'])
    out = run(make_runner, llm, ports, "Put the cyan and yellow blocks on the table", strategy="statler")
    assert out.result.error == EpisodeError.NONE, out.result.reason
    assert ports.executed == [("pick_place", ("cyan block", "middle")), ("pick_place", ("yellow block", "bottom side")),
                              ("pick_place", ("cyan block", "middle"))]
    actions = [e for e in out.events if e.kind == EventKind.ROBOT_ACTION]
    assert actions[1].data["call"] == ["the Yellow block", "the table"]  # as written; args as run
    assert actions[1].data["args"] == ["yellow block", "bottom side"]
    assert statler_events(out, "state") and out.events[0].data["prompts"] == {"reader": "statler_reader",
                                                                              "writer": "statler_writer"}


def test_rejected_code_is_re_prompted_within_the_bound(make_runner, world_ports) -> None:  # type: ignore[no-untyped-def]
    ports = world_ports(world())
    llm = ScriptedCoder(reader=["import os\n", 'os.system("x")\n', 'exec("noop()")\n', "noop()\n"])
    out = run(make_runner, llm, ports, "Put the cyan block in the green bowl", **{"statler.max_reprompts": 2})
    assert out.result.error == EpisodeError.PLANNING_FAILED
    assert "after 3 answers" in out.result.reason
    rejected = statler_events(out, "rejected")
    assert [e.kind for e in rejected] == [EventKind.ERROR] * 3
    assert [e.data["attempt"] for e in rejected] == [0, 1, 2]
    assert "import" in rejected[0].data["reason"] and rejected[0].data["output"] == "import os\n"
    assert ports.executed == [] and len(llm.reader_prompts) == 3 and llm.reader == ["noop()\n"]
    # each re-prompt tells the reader why the previous answer was rejected
    assert "# NOTE: the previous answer was rejected: line 1 'import os'" in llm.reader_prompts[1]


def test_a_re_prompt_can_recover(make_runner, world_ports) -> None:  # type: ignore[no-untyped-def]
    ports = world_ports(world())
    llm = ScriptedCoder(reader=['move("cyan block")\n', 'put_first_on_second("cyan block", "green bowl")\n'])
    out = run(make_runner, llm, ports, "Put the cyan block in the green bowl", **{"statler.max_reprompts": 1})
    assert out.result.error == EpisodeError.NONE, out.result.reason
    assert ports.executed == [("pick_place", ("cyan block", "green bowl"))]
    assert len(statler_events(out, "rejected")) == 1


def test_unreadable_states_are_re_prompted_then_fail(make_runner, world_ports) -> None:  # type: ignore[no-untyped-def]
    ports = world_ports(world())
    llm = ScriptedCoder(reader=['update_wm("The cyan block is dirty")\n'],
                        writer=['# "objects": ["cyan block"\n', '# "objects": ["cyan block"]: 3\n# }'])
    out = run(make_runner, llm, ports, "The cyan block is dirty", **{"statler.max_reprompts": 1})
    assert out.result.error == EpisodeError.PLANNING_FAILED and "no readable state" in out.result.reason
    assert [e.data["role"] for e in statler_events(out, "rejected")] == ["writer", "writer"]
    assert "# NOTE: the previous state was rejected:" in llm.writer_prompts[1]
    assert len(statler_events(out, "state")) == 1  # only the initial one


def test_a_failed_skill_ends_the_episode(make_runner, world_ports) -> None:  # type: ignore[no-untyped-def]
    ports = world_ports(world())
    llm = ScriptedCoder(reader=['put_first_on_second("cyan block", "cyan block")\n'
                                'update_wm("Put the cyan block on itself")\n'])
    out = run(make_runner, llm, ports, "Put the cyan block on itself")
    assert out.result.error == EpisodeError.PLANNING_FAILED and "PRECONDITION_FAILED" in out.result.reason
    assert any(e.kind == EventKind.ERROR and "cyan block" in e.text for e in out.events)
    assert llm.writer_prompts == []  # the state is not updated with a move that did not happen


def test_a_name_the_scene_does_not_have_is_rejected_and_re_prompted_never_sent(  # type: ignore[no-untyped-def]
        make_runner, world_ports) -> None:
    ports = world_ports(world())
    llm = ScriptedCoder(reader=['put_first_on_second("pink block", "green bowl")\n',
                                'put_first_on_second("cyan block", "disinfector")\n',
                                'put_first_on_second("The Cyan block", "green bowl")\n'])
    out = run(make_runner, llm, ports, "Put the cyan block in the green bowl")
    errors = [e.text for e in out.events if e.kind == EventKind.ERROR]
    assert any("no object 'pink block'" in t for t in errors), errors
    assert any("no 'disinfector'" in t for t in errors), errors
    assert [e.data.get("args") for e in out.events if e.kind == EventKind.ROBOT_ACTION] == [["cyan block", "green bowl"]]


def test_a_bowl_is_not_movable_it_is_rejected_and_left_out_of_the_grammar(  # type: ignore[no-untyped-def]
        make_runner, world_ports) -> None:
    from planner_node.core.strategies.statler.loop import movable_objects

    w = world()
    ports = world_ports(w)
    llm = ScriptedCoder(reader=['put_first_on_second("green bowl", "cyan block")\n',
                                'put_first_on_second("cyan block", "green bowl")\n'])
    out = run(make_runner, llm, ports, "Put the cyan block in the green bowl")
    errors = [e.text for e in out.events if e.kind == EventKind.ERROR]
    assert any("the green bowl cannot be moved" in t for t in errors), errors
    assert ports.executed == [("pick_place", ("cyan block", "green bowl"))]
    # the grammar's first argument: the blocks (a block covered by another stays movable), never a bowl
    from types import SimpleNamespace

    items = ports.describe()
    objects = [i.name for i in items if i.category != "location"]
    movable = movable_objects(SimpleNamespace(ports=SimpleNamespace(skills=ports)), items, objects)  # type: ignore[arg-type]
    assert movable == [o for o in objects if o.endswith("block")] and movable


def test_resume_restores_the_state(make_runner, world_ports, tmp_path) -> None:  # type: ignore[no-untyped-def]
    ports = world_ports(world())
    llm = ScriptedCoder(reader=['update_wm("The cyan block is dirty")\n', "import os\n"],
                        writer=[state_text(cyan_block={"is": ["dirty"]})])
    out = run(make_runner, llm, ports, "The cyan block is dirty\nWhich block is dirty?",
              **{"statler.max_reprompts": 0})
    assert out.result.error == EpisodeError.PLANNING_FAILED
    # cut the file after the state written for query 1: as if the process died there
    lines = out.path.read_text(encoding="utf-8").splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if '"query_index": 0, "cause"' in line)
    out.path.write_text("".join(lines[: cut + 1]), encoding="utf-8")
    llm2 = ScriptedCoder(reader=['say("The cyan block")\n'])
    runner = make_runner(llm2, ports)
    out2 = runner.execute(GoalRequest(resume_episode="latest"))
    assert out2.result.error == EpisodeError.NONE, out2.result.reason
    assert out2.episode_id == out.episode_id
    assert '# "cyan block": {"is": ["dirty"]},' in llm2.reader_prompts[0]
    assert llm2.reader_prompts[0].endswith("# query: Which block is dirty?\n")
    assert [e.text for e in statler_events(out2, "say")] == ["The cyan block"]
    restored = [e for e in statler_events(out2, "state") if e.data["cause"] == "restored after an interruption"]
    assert len(restored) == 1 and restored[0].data["world_state"]["cyan block"] == {"is": ["dirty"]}


def test_interjections_are_queries_and_stop_phrases_stop(make_runner, world_ports) -> None:  # type: ignore[no-untyped-def]
    ports = world_ports(world())
    said = ["Is the cyan block clean?", "stop"]

    class Talking(ScriptedCoder):
        """A person speaks (human/input -> the runner's inbox) while the reader is thinking."""

        def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64) -> Generation:
            assert runner.human_input(said.pop(0))
            return super().generate(prompt, stop, max_tokens)

    llm = Talking(reader=["noop()\n", 'say("ok")\n'])
    runner = make_runner(llm, ports)
    out = runner.execute(GoalRequest("Wait", strategy="statler"))
    assert out.result.error == EpisodeError.STOPPED_BY_HUMAN and "stop" in out.result.reason
    queries = statler_events(out, "query")
    assert [(e.kind, e.text) for e in queries] == [(EventKind.HUMAN_INSTRUCTION, "Wait"),
                                                   (EventKind.HUMAN_INTERJECTION, "Is the cyan block clean?")]
    assert llm.reader_prompts[1].endswith("# query: Is the cyan block clean?\n")
    assert [e.text for e in statler_events(out, "say")] == ["ok"]


def test_statler_unified_writes_code_then_state(make_runner, world_ports) -> None:  # type: ignore[no-untyped-def]
    ports = world_ports(world())
    llm = ScriptedCoder(reader=['put_first_on_second("cyan block", "green bowl")\n# state = {\n'
                                + state_text(green_bowl={"contains": ["cyan block"]})])
    out = run(make_runner, llm, ports, "Put the cyan block in the green bowl", strategy="statler_unified")
    assert out.result.error == EpisodeError.NONE, out.result.reason
    assert ports.executed == [("pick_place", ("cyan block", "green bowl"))] and llm.writer_prompts == []
    assert statler_events(out, "state")[-1].data["world_state"]["green bowl"] == {"contains": ["cyan block"]}
    assert statler_events(out, "code")[0].text == 'put_first_on_second("cyan block", "green bowl")'
    assert "After the code, write the state that results from it." in llm.reader_prompts[0]


def test_statler_auto_writer_has_an_instruction_and_no_demos(make_runner, world_ports) -> None:  # type: ignore[no-untyped-def]
    ports = world_ports(world())
    llm = ScriptedCoder(reader=['update_wm("The cyan block is dirty")\n'],
                        writer=[state_text(cyan_block={"is": ["dirty"]})])
    out = run(make_runner, llm, ports, "The cyan block is dirty", strategy="statler_auto")
    assert out.result.error == EpisodeError.NONE, out.result.reason
    prompt = llm.writer_prompts[0]
    assert "Your task is to maintain the status of these items using a JSON dictionary" in prompt
    assert prompt.count("# state = {") == 2  # the current state and the one to write: no demos


def test_cap_keeps_no_state_and_shows_the_history(make_runner, world_ports) -> None:  # type: ignore[no-untyped-def]
    ports = world_ports(world())
    llm = ScriptedCoder(reader=["noop()\n", 'update_wm("x")\n', 'put_first_on_second("cyan block", "green bowl")\n'])
    out = run(make_runner, llm, ports, "The cyan block is dirty\nPut the dirty block in the green bowl",
              strategy="cap", **{"statler.max_reprompts": 1})
    assert out.result.error == EpisodeError.NONE, out.result.reason
    assert statler_events(out, "state") == [] and llm.writer_prompts == []
    second = llm.reader_prompts[1]
    assert '===\n# objects = ["cyan block", "yellow block", "brown block", "green bowl"]\n' in second
    assert second.endswith("# query: The cyan block is dirty\nnoop()\n# query: Put the dirty block in the green bowl\n")
    assert "update_wm() is not an allowed function" in statler_events(out, "rejected")[0].data["reason"]


def test_cap_cot_shows_the_initial_state_and_history(make_runner, world_ports) -> None:  # type: ignore[no-untyped-def]
    ports = world_ports(world())
    llm = ScriptedCoder(reader=["# THINK: the cyan block is dirty\nnoop()\n", 'say("cyan")\n'])
    out = run(make_runner, llm, ports, "The cyan block is dirty\nWhich block is dirty?", strategy="cap_cot")
    assert out.result.error == EpisodeError.NONE, out.result.reason
    second = llm.reader_prompts[1]
    assert '===\n# state = {\n# "objects": ["cyan block", "yellow block", "brown block", "green bowl"],' in second
    assert "# query: The cyan block is dirty\n# THINK: the cyan block is dirty\nnoop()\n" in second


def test_missing_prompt_file_is_an_invalid_goal(make_runner, world_ports) -> None:  # type: ignore[no-untyped-def]
    out = run(make_runner, ScriptedCoder(), world_ports(world()), "x", **{"statler.prompts.reader": "nope"})
    assert out.result.error == EpisodeError.INVALID_GOAL and "nope.txt" in out.result.reason


def test_a_domain_selects_its_prompt_files(make_runner, world_ports) -> None:  # type: ignore[no-untyped-def]
    llm = ScriptedCoder(reader=['say("no")\n'])
    out = run(make_runner, llm, world_ports(world()), "Is the cyan block heavier than the brown block?",
              **{"statler.domain": "weights"})
    assert out.result.error == EpisodeError.NONE, out.result.reason
    assert out.events[0].data["prompts"] == {"reader": "statler_weights_reader", "writer": "statler_weights_writer"}
    assert "blocks of different weights" in llm.reader_prompts[0] and "dirty" not in llm.reader_prompts[0]


def test_a_role_the_domain_lacks_is_an_invalid_goal(make_runner, world_ports) -> None:  # type: ignore[no-untyped-def]
    out = run(make_runner, ScriptedCoder(), world_ports(world()), "x", strategy="statler_unified",
              **{"statler.domain": "mine", "statler.domains.mine.reader": "statler_reader"})
    assert out.result.error == EpisodeError.INVALID_GOAL
    assert "statler.domains.mine.unified is not set" in out.result.reason


def test_domain_settings_are_validated(planner_parameters) -> None:  # type: ignore[no-untyped-def]
    from planner_node.core.settings import settings_from_parameters

    for extra, message in (({"statler.domain": "moon"}, "'moon' is not one of statler.domains"),
                           ({"statler.domains.covers.painter": "x"}, "statler.domains.covers.painter: the role")):
        with pytest.raises(ValueError, match=re.escape(message)):
            settings_from_parameters({**planner_parameters(), "strategy": "statler", **extra})


def test_every_configured_domain_prompt_exists_and_its_demos_name_only_their_objects(planner_parameters) -> None:  # type: ignore[no-untyped-def]
    params = planner_parameters()
    stems = {v for k, v in params.items() if k.startswith("statler.domains.")}
    assert {"statler_covers_reader", "statler_weights_writer", "cap_cot_weights", "statler_covers_unified"} <= stems
    for stem in stems:
        text = load_prompt(PROMPTS / f"{stem}.txt")
        header = re.search(r"# objects = (\[.*\])", text)
        objects = set(json.loads(header[1])) if header else set()
        for block in text.split("# state = {")[1:]:  # every state's objects (a statement can add one)
            objects |= set(parse_state("# state = {" + block)["objects"])
        objects |= set(mentioned_objects(re.findall(r"# query: (.*)", text), ["block", "cup"], sorted(objects)))
        for line in text.splitlines():
            if line.startswith("put_first_on_second("):
                call = parse_code(line).calls[0]
                assert call.args[0] in objects and call.args[1] in objects | {"table"}, (stem, line)


def test_strategies_are_registered_and_settings_validated(planner_parameters) -> None:  # type: ignore[no-untyped-def]
    from planner_node.core.settings import settings_from_parameters

    assert {"statler", "statler_unified", "statler_auto", "cap", "cap_cot"} <= set(strategies.names())
    params = {**planner_parameters(), "strategy": "statler", "statler.max_reprompts": -1,
              "statler.table_locations": [""]}
    with pytest.raises(ValueError) as e:
        settings_from_parameters(params)
    assert "statler.max_reprompts" in str(e.value) and "statler.table_locations" in str(e.value)


# ---- the prompt files -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", STATLER_PROMPTS)
def test_prompt_files_name_their_paper_lines_and_their_code_parses(name: str) -> None:
    path = PROMPTS / f"{name}.txt"
    raw = path.read_text(encoding="utf-8")
    header = [line for line in raw.splitlines() if line.startswith(HEADER_PREFIX)]
    assert "../shared/papers/statler.txt" in header[1] + header[0]
    assert any(re.search(r"l\.\d+-\d+", line) for line in header)
    assert any("Gap" in line or "gap" in line for line in header)
    text = load_prompt(path)
    assert not any(line.startswith(HEADER_PREFIX) for line in text.splitlines())
    assert text.rstrip().endswith("===")
    allowed = CAP_FUNCTIONS if name.startswith("cap") or name.endswith("unified") else None
    for line in text.splitlines():  # every demo code line is accepted by the reader's whitelist
        if re.match(r"^(put_first_on_second|say|update_wm|noop)\(", line):
            parse_code(line, allowed) if allowed is not None else parse_code(line)
    for block in text.split("# state = {")[1:]:  # every demo state parses
        parse_state("# state = {" + block)


@pytest.mark.parametrize("name, first, last", [("cap_policies", 426, 472), ("statler_reader", 474, 485)])
def test_prompts_reproduce_the_paper(name: str, first: int, last: int, paper_lines: Callable[[str, int, int], list[str]]) -> None:
    """The CaP prompt is Prompt 10 verbatim and the reader's preamble Prompt 11's, apart from the
    restored backticks of the function list (l.434, l.482)."""
    paper = [re.sub(r"^\d+", "", line) for line in paper_lines("statler.txt", first, last)]
    paper = [line.replace("‘", "") for line in paper]
    ours = load_prompt(PROMPTS / f"{name}.txt").splitlines()[: len(paper)]
    assert [line.replace("`", "") for line in ours] == paper


def test_the_node_publishes_state_events_as_json() -> None:
    pytest.importorskip("rclpy")
    from monologue_domain.transcript import Event
    from planner_node.core.strategies.statler import world_state_json

    state = {"objects": ["cyan block"], "cyan block": {"weight": Expression("red_block.weight / 2")}}
    event = Event("ep1", 3, EventKind.ROBOT_THOUGHT, render_state(state),
                  {"statler": "state", "world_state": state, "query_index": 2, "cause": "x"}, 5.0)
    msg = json.loads(world_state_json(event))
    assert msg == {"episode_id": "ep1", "query_index": 2, "cause": "x", "text": render_state(state), "stamp": 5.0,
                   "state": {"objects": ["cyan block"], "cyan block": {"weight": "red_block.weight / 2"}}}


# ---- separate reader and writer LLMs (S Table III: the writer is its own LLM) -----------------------------


def test_the_writer_can_run_on_its_own_backend(make_runner, world_ports, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Reader: the planner's LLM; writer: `statler.writer_llm` built by monologue_llm's factory, here a
    cassette (replay loads no model) recorded from a scripted writer in a first run."""
    from monologue_llm.cassette import CassetteBackend
    from planner_node.core.role_llm import close_role_backends

    reader = ['update_wm("The cyan block is dirty")\n',
              'put_first_on_second("cyan block", "green bowl")\nupdate_wm("Put the cyan block in the green bowl")\n']
    states = [state_text(cyan_block={"is": ["dirty"]}),
              state_text(cyan_block={"is": ["dirty"]}, green_bowl={"contains": ["cyan block"]})]
    instruction = "The cyan block is dirty\nPut the cyan block in the green bowl"
    cassette = tmp_path / "writer.jsonl"
    recorded = CassetteBackend(ScriptedCoder(list(reader), list(states)), cassette, "record")  # type: ignore[arg-type]
    first = run(make_runner, recorded, world_ports(world()), instruction)  # type: ignore[arg-type]
    assert first.result.error == EpisodeError.NONE, first.result.reason

    only_reader = ScriptedCoder(reader=list(reader))  # no writer answers: a writer call here would fail
    writer = {"statler.writer_llm.backend": "llama_cpp", "statler.writer_llm.cassette_mode": "replay",
              "statler.writer_llm.cassette_path": str(cassette)}
    try:
        out = run(make_runner, only_reader, world_ports(world()), instruction, **writer)
    finally:
        close_role_backends()
    assert out.result.error == EpisodeError.NONE, out.result.reason
    assert only_reader.writer_prompts == [] and len(only_reader.reader_prompts) == 2
    assert [e.data["world_state"] for e in statler_events(out, "state")][1:] == \
        [e.data["world_state"] for e in statler_events(first, "state")][1:]
    assert out.events[0].data["reader_llm"] == "scripted-coder"
    assert out.events[0].data["writer_llm"] == "cassette[replay](none)"


def test_writer_llm_settings_are_validated(planner_parameters) -> None:  # type: ignore[no-untyped-def]
    from planner_node.core.settings import settings_from_parameters

    base = {**planner_parameters(), "strategy": "statler"}
    assert settings_from_parameters(base).strategy_settings.get(StatlerSettings).writer_llm == {}
    s = settings_from_parameters({**base, "statler.writer_llm.backend": "openai",
                                  "statler.writer_llm.model": "writer"}).strategy_settings.get(StatlerSettings)
    cfg = s.writer_llm
    assert cfg["backend"] == "openai" and cfg["model"] == "writer" and cfg["n_ctx"] == base["llm.n_ctx"]
    with pytest.raises(ValueError) as e:
        settings_from_parameters({**base, "statler.writer_llm.backend": "gpt", "statler.writer_llm.temprature": 1})
    assert "statler.writer_llm.backend" in str(e.value) and "temprature" in str(e.value)


class GrammarCoder(ScriptedCoder):
    """A ScriptedCoder that takes a grammar (as llama.cpp does) and keeps every one it was given."""

    accepts_grammar = True

    def __init__(self, reader: Sequence[str] = (), writer: Sequence[str] = (), cut: bool = False) -> None:
        super().__init__(reader, writer)
        self.grammars: list[str | None] = []
        self.cut = cut

    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64,  # type: ignore[override]
                 grammar: str | None = None) -> Generation:
        self.grammars.append(grammar)
        gen = super().generate(prompt, stop, max_tokens)
        return Generation(gen.text, 1, 1, 1, "length" if self.cut else "stop", 0.0)


def test_constrained_reader_gets_the_scene_grammar(make_runner, world_ports) -> None:  # type: ignore[no-untyped-def]
    ports = world_ports(world())
    # the token limit cut the last line: with a grammar, that line is dropped and the rest runs
    llm = GrammarCoder(reader=['put_first_on_second("cyan block", "green bowl")\nput_first_on_second("yel'],
                       cut=True)
    out = run(make_runner, llm, ports, "Put the cyan block in the green bowl", strategy="cap",
              **{"statler.constrained": True})
    assert out.result.error == EpisodeError.NONE, out.result.reason
    assert ports.executed == [("pick_place", ("cyan block", "green bowl"))]
    grammar = llm.grammars[0]
    assert grammar is not None and '"cyan block"' in grammar and '"table"' in grammar
    assert "update_wm" not in grammar  # CaP's whitelist
    # statler_unified: the program, then the state (the writer's grammar, the unified prompt's vocabulary)
    llm2 = GrammarCoder(reader=["noop()\n# state = {\n" + state_text(cyan_block={"is": ["dirty"]})])
    out2 = run(make_runner, llm2, world_ports(world()), "The cyan block is dirty", strategy="statler_unified",
               **{"statler.constrained": True})
    assert out2.result.error == EpisodeError.NONE, out2.result.reason
    unified = llm2.grammars[0]
    assert unified is not None and "noop()" in unified and "update_wm" not in unified
    assert '\\n# state = {\\n' in unified and "dirty" in unified and '\\"cyan block\\"' in unified
    assert statler_events(out2, "state")[-1].data["world_state"]["cyan block"] == {"is": ["dirty"]}


def test_constrained_writer_gets_a_grammar_of_the_state_and_its_demonstrations(  # type: ignore[no-untyped-def]
        make_runner, world_ports) -> None:
    from monologue_llm.gbnf import sample
    from planner_node.core.strategies.statler.grammar import vocabulary_of, writer_node

    llm = GrammarCoder(reader=['update_wm("The cyan block is dirty")\n'],
                       writer=[state_text(cyan_block={"is": ["dirty"]})])
    out = run(make_runner, llm, world_ports(world()), "The cyan block is dirty", **{"statler.constrained": True})
    assert out.result.error == EpisodeError.NONE, out.result.reason
    reader_grammar, writer_grammar = llm.grammars
    assert reader_grammar is not None and writer_grammar is not None and writer_grammar != reader_grammar
    # the objects line is fixed, the attribute words are the Disinfection demonstrations' (S Prompt 5)
    assert '# \\"objects\\": [\\"cyan block\\", \\"yellow block\\", \\"brown block\\", \\"green bowl\\"' \
        in writer_grammar
    assert "dirty" in writer_grammar and "clean" in writer_grammar and "blue block" not in writer_grammar
    assert statler_events(out, "state")[-1].data["world_state"]["cyan block"] == {"is": ["dirty"]}
    # unconstrained: no grammar for either
    llm2 = GrammarCoder(reader=['update_wm("x")\n'], writer=[state_text()])
    run(make_runner, llm2, world_ports(world()), "x", **{"statler.constrained": False})
    assert llm2.grammars == [None, None]
    # what the writer may say: sampled states keep the objects and use only the demonstrations' words
    text = load_prompt(PROMPTS / "statler_writer.txt")
    vocab = vocabulary_of([parse_state("# state = {" + b) for b in text.split("# state = {")[1:]])
    assert dict(vocab.words) == {"is": ("dirty", "clean")} and vocab.object_lists == {"contains"}
    names = ["cyan block", "yellow block", "green bowl", "disinfector"]
    rng = random.Random(5)
    for _ in range(300):
        state = parse_state("# state = {\n" + sample(writer_node(names, vocab), rng))
        assert state["objects"] == names and set(state) == {"objects", "relations", *names}
        for name in names:
            for key, value in state[name].items():
                assert key in ("is", "contains")
                assert set(value) <= ({"dirty", "clean"} if key == "is" else set(names))


def test_an_object_the_person_names_can_be_moved_and_added_to_the_state(  # type: ignore[no-untyped-def]
        make_runner, world_ports) -> None:
    """A block hidden under a cup is not perceived; once the person names it, the reader may move it and
    the writer may add it to the state (grammar and name check alike)."""
    assert mentioned_objects(["The pink block is under the blue cup", "Put all the blocks in the bowl",
                              "Is the red block heavier?"], ["block", "cup"], ["blue cup", "red block"]) == \
        ["pink block"]
    llm = GrammarCoder(reader=['update_wm("The pink block is under the green bowl")\n',
                               'put_first_on_second("pink block", "yellow block")\n'],
                       writer=[state_text().replace('"green bowl"],', '"green bowl", "pink block"],')])
    ports = world_ports(world())
    out = run(make_runner, llm, ports, "The pink block is under the green bowl\nPut the pink block on the yellow block",
              **{"statler.constrained": True})
    assert statler_events(out, "rejected") == []  # the name is not refused
    assert ports.executed[:1] == [("pick_place", ("pink block", "yellow block"))]  # the skill was asked (and failed)
    assert "pink block" in llm.grammars[1] and "pink block" in llm.grammars[2]  # the writer's, then the reader's
    assert statler_events(out, "state")[-1].data["world_state"]["objects"][-1] == "pink block"
