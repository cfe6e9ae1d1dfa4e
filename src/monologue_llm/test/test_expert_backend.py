"""The expert stand-in's backend mechanics, with a toy responder (the formats have their own tests)."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from monologue_domain.expert.channel import TruthUnavailableError, write_world
from monologue_domain.scene import SceneObject
from monologue_llm.base import SamplingBackend
from monologue_llm.expert.backend import ExpertBackend
from monologue_llm.expert.format import Answer, ExpertError, Query
from monologue_llm.factory import make_backend


class Toy:
    """Answers "Robot action: pick the <first object of the truth>." to prompts ending in "Robot action:"."""

    name = "toy"
    priority = 0

    def claims(self, query: Query) -> bool:
        return query.prompt.rstrip().endswith("Robot:") or query.kind == "score"

    def answer(self, query: Query) -> Answer:
        first = query.truth.world().objects[0].name
        right = f" pick the {first}."
        return Answer(right, wrong=(" pick the blue block.",), note="toy")


def _backend(tmp_path: Path, **kw: object) -> ExpertBackend:
    write_world(tmp_path, "kinematic", [SceneObject(name="red block", category="block", position=(0, 0, 0))])
    return ExpertBackend(tmp_path, responders=[Toy()], logger=logging.getLogger("t"), **kw)  # type: ignore[arg-type]


def test_generate_score_and_sample_give_the_expert_answer(tmp_path: Path) -> None:
    b = _backend(tmp_path)
    assert b.generate("Human: go\nRobot:", stop=["\n"]).text == " pick the red block."
    assert b.generate("Human: go\nRobot:", stop=["block"]).text == " pick the red "
    res = b.score("Human: go\nRobot:", [" pick the blue block.", " pick the red block."])
    best = max(res.scores, key=lambda s: s.logprob)
    assert best.text == " pick the red block." and best.logprob > res.scores[0].logprob + 5
    assert max(res.scores, key=lambda s: s.logprob / s.token_count).text == " pick the red block."
    assert isinstance(b, SamplingBackend)
    samples = b.sample("Human: go\nRobot:", n=3).samples
    assert [s.text for s in samples] == [" pick the red block."] * 3


def test_an_answer_that_is_not_a_candidate_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ExpertError, match="not among"):
        _backend(tmp_path).score("Robot:", [" pick the blue block.", " done."])


def test_an_unrecognised_prompt_is_an_error_when_generating(tmp_path: Path) -> None:
    with pytest.raises(ExpertError, match="no prompt format"):
        _backend(tmp_path).generate("What is the capital of France?")


def test_the_error_rate_gives_wrong_lines_and_slips_reproducibly(tmp_path: Path) -> None:
    b = _backend(tmp_path, error_rate=0.5, seed=3)
    texts = [b.generate("Human: go\nRobot:").text for _ in range(200)]
    wrong = sum(t != " pick the red block." for t in texts)
    assert 70 <= wrong <= 130 and b.errors_made == wrong  # about half, each draw fresh for a repeated prompt
    assert " pick the blue block." in texts and any(t not in (" pick the blue block.", " pick the red block.")
                                                    for t in texts)  # wrong lines and format slips
    again = _backend(tmp_path, error_rate=0.5, seed=3)
    assert [again.generate("Human: go\nRobot:").text for _ in range(200)] == texts  # same seed, same answers


def test_no_truth_no_answer(tmp_path: Path) -> None:
    b = ExpertBackend(tmp_path / "none", responders=[Toy()], truth_timeout_s=0.1)
    with pytest.raises(TruthUnavailableError, match="simulated robot"):
        b.generate("Human: go\nRobot:")


def test_the_plugin_refuses_to_start_without_the_side_channel(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="simulated robot only"):
        make_backend({"backend": "expert"})
    with pytest.raises(ValueError, match=r"error_rate' must be in \[0, 1\]"):
        make_backend({"backend": "expert", "expert.truth_dir": str(tmp_path), "expert.error_rate": 1.5})
    assert make_backend({"backend": "expert", "expert.truth_dir": str(tmp_path)}).name == "expert"


def test_embeddings_are_unit_vectors_equal_for_equal_texts(tmp_path: Path) -> None:
    a, b, c = _backend(tmp_path).embed(["Pick up the coke.", "pick up the coke", "open the drawer"])
    assert a == b and abs(sum(x * x for x in a) - 1.0) < 1e-9
    assert sum(x * y for x, y in zip(a, c)) < 0.9


class Failing(Toy):
    """Claims every prompt but cannot decide."""

    def answer(self, query: Query) -> Answer:
        raise ExpertError("the truth does not decide it")


def test_a_claimed_query_the_expert_cannot_answer_is_an_error_not_a_tie(tmp_path: Path) -> None:
    write_world(tmp_path, "kinematic", [])
    b = ExpertBackend(tmp_path, responders=[Failing()])
    with pytest.raises(ExpertError, match="does not decide"):
        b.score("Robot:", [" pick the red block.", " done."])


def test_an_unclaimed_score_query_gives_every_candidate_the_same_total(tmp_path: Path) -> None:
    write_world(tmp_path, "kinematic", [])
    b = ExpertBackend(tmp_path, responders=[])
    res = b.score("N/A", [" pick the red block and place it in the blue bowl.", " done."])
    assert {s.logprob for s in res.scores} == {-1.0}
