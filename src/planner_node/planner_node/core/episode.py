"""What one episode is made of and ends with: options, step records, outcome codes (no rclpy)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from monologue_domain.transcript import EventKind, Transcript

from .ports import SkillOption

NORMALIZATIONS = ("sum", "mean", "softmax")
# scoring: none = raw log-probabilities; content_free = minus (weight x) each candidate's log-probability
# under the same prompt with the instruction replaced by "N/A" (core/calibration.py)
CALIBRATIONS = ("none", "content_free")
GENERATION_FALLBACKS = ("score", "fail")


class EpisodeError(IntEnum):
    """Episode outcome codes; must match ExecuteInstruction result constants (checked by a test)."""

    NONE = 0
    MAX_STEPS_REACHED = 1
    LLM_FAILED = 2
    SKILL_SERVER_UNAVAILABLE = 3
    CANCELED = 4
    INVALID_GOAL = 5
    PLANNING_FAILED = 6
    STOPPED_BY_HUMAN = 7
    INTERNAL_ERROR = 8
    ROBOT_FAULT = 9


@dataclass(frozen=True)
class EpisodeOptions:
    """Switches of one episode (IM Tables 1-3 columns) and the step cap k.

    The planner node builds these from its validated parameters (core.settings) and the goal; callers
    without a node (tests, benchmarks) start from `core.settings.episode_defaults(config_dir)`. No field
    has a default here: the defaults are config/monologue.yaml's. The field names are recorded in the
    transcript header (`options`), which replay reads back.
    """

    object_feedback: bool
    success_feedback: bool
    scene_feedback: bool  # IM Object + Scene: goal-state chain of thought and task progress
    human_feedback: bool
    use_affordances: bool
    max_steps: int
    normalization: str  # one of NORMALIZATIONS
    calibration: str  # scoring: one of CALIBRATIONS
    calibration_weight: float  # scoring: the content-free log-probability is subtracted times this (0-1)
    goal_check: str  # scoring: one of goal_check.GOAL_CHECKS (the instruction's in/on facts vs the success detector)
    goal_grounding: str  # scoring: one of goal_check.GOAL_GROUNDINGS (how the instruction becomes a goal)
    decoding: str  # set from the strategy (Strategy.decoding); recorded in the header
    max_reprompts: int  # generate: re-prompts after output that does not parse or is not admissible
    generation_fallback: str  # generate: after the re-prompts, "score" the admissible lines or "fail"
    max_tokens: int  # generate: tokens per line
    answer_timeout_s: float  # s a person has to answer the robot's question (` and ask:`)
    stop_phrases: tuple[str, ...]  # interjections that end the episode (STOPPED_BY_HUMAN)
    fault_pause_s: float  # s to wait for a faulted robot (protective stop, e-stop) before giving up


@dataclass(frozen=True)
class ScoredCandidate:
    text: str
    option: SkillOption | None  # None for the termination line
    llm_logprob: float
    llm_score: float
    affordance: float
    combined: float


@dataclass(frozen=True)
class StepRecord:
    step: int
    candidates: tuple[ScoredCandidate, ...]
    chosen: ScoredCandidate
    normalization: str
    prompt_tokens: int
    new_tokens: int
    llm_s: float
    step_s: float
    suffix: str = ""  # generate + ` and ask:` profiles: "continue" or "ask: <question>" as written


@dataclass(frozen=True)
class EpisodeResult:
    success: bool
    error: EpisodeError
    reason: str
    steps_taken: int
    steps: tuple[StepRecord, ...] = field(default_factory=tuple)


class PlanningFailed(Exception):
    """A step chooser could not produce an admissible step (ends the episode with PLANNING_FAILED)."""


class InvalidEpisode(Exception):
    """The goal cannot run with this profile and these options (ends the episode with INVALID_GOAL)."""


def finish(transcript: Transcript, error: EpisodeError, reason: str, executed: int,
           steps: Sequence[StepRecord] = ()) -> EpisodeResult:
    """End the episode: an ERROR line unless it succeeded, the EPISODE_END event, the file footer."""
    success = error == EpisodeError.NONE
    if not success:
        transcript.append(EventKind.ERROR, f"Episode ended: {reason}", {"error": error.name})
    # decisions: steps chosen; single_candidate: of them, those with one candidate (a rule such as
    # `scoring.goal_check: directed` left one move, or chose done because the goal held)
    transcript.append(EventKind.EPISODE_END, f"Episode {'succeeded' if success else 'failed'}: {reason}",
                      {"success": success, "error": error.name, "steps_taken": executed, "decisions": len(steps),
                       "single_candidate": sum(1 for s in steps if len(s.candidates) == 1)})
    transcript.end({"success": success, "error": error.name, "reason": reason, "steps_taken": executed})
    return EpisodeResult(success, error, reason, executed, tuple(steps))


def one_line(text: str, limit: int = 300) -> str:
    """`text` as one line of at most `limit` characters (whitespace collapsed, NULs dropped)."""
    line = " ".join(text.replace("\x00", "").split())
    return line[:limit]

