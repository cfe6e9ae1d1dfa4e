"""Statler's cup game (S §II, Prompts 1-3, Fig. 2): the games and their truth, the three prompting styles'
prompts, reading the model's states, a(n) / r(n) with Wilson intervals; and the embedded model's answers
replayed from a cassette (fixtures/statler_cups_cassette.jsonl, recorded with Gemma 3 270M: n = 1..2, one
trial, every style)."""
from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from monologue_domain.statler_truth import cup_game
from monologue_eval.core import statler_cups as cups
from monologue_llm.base import Generation
from monologue_llm.cassette import CassetteBackend

CASSETTE = Path(__file__).resolve().parent / "fixtures" / "statler_cups_cassette.jsonl"


def test_games_demonstrations_and_parsing() -> None:
    g = cups.Game((False, True, False), ((1, 2), (0, 2), (1, 2)))  # S Prompts 1-3
    assert g.truth == (True, False, False)
    assert g.states() == [(False, False, True), (True, False, False), (True, False, False)]
    assert cups.demonstration(g, "plain").splitlines()[-1] == "cups = [True, False, False]"
    assert cups.demonstration(g, "cot").splitlines()[-3:] == [
        "cups = [False, False, True]", "cups = [True, False, False]", "cups = [True, False, False]"]
    assert cups.demonstration(g, "state").splitlines()[2:4] == ["Swapping cup 1 with cup 2", "cups = [False, False, True]"]
    assert cups.parse_state("cups = [True, false, False] ...") == (True, False, False)
    assert cups.parse_state("cups = [True, False]") is None and cups.parse_state("nothing") is None
    assert cups.parse_state("cups = [True, False, False]\ncups = [False, True, False]", last=True) == (False, True, False)
    game = cups.make_game(random.Random(1), 7)
    assert len(game.swaps) == 7 and sum(game.initial) == 1 and all(i != j for i, j in game.swaps)
    assert cups.games_for(0, 3, 4) == cups.games_for(0, 3, 4)


class Oracle:
    """A perfect player of one style: the state after the prompt's swaps (plain: the last; cot: all;
    state: the one after the swap just read)."""

    def __init__(self, style: str) -> None:
        self.style = style
        self.prompts: list[str] = []

    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64) -> Generation:
        self.prompts.append(prompt)
        lines = prompt.rsplit("# Initial state\n", 1)[1].splitlines()
        state = cups.parse_state(lines[0])
        assert state is not None
        states: list[tuple[bool, ...]] = []
        for ln in lines[1:]:
            if ln.startswith("Swapping"):
                words = ln.split()
                state = tuple(cup_game(state, [(int(words[2]), int(words[5]))]))
                states.append(state)
            else:  # a state the model wrote before (state style)
                assert self.style == "state" and cups.parse_state(ln) == state
        text = "\n".join(cups.state_line(x) for x in (states if self.style == "cot" else states[-1:]))
        return Generation(text, 0, 0, 0, "stop", 0.0)


def test_every_style_scores_a_perfect_model_perfectly_and_resumes() -> None:
    for style in cups.STYLES:
        llm = Oracle(style)
        trials = cups.run_trials(llm, [style], [1, 3], 2, seed=0)
        assert len(trials) == 4 and all(t.correct for t in trials), style
        assert len(llm.prompts) == (2 * (1 + 3) if style == "state" else 4)  # state: one call per swap
        md = cups.report_markdown(trials, "oracle")
        assert "| 3 | 1.00 [0.34, 1.00] (2/2) | 1.00 |" in md
        stored = [cups.Trial.from_json(t.to_json()) for t in trials]
        assert stored == trials
        asked = len(llm.prompts)
        assert cups.run_trials(llm, [style], [1, 3], 2, seed=0, done=stored) == trials and len(llm.prompts) == asked


def test_a_and_r_with_wilson_intervals() -> None:
    t = [cups.Trial("state", 1, k, k < 4, None, (True, False, False), "") for k in range(5)]
    t += [cups.Trial("state", 2, k, k < 2, None, (True, False, False), "") for k in range(5)]
    md = cups.report_markdown(t, "x")
    assert "| 1 | 0.80 [0.38, 0.96] (4/5) | 1.00 |" in md and "| 2 | 0.40 [0.12, 0.77] (2/5) | 0.50 |" in md


def test_the_answer_table_gives_the_constant_answer_baseline() -> None:
    tff, ftf = (True, False, False), (False, True, False)
    t = [cups.Trial("state", 1, k, k == 0, tff, tff if k < 2 else ftf, "") for k in range(4)]
    t += [cups.Trial("plain", 1, k, False, None, tff, "") for k in range(2)]
    md = cups.answers_markdown(t)
    assert f"| LLM+State (S Prompt 3) | 4/4 | {cups.state_line(tff)} | 4/4 | 2/4 (the model: 1/4) |" in md
    assert "| LLM (S Prompt 1) | 0/2 | - | - | - |" in md


def test_the_embedded_models_answers_from_the_cassette() -> None:
    llm = CassetteBackend(None, CASSETTE, "replay")
    trials = cups.run_trials(llm, cups.STYLES, [1, 2], 1, seed=0)
    assert {(t.style, t.n) for t in trials} == {(s, n) for s in cups.STYLES for n in (1, 2)}
    acc = cups.accuracy(trials)
    assert sum(k for _ok, k in acc.values()) == 6
    for t in trials:  # what the 270M model wrote is read as the style says
        if t.style == "state" and t.answer is not None:
            assert t.output.count("cups =") == t.n
        assert t.correct == (t.answer == t.truth)


def test_llm_overrides_reach_the_cup_games_backend_and_others_are_refused() -> None:
    import pytest

    from monologue_eval.suites.statler_cups import apply_llm_overrides

    llm: dict = {"n_threads": 0, "transformers": {"device": "cpu"}}
    apply_llm_overrides(llm, ["planner:llm.n_threads=1", "planner:llm.transformers.device=cuda"])
    assert llm == {"n_threads": 1, "transformers": {"device": "cuda"}}
    with pytest.raises(ValueError, match="only <node>:llm"):
        apply_llm_overrides(llm, ["planner:statler.constrained=true"])
