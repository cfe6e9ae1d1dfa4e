"""`monologue-demo strategy:=statler scene:=disinfection` (issue 16's "done when") over DDS, on the expert
LLM stand-in (`llm:=expert`, issue 29), with the reader and the writer on two backends (the writer's own
`statler.writer_llm.backend: expert`).

The stand-in answers as a capable model would (monologue_llm.expert.formats.statler): the reader turns an
informational query into `update_wm`, a move query into `put_first_on_second` + `update_wm`, and "Put the
dirty blocks in the disinfector" into the moves of exactly the blocks that are dirty (upper blocks first);
the writer writes the state the domain's rules give (S Prompt 11 l.474-478): a stated fact marks a block,
touching spreads dirt, the disinfector cleans. It reads the world's hidden truth from its side channel,
which only the simulator writes; the planner and perception never see it. The test checks that the stated
fact changed the state, that the later action depended on it, and that the bag holds both topics.

The hand-written scripted reader and writer this test used before are kept below (and tested): they are
the rules' second, independent statement, which the expert's states are checked against.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from planner_node.core.strategies.statler.state import parse_state, render_state

pytestmark = [pytest.mark.system]

_STATE = re.compile(r"^# state = \{$", re.MULTILINE)


def _current_state(prompt: str) -> dict[str, Any]:
    """The last state the prompt shows (the reader's and the writer's current state)."""
    heads = list(_STATE.finditer(prompt))
    writing = prompt.endswith("# state = {\n")  # the writer's prompt ends with the head of its answer
    return parse_state(prompt[heads[-2 if writing else -1].start():])


def _query(prompt: str) -> str:
    return str(re.findall(r"^# query: (.*)$", prompt, re.MULTILINE)[-1]).strip()


def _is(state: dict[str, Any], name: str) -> list[str]:
    value = state.get(name, {})
    return list(value.get("is", [])) if isinstance(value, dict) else []


def _blocks(text: str) -> list[str]:
    return re.findall(r"(?:the )?(\w+ block)", text)


def scripted_reader(prompt: str) -> str:
    query, state = _query(prompt), _current_state(prompt)
    if query.startswith("Put the dirty blocks in the"):
        target = query.rsplit("the ", 1)[1].rstrip(".")
        dirty = [o for o in state["objects"] if "dirty" in _is(state, o)]
        below = {r[0].split(" is on ")[1] for r in state.get("relations", []) if " is on " in r[0]}
        order = [b for b in dirty if b not in below] + [b for b in dirty if b in below]  # upper blocks first
        moves = "".join(f'put_first_on_second("{b}", "{target}")\n' for b in order)
        return (f"# THINK: the dirty blocks are {', '.join(order)}\n{moves}"
                f'update_wm("Put the {" and the ".join(order)} in the {target}")\n')
    m = re.match(r"Put the (\w+ block) (?:on|in) the (.+?)\.?$", query)
    if m:
        return f'put_first_on_second("{m[1]}", "{m[2]}")\nupdate_wm("{query.rstrip(".")}")\n'
    return f'update_wm("{query.rstrip(".")}")\n'


def scripted_writer(prompt: str) -> str:
    update, state = _query(prompt), _current_state(prompt)
    for b in _blocks(update) if "is dirty" in update else []:
        state[b] = {**state.get(b, {}), "is": ["dirty"]}
    m = re.match(r"Put the (\w+ block) on the (\w+ block)$", update)
    if m:
        state["relations"] = [r for r in state.get("relations", []) if not r[0].startswith(m[1])]
        state["relations"].append([f"{m[1]} is on {m[2]}"])
        if "dirty" in _is(state, m[1]) + _is(state, m[2]):  # contagion, up and down
            state[m[1]] = {**state[m[1]], "is": ["dirty"]}
            state[m[2]] = {**state[m[2]], "is": ["dirty"]}
    if update.endswith("in the disinfector"):
        moved = _blocks(update)
        state["relations"] = [r for r in state.get("relations", []) if not any(r[0].startswith(b) for b in moved)]
        state["disinfector"] = {"contains": moved}
        for b in moved:
            state[b] = {**state[b], "is": ["clean"]}
    return render_state(state).split("\n", 1)[1] + "\n"


def test_scripted_sources_follow_the_domain_rules() -> None:
    state = {"objects": ["red block", "blue block", "disinfector"], "relations": [], "red block": {},
             "blue block": {}, "disinfector": {"contains": []}}
    state["red block"] = {"is": ["dirty"]}
    writer = "x\n" + render_state(state) + "\n# query: Put the blue block on the red block\n# state = {\n"
    after = parse_state("# state = {\n" + scripted_writer(writer))
    assert after["blue block"] == {"is": ["dirty"]} and after["relations"] == [["blue block is on red block"]]
    reader = "x\n" + render_state(after) + "\n# query: Put the dirty blocks in the disinfector.\n"
    assert scripted_reader(reader).count("put_first_on_second") == 2
    assert scripted_reader(reader).index('"blue block"') < scripted_reader(reader).index('"red block"')


def test_demo_disinfection_a_stated_fact_decides_a_later_action(ros_domain: int, tmp_path: Path) -> None:
    from monologue_bag.core.bagio import Bag

    bag = tmp_path / "bag"
    exe = shutil.which("monologue-demo")
    cmd = [exe] if exe else [sys.executable, "-m", "monologue_eval.demo"]
    run = subprocess.run(
        [*cmd, "robot:=sim_kinematic", "strategy:=statler", "scene:=disinfection", "llm:=expert", "seed:=5",
         "timeout:=40", f"record:={bag}",
         "--param", "planner:statler.writer_llm.backend=expert",
         "--param", "skills:sim.phase_duration=0.02"],
        capture_output=True, text=True, timeout=55, stdin=subprocess.DEVNULL,
        env=dict(os.environ, ROS_DOMAIN_ID=str(ros_domain)))
    out = f"{run.stdout[-8000:]}\n{run.stderr[-3000:]}"
    assert run.returncode == 0, out
    assert "scene=disinfection" in run.stdout and "strategy=statler" in run.stdout
    assert "== world state satisfies the instruction: True" in run.stdout, out

    with Bag(bag) as b:
        states = [json.loads(m.data) for _, m in b.decoded("/planner/world_state")]
        truths = [json.loads(m.data) for _, m in b.decoded("/sim/statler_truth")]
        events = [(m.kind, json.loads(m.data_json)) for _, m in b.decoded("/monologue/transcript")]
    start = next(d for _, d in events if "statler_variant" in d)
    assert "expert" in start["reader_llm"] and "expert" in start["writer_llm"]  # (recorded: in a cassette)
    assert [s["query_index"] for s in states] == [-1, 0, 1, 2]
    assert states[1]["state"]["red block"] == {"is": ["dirty"]} and states[1]["cause"] == "The red block is dirty"
    assert states[1]["state"]["blue block"] == {}  # nothing was said of it yet
    # after "Put the blue block on the red block": dirt spread up; the green block was never named
    after_stack = states[2]["state"]
    assert after_stack["blue block"] == {"is": ["dirty"]} and after_stack["green block"] == {}
    assert ["blue block is on red block"] in after_stack["relations"]
    # the same rules, stated independently by the scripted writer, give the same cleanliness
    scripted = parse_state("# state = {\n" + scripted_writer(
        "x\n" + render_state(states[1]["state"]) + "\n# query: Put the blue block on the red block\n# state = {\n"))
    assert {b: scripted[b] for b in ("red block", "blue block")} == \
        {b: after_stack[b] for b in ("red block", "blue block")}
    assert set(states[-1]["state"]["disinfector"]["contains"]) == {"blue block", "red block"}
    assert states[-1]["state"]["blue block"] == {"is": ["clean"]} == states[-1]["state"]["red block"]
    moves = [d["args"] for _, d in events if d.get("skill") == "pick_place"]
    assert moves == [["blue block", "red block"], ["blue block", "disinfector"], ["red block", "disinfector"]]
    assert truths[0]["dirty"] == ["red block"]
    assert any(t["dirty"] == ["blue block", "red block"] for t in truths)  # the truth agreed before the cleaning
    assert truths[-1]["dirty"] == [] and set(truths[-1]["contains"]["disinfector"]) == {"red block", "blue block"}
