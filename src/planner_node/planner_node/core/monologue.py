"""The Inner Monologue loop with SayCan-style scoring of admissible skills (no rclpy).

Each step: build the prompt from the profile's preamble and the transcript, score every admissible
skill line plus the termination line with the LLM, multiply by affordances, take the argmax,
execute it, and append the feedback (Success) to the transcript. IM §3, SC Algorithm 1.
"""
from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from monologue_llm.base import LLMBackend, LLMError, normalize_scores
from .parsing import parse_action
from .ports import (
    HumanPort,
    PortUnavailable,
    RobotStatusPort,
    SceneItem,
    ScenePort,
    SkillOption,
    SkillsPort,
    SuccessPort,
)
from .prompts import PromptProfile
from monologue_domain.transcript import EventKind, Transcript

DONE_AFFORDANCE = 0.1  # SayCan's fixed affordance of the terminate skill (SC:L440)
# Interjections that end the episode at the next step boundary without asking the LLM (compared after
# lower-casing and dropping punctuation and courtesy words). Anything else goes to the LLM.
STOP_PHRASES = ("stop", "stop it", "halt", "abort", "that's enough", "you can stop", "停", "停止", "停下",
                "请停止", "请停下", "别动")
_COURTESY = frozenset({"please", "robot", "now", "thanks", "thank", "you", "ok", "okay", "right"})


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
    """Switches of one episode (IM Tables 1-3 columns) and the step cap k."""

    object_feedback: bool = True
    success_feedback: bool = True
    scene_feedback: bool = False  # IM Object + Scene: goal-state chain of thought and task progress
    human_feedback: bool = True
    use_affordances: bool = True
    max_steps: int = 15
    normalization: str = "sum"
    decoding: str = "score"  # "score": rank admissible lines (SayCan); "generate": the LLM writes the line (IM)
    max_reprompts: int = 2  # generate: re-prompts after output that does not parse or is not admissible
    generation_fallback: str = "score"  # generate: after the re-prompts, "score" the admissible lines or "fail"
    max_tokens: int = 48  # generate: tokens per line
    answer_timeout_s: float = 60.0  # s a person has to answer the robot's question (` and ask:`)
    stop_phrases: tuple[str, ...] = STOP_PHRASES  # interjections that end the episode (STOPPED_BY_HUMAN)
    fault_pause_s: float = 300.0  # s to wait for a faulted robot (protective stop, e-stop) before giving up

    def validate(self) -> None:
        if self.max_steps < 1:
            raise ValueError("max_steps must be >= 1")
        if self.decoding not in ("score", "generate"):
            raise ValueError(f"unknown decoding {self.decoding!r}")
        if self.generation_fallback not in ("score", "fail"):
            raise ValueError(f"unknown generation_fallback {self.generation_fallback!r}")
        if self.answer_timeout_s <= 0.0 or self.fault_pause_s <= 0.0:
            raise ValueError("answer_timeout_s and fault_pause_s must be > 0 s")
        if self.max_reprompts < 0 or self.max_tokens < 1:
            raise ValueError("max_reprompts must be >= 0 and max_tokens >= 1")
        if self.normalization not in ("sum", "mean", "softmax"):
            raise ValueError(f"unknown normalization {self.normalization!r}")


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


class InnerMonologue:
    """Runs one episode at a time. Collaborators are plain Python objects (ports), so the loop is
    tested without ROS."""

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
        cancel = cancel or threading.Event()
        instruction = instruction.strip()
        if not instruction:
            return self._finish(transcript, EpisodeError.INVALID_GOAL, "the instruction is empty", 0, [])
        try:
            options.validate()
            if options.success_feedback and not {"success_true", "success_false"} <= set(self.profile.formats):
                raise ValueError(f"prompt profile {self.profile.name} has no Success lines; "
                                 "switch Success feedback off for it")
        except ValueError as e:
            return self._finish(transcript, EpisodeError.INVALID_GOAL, str(e), 0, [])
        steps: list[StepRecord] = []
        executed = 0
        try:
            items = self.scene.describe()
            categories = _categories(items)
            every_step = self.profile.objects_every_step and options.object_feedback
            first_step = 1
            goals: list[SubGoal] = []
            if resume:
                first_step, goals = self._resume(transcript, options, categories)
            else:
                if options.object_feedback and not every_step:
                    self._object_feedback(items, transcript)
                transcript.append(EventKind.HUMAN_INSTRUCTION, self.profile.instruction(instruction),
                                  {"instruction": instruction})
            if options.scene_feedback and not resume:
                missing = [k for k in ("goal_state", "progress", "thought") if k not in self.profile.formats]
                if missing:
                    return self._finish(transcript, EpisodeError.INVALID_GOAL,
                                        f"prompt profile {self.profile.name} has no {missing} formats for "
                                        "Scene feedback (use im_sim_object_scene)", 0, [])
                goals = self._goal_state(transcript, categories)
            for step in range(first_step, options.max_steps + 1):
                if cancel.is_set():
                    return self._finish(transcript, EpisodeError.CANCELED, "cancelled", executed, steps)
                interjected = self._take_interjections(options, transcript)
                stop = next((t for t in interjected if is_stop_request(t, options.stop_phrases)), None)
                if stop is not None:
                    transcript.append(EventKind.ROBOT_THOUGHT, self.profile.done_line,
                                      {"done": True, "stop_request": stop})
                    return self._finish(transcript, EpisodeError.STOPPED_BY_HUMAN,
                                        f"a person asked to stop: {stop!r}", executed, steps)
                if every_step:
                    if step > first_step:
                        items = self.scene.describe()
                        categories = _categories(items)
                    self._object_feedback(items, transcript)
                if options.decoding == "generate":
                    maybe = self._generate_step(step, options, transcript, categories)
                    if maybe is None:
                        return self._finish(transcript, EpisodeError.PLANNING_FAILED,
                                            f"no admissible step after {options.max_reprompts + 1} generations",
                                            executed, steps)
                    record = maybe
                else:
                    record = self._plan_step(step, options, transcript, categories)
                steps.append(record)
                if self.on_step is not None:
                    self.on_step(record)
                chosen = record.chosen
                if chosen.option is None:
                    transcript.append(EventKind.ROBOT_THOUGHT, chosen.text, {"done": True})
                    if "stop_marker" in self.profile.formats:  # IM Listing 2: `robot.stop()` then `STOP`
                        transcript.append(EventKind.ROBOT_THOUGHT, self.profile.formats["stop_marker"],
                                          {"marker": True})
                    if interjected:
                        return self._finish(transcript, EpisodeError.STOPPED_BY_HUMAN,
                                            f"the planner stopped after a person said {interjected[-1]!r}",
                                            executed, steps)
                    return self._finish(transcript, EpisodeError.NONE, "the planner chose done", executed, steps)
                opt = chosen.option
                question = self._ask_or_continue(step, options, transcript, chosen, record.suffix)
                transcript.append(
                    EventKind.ROBOT_ACTION, chosen.text,
                    {"skill": opt.skill, "args": list(opt.args), "step": step,
                     "llm_score": chosen.llm_score, "affordance": chosen.affordance,
                     **({"suffix": "ask" if question else "continue"} if self._asks(options) else {})},
                )
                if question:
                    transcript.append(EventKind.ROBOT_QUESTION, question, {"question": question, "step": step})
                fault = self._pause_while_faulted(options, transcript, cancel)
                if cancel.is_set():
                    return self._finish(transcript, EpisodeError.CANCELED, "cancelled while paused", executed, steps)
                if fault is not None:
                    return self._finish(transcript, EpisodeError.ROBOT_FAULT,
                                        f"the robot stayed faulted for {options.fault_pause_s:.0f} s: {fault}",
                                        executed, steps)
                result = self.skills.execute(opt.skill, opt.args, cancel)
                executed += 1
                if result.error_name == "CANCELED" or cancel.is_set():
                    return self._finish(transcript, EpisodeError.CANCELED, "cancelled during a skill",
                                        executed, steps)
                if not result.ok:
                    detail = result.failed_precondition or result.message
                    transcript.append(EventKind.ERROR, f"Skill error {result.error_name}: {detail}",
                                      {"error_code": result.error_code, "error_name": result.error_name,
                                       "message": result.message,
                                       "failed_precondition": result.failed_precondition})
                if options.success_feedback:
                    if result.ok:
                        report = self.success.detect(opt.skill, opt.args, result.start_s, result.end_s)
                        ok, conf, why = report.success, report.confidence, report.explanation
                    else:
                        ok, conf, why = False, 1.0, f"the skill reported {result.error_name}"
                    transcript.append(EventKind.SUCCESS, self.profile.success(ok),
                                      {"success": ok, "confidence": conf, "explanation": why})
                if question:
                    self._await_answer(question, options, transcript, cancel)
                if options.scene_feedback:
                    self._progress(goals, transcript)
                    if self._thought(transcript):
                        return self._finish(transcript, EpisodeError.NONE, "the planner thought it was done",
                                            executed, steps)
            return self._finish(transcript, EpisodeError.MAX_STEPS_REACHED,
                                f"reached the step cap of {options.max_steps}", executed, steps)
        except LLMError as e:
            self.log.error("LLM failed: %s", e)
            return self._finish(transcript, EpisodeError.LLM_FAILED, f"LLM failed: {e}", executed, steps)
        except PortUnavailable as e:
            self.log.error("graph component unavailable: %s", e)
            return self._finish(transcript, EpisodeError.SKILL_SERVER_UNAVAILABLE, str(e), executed, steps)
        except Exception as e:  # a bug must still end the episode with its transcript saved
            self.log.exception("episode failed unexpectedly")
            return self._finish(transcript, EpisodeError.INTERNAL_ERROR, f"internal error: {e!r}", executed, steps)

    def _resume(
        self, transcript: Transcript, options: EpisodeOptions, categories: Mapping[str, str]
    ) -> tuple[int, list[SubGoal]]:
        """Pick up an interrupted episode: count its steps, settle an action whose outcome was not
        recorded (the success detector looks at the world now), and recover the goal state."""
        events = transcript.events
        actions = [e for e in events if e.kind == EventKind.ROBOT_ACTION]
        transcript.append(EventKind.ERROR, f"Resumed after an interruption, {len(actions)} steps in",
                          {"resumed": True, "steps_before": len(actions)})
        last = actions[-1] if actions else None
        if last is not None and not any(e.kind == EventKind.SUCCESS and e.index > last.index for e in events):
            skill, args = str(last.data.get("skill", "")), tuple(str(a) for a in last.data.get("args", []))
            if options.success_feedback and skill:
                report = self.success.detect(skill, args, last.stamp, self.clock())
                transcript.append(EventKind.SUCCESS, self.profile.success(report.success),
                                  {"success": report.success, "confidence": report.confidence,
                                   "explanation": f"checked after the interruption: {report.explanation}"})
        goals: list[SubGoal] = []
        for e in events:
            if e.kind == EventKind.ROBOT_THOUGHT and "goal_state" in e.data:
                goals = parse_goal_state(e.text, categories)
        return len(actions) + 1, goals

    def answer(self, question: str, transcript: Transcript, max_tokens: int = 64) -> str:
        """Answer a question about the scene in text, from the episode so far (IM Fig. 5d).

        Appends `Human: <question>` and `Robot thought: <answer>`; never runs a skill.
        """
        question = " ".join(question.split())
        if not question:
            raise ValueError("the question is empty")
        post = transcript.ended
        transcript.append(EventKind.HUMAN_INTERJECTION, self.profile.human(question),
                          {"question": question}, post_task=post)
        fmt = self.profile.formats.get("thought", "Robot thought: {thought}")
        prefix = fmt.split("{thought}", 1)[0]
        prompt = self.profile.prompt(transcript.prompt_events(), next_step=False) + prefix
        gen = self.llm.generate(prompt, stop=["\n"], max_tokens=max_tokens)
        text = _one_line(gen.text) or "I don't know."
        transcript.append(EventKind.ROBOT_THOUGHT, prefix + text, {"answer": text}, post_task=post)
        return text

    def _goal_state(self, transcript: Transcript, categories: Mapping[str, str]) -> list[SubGoal]:
        """IM A.1: the LLM first lists the desired sub-goals, `Robot thought: Goal state is [...]`."""
        prefix = self.profile.formats["goal_state"].split("{goals}", 1)[0]
        prompt = self.profile.prompt(transcript.prompt_events(), next_step=False) + prefix
        gen = self.llm.generate(prompt, stop=["\n"], max_tokens=200)
        line = _one_line(prefix + gen.text)
        goals = parse_goal_state(line, categories)
        checkable = [g for g in goals if g.obj]
        transcript.append(EventKind.ROBOT_THOUGHT, line, {
            "goal_state": [g.text for g in goals],
            "parsed": [[g.obj, g.target] for g in checkable],
        })
        if not checkable:
            transcript.append(EventKind.ERROR, f"No checkable sub-goal in the goal state {line[:200]!r}",
                              {"output": line[:500]})
        return goals

    def _progress(self, goals: Sequence[SubGoal], transcript: Transcript) -> None:
        """IM A.1: re-check every sub-goal after each action; lost ones drop out again."""
        done: list[str] = []
        for g in goals:
            if g.obj and self.success.detect("pick_place", (g.obj, g.target), 0.0, 0.0).success:
                done.append(g.text)
        sep = self.profile.formats.get("list_separator", ", ")
        completed = sep.join(f'"{t}"' for t in done)
        transcript.append(EventKind.SCENE_PROGRESS, self.profile.formats["progress"].format(completed=completed),
                          {"completed": done})

    def _thought(self, transcript: Transcript) -> bool:
        """Chain of thought after the Scene line; True if the thought ends the episode."""
        prefix = self.profile.formats["thought"].split("{thought}", 1)[0]
        prompt = self.profile.prompt(transcript.prompt_events(), next_step=False) + prefix
        gen = self.llm.generate(prompt, stop=["\n"], max_tokens=64)
        line = _one_line(prefix + gen.text)
        finished = parse_action(line, [], []).is_done
        if finished:
            line = self.profile.done_line
        transcript.append(EventKind.ROBOT_THOUGHT, line, {"done": finished})
        return finished

    def _take_interjections(self, options: EpisodeOptions, transcript: Transcript) -> list[str]:
        """Append what people said since the last step (a step boundary), if Human feedback is on."""
        taken: list[str] = []
        if self.human is None:
            return taken
        for text in self.human.poll():
            if not text.strip():
                continue
            if options.human_feedback:
                text = " ".join(text.split())
                transcript.append(EventKind.HUMAN_INTERJECTION, self.profile.human(text), {"text": text})
                taken.append(text)
            else:
                self.log.warning("Human feedback is off; ignoring interjection %r", text)
        return taken

    def _pause_while_faulted(
        self, options: EpisodeOptions, transcript: Transcript, cancel: threading.Event
    ) -> str | None:
        """Before a skill: if the robot reports a fault, pause (logged) until it clears or the pause
        times out. Returns the fault that remains, or None."""
        if self.robot is None:
            return None
        fault = self.robot.fault()
        if fault is None:
            return None
        self.log.warning("robot fault, pausing up to %.0f s: %s", options.fault_pause_s, fault)
        transcript.append(EventKind.ERROR, f"Paused: {fault}", {"fault": fault, "pause_s": options.fault_pause_s})
        remaining = self.robot.wait_ok(options.fault_pause_s, cancel)
        if remaining is None and not cancel.is_set():
            transcript.append(EventKind.ERROR, "Resumed: the robot can move again", {"fault_cleared": fault})
        return remaining

    def _object_feedback(self, items: Sequence[SceneItem], transcript: Transcript) -> None:
        """Object feedback: the visible objects, and the occluded ones where the profile has a line."""
        names = [i.name for i in items if i.visible and i.category != "location"]
        transcript.append(EventKind.SCENE_OBJECTS, self.profile.objects(names), {"objects": names})
        hidden = [i.name for i in items if not i.visible and i.category != "location"]
        line = self.profile.occluded(hidden)
        if line is not None:
            transcript.append(EventKind.SCENE_OBJECTS, line, {"occluded": hidden})

    def _asks(self, options: EpisodeOptions) -> bool:
        return self.profile.can_ask and options.human_feedback and self.human is not None

    def _ask_or_continue(
        self, step: int, options: EpisodeOptions, transcript: Transcript, chosen: ScoredCandidate, suffix: str
    ) -> str:
        """IM A.3: after each step the LLM chooses ` and continue` or ` and ask: <question>`.

        Returns the question, or "" to continue. In generate mode the LLM already wrote the suffix
        (`suffix`); in score mode both suffixes are scored after the chosen step, and the question
        is generated. A question that is empty or not text is logged and the robot continues.
        """
        if not self._asks(options):
            return ""
        f = self.profile.formats
        ask_head = f["ask_suffix"].split("{question}", 1)[0].rstrip(" ")
        prompt = self.profile.prompt(transcript.prompt_events()) + self.profile.lead + chosen.text
        if suffix == "":
            result = self.llm.score(prompt, [f["continue_suffix"], ask_head])
            asks = result.scores[1].logprob > result.scores[0].logprob
            self.log.info("step %d: continue %.2f vs ask %.2f -> %s", step, result.scores[0].logprob,
                          result.scores[1].logprob, "ask" if asks else "continue")
            if not asks:
                return ""
            gen = self.llm.generate(prompt + ask_head, stop=["\n", "Human:"], max_tokens=40)
            suffix = "ask: " + gen.text
        if not suffix.startswith("ask:"):
            return ""
        question = _one_line(suffix[len("ask:"):], 200).strip()
        if not question or not any(ch.isalpha() for ch in question):
            transcript.append(EventKind.ERROR, f"Rejected question {question!r}: no text; continuing",
                              {"step": step, "output": question})
            return ""
        return question

    def _await_answer(
        self, question: str, options: EpisodeOptions, transcript: Transcript, cancel: threading.Event
    ) -> None:
        """Send the question to a person and append `Human: <answer>`; a timeout is logged only."""
        assert self.human is not None
        answer = self.human.ask(question, options.answer_timeout_s, cancel)
        if answer is None or not answer.strip():
            transcript.append(EventKind.ERROR, f"No answer to {question!r} within {options.answer_timeout_s:.0f} s",
                              {"question": question, "timeout_s": options.answer_timeout_s})
            return
        answer = " ".join(answer.split())
        transcript.append(EventKind.HUMAN_ANSWER, f"Human: {answer}", {"text": answer, "question": question})

    def _generate_step(
        self, step: int, options: EpisodeOptions, transcript: Transcript, categories: Mapping[str, str]
    ) -> StepRecord | None:
        """IM's generative planning: the LLM writes the next line, the parser maps it to an admissible
        skill. Output that does not map is logged (ERROR event, not in the prompt) and never executed.

        Greedy decoding repeats itself on an identical prompt, so re-prompts escalate: the first
        attempt writes a free line, later ones continue a line that already starts with the action
        prefix. After them, `generation_fallback` scores the admissible lines or gives up (None).
        """
        t0 = time.monotonic()
        options_by_call = {(o.skill, o.args): o for o in self.skills.affordances()
                           if o.affordance > 0.0 or not options.use_affordances}
        templates = {k: v.template for k, v in self.profile.skills.items()}
        prompt = self.profile.prompt(transcript.prompt_events())
        action_prefix = self.profile.lead + self.profile.formats["action"].split("{action}", 1)[0]
        llm_s = 0.0
        for attempt in range(options.max_reprompts + 1):
            prefix = "" if attempt == 0 else action_prefix
            t_llm = time.monotonic()
            gen = self.llm.generate(prompt + prefix, stop=["\n"], max_tokens=options.max_tokens)
            llm_s += time.monotonic() - t_llm
            line = (prefix + gen.text).strip()
            line, suffix = self._split_suffix(line)
            outcome = parse_action(line, list(options_by_call), list(categories), templates)
            self.log.info("step %d attempt %d: LLM wrote %r -> %s %s", step, attempt + 1, line,
                          outcome.kind.name, outcome.reason)
            if outcome.is_done:
                chosen = ScoredCandidate(self.profile.done_line, None, 0.0, 1.0, 1.0, 1.0)
            elif outcome.is_action and outcome.action is not None:
                opt = options_by_call[(outcome.action.skill, outcome.action.args)]
                text = self.profile.action(opt.skill, opt.args, categories)
                chosen = ScoredCandidate(text, opt, 0.0, 1.0, opt.affordance, opt.affordance)
            else:
                transcript.append(EventKind.ERROR, f"Rejected LLM output {line[:200]!r}: {outcome.reason}",
                                  {"step": step, "attempt": attempt + 1, "output": line[:500],
                                   "reason": outcome.reason})
                continue
            return StepRecord(step, (chosen,), chosen, "generate", gen.prompt_tokens, gen.new_tokens_processed,
                              llm_s, time.monotonic() - t0, suffix or "continue")
        if options.generation_fallback == "score":
            self.log.warning("step %d: no admissible generation; scoring the admissible lines instead", step)
            return self._plan_step(step, options, transcript, categories)
        return None

    def _split_suffix(self, line: str) -> tuple[str, str]:
        """`find a coke and ask: Is it cold?` -> (`find a coke`, `ask: Is it cold?`)."""
        f = self.profile.formats
        if not self.profile.can_ask:
            return line, ""
        ask_head = f["ask_suffix"].split("{question}", 1)[0].strip()  # "and ask:"
        cont = f["continue_suffix"].strip()
        low = line.lower()
        i = low.find(" " + ask_head.lower())
        if i >= 0:
            return line[:i].strip(), "ask: " + line[i + 1 + len(ask_head):].strip()
        if low.endswith(" " + cont.lower()):
            return line[: len(line) - len(cont)].strip(), "continue"
        return line, ""

    def _plan_step(
        self, step: int, options: EpisodeOptions, transcript: Transcript, categories: Mapping[str, str]
    ) -> StepRecord:
        t0 = time.monotonic()
        admissible = [o for o in self.skills.affordances() if o.affordance > 0.0 or not options.use_affordances]
        texts: list[str] = []
        opts: list[SkillOption | None] = []
        for o in admissible:
            try:
                texts.append(self.profile.action(o.skill, o.args, categories))
            except KeyError:
                self.log.warning("no prompt template for skill %s; not offered to the LLM", o.skill)
                continue
            opts.append(o)
        if not options.scene_feedback:  # with Scene feedback, "Robot thought: None." ends the episode
            texts.append(self.profile.done_line)
            opts.append(None)
        prompt = self.profile.prompt(transcript.prompt_events())
        t_llm = time.monotonic()
        result = self.llm.score(prompt, [self.profile.lead + t for t in texts])
        llm_s = time.monotonic() - t_llm
        probs = normalize_scores(result.scores, options.normalization)
        cands: list[ScoredCandidate] = []
        for text, opt, sc, p in zip(texts, opts, result.scores, probs):
            if opt is None:
                aff = DONE_AFFORDANCE if options.use_affordances else 1.0
            else:
                aff = opt.affordance if options.use_affordances else 1.0
            cands.append(ScoredCandidate(text, opt, sc.logprob, p, aff, p * aff))
        chosen = max(cands, key=lambda c: c.combined)
        step_s = time.monotonic() - t0
        self.log.info(
            "step %d: chose %r (llm %.3f x aff %.2f) from %d candidates; prompt %d tokens, %d new; "
            "LLM %.2f s, step %.2f s",
            step, chosen.text, chosen.llm_score, chosen.affordance, len(cands),
            result.prompt_tokens, result.new_tokens_processed, llm_s, step_s,
        )
        for c in sorted(cands, key=lambda c: -c.combined)[:5]:
            self.log.debug("  %.4f = %.4f x %.2f  %s", c.combined, c.llm_score, c.affordance, c.text)
        return StepRecord(step, tuple(cands), chosen, options.normalization, result.prompt_tokens,
                          result.new_tokens_processed, llm_s, step_s)

    def _finish(
        self, transcript: Transcript, error: EpisodeError, reason: str, executed: int,
        steps: Sequence[StepRecord],
    ) -> EpisodeResult:
        success = error == EpisodeError.NONE
        if error not in (EpisodeError.NONE,):
            transcript.append(EventKind.ERROR, f"Episode ended: {reason}", {"error": error.name})
        transcript.append(EventKind.EPISODE_END, f"Episode {'succeeded' if success else 'failed'}: {reason}",
                          {"success": success, "error": error.name, "steps_taken": executed})
        transcript.end({"success": success, "error": error.name, "reason": reason, "steps_taken": executed})
        return EpisodeResult(success, error, reason, executed, tuple(steps))


@dataclass(frozen=True)
class SubGoal:
    """One goal-state item as the LLM wrote it, and what it means if it could be resolved."""

    text: str
    obj: str = ""  # "" if the item names no known object and target
    target: str = ""


_GOAL_SPLIT_RE = re.compile(r'"\s*,\s*"')
_GOAL_RE = re.compile(r"^(?:the\s+)?(.+?)\s+is\s+(?:on\s+top\s+of|on|in|inside|at)\s+(?:the\s+)?(.+?)[.\s]*$",
                      re.IGNORECASE)


def parse_goal_state(line: str, categories: Mapping[str, str]) -> list[SubGoal]:
    """Quoted items of `Goal state is ["X is on the Y.", ...]`, resolved against known names."""
    names = {n.lower(): n for n in categories}
    out: list[SubGoal] = []
    start, end = line.find("["), line.rfind("]")
    if start < 0:
        return out
    body = line[start + 1:end if end > start else len(line)]
    items = [i.strip().strip('"[]').strip() for i in _GOAL_SPLIT_RE.split(body)]
    for item in [i for i in items if i][:16]:  # tolerant of a missing quote after "[" (small models drop it)
        m = _GOAL_RE.match(item)
        obj = names.get(m.group(1).lower(), "") if m else ""
        target = names.get(m.group(2).lower(), "") if m else ""
        if obj and target and obj != target:
            out.append(SubGoal(item, obj, target))
        else:
            out.append(SubGoal(item))
    return out


def is_stop_request(text: str, phrases: Sequence[str] = STOP_PHRASES) -> bool:
    """True if `text` is one of `phrases`, ignoring case, punctuation and courtesy words."""
    def norm(t: str) -> str:
        words = re.sub(r"[^\w\s']", " ", t.lower()).split()
        return " ".join(w for w in words if w not in _COURTESY)

    said = norm(text)
    return bool(said) and said in {norm(p) for p in phrases}


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.replace("\x00", "").split())
    return line[:limit]


def _categories(items: Sequence[SceneItem]) -> dict[str, str]:
    return {i.name: i.category for i in items}
