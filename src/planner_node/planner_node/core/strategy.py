"""The strategy interface: what a planner strategy gets for one episode and what it returns (no rclpy).

A strategy is an object with a `name`, a `decoding` ("score" or "generate", recorded in the
transcript header) and `run(episode) -> EpisodeResult`. It appends its events to
`episode.transcript` (and ends it with `core.episode.finish`) and reports every planned step through
`episode.on_step`. Strategies register by name in `core.strategies`; the reusable pieces they are
built from live in core.loop, core.scoring, core.generation, core.feedback, core.scene_feedback and
core.human.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from monologue_domain.transcript import Transcript
from monologue_llm.base import LLMBackend

from .episode import EpisodeOptions, EpisodeResult, StepRecord
from .ports import HumanPort, RobotStatusPort, ScenePort, SkillsPort, SuccessPort
from .prompts import PromptProfile


@dataclass(frozen=True)
class Ports:
    """The rest of the graph as the planner sees it (rclpy clients in the node, fakes in tests)."""

    skills: SkillsPort
    scene: ScenePort
    success: SuccessPort
    human: HumanPort | None = None
    robot: RobotStatusPort | None = None


@dataclass(frozen=True)
class EpisodeContext:
    """Everything one strategy run needs. Use `dataclasses.replace` to run a piece with other options."""

    llm: LLMBackend
    ports: Ports
    profile: PromptProfile
    transcript: Transcript
    instruction: str
    options: EpisodeOptions
    log: logging.Logger
    cancel: threading.Event = field(default_factory=threading.Event)
    resume: bool = False  # `transcript` holds an interrupted episode (Transcript.reopen) to continue
    on_step: Callable[[StepRecord], None] | None = None
    clock: Callable[[], float] = time.time  # s since the epoch
    strategy_settings: Mapping[str, object] = field(default_factory=dict)  # a strategy's own block, by name
    memo: dict[object, object] = field(default_factory=dict)  # per-episode results (shared by `replace` copies)


class Strategy(Protocol):
    """A planner strategy (see the module docstring)."""

    @property
    def name(self) -> str: ...

    @property
    def decoding(self) -> str:
        """"score" (rank admissible lines) or "generate" (the LLM writes the line); for the header."""
        ...

    def run(self, episode: EpisodeContext) -> EpisodeResult:
        """Run one episode to its end (the transcript is ended too) and return its outcome."""
        ...


# Chooses the step `step` of a closed loop: (episode, step, {scene name: category}) -> the step.
StepChooser = Callable[[EpisodeContext, int, Mapping[str, str]], StepRecord]
