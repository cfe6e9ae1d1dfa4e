"""The strategy interface: what a planner strategy gets for one episode and what it returns (no rclpy).

A strategy is an object with a `name`, a `decoding` ("score" or "generate", recorded in the
transcript header) and `run(episode) -> EpisodeResult`. It appends its events to
`episode.transcript`, ends it with `episode.finish(error, reason)` for the outcomes it decides, and
reports every planned step through `episode.record_step`. What escapes `run` (LLM, port, planning
and transcript errors, bugs) is mapped to an outcome once, by core.runner.run_episode.

Strategies register by name in `core.strategies` (one package per family); the reusable pieces
they are built from live in core.loop, core.scoring, core.feedback, core.scene_feedback and
core.human. A family with its own parameter block (`planner.<block>.*`) registers a
`SettingsBlock` whose reader returns a frozen settings dataclass; the strategy gets it back with
`episode.settings.get(ItsSettings)`. A strategy may declare `publications` (topics beyond the
transcript, e.g. Statler's world state); the node creates their publishers from the declarations.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from monologue_common.core.settings import ParamReader
from monologue_domain.transcript import Event, Transcript
from monologue_llm.base import LLMBackend

from .episode import EpisodeError, EpisodeOptions, EpisodeResult, InvalidEpisode, StepRecord, finish
from .ports import HumanPort, RobotStatusPort, ScenePort, SkillsPort, SuccessPort
from .prompts import PromptProfile

T = TypeVar("T")


@dataclass(frozen=True)
class Ports:
    """The rest of the graph as the planner sees it (rclpy clients in the node, fakes in tests)."""

    skills: SkillsPort
    scene: ScenePort
    success: SuccessPort
    human: HumanPort | None = None
    robot: RobotStatusPort | None = None


@dataclass(frozen=True)
class SettingsBlock:
    """A strategy family's own parameter block `planner.<name>.*` and its reader, which returns the
    family's frozen settings dataclass (errors are collected in the ParamReader)."""

    name: str
    read: Callable[[ParamReader, str], object]  # (the planner's reader, prompt_dir) -> settings


class StrategySettings:
    """Every family's typed settings, one object per settings class (read once at start-up)."""

    def __init__(self, items: Iterable[object] = ()) -> None:
        self._items: dict[type, object] = {type(item): item for item in items}

    def get(self, cls: type[T]) -> T:
        """The settings of class `cls`; InvalidEpisode (INVALID_GOAL) if the planner has none."""
        item = self._items.get(cls)
        if not isinstance(item, cls):
            raise InvalidEpisode(f"no {cls.__name__}: the planner's parameters lack its block (config/monologue.yaml)")
        return item

    def __contains__(self, cls: object) -> bool:
        return cls in self._items

    def __len__(self) -> int:
        return len(self._items)


class EpisodeState:
    """What one episode has done so far: skills executed, planned steps, values worked out once per
    episode (by class). Shared by the `replace` copies of its EpisodeContext."""

    def __init__(self) -> None:
        self.executed = 0
        self.steps: list[StepRecord] = []
        self._once: dict[type, object] = {}

    def once(self, cls: type[T], make: Callable[[], T]) -> T:
        """The episode's value of class `cls`, made by `make` the first time it is asked for."""
        value = self._once.get(cls)
        if not isinstance(value, cls):
            value = make()
            self._once[cls] = value
        return value


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
    settings: StrategySettings = field(default_factory=StrategySettings)  # every family's typed settings
    state: EpisodeState = field(default_factory=EpisodeState)  # shared by `replace` copies

    def record_step(self, record: StepRecord) -> None:
        """Keep a planned step in the episode's result and report it (`on_step`)."""
        self.state.steps.append(record)
        if self.on_step is not None:
            self.on_step(record)

    def finish(self, error: EpisodeError, reason: str) -> EpisodeResult:
        """End the episode with `error` (core.episode.finish), counting what it has done so far."""
        return finish(self.transcript, error, reason, self.state.executed, self.state.steps)


@dataclass(frozen=True)
class Publication:
    """A topic a strategy publishes beyond the transcript: one message per transcript event that
    `select` picks, with the text `render` makes of it."""

    topic: str  # e.g. "planner/world_state"
    kind: str  # the message kind: "string" (std_msgs/String)
    latched: bool  # the last message is kept for late subscribers
    select: Callable[[Event], bool]
    render: Callable[[Event], str]


class Strategy(Protocol):
    """A planner strategy (see the module docstring). It may also have a `publications` attribute
    (a sequence of Publication)."""

    @property
    def name(self) -> str: ...

    @property
    def decoding(self) -> str:
        """"score" (rank admissible lines) or "generate" (the LLM writes the line); for the header."""
        ...

    def run(self, episode: EpisodeContext) -> EpisodeResult:
        """Run one episode to its end (the transcript is ended too) and return its outcome."""
        ...


StrategyFactory = Callable[[], Strategy]  # a Strategy class, or a function returning one

# Chooses the step `step` of a closed loop: (episode, step, {scene name: category}) -> the step.
StepChooser = Callable[[EpisodeContext, int, Mapping[str, str]], StepRecord]
