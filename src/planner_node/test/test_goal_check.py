"""The goal check (`scoring.goal_check`): the instruction's in/on facts and the stop rule (no ROS, no LLM)."""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.scene_spec import SceneSpec
from monologue_domain.tabletop import LOCATIONS
from monologue_domain.transcript import Transcript
from planner_node.core.episode import EpisodeError
from planner_node.core.goal_check import parse_goal
from planner_node.core.prompts import load_profile
from planner_node.core.settings import episode_defaults

CONFIG = Path(__file__).resolve().parents[3] / "config"
PROFILE = load_profile(CONFIG / "prompts", "im_sim_object_success")
CATS = {"red block": "block", "green block": "block", "blue block": "block", "blue bowl": "bowl",
        "yellow bowl": "bowl", **{n: "location" for n in LOCATIONS}}
BLOCKS = ("blue block", "green block", "red block")


@pytest.mark.parametrize(("instruction", "facts"), [
    ("Pick the red block and place it in the blue bowl.", [("red block", "blue bowl")]),
    ("put the green block onto the red block", [("green block", "red block")]),
    ("Move every block to the top left corner, please.", [(b, "top left corner") for b in BLOCKS]),
    ("Place all of the blocks inside the yellow bowl", [(b, "yellow bowl") for b in BLOCKS]),
    ("Put the blocks on the middle.", [(b, "middle") for b in BLOCKS]),
    ("Put all the blocks on the red block.", [("blue block", "red block"), ("green block", "red block")]),
])
def test_in_on_instructions_parse_to_facts(instruction: str, facts: list[tuple[str, str]]) -> None:
    goal = parse_goal(instruction, CATS)
    assert [(f.obj, f.target) for f in goal.facts] == facts and not goal.tower


@pytest.mark.parametrize(("instruction", "base"), [
    ("Stack all the blocks on the left side.", "left side"),
    ("Stack all the blocks.", ""),
    ("pile every block on top of the middle", "middle"),
    ("Please stack the blocks", ""),
])
def test_stacking_every_object_of_a_category_parses_to_a_tower(instruction: str, base: str) -> None:
    goal = parse_goal(instruction, CATS)
    assert goal.tower == BLOCKS and goal.base == base and not goal.facts


@pytest.mark.parametrize("instruction", [
    "Put all the blocks.",                                    # no target
    "Stack the red block.",                                   # one object is no tower
    "Stack all the blocks in the blue bowl and the yellow bowl.",  # two targets
    "Put all the blocks in different corners.",               # a relation between objects, no scene name
    "Put the blocks in their matching bowls.",
    "Put the blocks on mismatched bowls.",
    "Put every block except the red block in the blue bowl.",  # an exception
    "Put the red and green blocks in the blue bowl.",          # a subset the grammar does not name
    "Put the red block in the blue bowl and the green block in the yellow bowl.",  # two targets
    "Put the red block in the blue bowl and then stack the rest.",  # another clause after the target
    "Put the red block next to the blue bowl.",                # beside the target is not in/on it
    "move every block close to the top left corner",
    "把所有方块放进蓝色的碗里。",                                  # not the planner's language: no facts, no rule
    "Put the purple block in the blue bowl.",                 # no such object: no subject
    "Stack all the blocks at the left side.",                 # a named place it cannot read is not "anywhere"
])
def test_other_instructions_parse_to_nothing(instruction: str) -> None:
    assert not parse_goal(instruction, CATS)


class StopShyScorer:
    """Prefers the first line that `prefers` for the first step ("Pick the <first block> ... blue bowl"), then
    the done line (stops early, as the embedded model often does); records the candidates it was offered."""

    name = "stop_shy"

    def __init__(self, prefers: Callable[[str], bool] = lambda c: c.endswith("in the blue bowl.")) -> None:
        self.prefers = prefers
        self.offered: list[list[str]] = []

    def score(self, prompt: str, candidates: Sequence[str]):  # type: ignore[no-untyped-def]
        from monologue_llm.base import CandidateScore, ScoreResult

        self.offered.append(list(candidates))
        first = "Success: True" not in prompt.split("===============")[-1]

        def lp(c: str) -> float:
            if c == PROFILE.done_line:
                return -2.0 if first else -0.5
            return -1.0 if self.prefers(c) else -4.0

        return ScoreResult(tuple(CandidateScore(c, lp(c), 3, (lp(c) / 3,) * 3) for c in candidates), 10, 10, 0.0)

    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64):  # type: ignore[no-untyped-def]
        raise AssertionError("scoring only")

    def close(self) -> None:
        pass


def _run(planner, world_ports, goal_check: str):  # type: ignore[no-untyped-def]
    world = TabletopWorld.from_spec(SceneSpec(("red", "green"), ("blue",)), seed=5)
    ports, llm, steps = world_ports(world), StopShyScorer(), []
    im = planner(llm, ports, ports, ports, PROFILE, logging.getLogger("t"), on_step=steps.append)
    t = Transcript("e")
    res = im.run("Put all the blocks in the blue bowl.",
                 episode_defaults(CONFIG, use_affordances=False, max_steps=6, goal_check=goal_check), t)
    return res, world, llm, steps, t


def test_goal_check_keeps_going_until_the_goal_holds_then_stops(planner, world_ports) -> None:  # type: ignore[no-untyped-def]
    res, world, llm, steps, _ = _run(planner, world_ports, "off")  # as before: the model stops after one block
    assert res.error == EpisodeError.NONE and len(steps) == 2
    assert sum(world.is_on(b, "blue bowl") for b in ("red block", "green block")) == 1

    res, world, llm, steps, t = _run(planner, world_ports, "stop")
    assert res.error == EpisodeError.NONE and res.success
    assert world.is_on("red block", "blue bowl") and world.is_on("green block", "blue bowl")
    assert all(PROFILE.done_line not in offered for offered in llm.offered)  # never offered while unmet
    assert steps[-1].candidates == (steps[-1].chosen,) and steps[-1].chosen.option is None  # done, no LLM call
    assert len(llm.offered) == len(steps) - 1
    assert t.events[-2].text == PROFILE.done_line


def test_an_open_loop_episode_never_checks_the_goal(planner, world_ports) -> None:  # type: ignore[no-untyped-def]
    world = TabletopWorld.from_spec(SceneSpec(("red", "green"), ("blue",)), seed=5)
    ports, llm, steps = world_ports(world), StopShyScorer(), []
    im = planner(llm, ports, ports, ports, PROFILE, logging.getLogger("t"), on_step=steps.append)
    opts = episode_defaults(CONFIG, use_affordances=False, max_steps=6, goal_check="stop",
                            success_feedback=False, scene_feedback=False)
    res = im.run("Put all the blocks in the blue bowl.", opts, Transcript("e"))
    assert res.error == EpisodeError.NONE and steps[-1].chosen.option is None
    assert all(PROFILE.done_line in offered for offered in llm.offered)  # offered while the goal is unmet
    assert len(steps[-1].candidates) > 1 and len(llm.offered) == len(steps)  # done was the model's choice


def test_affordance_mode_does_not_offer_moving_a_block_already_in_place(planner, world_ports) -> None:  # type: ignore[no-untyped-def]
    res, world, llm, steps, _ = _run(planner, world_ports, "affordance")
    assert res.success and world.is_on("red block", "blue bowl") and world.is_on("green block", "blue bowl")
    placed = steps[0].chosen.option.args[0]  # type: ignore[union-attr]
    assert all(not c.startswith(f"Robot action: Pick the {placed} ") for c in llm.offered[1])
    assert any(c.startswith(f"Robot action: Pick the {placed} ") for c in llm.offered[0])


def test_a_stack_instruction_keeps_going_until_every_block_is_in_one_tower(planner, world_ports) -> None:  # type: ignore[no-untyped-def]
    def run(goal_check: str):  # type: ignore[no-untyped-def]
        world = TabletopWorld.from_spec(SceneSpec(("red", "green", "blue"), ("blue",)), seed=3)
        ports, llm, steps = world_ports(world), StopShyScorer(lambda c: c.endswith(" block.")), []
        im = planner(llm, ports, ports, ports, PROFILE, logging.getLogger("t"), on_step=steps.append)
        res = im.run("Stack all the blocks.", episode_defaults(CONFIG, use_affordances=False, max_steps=8,
                                                                goal_check=goal_check), Transcript("e"))
        return res, world, llm, steps

    def tower(world: TabletopWorld) -> int:  # blocks in the tallest stack
        return 1 + max(len([o for o in world.objects_on_top_of(b.name) if o.name.endswith("block")])
                       for b in world.blocks)

    res, world, _, steps = run("off")  # the model stops after one block on another
    assert len(steps) == 2 and tower(world) == 2
    res, world, llm, steps = run("affordance")
    assert res.error == EpisodeError.NONE and tower(world) == 3
    assert steps[-1].chosen.option is None and steps[-1].candidates == (steps[-1].chosen,)  # done without the LLM
    assert all(PROFILE.done_line not in offered for offered in llm.offered), [[c for c in o if 'Robot thought' in c or 'done' in c] for o in llm.offered]
    first = steps[0].chosen.option.args  # type: ignore[union-attr]
    # once two blocks stand one on the other, neither is offered to be moved again
    assert not any(c.startswith(f"Robot action: Pick the {b} ") for b in first for c in llm.offered[1])


class GoalPicker:
    """Scores goal candidates: the one containing `wanted` highest; records the prompt."""

    def __init__(self, wanted: str) -> None:
        self.wanted, self.prompts = wanted, []  # type: ignore[var-annotated]

    def score(self, prompt: str, candidates: Sequence[str]):  # type: ignore[no-untyped-def]
        from monologue_llm.base import CandidateScore, ScoreResult

        self.prompts.append(prompt)
        lp = [-1.0 if self.wanted in c else -5.0 for c in candidates]
        return ScoreResult(tuple(CandidateScore(c, x, 3, (x / 3,) * 3) for c, x in zip(candidates, lp)), 10, 10, 0.0)


def _place(obj: str, target: str) -> str:
    return PROFILE.skill_text("pick_place", (obj, target), CATS)


@pytest.mark.parametrize(("wanted", "facts", "tower"), [
    ("Pick every block and place it in the yellow bowl.", [(b, "yellow bowl") for b in BLOCKS], ()),
    ("Pick the green block and place it on the red block.", [("green block", "red block")], ()),
    ("Stack every block on the middle.", [], BLOCKS),
    ("Something else.", [], ()),
])
def test_the_llm_grounds_an_instruction_the_parser_cannot_read(wanted: str, facts: list, tower: tuple) -> None:  # type: ignore[type-arg]
    from planner_node.core.goal_check import NO_GOAL, goal_candidates, ground_goal

    pairs = [(b, t) for b in BLOCKS for t in CATS if t != b]
    candidates = goal_candidates(pairs, CATS, _place)
    assert candidates[-1] == NO_GOAL and len(set(candidates)) == len(candidates)
    assert all(parse_goal(c, CATS) for c in candidates[:-1])  # every candidate is a goal the parser reads
    llm = GoalPicker(wanted)
    goal, text, ranked = ground_goal(llm, PROFILE.goal_prompt, "把积木放好", candidates, CATS)
    assert text == wanted and ranked == len(candidates)
    assert [(f.obj, f.target) for f in goal.facts] == facts and goal.tower == tower
    assert llm.prompts[0].endswith("Instruction: 把积木放好\nGoal:") and "Goal: Stack every block." in llm.prompts[0]


@pytest.mark.parametrize(("instruction", "names"), [
    ("把red block放到blue bowl上", ["red block", "blue bowl"]),
    ("Leg den Red Block in die Blue  Bowl.", ["red block", "blue bowl"]),
    ("the bored blockade and the bluebowl", []),
    ("stack them on the top left corner", ["top left corner"]),  # not also "left" or "corner" names
])
def test_scene_names_are_found_in_any_script(instruction: str, names: list[str]) -> None:
    from planner_node.core.goal_check import names_in

    assert sorted(names_in(instruction, CATS)) == sorted(names)


def _named(instruction: str) -> list[str]:
    from planner_node.core.goal_check import goal_candidates, named_goals

    return named_goals(instruction, goal_candidates([(b, t) for b in BLOCKS for t in CATS if t != b], CATS, _place),
                       CATS)


def test_named_goals_use_every_name_the_instruction_mentions_and_no_other() -> None:
    # one block and one bowl named: only the goal that moves that block there (not "every block")
    assert _named("Nimm den red block und leg ihn in die blue bowl.") == [_place("red block", "blue bowl")]
    # only a target named: the goals about every block and that target
    assert _named("把所有积木放进yellow bowl里。") == ["Pick every block and place it in the yellow bowl."]
    assert _named("alle Klötze auf die Position middle") == [
        "Pick every block and place it on the middle.", "Stack every block on the middle."]
    # nothing named: a tower anywhere, or no goal, for the LLM to rank
    assert _named("Sortiere die Klötze nach Farbe.") == ["Stack every block.", "Something else."]
    # a word of exclusion keeps "no goal" among them
    assert _named("put the red block anywhere but in the blue bowl") == [_place("red block", "blue bowl"),
                                                                         "Something else."]
    # a name the goal needs that the instruction does not mention rules the goal out
    assert not any("yellow bowl" in c for c in _named("put the red block in the blue bowl"))


def test_named_grounding_asks_the_llm_only_among_the_named_goals() -> None:
    from planner_node.core.goal_check import goal_candidates, ground_goal

    candidates = goal_candidates([(b, t) for b in BLOCKS for t in CATS if t != b], CATS, _place)
    llm = GoalPicker("Stack every block on the middle.")
    goal, text, ranked = ground_goal(llm, PROFILE.goal_prompt, "alle Klötze in der middle", candidates, CATS,
                                     named=True)
    assert (text, ranked, goal.tower, goal.base) == ("Stack every block on the middle.", 2, BLOCKS, "middle")
    llm = GoalPicker("Pick the red block")  # one named goal left: no LLM call at all
    goal, text, ranked = ground_goal(llm, PROFILE.goal_prompt, "red block → blue bowl", candidates, CATS, named=True)
    assert ranked == 1 and llm.prompts == [] and [(f.obj, f.target) for f in goal.facts] == [("red block", "blue bowl")]


@pytest.mark.parametrize(("grounding", "instruction", "goal_prompts"), [
    ("llm", "Leg alle Klötze in die blaue Schüssel.", 1),
    ("llm_named", "Leg alle Klötze in die blue bowl.", 0),  # one named goal: it needs no LLM call
])
def test_llm_grounding_runs_once_per_episode_and_drives_the_goal_check(planner,   # type: ignore[no-untyped-def]
        world_ports, grounding: str, instruction: str, goal_prompts: int) -> None:
    class Both(StopShyScorer):  # the goal prompt gets "every block in the blue bowl"; the steps are stop-shy
        def score(self, prompt: str, candidates: Sequence[str]):  # type: ignore[no-untyped-def]
            if prompt.endswith("Goal:"):
                self.goal_prompts = getattr(self, "goal_prompts", 0) + 1
                return GoalPicker("every block and place it in the blue bowl").score(prompt, candidates)
            return super().score(prompt, candidates)

    world = TabletopWorld.from_spec(SceneSpec(("red", "green"), ("blue",)), seed=5)
    ports, llm, steps = world_ports(world), Both(), []
    im = planner(llm, ports, ports, ports, PROFILE, logging.getLogger("t"), on_step=steps.append)
    res = im.run(instruction, episode_defaults(CONFIG, use_affordances=False, max_steps=6, goal_check="affordance",
                                               goal_grounding=grounding), Transcript("e"))
    assert res.success and world.is_on("red block", "blue bowl") and world.is_on("green block", "blue bowl")
    assert getattr(llm, "goal_prompts", 0) == goal_prompts and steps[-1].chosen.option is None


def test_advancing_moves_of_facts_and_of_a_tower() -> None:
    from planner_node.core.goal_check import Goal, GoalFact, GoalStatus, advancing

    facts = Goal(facts=tuple(GoalFact(b, "blue bowl") for b in BLOCKS))
    assert advancing(facts, GoalStatus(False, frozenset({"red block"}))) == {
        ("blue block", "blue bowl"), ("green block", "blue bowl")}
    assert advancing(facts, GoalStatus(True, frozenset(BLOCKS))) == set()
    on_base = Goal(tower=BLOCKS, base="middle")
    assert advancing(on_base, GoalStatus(False, frozenset(), ())) == {(b, "middle") for b in BLOCKS}
    assert advancing(on_base, GoalStatus(False, frozenset({"red block"}), (("red block",),))) == {
        ("blue block", "red block"), ("green block", "red block")}
    anywhere = Goal(tower=BLOCKS)  # no chain yet: any block onto any other
    assert len(advancing(anywhere, GoalStatus(False, frozenset(), ()))) == 6
    two = GoalStatus(False, frozenset({"red block", "blue block"}), (("red block", "blue block"),))
    assert advancing(anywhere, two) == {("green block", "blue block")}
    # two longest chains (the top block is within 4 cm of both bottoms): either bottom may go on top
    both = GoalStatus(False, frozenset({"blue block"}), (("red block", "blue block"), ("green block", "blue block")))
    assert advancing(anywhere, both) == {("green block", "blue block"), ("red block", "blue block")}


class WrongWay(StopShyScorer):
    """Prefers moves into the yellow bowl and onto the red block, i.e. away from the goal."""

    def __init__(self) -> None:
        super().__init__(lambda c: c.endswith("in the yellow bowl.") or c.endswith("on the red block."))


@pytest.mark.parametrize("goal_check", ["affordance", "directed"])
def test_directed_offers_only_the_moves_that_bring_the_goal_nearer(planner,   # type: ignore[no-untyped-def]
        world_ports, goal_check: str) -> None:
    world = TabletopWorld.from_spec(SceneSpec(("red", "green"), ("blue", "yellow")), seed=5)
    ports, llm, steps = world_ports(world), WrongWay(), []
    im = planner(llm, ports, ports, ports, PROFILE, logging.getLogger("t"), on_step=steps.append)
    res = im.run("Put all the blocks in the blue bowl.",
                 episode_defaults(CONFIG, use_affordances=False, max_steps=6, goal_check=goal_check), Transcript("e"))
    assert res.error == EpisodeError.NONE and res.success
    assert world.is_on("red block", "blue bowl") and world.is_on("green block", "blue bowl")
    moves = [s.chosen.text for s in steps[:-1]]
    if goal_check == "affordance":  # the model's wrong moves are offered and taken
        assert moves[0].endswith("in the yellow bowl.") and len(moves) > 2
    else:
        assert [len(o) for o in llm.offered] == [2, 1]  # each block into the blue bowl, the placed one dropped
        assert all(c.endswith("in the blue bowl.") for o in llm.offered for c in o) and len(moves) == 2
        assert steps[-1].chosen.option is None


def test_directed_builds_the_tower_on_the_named_location(planner, world_ports) -> None:  # type: ignore[no-untyped-def]
    world = TabletopWorld.from_spec(SceneSpec(("red", "green", "blue"), ("blue",)), seed=3)
    ports, llm, steps = world_ports(world), WrongWay(), []
    im = planner(llm, ports, ports, ports, PROFILE, logging.getLogger("t"), on_step=steps.append)
    res = im.run("Stack all the blocks on the middle.",
                 episode_defaults(CONFIG, use_affordances=False, max_steps=8, goal_check="directed"), Transcript("e"))
    assert res.error == EpisodeError.NONE and res.success and len(steps) == 4
    assert all(c.endswith("on the middle.") for c in llm.offered[0]) and len(llm.offered[0]) == 3
    bottom = steps[0].chosen.option.args[0]  # type: ignore[union-attr]
    assert all(c.endswith(f"on the {bottom}.") for c in llm.offered[1]) and len(llm.offered[1]) == 2
    top = [b for b in BLOCKS if b != bottom and world.is_on(b, "middle")]
    assert len(top) == 2 and all(world.is_on(b, bottom) for b in top)


class Ons:
    """A success detector that answers "X on Y" from a set of pairs."""

    def __init__(self, *pairs: tuple[str, str]) -> None:
        self.pairs = set(pairs)

    def detect(self, skill: str, args: Sequence[str], *_: float):  # type: ignore[no-untyped-def]
        from types import SimpleNamespace

        return SimpleNamespace(success=tuple(args) in self.pairs)


def test_a_tower_block_within_reach_of_two_bottoms_and_a_tower_leaning_off_its_base() -> None:
    from planner_node.core.goal_check import Goal, advancing, check

    r, g, b = "red block", "green block", "blue block"
    # red and green side by side (4.6 cm apart), blue on red but also within 4 cm of green
    status = check(Goal(tower=BLOCKS), Ons((b, r), (b, g)))  # type: ignore[arg-type]
    assert not status.holds and status.placed == {b} and set(status.chains) == {(r, b), (g, b)}
    assert advancing(Goal(tower=BLOCKS), status) == {(r, b), (g, b)}  # either bottom goes on top
    # on the middle: red on it, green on red but leaning 5 cm off the middle: green is to be placed again
    on_base = Goal(tower=BLOCKS, base="middle")
    status = check(on_base, Ons((r, "middle"), (b, "middle"), (g, r), (b, r)))  # type: ignore[arg-type]
    assert status.chains == ((r, b),) and status.placed == {r, b} and not status.holds
    assert advancing(on_base, status) == {(g, b)}


def test_directed_offers_every_move_when_the_next_block_is_covered(planner, world_ports) -> None:  # type: ignore[no-untyped-def]
    from planner_node.core.goal_check import Goal, check

    world = TabletopWorld.from_spec(SceneSpec(("red", "green", "blue"), ()), seed=3)
    mx, my = LOCATIONS["middle"]
    world.move_object("red block", mx + 0.02, my)    # on the middle (2 cm)
    world.move_object("blue block", mx + 0.05, my)   # on the red block, 5 cm off the middle
    world.move_object("green block", mx + 0.03, my)  # on the blue block, within 4 cm of the middle and the red
    ports, llm, steps = world_ports(world), WrongWay(), []
    status = check(Goal(tower=BLOCKS, base="middle"), ports)
    assert status.chains == (("red block", "green block"),) and not status.holds  # the blue one is off its base
    im = planner(llm, ports, ports, ports, PROFILE, logging.getLogger("t"), on_step=steps.append)
    im.run("Stack all the blocks on the middle.",
           episode_defaults(CONFIG, use_affordances=False, max_steps=2, goal_check="directed"), Transcript("e"))
    # the blue block (next on the tower) is covered by the green one: every move is offered, the placed
    # green block's too, and done is not
    assert llm.offered[0] and all(c.startswith("Robot action: Pick the green block ") for c in llm.offered[0])
    assert PROFILE.done_line not in llm.offered[0]
