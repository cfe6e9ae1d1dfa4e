"""MultiTalk (issue 17): parsing of the Planner's and Analyzer's answers, the scene's serialisation,
the prompt files against the supplement, the simulator stage, and whole episodes with a scripted
Planner and Analyzer over the kinematic tabletop (analyzer rejection, simulator rejection, questions,
perception reruns, unparseable answers, the ablation, the acceptance gate)."""
from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from monologue_domain.kinematic_world import TabletopWorld, world_with
from monologue_domain.transcript import Event, EventKind
from monologue_llm.base import Generation
from planner_node.core.episode import EpisodeError
from planner_node.core.ports import SceneItem, Workspace
from planner_node.core.runner import GoalRequest
from planner_node.core.settings import settings_from_parameters
from planner_node.core.strategies.multitalk.parsing import (
    PERCEPTION,
    PLAN,
    QUESTIONS,
    OutputRejected,
    parse_action,
    parse_analyzer_output,
    parse_planner_output,
)
from planner_node.core.strategies.multitalk.prompts import (
    ANALYZER_STATIC,
    ANALYZER_TURNS,
    PLANNER_STATIC,
    PLANNER_TURNS,
    PromptFileError,
    load_prompt_file,
)
from planner_node.core.strategies.multitalk.scene import (
    Box,
    fmt,
    perceived_boxes,
    relations,
    render_bounds,
    serialise_objects,
    serialise_relations,
)
from planner_node.core.strategies.multitalk.settings import MultitalkSettings
from planner_node.core.strategies.multitalk.sim import simulate

REPO = Path(__file__).resolve().parents[3]
PROMPTS = REPO / "config" / "prompts"
TASK = "Put the blocks in their matching bowls."
WS = Workspace((0.25, -0.35, -0.01), (0.75, 0.35, 0.6), 0.0)


# ----------------------------------------------------------------------------------- helpers --
class Dialogue:
    """A scripted Planner and Analyzer: each role answers from its own list, in order; the prompts
    are kept per role. A role is told by the open turn its prompt ends with."""

    name = "dialogue"

    def __init__(self, planner: Sequence[str], analyzer: Sequence[str] = ()) -> None:
        self.answers = {"Planner": list(planner), "Analyzer": list(analyzer)}
        self.prompts: dict[str, list[str]] = {"Planner": [], "Analyzer": []}

    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64) -> Generation:
        role = "Analyzer" if prompt.endswith("\n\nAnalyzer:\n") else "Planner"
        assert prompt.endswith(f"\n\n{role}:\n") and f"\n{role}:" in stop
        self.prompts[role].append(prompt)
        queue = self.answers[role]
        text = queue.pop(0) if queue else ""
        return Generation(text, len(prompt) // 4, len(prompt) // 4, len(text) // 4, "stop", 0.0)

    def score(self, prompt: str, candidates: Sequence[str]) -> Any:
        raise AssertionError("MultiTalk only generates")

    def close(self) -> None:
        pass


class Asker:
    """A person who answers from a list (None: no answer)."""

    def __init__(self, answers: Sequence[str | None]) -> None:
        self.answers = list(answers)
        self.questions: list[str] = []

    def ask(self, question: str, timeout_s: float, cancel: threading.Event, episode_id: str = "") -> str | None:
        self.questions.append(question)
        return self.answers.pop(0) if self.answers else None


def geo_ports(world_ports: type, world: TabletopWorld, workspace: Workspace | None = None) -> Any:
    """The conftest's world ports with positions and sizes in the scene (as perception gives them)
    and, optionally, the robot's safety workspace."""
    class GeoPorts(world_ports):  # type: ignore[misc, valid-type]
        describes = 0

        def describe(self) -> list[SceneItem]:
            GeoPorts.describes += 1
            return [SceneItem(s.name, s.category, True, s.position, s.size) for s in self.world.snapshot()]

        def workspace(self) -> Workspace | None:
            return workspace

    return GeoPorts(world)


def scene() -> TabletopWorld:
    return world_with([("red block", (0.4, 0.1, 0.02)), ("blue block", (0.6, -0.1, 0.02)),
                       ("red bowl", (0.5, 0.2, 0.0)), ("blue bowl", (0.35, -0.2, 0.0))])


GOOD_PLAN = """Step-by-step Instructions:
1: grasp((0.4, 0.1, 0.02)) # the red block
2: move((0.5, 0.2, 0.0)) # into the red bowl
3: grasp((0.6, -0.1, 0.02)) # the blue block
4: move((0.35, -0.2, 0.0)) # into the blue bowl
5: home() # done"""
WRONG_PLAN = """Step-by-step Instructions:
1: grasp((0.4, 0.1, 0.02)) # the red block
2: move((0.35, -0.2, 0.0)) # into a bowl
3: home() # done"""
COLLIDING_PLAN = """Step-by-step Instructions:
1: grasp((0.4, 0.1, 0.02)) # the red block
2: move((0.6, -0.1, 0.0)) # to where the blue block is, on the table
3: home()"""


def run(make_runner: Any, llm: Any, ports: Any, asker: Any = None, **params: object) -> Any:
    params = {"multitalk.planner_decoding": "generate", **params}  # the scripted dialogues write the Planner's answers
    runner = make_runner(llm, ports, asker=asker, strategy="multitalk", **params)
    return runner.execute(GoalRequest(TASK))


def stages(events: Sequence[Event]) -> list[str]:
    return [str(e.data.get("multitalk", e.kind.name)) for e in events]


# ----------------------------------------------------------------------------------- parsing --
def test_planner_output_types() -> None:
    plan = parse_planner_output(GOOD_PLAN)
    assert plan.kind == PLAN and len(plan.steps) == 5
    assert plan.steps[0].action.verb == "grasp" and plan.steps[0].action.coords == (0.4, 0.1, 0.02)
    assert plan.steps[1].reasoning == "into the red bowl" and plan.steps[4].action.coords is None
    assert plan.text.splitlines()[0] == "Step-by-step Instructions:" and plan.text.splitlines()[1] == \
        "1: grasp((0.4, 0.1, 0.02)) # the red block"
    q = parse_planner_output("Questions:\n1: Which bowl?\n2: Should I go home after?")
    assert q.kind == QUESTIONS and q.questions == ("Which bowl?", "Should I go home after?")
    assert parse_planner_output('"Perception Rerun Required"').kind == PERCEPTION
    assert parse_planner_output("```\nStep-by-step Instructions:\n1: move(0.5, 0.1) # 2D\n```").steps[0].action.coords \
        == (0.5, 0.1, 0.0)
    assert parse_action("grasp([\u22120.1, 0.2, 0])").coords == (-0.1, 0.2, 0.0)  # a typographic minus


@pytest.mark.parametrize(("text", "reason"), [
    ("Sure, I will put the blocks into the bowls.", "none of"),
    ("Questions:\n1: Which one?\nStep-by-step Instructions:\n1: home()", "mixes"),
    ("Step-by-step Instructions:\n1: grasp(red block) # by name", "coordinates only"),
    ("Step-by-step Instructions:\n1: pick((0.4, 0.1)) # not an action", "unknown action"),
    ("Step-by-step Instructions:\n1: grasp((0.4, 0.1, 0.0, 1.0))", "2 or 3 coordinates"),
    ("Step-by-step Instructions:\n1: home()\n3: home()", "numbered 1, 2, 3"),
    ("Step-by-step Instructions:\ngrasp((0.4, 0.1))", "not numbered"),
    ("Step-by-step Instructions:", "no numbered lines"),
    ("Perception Rerun Required, and also the red block", "whole answer"),
    ("I think: Questions:\n1: what?", "text before"),
    ("Step-by-step Instructions:\n1: home(now)", "no arguments"),
])
def test_planner_output_rejected(text: str, reason: str) -> None:
    with pytest.raises(OutputRejected, match=reason):
        parse_planner_output(text)


def test_analyzer_verdicts() -> None:
    assert parse_analyzer_output("'Feasible Plan!'").feasible
    assert parse_analyzer_output("Step-by-step Instructions:\n1: no violations\n2: 'no violations'").feasible
    v = parse_analyzer_output("Step-by-step Instructions:\n1: no violations\n"
                              "2: The target location is assumed by the planner # ask the user")
    assert not v.feasible and v.findings == ((2, "The target location is assumed by the planner # ask the user"),)
    assert v.comments == "2: The target location is assumed by the planner # ask the user"
    both = parse_analyzer_output("3: grasp coordinates match no object\nFeasible Plan!")
    assert not both.feasible  # a violation outweighs the phrase
    with pytest.raises(OutputRejected):
        parse_analyzer_output("The plan looks reasonable to me.")


# ------------------------------------------------------------------------------ scene, prompts --
def test_scene_serialisation_and_relations() -> None:
    boxes = [Box("red bowl", "bowl", (0.12, 0.12, 0.05), (0.5, 0.2, 0.0)),
             Box("red block", "block", (0.04, 0.04, 0.04), (0.5, 0.2, 0.025)),
             Box("blue block", "block", (0.04, 0.04, 0.04), (0.6, -0.1, 0.02)),
             Box("green block", "block", (0.04, 0.04, 0.04), (0.6, -0.1, 0.06)),
             Box("middle", "location", (0.0, 0.0, 0.0), (0.5, 0.0, 0.0))]
    assert serialise_objects(boxes[:2], 3) == \
        "{'red bowl': ((0.12, 0.12, 0.05), (0.5, 0.2, 0.0)), 'red block': ((0.04, 0.04, 0.04), (0.5, 0.2, 0.025))}"
    rels = relations(boxes, near_distance=0.2)
    assert ("red bowl", "red block", "in") in rels  # object_2 is in object_1 (M l.198)
    assert ("blue block", "green block", "on") in rels and ("green block", "blue block", "on") not in rels
    assert all("middle" not in (a, b) for a, b, _ in rels)
    assert not any({a, b} == {"blue block", "green block"} and r == "near" for a, b, r in rels)
    assert serialise_relations([("red bowl", "red block", "in")]) == "[(('red bowl', 'red block'), 'in')]"
    assert render_bounds(WS, 3) == "0.25 < x < 0.75, -0.35 < y < 0.35, and z \u2265 0.0"
    assert fmt(-0.0001, 3) == "0.0" and fmt(0.1234, 2) == "0.12"
    items = [SceneItem("red block", "block", True, (0.4, 0.1, 0.02), (0.04, 0.04, 0.04)),
             SceneItem("ghost", "block", True), SceneItem("hidden block", "block", False, (0.5, 0.0, 0.02)),
             SceneItem("middle", "location", True, (0.5, 0.0, 0.0), (0.0, 0.0, 0.0))]
    got, unplaced = perceived_boxes(items, include_locations=False)
    assert [b.name for b in got] == ["red block"] and unplaced == ["ghost"]


def _norm(text: str) -> str:
    text = (text.replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"').replace("\u2013", "-")
            .replace("\u2212", "-").replace("\u2265", ">="))
    text = re.sub(r"(\w)-\s*\n\s*(\w)", r"\1\2", text)
    return " ".join(text.split()).lower()


def test_prompt_files_reproduce_the_supplement(paper_lines: Callable[[str, int, int], list[str]]) -> None:
    planner = load_prompt_file(PROMPTS / "multitalk_planner.txt", PLANNER_STATIC + PLANNER_TURNS)
    analyzer = load_prompt_file(PROMPTS / "multitalk_analyzer.txt", ANALYZER_STATIC + ANALYZER_TURNS)
    paper = _norm("\n".join(paper_lines("multitalk_supplement.txt", 36, 264)))  # App. C-D
    checked = 0
    for f in (planner, analyzer):
        for name, block in f.blocks.items():
            for line in block.splitlines():
                # the parts between our placeholders must be the supplement's words
                for part in re.split(r"<robot>|<bounds>|<plan>|<question_and_answers>|```", line):
                    part = _norm(part).strip(" .,-")
                    if len(part) >= 25:
                        assert part in paper, f"{f.path.name} [{name}]: {part!r} is not in the supplement"
                        checked += 1
    assert checked > 60


def test_prompt_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "p.txt"
    bad.write_text("#% header\n=== system ===\nYou are a robot.\n")
    with pytest.raises(PromptFileError, match="missing or empty blocks"):
        load_prompt_file(bad, PLANNER_STATIC)
    bad.write_text("stray text\n=== system ===\nx\n")
    with pytest.raises(PromptFileError, match="before the first"):
        load_prompt_file(bad, ("system",))
    with pytest.raises(PromptFileError, match="cannot read"):
        load_prompt_file(tmp_path / "none.txt", ("system",))


# --------------------------------------------------------------------------------- simulator --
def _boxes(world: TabletopWorld) -> list[Box]:
    return [Box(s.name, s.category, s.size, s.position) for s in world.snapshot()]


@pytest.mark.parametrize(("plan", "error"), [
    (COLLIDING_PLAN, "Step 2: move((0.6, -0.1, 0.0)): collision: the red block would hit the blue block"),
    ("Step-by-step Instructions:\n1: grasp((0.4, 0.1))\n2: move((0.7, 0.3)) # top left corner\n3: grasp((0.6, -0.1))\n"
     "4: move((0.7, 0.3))", "Step 4: move((0.7, 0.3, 0.0)): collision: the blue block would hit the red block (z = 0"),
    ("Step-by-step Instructions:\n1: move((0.5, 0.2))", "Step 1: move((0.5, 0.2, 0.0)): no object is grasped"),
    ("Step-by-step Instructions:\n1: grasp((0.45, 0.0))", "there is no object at these coordinates"),
    ("Step-by-step Instructions:\n1: grasp((0.5, 0.2))\n2: move((0.4, 0.1))", "cannot grasp the red bowl"),
    ("Step-by-step Instructions:\n1: grasp((0.4, 0.1))\n2: grasp((0.6, -0.1))", "only one object"),
    ("Step-by-step Instructions:\n1: grasp((0.4, 0.1))\n2: move((0.9, 0.1))", "out of bounds: x = 0.9"),
    ("Step-by-step Instructions:\n1: home()\n2: grasp((0.4, 0.1))", "no action can be performed after home()"),
    ("Step-by-step Instructions:\n1: grasp((0.4, 0.1))\n2: home()", "returns home still holding the red block"),
    ("Step-by-step Instructions:\n1: grasp((0.4, 0.1))", "ends with the red block still grasped"),
    ("Step-by-step Instructions:\n1: grasp((0.4, 0.1))\n2: move((0.45, 0.0))", "nothing to put the red block on"),
])
def test_simulator_errors(plan: str, error: str) -> None:
    result = simulate(parse_planner_output(plan).steps, _boxes(scene()), WS, 0.03)
    assert not result.ok and error in result.error


def test_simulator_collision_at_a_table_location() -> None:
    world = world_with([("red block", (0.4, 0.1, 0.02)), ("green block", (0.665, 0.3, 0.02))])  # 3.5 cm off the corner
    plan = parse_planner_output("Step-by-step Instructions:\n1: grasp((0.4, 0.1))\n2: move((0.7, 0.3)) # top left corner")
    result = simulate(plan.steps, _boxes(world), WS, 0.03)
    assert not result.ok and "collision: the red block would hit the green block at the top left corner" in result.error


def test_simulator_approves_and_maps_onto_pick_place() -> None:
    world = scene()
    plan = GOOD_PLAN.replace("5: home() # done", "5: grasp((0.5, 0.2, 0.03)) # the red block, now in the bowl\n"
                             "6: move((0.5, 0.0, 0.0)) # to the middle of the table\n"
                             "7: grasp((0.35, -0.2)) # the blue block\n8: move((0.5, 0.0, 0.04)) # onto the red block\n"
                             "9: home()")
    result = simulate(parse_planner_output(plan).steps, _boxes(world), WS, 0.03)
    assert result.ok and result.homed, result.error
    assert [(c.skill, c.args, c.steps) for c in result.calls] == [
        ("pick_place", ("red block", "red bowl"), (1, 2)), ("pick_place", ("blue block", "blue bowl"), (3, 4)),
        ("pick_place", ("red block", "middle"), (5, 6)), ("pick_place", ("blue block", "red block"), (7, 8))]
    assert world.get("red block").x == 0.4  # the simulation ran on a copy of the perceived scene


# ---------------------------------------------------------------------------------- episodes --
def test_settings_block_is_read(planner_parameters: Any) -> None:
    s = settings_from_parameters(planner_parameters()).strategy_settings.get(MultitalkSettings)
    assert s.ablation == "full" and s.prompt_path("planner").is_file() and s.prompt_path("analyzer").is_file()
    params = {**planner_parameters(), "multitalk.ablation": "planner_only"}
    del params["multitalk.max_rounds"]
    with pytest.raises(ValueError, match=r"multitalk.ablation.*|multitalk.max_rounds"):
        settings_from_parameters(params)


def test_analyzer_rejects_the_first_plan_and_the_revised_plan_runs(make_runner: Any, world_ports: Any) -> None:
    world = scene()
    ports = geo_ports(world_ports, world, WS)
    llm = Dialogue([WRONG_PLAN, GOOD_PLAN],
                   ["Step-by-step Instructions:\n1: no violations\n2: The red block does not match the blue bowl "
                    "# the task asks for matching bowls\n3: no violations", "Feasible Plan!"])
    out = run(make_runner, llm, ports)
    assert out.result.error == EpisodeError.NONE, out.result.reason
    assert world.is_on("red block", "red bowl") and world.is_on("blue block", "blue bowl")
    assert ports.executed == [("pick_place", ("red block", "red bowl")), ("pick_place", ("blue block", "blue bowl"))]
    st = stages(out.events)
    assert st[:3] == ["perception", "task", "planner"]
    assert st.index("analyzer") < st.index("planner", 3) < len(st) - 1 - st[::-1].index("analyzer") < \
        st.index("simulator") < st.index("execute")
    # the prompts: the Planner's Environment carries the safety workspace; the Analyzer gets relations
    first = llm.prompts["Planner"][0]
    assert "You are in the command of a UR5e arm." in first
    assert "coordinate bounds 0.25 < x < 0.75, -0.35 < y < 0.35, and z \u2265 0.0" in first
    assert "Enviornment: {'red block': ((0.04, 0.04, 0.04), (0.4, 0.1, 0.02))" in first
    assert first.index("Necessary and sufficient robot actions") < first.index("The UR5e arm's base is at origin") \
        < first.index("If there is no ambiguity")  # system, actions, environment, output format (M l.36)
    second = llm.prompts["Planner"][1]
    assert second.startswith(first[:-len("\n\nPlanner:\n")]) and WRONG_PLAN in second  # one conversation
    assert "The following are the comments on the step-by-step instructions you generated:\n2: The red block " \
        "does not match the blue bowl" in second
    a1, a2 = llm.prompts["Analyzer"]
    assert "High-level instruction given to the planner: " + TASK in a1 and "Observed semantic relations: ```" in a1
    assert "\n'None'\n" in a1 and "Based on the feedback you provided" in a2 and GOOD_PLAN.split("\n", 1)[1] in a2
    summary = next(e for e in out.events if e.data.get("multitalk") == "summary")
    assert summary.data["counts"]["analyzer_rejections"] == 1 and summary.data["counts"]["plans_accepted"] == 1


def test_simulator_catches_a_collision_and_the_revised_plan_runs(make_runner: Any, world_ports: Any) -> None:
    world = scene()
    ports = geo_ports(world_ports, world, WS)
    llm = Dialogue([COLLIDING_PLAN, GOOD_PLAN], ["Feasible Plan!", "Feasible Plan!"])
    out = run(make_runner, llm, ports)
    assert out.result.success, out.result.reason
    sims = [e for e in out.events if e.data.get("multitalk") == "simulator"]
    assert [e.data["ok"] for e in sims] == [False, True]
    assert "collision: the red block would hit the blue block (z = 0 m is below its top at 0.04 m)" in sims[0].text
    assert "Your instructions have been accepted by the user and passed on to the simulator for execution. " \
        "The simulator has returned the following error:\nStep 2: move((0.6, -0.1, 0.0)): collision" \
        in llm.prompts["Planner"][1]
    assert ports.executed[0] == ("pick_place", ("red block", "red bowl"))  # nothing ran before the approval
    assert world.is_on("blue block", "blue bowl")


def test_questions_go_to_the_person_and_answers_come_back(make_runner: Any, world_ports: Any) -> None:
    world = scene()
    ports = geo_ports(world_ports, world)
    asker = Asker(["Into the bowl of its own colour.", None])
    llm = Dialogue(["Questions:\n1: Which bowl should each block go to?\n2: Anything else?", GOOD_PLAN],
                   ["Feasible Plan!"])
    out = run(make_runner, llm, ports, asker=asker)
    assert out.result.success, out.result.reason
    assert asker.questions == ["Which bowl should each block go to?", "Anything else?"]
    assert "answers to the questions you asked to clarify the high-level task:\n1: Into the bowl of its own " \
        "colour.\n2: (no answer)\n" in llm.prompts["Planner"][1]
    assert "1: Which bowl should each block go to?\n2: Into the bowl of its own colour.\n3: Anything else?\n" \
        "4: (no answer)" in llm.prompts["Analyzer"][0]
    kinds = [e.kind for e in out.events]
    assert EventKind.ROBOT_QUESTION in kinds and EventKind.HUMAN_ANSWER in kinds
    # the kinematic tabletop has no safety workspace: its own table bounds
    assert "0.3 < x < 0.7, -0.3 < y < 0.3" in llm.prompts["Planner"][0]


def test_perception_rerun_asks_for_a_fresh_scene(make_runner: Any, world_ports: Any) -> None:
    ports = geo_ports(world_ports, scene(), WS)
    llm = Dialogue(["Perception Rerun Required", GOOD_PLAN], ["Feasible Plan!"])
    out = run(make_runner, llm, ports)
    assert out.result.success and type(ports).describes == 2
    assert "The perception system has revised the environment information. The new environment information is " \
        "as follows:\n{'red block'" in llm.prompts["Planner"][1]
    assert [e.data.get("cause") for e in out.events if e.data.get("multitalk") == "perception"] == \
        ["start", "Perception Rerun Required"]


def test_unparseable_answers_are_errors_and_bounded_reprompts(make_runner: Any, world_ports: Any) -> None:
    ports = geo_ports(world_ports, scene(), WS)
    llm = Dialogue(["I will do it.", "Step-by-step Instructions:\n1: grasp(red block)", GOOD_PLAN],
                   ["looks fine", "Feasible Plan!"])
    out = run(make_runner, llm, ports)
    assert out.result.success, out.result.reason
    rejected = [e for e in out.events if e.data.get("multitalk") == "rejected"]
    assert [e.data["role"] for e in rejected] == ["planner", "planner", "analyzer"]
    assert all(e.kind == EventKind.ERROR for e in rejected)
    assert "Note: your previous answer could not be read (step 1: grasp takes coordinates only" in \
        llm.prompts["Planner"][2]
    assert "I will do it." not in llm.prompts["Planner"][2]  # rejected answers do not enter the conversation
    stuck = Dialogue(["no"] * 5)
    out = run(make_runner, stuck, geo_ports(world_ports, scene(), WS), **{"multitalk.max_reprompts": 1})
    assert out.result.error == EpisodeError.PLANNING_FAILED and "after 2 attempts" in out.result.reason
    assert len(stuck.prompts["Planner"]) == 2


def test_repeated_plan_is_deferred_to_and_the_round_cap_holds(make_runner: Any, world_ports: Any) -> None:
    world = scene()
    llm = Dialogue([GOOD_PLAN, GOOD_PLAN], ["2: The bowl is assumed # ask the user"])
    out = run(make_runner, llm, geo_ports(world_ports, world, WS))
    assert out.result.success and len(llm.prompts["Analyzer"]) == 1
    assert "analyzer_deferred" in stages(out.events)
    capped = Dialogue([COLLIDING_PLAN] * 5, ["Feasible Plan!"] * 5)
    out = run(make_runner, capped, geo_ports(world_ports, scene(), WS), **{"multitalk.max_rounds": 3})
    assert out.result.error == EpisodeError.PLANNING_FAILED and "after 3 Planner answers" in out.result.reason


def test_planner_plus_simulator_ablation_skips_the_analyzer(make_runner: Any, world_ports: Any) -> None:
    world = scene()
    llm = Dialogue([WRONG_PLAN], ["must not be asked"])
    out = run(make_runner, llm, geo_ports(world_ports, world, WS), **{"multitalk.ablation": "no_analyzer"})
    assert out.result.success and llm.prompts["Analyzer"] == []  # executable ...
    assert world.is_on("red block", "blue bowl")  # ... but not what was asked (M Fig. 4)


def test_acceptance_gate(make_runner: Any, world_ports: Any) -> None:
    world = scene()
    asker = Asker(["no, the red block first", "yes"])
    llm = Dialogue([GOOD_PLAN, GOOD_PLAN], ["Feasible Plan!", "Feasible Plan!"])
    out = run(make_runner, llm, geo_ports(world_ports, world, WS), asker=asker, **{"multitalk.accept_gate": "ask"})
    assert out.result.success and len(asker.questions) == 2 and asker.questions[0].startswith("Approve this plan?")
    assert "1: The user did not accept the plan: no, the red block first" in llm.prompts["Planner"][1]
    nobody = run(make_runner, Dialogue([GOOD_PLAN], ["Feasible Plan!"]), geo_ports(world_ports, scene(), WS),
                 asker=Asker([]), **{"multitalk.accept_gate": "ask"})
    assert nobody.result.error == EpisodeError.PLANNING_FAILED and "no answer" in nobody.result.reason


def test_resume_is_refused(make_runner: Any, world_ports: Any, tmp_path: Path) -> None:
    from planner_node.core import strategies
    from planner_node.core.runner import run_episode
    from planner_node.core.strategy import EpisodeContext

    runner = make_runner(Dialogue([]), geo_ports(world_ports, scene()), strategy="multitalk")
    prepared = runner.prepare(GoalRequest(TASK))
    import dataclasses
    import logging

    ep = EpisodeContext(runner.llm, runner.ports, prepared.profile, prepared.transcript, TASK, prepared.options,
                        logging.getLogger("test"), resume=True, settings=runner.settings.strategy_settings)
    assert run_episode(strategies.get("multitalk"), ep).error == EpisodeError.INVALID_GOAL
    assert dataclasses.is_dataclass(ep)


def test_the_analyzer_can_run_on_its_own_backend(make_runner: Any, world_ports: Any, tmp_path: Path) -> None:
    """`multitalk.analyzer_llm`: the Analyzer's answers come from its own backend (here a cassette recorded
    from a scripted Analyzer in a first run; replay loads no model), the Planner's from the planner's LLM."""
    from monologue_llm.cassette import CassetteBackend
    from planner_node.core.role_llm import close_role_backends

    verdicts = ["Step-by-step Instructions:\n1: no violations\n2: The red block does not match the blue bowl "
                "# the task asks for matching bowls\n3: no violations", "Feasible Plan!"]
    cassette = tmp_path / "analyzer.jsonl"
    recorded = CassetteBackend(Dialogue([WRONG_PLAN, GOOD_PLAN], list(verdicts)), cassette, "record")
    first = run(make_runner, recorded, geo_ports(world_ports, scene(), WS))
    assert first.result.error == EpisodeError.NONE, first.result.reason

    planner_only = Dialogue([WRONG_PLAN, GOOD_PLAN])  # no Analyzer answers: an Analyzer call here gets ""
    world = scene()
    own = {"multitalk.analyzer_llm.backend": "llama_cpp", "multitalk.analyzer_llm.cassette_mode": "replay",
           "multitalk.analyzer_llm.cassette_path": str(cassette)}
    try:
        out = run(make_runner, planner_only, geo_ports(world_ports, world, WS), **own)
    finally:
        close_role_backends()
    assert out.result.error == EpisodeError.NONE, out.result.reason
    assert planner_only.prompts["Analyzer"] == [] and len(planner_only.prompts["Planner"]) == 2
    assert world.is_on("red block", "red bowl") and world.is_on("blue block", "blue bowl")
    task = next(e for e in out.events if e.data.get("multitalk") == "task")
    assert task.data["analyzer_llm"] == "cassette[replay](none)"
    assert "analyzer_llm" not in next(e for e in first.events if e.data.get("multitalk") == "task").data


def test_analyzer_llm_settings_are_validated(planner_parameters: Any) -> None:
    base = {**planner_parameters(), "strategy": "multitalk"}
    assert settings_from_parameters(base).strategy_settings.get(MultitalkSettings).analyzer_llm == {}
    s = settings_from_parameters({**base, "multitalk.analyzer_llm.backend": "openai",
                                  "multitalk.analyzer_llm.model": "critic"}).strategy_settings.get(MultitalkSettings)
    assert s.analyzer_llm["backend"] == "openai" and s.analyzer_llm["model"] == "critic"
    with pytest.raises(ValueError) as e:
        settings_from_parameters({**base, "multitalk.analyzer_llm.backend": "gpt4"})
    assert "multitalk.analyzer_llm.backend" in str(e.value)


class GrammarDialogue(Dialogue):
    """A Dialogue that takes grammars (as llama.cpp does) and keeps them per role."""

    accepts_grammar = True

    def __init__(self, planner: Sequence[str], analyzer: Sequence[str] = ()) -> None:
        super().__init__(planner, analyzer)
        self.grammars: dict[str, list[str | None]] = {"Planner": [], "Analyzer": []}

    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64,  # type: ignore[override]
                 grammar: str | None = None) -> Generation:
        self.grammars["Analyzer" if prompt.endswith("\n\nAnalyzer:\n") else "Planner"].append(grammar)
        return super().generate(prompt, stop, max_tokens)


def test_constrained_roles_get_their_grammars(make_runner: Any, world_ports: Any) -> None:
    world = scene()
    llm = GrammarDialogue([GOOD_PLAN], ["Feasible Plan!"])
    out = run(make_runner, llm, geo_ports(world_ports, world, WS), **{"multitalk.constrained": True})
    assert out.result.error == EpisodeError.NONE, out.result.reason
    (planner,), (analyzer,) = llm.grammars["Planner"], llm.grammars["Analyzer"]
    assert planner is not None and analyzer is not None
    # the Planner's coordinates: the perceived centres as the prompt shows them; grasp only the blocks'
    assert '"0.4, 0.1, 0.02"' in planner and '"0.5, 0.2, 0.0"' in planner
    rules = dict(line.split(" ::= ", 1) for line in planner.strip().splitlines())
    grasped = rules[rules["object-point"].split()[1]]
    assert '"0.4, 0.1, 0.02"' in grasped and '"0.6, -0.1, 0.02"' in grasped and "0.5, 0.2, 0.0" not in grasped
    point = rules[rules["point"].split()[1]]  # move: the blocks' tops too (stacking), not for grasp
    assert '"0.4, 0.1, 0.04"' in point and '"0.6, -0.1, 0.04"' in point and "0.04" not in grasped
    assert '"Feasible Plan!"' in analyzer
    plain = Dialogue([GOOD_PLAN], ["Feasible Plan!"])  # no grammar support: unconstrained, still runs
    out = run(make_runner, plain, geo_ports(world_ports, scene(), WS), **{"multitalk.constrained": True})
    assert out.result.error == EpisodeError.NONE, out.result.reason


class Scorer(Dialogue):
    """A Planner that scores: a candidate line's log-probability is the number of words it shares with
    `liked` (each liked line is a pair of words that should go together), minus its length / 1000; the
    Analyzer answers from its list. Every scored (prompt, candidates) call is kept."""

    def __init__(self, liked: Sequence[tuple[str, str]], analyzer: Sequence[str] = ()) -> None:
        super().__init__([], analyzer)
        self.liked = list(liked)
        self.calls: list[tuple[str, list[str]]] = []

    def score(self, prompt: str, candidates: Sequence[str]) -> Any:
        from monologue_llm.base import CandidateScore, ScoreResult

        self.calls.append((prompt, list(candidates)))
        last = prompt.rstrip("\n").splitlines()[-1]

        def value(c: str) -> float:
            bonus = sum(2.0 for a, b in self.liked if a in last and b in c)  # a move after its grasp
            bonus += sum(1.0 for a, _ in self.liked if "grasp" in c and a in c and a not in prompt.split("Planner:\n")[-1])
            return bonus + (0.5 if "home()" in c and all(a in prompt.split("Planner:\n")[-1] for a, _ in self.liked)
                            else 0.0) - len(c) / 1000
        scores = tuple(CandidateScore(c, value(c), 1, (value(c),)) for c in candidates)
        return ScoreResult(scores, len(prompt) // 4, 1, 0.0)


def test_scored_planner_writes_the_plan_format_is_deferred_to_and_solves_the_task(make_runner: Any,
                                                                                  world_ports: Any) -> None:
    world = scene()
    ports = geo_ports(world_ports, world, WS)
    # the Analyzer rejects the first plan; scoring writes it again, and MultiTalk defers to it
    llm = Scorer([("red block", "red bowl"), ("blue block", "blue bowl")],
                 ["Step-by-step Instructions:\n1: The plan is not checked yet # check again"])
    out = run(make_runner, llm, ports, **{"multitalk.planner_decoding": "scored", "multitalk.constrained": True,
                                          "multitalk.scored_calibration": False})
    assert out.result.error == EpisodeError.NONE, out.result.reason
    plans = [e.data["output"] for e in out.events if e.data.get("multitalk") == "planner"]
    assert plans == [("Step-by-step Instructions:\n"
                      "1: grasp((0.4, 0.1, 0.02)) # grasp the red block\n"
                      "2: move((0.5, 0.2, 0.0)) # put the red block in the red bowl\n"
                      "3: grasp((0.6, -0.1, 0.02)) # grasp the blue block\n"
                      "4: move((0.35, -0.2, 0.0)) # put the blue block in the blue bowl\n"
                      "5: home() # the task is done")] * 2
    assert "analyzer_deferred" in stages(out.events)
    assert world.is_on("red block", "red bowl") and world.is_on("blue block", "blue bowl")
    scores = [e for e in out.events if e.data.get("multitalk") == "planner_scores"]
    assert len(scores) == 2 and all(sum(c["chosen"] for c in step) == 1 for step in scores[0].data["steps"])
    # every candidate is a grasp of an object (never a bowl), a move, or the end; nothing is generated
    for _prompt, candidates in llm.calls:
        assert all(re.match(r"^\d+: (grasp|move)\(\(.*\)\) #( |$)|^\d+: home\(\) #( the task is done)?$", c)
                   for c in candidates)
    assert not any("bowl" in c for _p, cs in llm.calls for c in cs if c.split(": ", 1)[1].startswith("grasp"))
    assert llm.prompts["Planner"] == []


def test_a_scored_plan_the_person_rejects_is_not_written_again(make_runner: Any, world_ports: Any) -> None:
    world = scene()
    ports = geo_ports(world_ports, world, WS)
    llm = Scorer([("red block", "red bowl"), ("blue block", "blue bowl")], ["Feasible Plan!", "Feasible Plan!"])
    out = run(make_runner, llm, ports, Asker(["no, not like that", "yes"]),
              **{"multitalk.planner_decoding": "scored", "multitalk.accept_gate": "ask",
                 "multitalk.scored_calibration": False})
    assert out.result.error == EpisodeError.NONE, out.result.reason
    plans = [e.data["output"] for e in out.events if e.data.get("multitalk") == "planner"]
    assert len(plans) == 2 and plans[1] != plans[0] and parse_planner_output(plans[1]).kind == PLAN


def test_scored_lines_are_ranked_by_their_reasoning_and_an_object_is_grasped_once() -> None:
    from monologue_llm.base import CandidateScore, ScoreResult
    from planner_node.core.strategies.multitalk.scored import scored_plan

    class Digits:
        """Round numbers are likely (each digit costs 1 nat); the reasoning "red block ... red bowl" and
        grasping the red block again are likelier still if whole lines were compared."""

        def score(self, prompt: str, candidates: Sequence[str]) -> Any:
            def lp(c: str) -> float:
                value = -float(sum(ch.isdigit() for ch in c.split("#")[0]))
                if c.endswith("put the red block in the red bowl"):
                    value += 1.5
                if "grasp the red block" in c:
                    value += 20.0
                return value
            return ScoreResult(tuple(CandidateScore(c, lp(c), 1, (lp(c),)) for c in candidates), 1, 1, 0.0)

    boxes = [Box("red block", "block", (0.04, 0.04, 0.04), (0.412, 0.137, 0.02)),
             Box("blue block", "block", (0.04, 0.04, 0.04), (0.611, -0.143, 0.02)),
             Box("red bowl", "bowl", (0.12, 0.12, 0.05), (0.538, 0.221, 0.0)),
             Box("top side", "location", (0.0, 0.0, 0.0), (0.7, 0.0, 0.0))]
    text, trace = scored_plan(Digits(), "Planner:\n", boxes, 3, max_pairs=2)  # type: ignore[arg-type]
    lines = text.splitlines()[1:]
    assert lines[0] == "1: grasp((0.412, 0.137, 0.02)) # grasp the red block"
    assert lines[1] == "2: move((0.538, 0.221, 0.0)) # put the red block in the red bowl"  # not the top side
    assert lines[2] == "3: grasp((0.611, -0.143, 0.02)) # grasp the blue block"  # the red block is not offered again
    assert lines[-1] == "5: home() # the task is done" and len(trace) == 5
    assert all(parse_planner_output(text).steps)


def test_calibrated_scoring_removes_what_the_model_says_whatever_the_task(make_runner: Any, world_ports: Any) -> None:
    from monologue_llm.base import CandidateScore, ScoreResult

    class Prior(Dialogue):
        """"on the left side" is likely under any prompt (+2); the task makes the matching bowl likelier (+1)."""

        def __init__(self) -> None:
            super().__init__([], ["Feasible Plan!"])
            self.baselines = 0

        def score(self, prompt: str, candidates: Sequence[str]) -> Any:
            with_task = TASK in prompt
            self.baselines += not with_task

            def lp(c: str) -> float:
                value = 2.0 if c.endswith("on the left side") else 0.0
                if with_task and re.search(r"put the (\w+) block in the \1 bowl$", c):
                    value += 1.0
                return value - len(c) / 1000
            return ScoreResult(tuple(CandidateScore(c, lp(c), 1, (lp(c),)) for c in candidates), 1, 1, 0.0)

    plans = {}
    for calibrated in (False, True):
        llm = Prior()
        out = run(make_runner, llm, geo_ports(world_ports, scene(), WS),  # its table locations include the left side
                  **{"multitalk.planner_decoding": "scored", "multitalk.scored_calibration": calibrated})
        plans[calibrated] = [e.data["output"] for e in out.events if e.data.get("multitalk") == "planner"][0]
        assert (llm.baselines > 0) == calibrated
    assert "put the red block on the left side" in plans[False]
    assert "put the red block in the red bowl" in plans[True] and "put the blue block in the blue bowl" in plans[True]


def test_scored_moves_stack_on_tops_and_follow_the_plan_so_far() -> None:
    """A move onto a block aims at its top (the simulator's stacking rule); after a move the plan's later
    lines see the block at its new place, and a block with something on it is neither grasped nor a target."""
    from monologue_llm.base import CandidateScore, ScoreResult
    from planner_node.core.strategies.multitalk.scored import scored_plan, supporting

    class Tower:
        """Likes grasping red, then green, and stacking on whatever is named last in the wanted order."""

        def score(self, prompt: str, candidates: Sequence[str]) -> Any:
            def lp(c: str) -> float:
                for i, want in enumerate(("grasp the red block", "put the red block on the blue block",
                                          "grasp the green block", "put the green block on the red block")):
                    if c.endswith(want):
                        return 10.0 - i
                return -1.0 if "#" in c and not c.endswith("#") else 0.0
            return ScoreResult(tuple(CandidateScore(c, lp(c), 1, (lp(c),)) for c in candidates), 1, 1, 0.0)

    boxes = [Box("red block", "block", (0.04, 0.04, 0.04), (0.4, 0.1, 0.02)),
             Box("blue block", "block", (0.04, 0.04, 0.04), (0.6, -0.1, 0.02)),
             Box("green block", "block", (0.04, 0.04, 0.04), (0.5, 0.2, 0.02))]
    text, trace = scored_plan(Tower(), "Planner:\n", boxes, 3, max_pairs=3)  # type: ignore[arg-type]
    lines = text.splitlines()[1:]
    assert lines[:4] == ["1: grasp((0.4, 0.1, 0.02)) # grasp the red block",
                         "2: move((0.6, -0.1, 0.04)) # put the red block on the blue block",  # its top
                         "3: grasp((0.5, 0.2, 0.02)) # grasp the green block",
                         "4: move((0.6, -0.1, 0.08)) # put the green block on the red block"]  # where it is now
    assert not any("on the blue block" in c.line for c in trace[3])  # covered by the red block
    assert not any("grasp the blue block" in c.line for c in trace[2])  # not clear
    sim = simulate(parse_planner_output(text).steps, boxes, WS, 0.03)
    assert sim.ok, sim.error
    assert [c.args for c in sim.calls] == [("red block", "blue block"), ("green block", "red block")]
    assert supporting([*boxes[1:], Box("red block", "block", (0.04, 0.04, 0.04), (0.6, -0.1, 0.06))]) == {"blue block"}
