"""MultiTalk's and Statler's GBNF grammars: every string they admit parses (sampled from the same grammar
objects that are rendered to GBNF, plus hand-written edge cases), and the embedded model constrained by
them writes parseable answers (marker llm)."""
from __future__ import annotations

import random

import pytest

from monologue_llm.gbnf import sample
from planner_node.core.strategies.multitalk.grammar import (
    analyzer_grammar,
    analyzer_node,
    planner_grammar,
    planner_node,
)
from planner_node.core.strategies.multitalk.parsing import PLAN, parse_analyzer_output, parse_planner_output
from planner_node.core.strategies.statler.code import CAP_FUNCTIONS, STATLER_FUNCTIONS, parse_code
from planner_node.core.strategies.statler.grammar import END, reader_grammar, reader_node

POINTS = ["0.25, 0.1, 0.0", "0.5, -0.125, 0.02", "0.3, 0.3, 0.0"]
OBJECTS = ["cyan block", "yellow block", "green bowl", "disinfector"]
TARGETS = [*OBJECTS, "middle", "table"]
READER_STOPS = ("# query:", "===", "# state =", "# world_state =")


def _cut(text: str, stops: tuple[str, ...]) -> str:
    hits = [i for i in (text.find(s) for s in stops) if i >= 0]
    return text[: min(hits)] if hits else text


@pytest.mark.parametrize("points,grasp,pairs", [([], [], False), (POINTS, [], False), (POINTS, POINTS[:1], False),
                                                ([], [], True), (POINTS, POINTS[:1], True)])
def test_every_sampled_planner_answer_parses(points: list[str], grasp: list[str], pairs: bool) -> None:
    rng = random.Random(7)
    node = planner_node(points, grasp, pairs)
    kinds = set()
    for _ in range(600):
        text = sample(node, rng)
        out = parse_planner_output(text)
        kinds.add(out.kind)
        if out.kind == PLAN and points:
            allowed = {tuple(float(v) for v in p.split(", ")) for p in POINTS}
            assert all(s.action.coords is None or s.action.coords in allowed for s in out.steps)
            if grasp:
                assert all(s.action.coords == (0.25, 0.1, 0.0) for s in out.steps if s.action.verb == "grasp")
        if out.kind == PLAN and pairs:
            verbs = [s.action.verb for s in out.steps]
            body = verbs[:-1] if verbs[-1] == "home" else verbs
            assert body and body == ["grasp", "move"] * (len(body) // 2)
    assert kinds == {"plan", "questions", "perception"}


def test_every_sampled_analyzer_answer_parses() -> None:
    rng = random.Random(3)
    node = analyzer_node()
    verdicts = {parse_analyzer_output(sample(node, rng)).feasible for _ in range(400)}
    assert verdicts == {True, False}


@pytest.mark.parametrize("text", [
    "Step-by-step Instructions:\n1: grasp((0.25, 0.1, 0.0)) # Questions: which one? Perception Rerun Required",
    "Step-by-step Instructions:\n1: home() # ## \"quoted\" # Step-by-step Instructions:",
    "Questions:\n1: Is it the Perception Rerun Required case?\n2: Step-by-step Instructions: or not?",
    "Step-by-step Instructions:\n1: move((-0.5,0.1,0)) # x\n2: home()",
])
def test_edge_cases_the_planner_grammar_admits_parse(text: str) -> None:
    parse_planner_output(text)


def test_mixed_types_at_line_starts_are_still_rejected() -> None:
    from planner_node.core.strategies.multitalk.parsing import OutputRejected
    with pytest.raises(OutputRejected, match="mixes"):
        parse_planner_output("Questions:\n1: Which one?\nPerception Rerun Required")


@pytest.mark.parametrize("allowed,objects,targets", [
    (STATLER_FUNCTIONS, OBJECTS, TARGETS), (CAP_FUNCTIONS, OBJECTS, TARGETS), (STATLER_FUNCTIONS, [], [])])
def test_every_sampled_reader_program_parses(allowed: frozenset[str], objects: list[str],
                                             targets: list[str]) -> None:
    rng = random.Random(11)
    node = reader_node(allowed, objects, targets)
    used: set[str] = set()
    for _ in range(600):
        text = _cut(sample(node, rng), READER_STOPS)
        program = parse_code(text, allowed)
        used |= {c.function for c in program.calls}
        for c in program.calls:
            if c.function == "put_first_on_second" and objects:
                assert c.args[0] in objects and c.args[1] in targets
    assert used == set(allowed)


@pytest.mark.parametrize("prompt", ["statler_writer", "statler_covers_writer", "statler_weights_writer",
                                    "statler_auto_writer"])
def test_every_sampled_writer_state_parses_and_keeps_the_objects(prompt: str) -> None:
    from pathlib import Path

    from planner_node.core.strategies.statler.grammar import vocabulary_of, writer_node
    from planner_node.core.strategies.statler.loop import load_prompt
    from planner_node.core.strategies.statler.state import Expression, parse_state

    text = load_prompt(Path(__file__).resolve().parents[3] / "config" / "prompts" / f"{prompt}.txt")
    vocab = vocabulary_of([parse_state("# state = {" + b) for b in text.split("# state = {")[1:]])
    rng = random.Random(13)
    kinds: set[type] = set()
    for _ in range(300):
        state = parse_state("# state = {\n" + sample(writer_node(OBJECTS, vocab), rng))
        assert state["objects"] == OBJECTS and set(state) == {"objects", "relations", *OBJECTS}
        assert all(isinstance(r, str) and " is " in r for r in state["relations"])
        for name in OBJECTS:
            kinds |= {type(v) for v in state[name].values()}
            if prompt == "statler_weights_writer":
                assert set(state[name]) <= {"weight", "contains"}
    assert (Expression in kinds) == (prompt in ("statler_weights_writer", "statler_auto_writer"))


def test_every_sampled_unified_answer_splits_into_code_and_a_state() -> None:
    from monologue_llm.gbnf import Node, seq
    from planner_node.core.strategies.statler.grammar import Vocabulary, reader_node, writer_node
    from planner_node.core.strategies.statler.state import parse_state

    vocab = Vocabulary({"is": ("dirty", "clean")}, frozenset({"contains"}))
    node: Node = seq(reader_node(CAP_FUNCTIONS, OBJECTS, TARGETS, end=False), "\n# state = {\n",
                     writer_node(OBJECTS, vocab))
    rng = random.Random(17)
    for _ in range(200):
        text = sample(node, rng)
        code, state = text.split("\n# state = {\n")
        assert parse_code(code, CAP_FUNCTIONS).calls
        assert parse_state("# state = {\n" + state)["objects"] == OBJECTS


def test_grammars_render_as_gbnf() -> None:
    for text in (planner_grammar(POINTS), planner_grammar(), analyzer_grammar(),
                 reader_grammar(STATLER_FUNCTIONS, OBJECTS, TARGETS)):
        assert text.startswith("root ::= ")
    assert END.strip() in READER_STOPS


@pytest.mark.llm
def test_embedded_model_writes_parseable_answers_under_the_grammars(llama_backend: object) -> None:
    from monologue_llm.base import generate_constrained
    from monologue_llm.llama_cpp_backend import LlamaCppBackend
    assert isinstance(llama_backend, LlamaCppBackend)
    plan_prompt = ("Objects: {'red block': ((0.04, 0.04, 0.04), (0.25, 0.1, 0.0)), "
                   "'red bowl': ((0.1, 0.1, 0.05), (0.5, -0.125, 0.02))}\n"
                   "Task: put the red block in the red bowl.\nPlanner:\n")
    gen = generate_constrained(llama_backend, plan_prompt, stop=("\nUser:",), max_tokens=96,
                               grammar=planner_grammar(POINTS))
    parse_planner_output(gen.text if gen.finish_reason == "stop" else gen.text.rsplit("\n", 1)[0])
    gen = generate_constrained(llama_backend, plan_prompt + gen.text + "\n\nAnalyzer:\n", stop=("\nUser:",),
                               max_tokens=64, grammar=analyzer_grammar())
    parse_analyzer_output(gen.text if gen.finish_reason == "stop" else gen.text.rsplit("\n", 1)[0])
    code_prompt = "# objects = [\"cyan block\", \"green bowl\"]\n# query: Put the cyan block in the green bowl\n"
    gen = generate_constrained(llama_backend, code_prompt, stop=READER_STOPS, max_tokens=80,
                               grammar=reader_grammar(CAP_FUNCTIONS, OBJECTS, TARGETS))
    text = gen.text if gen.finish_reason == "stop" else gen.text.rsplit("\n", 1)[0]
    assert parse_code(text, CAP_FUNCTIONS).calls
