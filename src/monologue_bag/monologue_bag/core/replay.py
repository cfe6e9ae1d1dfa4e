"""Stand-in for the skills node during a replay: recorded answers in recorded order (no rclpy).

The planner's k-th skill goal gets the k-th recorded result once the sensor playback reached the
time that result arrived in the recording; each get_affordances call gets the next recorded answer
of the current segment (after the last executed skill).
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from .episode import AffordanceAnswer, SkillCall

INVALID_ARGUMENTS = 2  # ExecuteSkill.Result codes used here
EXECUTION_FAILED = 4


@dataclass(frozen=True)
class Outcome:
    """What the stand-in answers to one goal."""

    call: SkillCall | None  # the recorded call, None if the goal does not match the recording
    error_code: int
    error_msg: str
    failed_precondition: str


class RecordedSkills:
    """Serves recorded skill results and affordances in order; thread-safe."""

    def __init__(self, calls: Sequence[SkillCall], answers: Sequence[AffordanceAnswer], logger: logging.Logger) -> None:
        self._calls = list(calls)
        self._answers = sorted(answers, key=lambda a: a.stamp_ns)
        self._log = logger
        self._lock = threading.Lock()
        self._next_call = 0
        self._next_answer = 0
        self._segment_start_ns = 0

    @property
    def calls_served(self) -> int:
        with self._lock:
            return self._next_call

    def limit_ns(self) -> int | None:
        """Bag time playback may reach before the next goal arrives: the next recorded goal's start,
        or None (the end) once every recorded skill ran."""
        with self._lock:
            return self._calls[self._next_call].start_ns if self._next_call < len(self._calls) else None

    def affordances(self) -> AffordanceAnswer | None:
        """The next recorded answer of the current segment, or None if there is none left."""
        with self._lock:
            while (self._next_answer < len(self._answers)
                   and self._answers[self._next_answer].stamp_ns < self._segment_start_ns):
                self._next_answer += 1
            if self._next_answer >= len(self._answers):
                return None
            answer = self._answers[self._next_answer]
            self._next_answer += 1
            return answer

    def begin(self, skill: str, args: Sequence[str]) -> Outcome:
        """Match a goal to the next recorded call; the caller plays to `call.end_ns`, then calls finish()."""
        with self._lock:
            if self._next_call >= len(self._calls):
                return Outcome(None, EXECUTION_FAILED,
                               f"replay: the recording has only {len(self._calls)} skill calls", "")
            call = self._calls[self._next_call]
            if call.skill != skill or tuple(call.args) != tuple(args):
                self._log.error("replay diverged: goal %s%s, the recording ran %s%s here", skill, tuple(args),
                                call.skill, call.args)
                return Outcome(None, INVALID_ARGUMENTS,
                               f"replay: the recording ran {call.skill}({', '.join(call.args)}) here", "")
            return Outcome(call, call.error_code, call.error_msg, call.failed_precondition)

    def finish(self, call: SkillCall) -> None:
        """The recorded result was returned: the next segment starts after it."""
        with self._lock:
            self._next_call += 1
            self._segment_start_ns = call.end_ns
