"""The expert's CAPE and household formats (monologue_llm.expert.formats.cape / household) on prompts
written here in CAPE's layout, with world truth written to a side channel as the simulators write it; and
the backend's embeddings, which CAPE grounds with."""
from __future__ import annotations

from pathlib import Path

import pytest

from monologue_domain.expert.channel import TruthUnavailableError, write_task, write_world
from monologue_domain.expert.household import scene_to_json
from monologue_domain.kitchen.household import SCENES, HouseholdWorld
from monologue_domain.kitchen.world import DEFAULT_PLACEMENTS, KitchenWorld, make_state
from monologue_llm.expert.backend import ExpertBackend
from monologue_llm.expert.format import ExpertError, Query, Truth
from monologue_llm.expert.formats.cape import CapeResponder, KitchenCape, parse_query
from monologue_llm.expert.formats.household import HouseholdResponder

PREAMBLE = ("Robot: Hi there, I'm a Spot robot with one arm in a home. I start sitting, so I stand up before I "
            "walk.\nTask: turn on the lamp\nStep 1: stand up\nStep 2: done.\n")


def household(tmp_path: Path, task: str, atoms: list[str]) -> Truth:
    scene, start = SCENES["lab"]()
    w = HouseholdWorld(scene, start)
    write_world(tmp_path, "household", w.scene_objects(), extra={"household": scene_to_json(scene, 1)})
    write_task(tmp_path, task, "household", {"atoms": atoms})
    return Truth(tmp_path)


def test_regression_distinct_words_never_embed_alike(tmp_path: Path) -> None:
    """Defect: one hashed bucket per word in 256 dimensions gave "fridge" and "mug" the same vector, so
    CAPE grounded the expert's "walk to the mug" to "walk to the fridge" (a tie broken by list order)."""
    b = ExpertBackend(tmp_path)
    a, c = b.embed(["walk to the fridge", "walk to the mug"])
    assert sum(x * y for x, y in zip(a, c)) < 0.95
    words = sorted({w for s in SCENES.values() for t in s()[0].things for w in t.name.split()})
    vecs = b.embed(words)
    for i in range(len(words)):
        for j in range(i + 1, len(words)):
            assert sum(x * y for x, y in zip(vecs[i], vecs[j])) < 0.99, (words[i], words[j])


def test_cape_answers_the_next_step_and_the_correction(tmp_path: Path) -> None:
    truth = household(tmp_path, "Put the phone on the nightstand", ["at(phone, nightstand)"])
    r = CapeResponder()
    first = r.answer(Query("sample", "Task: Put the phone on the nightstand\nStep 1:", truth))
    assert first.text == " Stand up"
    assert first.wrong and all(w.startswith(" ") and w.strip() != "Stand up" for w in first.wrong)
    fix = r.answer(Query("sample", "Task: Put the phone on the nightstand\nStep 1: Walk to the desk\nError: I "
                                   "cannot walk to the desk because I am sitting. A correct step would be to\n"
                                   "Step 1:", truth))
    assert fix.text == " Stand up"
    assert r.claims(Query("sample", "Task: x\nStep 1:", truth))
    assert not r.claims(Query("score", "Task: x\nStep 1:", truth, ("stand up",)))


def test_the_household_profile_scores_the_next_step(tmp_path: Path) -> None:
    truth = household(tmp_path, "Put the phone on the nightstand", ["at(phone, nightstand)"])
    r = HouseholdResponder()
    q = Query("score", PREAMBLE + "Task: Put the phone on the nightstand\nStep 1: stand up\nStep 2:", truth,
              (" stand up", " walk to the desk", " done."))
    assert r.claims(q)
    ans = r.answer(q)
    assert ans.text == " walk to the desk"
    # the noisy oracle hid the right step: a step that changes nothing, then the next query gets it
    hidden = r.answer(Query("score", PREAMBLE + "Task: Put the phone on the nightstand\nStep 1: stand up\nStep 2:",
                            truth, (" look at the desk", " walk to the fridge", " done.")))
    assert hidden.text == " look at the desk"
    gen = r.answer(Query("generate", PREAMBLE + "Task: Put the phone on the nightstand\nStep 1:", truth))
    assert gen.text == " stand up"
    assert not r.claims(Query("score", "Robot: Hi there, I'm a robot operating in an office kitchen.\nTask: x\n"
                                       "Step 1:", truth, ("a",)))


def test_the_kitchen_in_capes_words(tmp_path: Path) -> None:
    k = KitchenCape()
    assert k.to_saycan("Put the coke in the top drawer") == "put coke in the drawer"
    assert k.to_cape("put coke in the drawer") == "put the coke in the top drawer"
    assert k.to_cape("open the drawer") == "open the top drawer" and k.to_saycan("open the top drawer") == "open the drawer"
    placements = dict(DEFAULT_PLACEMENTS)
    placements["coke"] = "robot"
    w = KitchenWorld(make_state(placements))
    write_world(tmp_path, "kitchen", w.scene_objects())
    write_task(tmp_path, "Bring me the coke", "kitchen", {"predicate": "delivered(coke)"})
    ans = CapeResponder().answer(Query("sample", "Task: Bring me the coke\nStep 1:", Truth(tmp_path)))
    assert ans.text == " Bring it to you"
    assert " Pick up the coke" in ans.wrong  # refused: the coke is already in hand (CAPE D1)


def test_parse_query_rejects_other_layouts() -> None:
    assert parse_query("Human: bring me a coke\nRobot: 1.") is None
    q = parse_query("Task: a\nStep 1: stand up [success: no]\nStep 2:")
    assert q is not None and q.entries == (("stand up", True),)


def test_without_truth_or_goal_there_is_no_answer(tmp_path: Path) -> None:
    with pytest.raises(TruthUnavailableError):  # no simulated world: the stand-in never answers
        CapeResponder().answer(Query("sample", "Task: a\nStep 1:", Truth(tmp_path, timeout_s=0.1)))
    household(tmp_path, "Put the phone on the nightstand", ["at(phone, nightstand)"])
    with pytest.raises(ExpertError, match="no goal"):
        CapeResponder().answer(Query("sample", "Task: another task\nStep 1:", Truth(tmp_path)))
