"""The tuning data's pieces that need no graph: the example format, the wording generator, the held-out
lists, the generator's plan and its reading of the expert's records."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from monologue_eval.tune.data import RawTail, Sayer, example_id, phases, plan_items, world_planner_params
from monologue_eval.tune.examples import Example, ExampleError, from_record, read_examples, write_examples
from monologue_eval.tune.heldout import HELDOUT, split_of
from monologue_eval.tune.wording import TEMPLATES, Wordings, misspell


def _example(**kw: object) -> Example:
    base: dict[str, object] = dict(id="kitchen/saycan/0/0", world="kitchen", strategy="saycan", format="saycan",
                                   kind="score", prompt="Human: hi\nRobot: 1.", completion=" find a coke",
                                   family="kitchen_bring", instruction="hi", split="train",
                                   candidates=(" find a coke", " done."))
    base.update(kw)
    return Example(**base)  # type: ignore[arg-type]


def test_examples_round_trip_and_filter_by_split(tmp_path: Path) -> None:
    a, b = _example(), _example(id="x/1", split="heldout", kind="generate", candidates=())
    assert write_examples(tmp_path / "examples.jsonl", [a, b]) == 2
    assert list(read_examples(tmp_path)) == [a, b]
    assert list(read_examples(tmp_path / "examples.jsonl", split="train")) == [a]
    line = json.loads((tmp_path / "examples.jsonl").read_text().splitlines()[0])
    assert set(line) == {"id", "world", "strategy", "format", "kind", "prompt", "completion", "candidates", "family",
                         "instruction", "split", "stop"} and line["candidates"] == [" find a coke", " done."]
    assert line["stop"] == []  # score queries have no stop string; generate/sample carry the call's (train.py)


@pytest.mark.parametrize("bad, match", [
    (dict(world="mars"), "unknown world"), (dict(strategy="x"), "unknown strategy"), (dict(kind="chat"), "kind"),
    (dict(split="test"), "split"), (dict(completion=" go"), "not among its candidates"),
    (dict(kind="generate"), "has candidates"), (dict(prompt=""), "empty prompt")])
def test_malformed_examples_are_refused(tmp_path: Path, bad: dict[str, object], match: str) -> None:
    with pytest.raises(ExampleError, match=match):
        _example(**bad).validate()
    path = tmp_path / "e.jsonl"
    path.write_text(json.dumps({**_example().to_json(), **bad}) + "\n")
    with pytest.raises(ExampleError, match="e.jsonl:1"):
        list(read_examples(path))


def test_statler_worlds_are_accepted() -> None:
    _example(world="statler:covers", strategy="statler", kind="generate", candidates=()).validate()


def test_an_expert_record_becomes_an_example() -> None:
    rec = {"format": "saycan", "kind": "score", "prompt": "P", "completion": " b", "candidates": [" a", " b"],
           "erred": True, "note": ""}
    ex = from_record(rec, id="i", world="kitchen", strategy="saycan", family="f", instruction="t", split="train")
    assert (ex.prompt, ex.completion, ex.candidates, ex.format) == ("P", " b", (" a", " b"), "saycan")


def test_the_raw_tail_reads_only_new_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "raw.jsonl"
    path.write_text('{"a": 1}\n')
    tail = RawTail(path)  # what was there before is not this run's
    assert tail.take() == []
    with path.open("a") as f:
        f.write('{"a": 2}\n{"a": 3')
    assert tail.take() == [{"a": 2}]
    with path.open("a") as f:
        f.write('}\n')
    assert tail.take() == [{"a": 3}]


def test_wordings_are_deterministic_and_vary() -> None:
    slots = {"block": "red block", "target": "blue bowl"}
    a = [Wordings(3).say("tabletop.pick_place", slots, k).text for k in range(30)]
    assert a == [Wordings(3).say("tabletop.pick_place", slots, k).text for k in range(30)]
    assert a != [Wordings(4).say("tabletop.pick_place", slots, k).text for k in range(30)]
    assert len(set(a)) > 10
    assert all("red block" in t.lower() for t in a)  # object names stay as the scene names them (a first word capitalised)


def test_every_intent_has_every_language_and_fills_its_slots() -> None:
    slots = {"block": "red block", "target": "blue bowl", "bowl": "blue bowl", "location": "middle",
             "object": "coke", "other": "apple", "place": "table", "thing": "mail", "receptacle": "desk",
             "switch": "lamp"}
    for intent, by_lang in TEMPLATES.items():
        assert set(by_lang) == {"en", "de", "zh", "es", "ja"}, intent
        for text in Wordings(0).every_template(intent, slots):
            assert "{" not in text and "[" not in text, (intent, text)


def test_misspell_changes_words_but_not_the_protected_names() -> None:
    import random

    text = "Please carefully relocate the water bottle towards the counter"
    out = {misspell(text, random.Random(i), ["water bottle", "counter"]) for i in range(20)}
    assert text not in out or len(out) > 1
    assert all("water bottle" in t and "counter" in t for t in out)


def test_held_out_families_domains_and_scenes() -> None:
    assert HELDOUT["tabletop"] >= {"mismatched_bowls", "different_corners"}
    assert split_of("kinematic", "mismatched_bowls") == split_of("mujoco", "different_corners") == "heldout"
    assert split_of("multitalk", "matching_bowls") == "train"
    assert split_of("kitchen", "long_horizon") == "heldout" and split_of("kitchen", "kitchen_bring") == "train"
    assert split_of("statler:weights", "say") == "heldout" and split_of("statler:covers", "say") == "train"
    assert split_of("household", "fetch", "kitchen") == "heldout" and split_of("household", "fetch", "lab") == "train"


def test_the_plan_marks_held_out_items_and_covers_every_world() -> None:
    plan = plan_items(["kinematic", "kitchen", "household", "multitalk"], 200, 0, Sayer(0, None))
    kin = plan["kinematic"]
    assert {it.split for it in kin if it.family in ("mismatched_bowls", "different_corners")} == {"heldout"}
    assert {it.split for it in kin if it.family == "stack"} == {"train"}
    assert {it.split for it in plan["kitchen"] if it.family == "long_horizon"} == {"heldout"}
    house = plan["household"]
    assert {it.split for it in house if it.payload.scene == "kitchen"} == {"heldout"}
    assert {it.split for it in house if it.payload.scene != "kitchen"} == {"train"}
    assert {it.strategy for it in plan["kitchen"]} == {"saycan", "inner_monologue"}
    assert {it.strategy for it in house} == {"cape", "saycan"}


def test_phases_split_the_erring_share() -> None:
    items = plan_items(["kitchen"], 10, 0, Sayer(0, None))["kitchen"]
    got = list(phases(items, 0.15, 0.4))
    assert [r for r, _ in got] == [0.0, 0.15] and len(got[1][1]) == 4
    assert sorted(id(i) for i in got[0][1] + got[1][1]) == sorted(id(i) for i in items)
    assert list(phases(items, 0.0, 0.4)) == [(0.0, items)]


def test_example_ids_differ_between_seeds_and_error_rates() -> None:
    """Regression: ids were world/strategy/p<rate>-<episode>/<k>, so the parts of one world generated with
    other seeds collided when merged into one data set."""
    item = plan_items(["kitchen"], 1, 0, Sayer(0, None))["kitchen"][0]
    ids = {example_id(item, seed, rate, 0, 0) for seed in (0, 1) for rate in (0.0, 0.15)}
    assert len(ids) == 4 and all(i.startswith(f"kitchen/{item.strategy}/s") for i in ids)


def test_erring_household_episodes_draw_one_sample_per_step(tmp_path: Path) -> None:
    """Regression: with CAPE's several samples per step the expert's wrong samples were outvoted, so no
    precondition error and no correction ever reached the data."""
    raw = tmp_path / "raw.jsonl"
    assert world_planner_params("household", raw, 0.15, 0)["cape.samples"] == "1"
    assert "cape.samples" not in world_planner_params("household", raw, 0.0, 0)
    assert world_planner_params("kitchen", raw, 0.15, 2) == {
        "llm.expert.record_path": str(raw), "llm.expert.error_rate": "0.15", "llm.expert.seed": "2"}
