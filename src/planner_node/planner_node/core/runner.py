"""The episode runner (no rclpy): goal -> options, resume of an interrupted episode, transcript
header, human inbox, cancel watching, the strategy run and its result, post-task answers.

`run_episode` is the one place where what escapes a strategy (InvalidEpisode, PlanningFailed, LLM
and port errors, a failed transcript write, a bug) becomes the episode's outcome.

The planner node only translates: ExecuteInstruction goals to `GoalRequest`, transcript events
and step records to messages, `EpisodeOutcome` to the action result.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from monologue_domain.transcript import (
    Event,
    StoredEpisode,
    Transcript,
    TranscriptWriteError,
    find_interrupted,
    new_episode_id,
)
from monologue_llm.base import LLMBackend, LLMError, PrefillBackend

from . import strategies
from .episode import EpisodeError, EpisodeOptions, EpisodeResult, InvalidEpisode, PlanningFailed, StepRecord
from .human import HumanInbox, answer_question
from .ports import HumanAsker, PortUnavailable, RobotStatusPort, ScenePort, SkillsPort, SuccessPort
from .prompts import PromptProfile, load_profile
from .settings import PlannerSettings
from .strategy import EpisodeContext, Ports, Strategy

CANCEL_POLL_S = 0.05  # s between looks at the goal's cancel request


@dataclass(frozen=True)
class GoalRequest:
    """An ExecuteInstruction goal in plain data; None / "" / 0 / () = the node's default."""

    instruction: str = ""
    strategy: str = ""
    prompt_profile: str = ""
    object_feedback: bool | None = None
    success_feedback: bool | None = None
    scene_feedback: bool | None = None
    human_feedback: bool | None = None
    use_affordances: bool | None = None
    max_steps: int = 0
    resume_episode: str = ""  # an interrupted episode's id, or "latest"
    objects: tuple[str, ...] = ()  # the task's object names for perception


@dataclass(frozen=True)
class PreparedEpisode:
    """A goal resolved against the settings: ready to run."""

    episode_id: str
    path: Path | None  # the transcript file
    transcript: Transcript
    strategy: Strategy
    profile: PromptProfile
    instruction: str
    options: EpisodeOptions
    objects: tuple[str, ...]  # unique, in order; perception looks for these ([] = its candidates)
    resume: bool


@dataclass(frozen=True)
class EpisodeOutcome:
    """How an episode ended; `transcript` is None if the goal was refused before it started."""

    result: EpisodeResult
    episode_id: str = ""
    transcript: Transcript | None = None
    path: Path | None = None

    @property
    def events(self) -> tuple[Event, ...]:
        return self.transcript.events if self.transcript is not None else ()


def run_episode(strategy: Strategy, ep: EpisodeContext) -> EpisodeResult:
    """Run `strategy` on `ep` to its end; what escapes it ends the transcript with its outcome,
    counting the skills and steps the episode had (EpisodeContext.state)."""
    try:
        return strategy.run(ep)
    except InvalidEpisode as e:
        return ep.finish(EpisodeError.INVALID_GOAL, str(e))
    except PlanningFailed as e:
        if ep.cancel.is_set():  # e.g. cancelled while waiting for the robot to offer a move
            return ep.finish(EpisodeError.CANCELED, "cancelled")
        return ep.finish(EpisodeError.PLANNING_FAILED, str(e))
    except LLMError as e:
        ep.log.error("LLM failed: %s", e)
        return ep.finish(EpisodeError.LLM_FAILED, f"LLM failed: {e}")
    except PortUnavailable as e:
        ep.log.error("graph component unavailable: %s", e)
        return ep.finish(EpisodeError.SKILL_SERVER_UNAVAILABLE, str(e))
    except TranscriptWriteError as e:  # no record of what the robot does: stop before it does more
        return ep.finish(EpisodeError.INTERNAL_ERROR, f"stopped: {e}")
    except Exception as e:  # a bug must still end the episode with its transcript saved
        ep.log.exception("episode failed unexpectedly")
        return ep.finish(EpisodeError.INTERNAL_ERROR, f"internal error: {e!r}")


def episode_options(defaults: EpisodeOptions, goal: GoalRequest, strategy: Strategy) -> EpisodeOptions:
    """The options of one episode: the goal's switches over the defaults, the strategy's decoding."""
    def pick(value: bool | None, default: bool) -> bool:
        return default if value is None else value

    return replace(
        defaults,
        object_feedback=pick(goal.object_feedback, defaults.object_feedback),
        success_feedback=pick(goal.success_feedback, defaults.success_feedback),
        human_feedback=pick(goal.human_feedback, defaults.human_feedback),
        scene_feedback=pick(goal.scene_feedback, defaults.scene_feedback),
        use_affordances=pick(goal.use_affordances, defaults.use_affordances),
        max_steps=goal.max_steps if goal.max_steps > 0 else defaults.max_steps,
        decoding=strategy.decoding,
    )


class EpisodeRunner:
    """Runs one episode at a time for the planner node (thread-safe)."""

    def __init__(
        self,
        settings: PlannerSettings,
        llm: LLMBackend,
        skills: SkillsPort,
        scene: ScenePort,
        success: SuccessPort,
        robot: RobotStatusPort | None = None,
        asker: HumanAsker | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        self.settings = settings
        self.llm = llm
        self.log = logger or logging.getLogger("planner")
        self.inbox = HumanInbox(asker)
        self.ports = Ports(skills, scene, success, self.inbox, robot)
        self.profile = load_profile(settings.prompt_dir, settings.prompt_profile)
        settings.transcript_dir.mkdir(parents=True, exist_ok=True)
        self._busy = threading.Lock()
        self._last: tuple[PromptProfile, Transcript] | None = None

    def prefill(self) -> int:
        """Evaluate the prompt profile's static preamble in the LLM's prompt cache (backends that can,
        e.g. llama.cpp with reuse_prefix), so the first step does not pay for it. Tokens evaluated."""
        if not isinstance(self.llm, PrefillBackend) or not self.profile.preamble:
            return 0
        t0 = time.perf_counter()
        n = self.llm.prefill(self.profile.preamble)
        self.log.info("prefilled the %s preamble: %d tokens in %.1f s", self.profile.name, n,
                      time.perf_counter() - t0)
        return n

    @property
    def busy(self) -> bool:
        """True while an episode (or a post-task answer) runs."""
        return self._busy.locked()

    def interrupted(self) -> list[StoredEpisode]:
        """Episodes in transcript_dir that were not finished (resumable)."""
        return find_interrupted(self.settings.transcript_dir, self.log)

    # -- one episode ---------------------------------------------------------------------------
    def execute(
        self,
        goal: GoalRequest,
        cancel_requested: Callable[[], bool] = lambda: False,
        on_start: Callable[[PreparedEpisode], None] | None = None,
        on_event: Callable[[Event], None] | None = None,
        on_step: Callable[[str, StepRecord], None] | None = None,
    ) -> EpisodeOutcome:
        """Prepare and run `goal` (waits for a running episode to end). `on_start` is called once the
        episode exists (before its first event), `on_event` for every new transcript event,
        `on_step` with (episode id, step) for every planned step; `cancel_requested` is polled."""
        with self._busy:
            try:
                prepared = self.prepare(goal)
            except ValueError as e:
                self.log.error("invalid goal: %s", e)
                return EpisodeOutcome(EpisodeResult(False, EpisodeError.INVALID_GOAL, str(e), 0))
            except OSError as e:  # the transcript file cannot be created (a full disk, ...)
                self.log.error("cannot start the episode: %s", e)
                return EpisodeOutcome(EpisodeResult(False, EpisodeError.INTERNAL_ERROR,
                                                    f"cannot start the episode: {e}", 0))
            if on_start is not None:
                on_start(prepared)
            if on_event is not None:
                prepared.transcript.add_listener(on_event)
            return self.run(prepared, cancel_requested, on_step)

    def prepare(self, goal: GoalRequest) -> PreparedEpisode:
        """Resolve `goal`: strategy, options, the episode to resume, the profile, the transcript
        (with its header). Raises ValueError for a goal that cannot run."""
        s = self.settings
        stored = self.find_resumable(goal.resume_episode) if goal.resume_episode else None
        # a resumed episode keeps its strategy (its transcript header) unless the goal names one
        strategy_name = goal.strategy or (str(stored.header.get("strategy", "")) if stored else "") or s.strategy
        strategy = strategies.get(strategy_name)
        options = episode_options(s.episode, goal, strategy)
        profile_name = goal.prompt_profile or (str(stored.header.get("prompt_profile", "")) if stored else "")
        profile = self.profile
        if profile_name and profile_name != profile.name:
            profile = load_profile(s.prompt_dir, profile_name)
        instruction = goal.instruction
        if "\x00" in instruction:  # a transcript line cannot hold it; say so instead of failing mid-episode
            raise ValueError("the instruction contains a NUL character")
        objects = tuple(dict.fromkeys(o.strip() for o in goal.objects if o.strip()))  # unique, in order
        tlog = logging.getLogger("planner.transcript")
        if stored is not None:
            transcript = Transcript.reopen(stored, logger=tlog)
            episode_id, path = transcript.episode_id, stored.path
            instruction = instruction or str(stored.header.get("instruction", ""))
            objects = objects or tuple(str(o) for o in stored.header.get("objects", []))
        else:
            episode_id = new_episode_id()
            path = s.transcript_dir / f"{episode_id}.jsonl"
            transcript = Transcript(episode_id, path, header={
                "instruction": goal.instruction, "strategy": strategy_name, "prompt_profile": profile.name,
                "options": options.__dict__, "llm": self.llm.name, "objects": list(objects),
            }, logger=tlog)
        return PreparedEpisode(episode_id, path, transcript, strategy, profile, instruction, options, objects,
                               stored is not None)

    def run(
        self,
        prepared: PreparedEpisode,
        cancel_requested: Callable[[], bool] = lambda: False,
        on_step: Callable[[str, StepRecord], None] | None = None,
    ) -> EpisodeOutcome:
        """Run a prepared episode with its strategy: the inbox is open for it and `cancel_requested`
        is watched meanwhile."""
        cancel = threading.Event()
        stop_watch = threading.Event()

        def watch_cancel() -> None:
            while not stop_watch.wait(CANCEL_POLL_S):
                if cancel_requested():
                    cancel.set()
                    return

        threading.Thread(target=watch_cancel, daemon=True).start()
        eid = prepared.episode_id
        ep = EpisodeContext(
            llm=self.llm, ports=self.ports, profile=prepared.profile, transcript=prepared.transcript,
            instruction=prepared.instruction, options=prepared.options, log=logging.getLogger("planner.monologue"),
            cancel=cancel, resume=prepared.resume,
            on_step=(lambda r: on_step(eid, r)) if on_step is not None else None,
            settings=self.settings.strategy_settings)
        self.inbox.open(eid)
        try:
            result = run_episode(prepared.strategy, ep)
        finally:
            self.inbox.close()
            stop_watch.set()
        self._last = (prepared.profile, prepared.transcript)
        self.log.info("episode %s: %s: %s", eid, result.error.name, result.reason)
        return EpisodeOutcome(result, eid, prepared.transcript, prepared.path)

    def find_resumable(self, which: str) -> StoredEpisode:
        """The interrupted episode `which` (an episode id, or "latest") in transcript_dir."""
        directory = self.settings.transcript_dir
        found = find_interrupted(directory, self.log)
        if which == "latest":
            if not found:
                raise ValueError(f"no interrupted episode in {directory}")
            return max(found, key=lambda ep: ep.path.stat().st_mtime)
        for ep in found:
            if which in (ep.header.get("episode_id"), ep.path.stem):
                return ep
        raise ValueError(f"no interrupted episode {which!r} in {directory} "
                         f"(interrupted: {[ep.path.stem for ep in found]})")

    # -- people --------------------------------------------------------------------------------
    def human_input(self, text: str, episode_id: str = "", question: bool = False) -> bool:
        """What a person said: a question between episodes is answered about the last one (IM Fig.
        5d); anything else goes to the running episode's inbox. False if it was ignored."""
        if question and not self.busy:
            return self.answer_post_task(text) is not None
        if not self.inbox.offer(text, episode_id):
            self.log.warning("no episode %s is running; ignored: %r", episode_id or "(running)", text)
            return False
        return True

    def answer_post_task(self, question: str) -> str | None:
        """IM Fig. 5d: after an episode, answer a question about the scene in text; nothing moves.
        None if there is no episode to answer about, one is running, or the LLM failed."""
        last = self._last
        if last is None:
            self.log.warning("no episode to answer about; ignored: %r", question)
            return None
        if not self._busy.acquire(blocking=False):
            return None
        try:
            profile, transcript = last
            answer = answer_question(self.llm, profile, transcript, question)
            self.log.info("post-task question %r: %r", question, answer)
            return answer
        except Exception as e:  # an LLM failure must not take the node down
            self.log.error("could not answer %r: %s", question, e)
            return None
        finally:
            self._busy.release()
