"""`InnerMonologue`: the planner loop as one object (the names older callers import; no rclpy).

It runs the registered `inner_monologue` strategy (or `inner_monologue_generative` when
`options.decoding == "generate"`) over its ports; the planner node uses core.runner instead.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from monologue_domain.transcript import Transcript
from monologue_llm.base import LLMBackend

from . import strategies
from .episode import (
    EpisodeError,
    EpisodeOptions,
    EpisodeResult,
    ScoredCandidate,
    StepRecord,
)
from .human import answer_question, is_stop_request
from .ports import HumanPort, RobotStatusPort, ScenePort, SkillsPort, SuccessPort
from .prompts import PromptProfile
from .scene_feedback import SubGoal, parse_goal_state
from .scoring import DONE_AFFORDANCE
from .strategy import EpisodeContext, Ports

__all__ = ["DONE_AFFORDANCE", "EpisodeError", "EpisodeOptions", "EpisodeResult", "InnerMonologue",
           "ScoredCandidate", "StepRecord", "SubGoal", "is_stop_request", "parse_goal_state"]

_BY_DECODING = {"score": "inner_monologue", "generate": "inner_monologue_generative"}


class InnerMonologue:
    """Runs one episode at a time. Collaborators are plain Python objects (ports), so the loop is
    tested without ROS; attributes may be swapped between episodes."""

    def __init__(
        self,
        llm: LLMBackend,
        skills: SkillsPort,
        scene: ScenePort,
        success: SuccessPort,
        profile: PromptProfile,
        logger: logging.Logger,
        on_step: Callable[[StepRecord], None] | None = None,
        clock: Callable[[], float] = time.time,
        human: HumanPort | None = None,
        robot: RobotStatusPort | None = None,
    ) -> None:
        self.llm = llm
        self.skills = skills
        self.scene = scene
        self.success = success
        self.profile = profile
        self.log = logger
        self.on_step = on_step
        self.clock = clock
        self.human = human
        self.robot = robot

    def run(
        self,
        instruction: str,
        options: EpisodeOptions,
        transcript: Transcript,
        cancel: threading.Event | None = None,
        resume: bool = False,
    ) -> EpisodeResult:
        """Run one episode. With `resume`, `transcript` holds an interrupted episode (see
        Transcript.reopen) and the loop continues after its last event, counting its steps."""
        name = _BY_DECODING.get(options.decoding)
        if name is None:
            raise ValueError(f"unknown decoding {options.decoding!r}; use one of {sorted(_BY_DECODING)}")
        ep = EpisodeContext(
            llm=self.llm, ports=Ports(self.skills, self.scene, self.success, self.human, self.robot),
            profile=self.profile, transcript=transcript, instruction=instruction, options=options,
            log=self.log, cancel=cancel or threading.Event(), resume=resume, on_step=self.on_step,
            clock=self.clock)
        return strategies.get(name).run(ep)

    def answer(self, question: str, transcript: Transcript, max_tokens: int = 64) -> str:
        """Answer a question about the scene in text, from the episode so far (IM Fig. 5d)."""
        return answer_question(self.llm, self.profile, transcript, question, max_tokens)
