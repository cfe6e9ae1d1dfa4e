"""The tuning data's instructions share no word 4-gram (lower-cased, punctuation stripped) with any benchmark
text: IM Table 1, SayCan 101, IM kitchen, CAPE (paper, generated, demonstrations), Statler's queries,
MultiTalk's task, the paraphrase list, the development list and the goal-example library (tune/heldout.py).
The sample comes from the real generator's planning code (tune/data.py: scenes, goals, wordings) with the
redraw filter OFF, so the wording templates themselves are what is checked."""
from __future__ import annotations

from pathlib import Path

import pytest

from monologue_eval.tune.data import Sayer, plan_items
from monologue_eval.tune.heldout import NgramIndex, benchmark_texts, ngrams, shared_ngrams
from monologue_eval.tune.wording import LANGUAGES

CONFIG = Path(__file__).resolve().parents[3] / "config"
WORLDS = ("kinematic", "kitchen", "household", "multitalk")


@pytest.fixture(scope="module")
def index() -> NgramIndex:
    return NgramIndex(benchmark_texts(CONFIG))


@pytest.fixture(scope="module")
def sample() -> list[str]:
    """Instructions of a 1,500-episode plan over every world, for two seeds (no filter)."""
    out = []
    for seed in (0, 1):
        plan = plan_items(WORLDS, 1500, seed, Sayer(seed, None))
        out += [it.wording.text for items in plan.values() for it in items]
    return out


def test_every_source_is_found_and_read() -> None:
    texts = benchmark_texts(CONFIG)
    for name in ("benchmarks/saycan_101.yaml", "benchmarks/im_kitchen.yaml", "benchmarks/cape.yaml",
                 "benchmarks/statler.yaml", "benchmarks/wordings.yaml", "benchmarks/wordings_dev.yaml",
                 "prompts/goal_examples/tabletop.yaml", "prompts/cape_household.yaml", "IM Table 1",
                 "CAPE generated", "MultiTalk"):
        assert len(texts.get(name, [])) >= 1, name
    assert "How would you pick up the coke can" in texts["benchmarks/saycan_101.yaml"]
    assert "Put the blocks in their matching bowls." in texts["IM Table 1"]
    assert len(texts["benchmarks/statler.yaml"]) > 1000  # the queries of 60 episodes


def test_no_training_instruction_shares_a_word_4gram_with_a_benchmark_text(index: NgramIndex,
                                                                             sample: list[str]) -> None:
    assert len(sample) > 2500
    bad = shared_ngrams(sample, index)
    assert not bad, "\n".join(f"{i!r} shares {' '.join(g)!r} with {s}: {t!r}" for i, g, s, t in bad[:20])


def test_the_sample_covers_every_language_and_world(sample: list[str]) -> None:
    plan = plan_items(WORLDS, 600, 0, Sayer(0, None))
    assert {w: len(v) > 0 for w, v in plan.items()} == {w: True for w in WORLDS}
    langs = {it.wording.language for items in plan.values() for it in items}
    assert langs == set(LANGUAGES)
    assert any(it.wording.misspelled for items in plan.values() for it in items)


@pytest.mark.parametrize("planted", [
    "Put the blocks in their matching bowls.",  # IM Table 1
    "How would you pick up the coke can",  # SayCan 101
    "Sort each block into the bowl of the same colour.",  # paraphrase list
    "Make one stack with all of the blocks.",  # development list
    "Put the cubes one above the other until they form a column.",  # goal-example library
    "Prepare for a run on a warm day",  # CAPE paper task
])
def test_a_planted_benchmark_sentence_is_caught(index: NgramIndex, sample: list[str], planted: str) -> None:
    bad = shared_ngrams(sample[:200] + [f"ok then, {planted.lower()} now"], index)
    assert bad and all(i.endswith(" now") for i, _g, _s, _t in bad)


def test_a_statler_query_is_caught(index: NgramIndex) -> None:
    texts = benchmark_texts(CONFIG)["benchmarks/statler.yaml"]
    query = next(t for t in texts if len(t.split()) >= 6)
    assert index.shared(query) and not index.clean(query)


def test_the_generator_redraws_a_wording_that_touches_a_benchmark_text() -> None:
    plan = plan_items(["kitchen"], 40, 0, Sayer(0, None))
    first = plan["kitchen"][0].wording.text
    index = NgramIndex({"planted": [first]})
    sayer = Sayer(0, index)
    again = plan_items(["kitchen"], 40, 0, sayer)
    assert again["kitchen"][0].wording.text != first and sayer.redrawn >= 1
    assert all(index.clean(it.wording.text) for it in again["kitchen"])


def test_4grams_ignore_case_and_punctuation() -> None:
    assert ngrams("Put the RED block, now!") == {("put", "the", "red", "block"), ("the", "red", "block", "now")}

