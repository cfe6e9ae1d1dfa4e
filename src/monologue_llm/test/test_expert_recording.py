"""The expert stand-in's recording (`record_path`): each answered query becomes one training example whose
completion is the CORRECT answer, also when the error rate gave a wrong one."""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from monologue_domain.expert.channel import write_world
from monologue_domain.scene import SceneObject
from monologue_llm.expert.backend import ExpertBackend
from monologue_llm.expert.format import Answer, NoPreference, Query
from monologue_llm.factory import make_backend


class Toy:
    """Answers " pick the <first object>." to prompts ending in "Robot:"; no preference for "N/A" prompts."""

    name = "toy"
    priority = 0

    def claims(self, query: Query) -> bool:
        return query.prompt.rstrip().endswith("Robot:") or query.prompt == "N/A"

    def answer(self, query: Query) -> Answer:
        if query.prompt == "N/A":
            raise NoPreference("calibration prompt")
        first = query.truth.world().objects[0].name
        return Answer(f" pick the {first}.\nRobot: done.", wrong=(" pick the blue block.",), note="toy rule")


def _backend(tmp_path: Path, **kw: Any) -> ExpertBackend:
    write_world(tmp_path / "truth", "kinematic",
                [SceneObject(name="red block", category="block", position=(0, 0, 0))])
    return ExpertBackend(tmp_path / "truth", responders=[Toy()], logger=logging.getLogger("t"), **kw)


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_every_answered_query_is_recorded_with_its_correct_completion(tmp_path: Path) -> None:
    rec = tmp_path / "out" / "examples.jsonl"
    b = _backend(tmp_path, record_path=rec)
    b.generate("Human: go\nRobot:", stop=["\n"])
    b.score("Human: go\nRobot:", [" pick the blue block.", " pick the red block.\nRobot: done."])
    b.sample("Human: go\nRobot:", stop=["\n"], n=2)
    got = _records(rec)
    assert [(r["format"], r["kind"]) for r in got] == [("toy", "generate"), ("toy", "score"), ("toy", "sample")]
    assert got[0]["prompt"] == "Human: go\nRobot:" and got[0]["completion"] == " pick the red block."  # cut at stop
    assert got[0]["candidates"] == [] and got[0]["erred"] is False and got[0]["note"] == "toy rule"
    assert got[1]["completion"] == " pick the red block.\nRobot: done."  # the preferred candidate, verbatim
    assert got[1]["candidates"] == [" pick the blue block.", " pick the red block.\nRobot: done."]
    assert got[2]["completion"] == " pick the red block."
    # the call's stop strings: the tuned model learns to end its answer with one (monologue_eval.tune.train)
    assert [r["stop"] for r in got] == [["\n"], [], ["\n"]]


def test_a_wrong_answer_given_keeps_the_correct_target(tmp_path: Path) -> None:
    rec = tmp_path / "examples.jsonl"
    b = _backend(tmp_path, record_path=rec, error_rate=1.0, slip_share=0.0, seed=1)
    given = b.generate("Human: go\nRobot:", stop=["\n"]).text
    res = b.score("Human: go\nRobot:", [" pick the blue block.", " pick the red block.\nRobot: done."])
    assert given == " pick the blue block."
    assert max(res.scores, key=lambda s: s.logprob).text == " pick the blue block."
    got = _records(rec)
    assert [r["completion"] for r in got] == [" pick the red block.", " pick the red block.\nRobot: done."]
    assert [r["erred"] for r in got] == [True, True]


def test_unclaimed_and_undecided_queries_are_not_recorded_and_off_writes_nothing(tmp_path: Path) -> None:
    rec = tmp_path / "examples.jsonl"
    b = _backend(tmp_path, record_path=rec)
    b.score("What is the capital of France?", [" Paris", " Rome"])  # no responder claims it
    b.score("N/A", [" a", " b"])  # claimed, no preference
    assert not rec.exists() or rec.read_text() == ""
    off = _backend(tmp_path)
    off.generate("Human: go\nRobot:")
    assert off.record_path is None and list(tmp_path.glob("*.jsonl")) == []


def test_the_plugin_passes_record_path(tmp_path: Path) -> None:
    rec = tmp_path / "r.jsonl"
    b = make_backend({"backend": "expert", "expert.truth_dir": str(tmp_path), "expert.record_path": str(rec)})
    assert isinstance(b, ExpertBackend) and b.record_path == rec
