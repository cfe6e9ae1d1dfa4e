"""MultiTalk's episode loop (../shared/papers/multitalk_supplement.txt; requirements §3.1; no rclpy).

1. Perception: the scene as boxes `{name: ((l, w, h), (cx, cy, cz))}` (base frame, m) and relations;
   the workspace bounds come from the robot's safety configuration (the scene port's workspace,
   i.e. the skills node's safety.* parameters; the kinematic tabletop's own without one).
2. The Planner (its own persistent conversation: System, Actions, Environment, Output Format) gets
   the Query and answers exactly one of: a plan, questions, or `Perception Rerun Required`.
   An answer in none of these formats is an ERROR event and a re-prompt (at most max_reprompts).
   - questions go to a person (the human port: the ask_human action); the answers come back in the
     Human Feedback template; the Q/A is kept for the Analyzer (`1: Q / 2: A`, or 'None');
   - a perception rerun asks perception for a fresh scene (Perception Feedback template);
   - a plan goes to the Analyzer (its own conversation; first and subsequent query templates):
     `Feasible Plan!` accepts it, per-step violations go back (Analyzer Feedback template); a plan
     resubmitted unchanged after comments is accepted without asking again (M l.231-233). Ablation
     `no_analyzer` (Planner + Simulator, M Fig. 4) skips the Analyzer.
3. An accepted plan: the person's acceptance (accept_gate `ask`), then the simulator stage
   (sim.py); an error goes back in the Simulator Feedback template; only an error-free
   plan runs on the robot, as pick_place skills through the skills port.
The loop ends after max_rounds Planner answers (PLANNING_FAILED). Every message and stage is a
typed transcript event whose data holds `multitalk: <stage>`.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from monologue_domain.transcript import EventKind
from monologue_llm.base import LLMBackend, generate_constrained

from ...episode import EpisodeError, EpisodeResult, PlanningFailed, ScoredCandidate, StepRecord, one_line
from ...feedback import report_skill, run_skill
from ...human import heard, is_stop_request
from ...ports import SkillOption, Workspace, WorkspaceSource
from ...role_llm import role_backend
from ...strategy import EpisodeContext
from .grammar import analyzer_grammar, planner_grammar
from .parsing import (
    PERCEPTION,
    QUESTIONS,
    AnalyzerVerdict,
    OutputRejected,
    PlannerOutput,
    parse_analyzer_output,
    parse_planner_output,
)
from .prompts import (
    ANALYZER_STATIC,
    ANALYZER_TURNS,
    PLANNER_STATIC,
    PLANNER_TURNS,
    Conversation,
    InvalidMultitalkEpisode,
    PromptFile,
    fill,
    load_prompt_file,
)
from .scene import (
    LOCATION,
    Box,
    fmt,
    perceived_boxes,
    relations,
    render_bounds,
    serialise_objects,
    serialise_relations,
    table_workspace,
)
from .scored import scored_plan, target_point
from .settings import MultitalkSettings
from .sim import SimResult, SkillCall, simulate

STAGE = "multitalk"  # the key of every event's data naming its stage
APPROVING_ANSWERS = frozenset({"y", "yes", "ok", "okay", "approve", "approved", "go", "go ahead"})  # as the arm's gate
NO_ANSWER = "(no answer)"
T = TypeVar("T")


def is_approval(answer: str) -> bool:
    """A person's free-text answer approves (yes / ok / go ...), as the skills node's approval gate reads it."""
    return answer.strip().strip(".!").lower() in APPROVING_ANSWERS


@dataclass
class _Run:
    ep: EpisodeContext
    s: MultitalkSettings
    planner_file: PromptFile
    analyzer_file: PromptFile
    task: str
    workspace: Workspace
    boxes: list[Box] = field(default_factory=list)
    planner: Conversation | None = None
    analyzer: Conversation | None = None
    qa: list[tuple[str, str]] = field(default_factory=list)  # (question, answer)
    llm_s: float = 0.0
    prompt_tokens: int = 0
    analyzer_llm: LLMBackend | None = None  # the Analyzer's own backend (None: the planner's, ep.llm)
    plan_lines: tuple[str, ...] = ()  # the last scored plan's lines (without numbers)
    rejected_plans: list[tuple[str, ...]] = field(default_factory=list)  # scored plans rejected so far
    counts: dict[str, int] = field(default_factory=lambda: {
        "planner_rounds": 0, "analyzer_rounds": 0, "analyzer_rejections": 0, "question_rounds": 0,
        "perception_reruns": 0, "simulator_rejections": 0, "plans_accepted": 0, "reprompts": 0})

    @property
    def steps(self) -> list[StepRecord]:
        return self.ep.state.steps

    @property
    def executed(self) -> int:
        return self.ep.state.executed

    def values(self) -> dict[str, str]:
        return {"robot": self.s.robot_name, "bounds": render_bounds(self.workspace, self.s.digits)}

    def objects(self) -> str:
        return serialise_objects(self.boxes, self.s.digits)

    def relations(self) -> str:
        return serialise_relations(relations(self.boxes, self.s.near_distance))

    def qa_text(self) -> str:
        if not self.qa:
            return "'None'"
        lines: list[str] = []
        for q, a in self.qa:
            lines += [f"{len(lines) + 1}: {q}", f"{len(lines) + 2}: {a}"]
        return "\n".join(lines)

    def event(self, kind: EventKind, text: str, stage: str, /, **data: object) -> None:
        self.ep.transcript.append(kind, text, {STAGE: stage, **data})


def _perceive(run: _Run, cause: str) -> None:
    """Ask perception for the scene (a fresh one) and record it."""
    items = run.ep.ports.scene.describe()
    run.boxes, unplaced = perceived_boxes(items, run.s.include_locations)
    if unplaced:
        run.ep.log.warning("perception gave no position for %s; left out of the environment", unplaced)
    rels = relations(run.boxes, run.s.near_distance)
    run.event(EventKind.SCENE_OBJECTS, f"Environment: {run.objects()}", "perception", cause=cause,
              objects={b.name: {"category": b.category, "size": list(b.size), "center": list(b.center)}
                       for b in run.boxes},
              relations=[[a, b, r] for a, b, r in rels], unplaced=unplaced,
              workspace={"min": list(run.workspace.minimum), "max": list(run.workspace.maximum),
                         "min_height": run.workspace.min_height})


def _workspace(ep: EpisodeContext) -> tuple[Workspace, str]:
    scene = ep.ports.scene
    if isinstance(scene, WorkspaceSource):
        ws = scene.workspace()
        if ws is not None:
            return ws, "the robot's safety workspace"
    return table_workspace(), "the tabletop's workspace (the robot has no safety workspace)"


def _ask(run: _Run, conv: Conversation, message: str, max_tokens: int, role: str,
         parse: Callable[[str], T]) -> tuple[str, T]:
    """Ask `conv` with `message`; the raw answer and what `parse` made of it. An answer that does not
    parse is an ERROR event and a re-prompt with the reason; PlanningFailed after max_reprompts."""
    ep = run.ep
    notes: list[str] = []
    for attempt in range(run.s.max_reprompts + 1):
        if ep.cancel.is_set():
            raise _Canceled()
        t0 = time.monotonic()
        llm = run.analyzer_llm if role == "analyzer" and run.analyzer_llm is not None else ep.llm
        if role == "planner" and run.s.planner_decoding == "scored":
            raw = _scored_answer(run, llm, conv.prompt(message, tuple(notes)))
            run.llm_s += time.monotonic() - t0
            parsed = parse(raw)  # a scored answer is built in the plan format: it always parses
            conv.commit(message, raw)
            return raw, parsed
        grammar = _grammar(run, role)
        gen = generate_constrained(llm, conv.prompt(message, tuple(notes)), stop=conv.stop, max_tokens=max_tokens,
                                   grammar=grammar, log=ep.log)
        run.llm_s += time.monotonic() - t0
        run.prompt_tokens = gen.prompt_tokens
        text = gen.text
        if grammar and gen.finish_reason == "length" and "\n" in text.strip():
            text = text.rstrip().rsplit("\n", 1)[0]  # constrained: drop the line the token limit cut
        raw = text.replace("\x00", "").strip()  # NULs cannot go into a transcript
        try:
            parsed = parse(raw)
        except OutputRejected as e:
            reason = str(e)
            run.counts["reprompts"] += 1
            run.event(EventKind.ERROR, f"Rejected {role} output: {reason}", "rejected", role=role,
                      output=raw[:2000], reason=reason, attempt=attempt)
            notes.append(f"Note: your previous answer could not be read ({one_line(reason, 200)}). "
                         "Answer again in the output format defined previously.")
            continue
        conv.commit(message, raw)
        return raw, parsed
    raise PlanningFailed(f"no readable {role} answer after {run.s.max_reprompts + 1} attempts")


def _scored_answer(run: _Run, llm: LLMBackend, prompt: str) -> str:
    """The Planner's plan chosen line by line by scoring (scored.py); every scored line goes
    to the transcript, and a plan rejected earlier in the episode is not written again."""
    graspable = [b for b in run.boxes if b.category not in (LOCATION, "bowl")]
    baseline = prompt.replace(run.task, "N/A") if run.s.scored_calibration and run.task in prompt else None
    text, trace = scored_plan(llm, prompt, run.boxes, run.s.digits, max(len(graspable), 1),
                              run.rejected_plans, run.ep.log, baseline)
    run.plan_lines = tuple(line for step in trace for line in (c.line for c in step if c.chosen))
    run.event(EventKind.ROBOT_THOUGHT, f"Planner lines scored: {len(trace)} steps", "planner_scores",
              steps=[[{"line": c.line, "logprob": round(c.logprob, 4), "chosen": c.chosen} for c in step]
                     for step in trace])
    return text


def _grammar(run: _Run, role: str) -> str | None:
    """The GBNF grammar of `role`'s answer when `multitalk.constrained` (None otherwise); the Planner's
    coordinates are the scene's points (`grammar_coordinates: scene`, `planner_points`); `grammar_plan:
    pairs`: grasp / move pairs."""
    if not run.s.constrained:
        return None
    if role == "analyzer":
        return analyzer_grammar()
    pairs = run.s.grammar_plan == "pairs"
    if run.s.grammar_coordinates != "scene" or not run.boxes:
        return planner_grammar(pairs=pairs)
    targets, graspable = planner_points(run.boxes, run.s.digits)
    return planner_grammar(targets, graspable, pairs)


def planner_points(boxes: Sequence[Box], digits: int) -> tuple[list[str], list[str]]:
    """The coordinates a constrained Planner may write, as the prompt renders them (`x, y, z`, m): for move
    every box's centre, every object's top (to stack on it) and, for a pile the plan itself builds, the
    points k object heights above where a move to a box (or a location) puts an object (k = 1 .. the
    graspable objects - 1: stacking on a block moved earlier in the plan); for grasp the centres of the
    objects that are neither bowls nor locations."""
    def point(c: tuple[float, float, float]) -> str:
        return ", ".join(fmt(v, digits) for v in c)

    objects = [b for b in boxes if b.category not in (LOCATION, "bowl")]
    heights = sorted({b.size[2] for b in objects if b.size[2] > 0})
    targets = [point(b.center) for b in boxes] + [point(target_point(b)) for b in boxes]
    for b in boxes:
        x, y, z = target_point(b)
        targets += [point((x, y, z + k * h)) for h in heights for k in range(1, len(objects))]
    return list(dict.fromkeys(targets)), [point(b.center) for b in objects]


class _Canceled(Exception):
    pass


def _ask_person(run: _Run, question: str) -> str | None:
    human = run.ep.ports.human
    if human is None or not run.ep.options.human_feedback:
        return None
    answer = human.ask(question, run.ep.options.answer_timeout_s, run.ep.cancel)
    answer = answer.replace("\x00", "") if answer is not None else None  # NULs cannot go into a transcript
    return " ".join(answer.split()) if answer is not None and answer.strip() else None


def _questions(run: _Run, out: PlannerOutput) -> str:
    """Put the Planner's questions to the person; the Human Feedback message."""
    answers: list[str] = []
    for q in out.questions:
        run.event(EventKind.ROBOT_QUESTION, f"Robot question: {q}", "question", question=q)
        a = _ask_person(run, q)
        if a is None:
            run.event(EventKind.ERROR, f"No answer to {q!r}", "no_answer", question=q,
                      timeout_s=run.ep.options.answer_timeout_s)
        else:
            run.event(EventKind.HUMAN_ANSWER, f"Human: {a}", "answer", question=q, text=a)
        answers.append(a or NO_ANSWER)
        run.qa.append((q, a or NO_ANSWER))
    text = "\n".join(f"{i}: {a}" for i, a in enumerate(answers, 1))
    return fill(run.planner_file.block("human_feedback"), {"answers": text})


def _analyze(run: _Run, plan: PlannerOutput) -> AnalyzerVerdict:
    assert run.analyzer is not None
    first = run.counts["analyzer_rounds"] == 0
    if first:
        message = fill(run.analyzer_file.block("query_first"), {
            "task": run.task, "plan": plan.text, "question_and_answers": run.qa_text(),
            "objects": run.objects(), "semantic_relations": run.relations()})
    else:
        message = fill(run.analyzer_file.block("query_subsequent"),
                       {"plan": plan.text, "question_and_answers": run.qa_text()})
    raw, verdict = _ask(run, run.analyzer, message, run.s.max_tokens_analyzer, "analyzer", parse_analyzer_output)
    run.counts["analyzer_rounds"] += 1
    text = "Analyzer: Feasible Plan!" if verdict.feasible else "Analyzer:\n" + verdict.comments
    run.event(EventKind.ROBOT_THOUGHT, text, "analyzer", feasible=verdict.feasible, output=raw,
              findings=[[k, v] for k, v in verdict.findings], query="first" if first else "subsequent",
              message=message)
    if not verdict.feasible:
        run.counts["analyzer_rejections"] += 1
    return verdict


def _gate(run: _Run, plan: PlannerOutput) -> tuple[bool, str | None]:
    """The person's acceptance (accept_gate ask): (accepted, their answer)."""
    if run.s.accept_gate == "off":
        return True, None
    question = f"Approve this plan? (yes/no)\n{plan.text}"
    run.event(EventKind.ROBOT_QUESTION, f"Robot question: {question}", "acceptance", question=question)
    answer = _ask_person(run, question)
    if answer is None:
        run.event(EventKind.ERROR, "No answer to the plan's acceptance: not accepted", "no_answer",
                  question=question, timeout_s=run.ep.options.answer_timeout_s)
        return False, None
    ok = is_approval(answer)
    run.event(EventKind.HUMAN_ANSWER, f"Human: {answer}", "acceptance_answer", text=answer, accepted=ok)
    return ok, answer


def _simulate(run: _Run, plan: PlannerOutput) -> SimResult:
    sim = simulate(plan.steps, run.boxes, run.workspace, run.s.match_tolerance)
    if sim.ok:
        text = "Simulator: no error; plan approved for the robot"
    else:
        run.counts["simulator_rejections"] += 1
        text = f"Simulator: {sim.error}"
    run.event(EventKind.ROBOT_THOUGHT, text, "simulator", ok=sim.ok, error=sim.error, log=list(sim.log),
              calls=[[c.skill, *c.args] for c in sim.calls])
    return sim


def _execute(run: _Run, sim: SimResult) -> EpisodeResult:
    """Run the approved plan's skills on the robot; a failed skill ends the episode."""
    ep = run.ep
    categories = {b.name: b.category for b in run.boxes}
    calls = list(sim.calls)
    if sim.homed and run.s.home_skill:
        calls.append(SkillCall(run.s.home_skill, (), ()))
    for call in calls:
        if ep.cancel.is_set():
            return _end(run, EpisodeError.CANCELED, "cancelled")
        option = SkillOption(call.skill, call.args, 1.0)
        text = ep.profile.action(call.skill, call.args, categories) if call.skill == "pick_place" else \
            f"Robot action: {call.skill}({', '.join(call.args)})"
        chosen = ScoredCandidate(text, option, 0.0, 0.0, 1.0, 0.0)
        record = StepRecord(len(run.steps) + 1, (chosen,), chosen, "none", run.prompt_tokens, 0, run.llm_s, 0.0)
        ep.record_step(record)
        run.event(EventKind.ROBOT_ACTION, text, "execute", skill=call.skill, args=list(call.args),
                  plan_steps=list(call.steps), step=len(run.steps))
        result = run_skill(ep, option, end=lambda error, reason: _end(run, error, reason))
        if isinstance(result, EpisodeResult):
            return result
        report_skill(ep, option, result)
        if not result.ok:
            return _end(run, EpisodeError.PLANNING_FAILED,
                        f"{call.skill}({', '.join(call.args)}) failed on the robot ({result.error_name}) although "
                        "the simulator approved the plan")
    return _end(run, EpisodeError.NONE, f"the approved plan ran: {run.executed} skills")


def _end(run: _Run, error: EpisodeError, reason: str) -> EpisodeResult:
    run.event(EventKind.ROBOT_THOUGHT, "MultiTalk: " + ", ".join(f"{k} {v}" for k, v in run.counts.items()),
              "summary", counts=dict(run.counts), ablation=run.s.ablation)
    return run.ep.finish(error, reason)


def _interjections(run: _Run) -> str | None:
    """Drain the inbox at a round boundary: a stop phrase is returned; other words are recorded only."""
    for text in heard(run.ep):
        stop = is_stop_request(text, run.ep.options.stop_phrases)
        run.event(EventKind.HUMAN_INTERJECTION, f"Human: {text}", "interjection", text=text, stop_request=stop)
        if stop:
            return text
    return None


def run_multitalk(ep: EpisodeContext) -> EpisodeResult:
    """Run one MultiTalk episode (see the module docstring); every outcome it decides ends the
    transcript (what escapes is mapped by core.runner.run_episode)."""
    s = ep.settings.get(MultitalkSettings)
    if ep.resume:
        raise InvalidMultitalkEpisode("resuming an interrupted MultiTalk episode is not supported")
    task = " ".join(ep.instruction.split())
    if not task:
        raise InvalidMultitalkEpisode("the instruction is empty")
    planner_file = load_prompt_file(s.prompt_path("planner"), PLANNER_STATIC + PLANNER_TURNS)
    analyzer_file = load_prompt_file(s.prompt_path("analyzer"), ANALYZER_STATIC + ANALYZER_TURNS)
    workspace, source = _workspace(ep)
    ep.log.info("MultiTalk bounds from %s", source)
    run = _Run(ep, s, planner_file, analyzer_file, task, workspace)
    try:
        if s.ablation == "full":
            run.analyzer_llm = role_backend(ep.llm, s.analyzer_llm, "MultiTalk analyzer", ep.log)
        _perceive(run, "start")
        run.event(EventKind.HUMAN_INSTRUCTION, f"High-level Instruction: {task}", "task", instruction=task,
                  ablation=s.ablation, accept_gate=s.accept_gate, bounds_source=source,
                  **({"analyzer_llm": run.analyzer_llm.name}
                     if run.analyzer_llm is not None and run.analyzer_llm is not ep.llm else {}))
        return _loop(run)
    except _Canceled:
        return _end(run, EpisodeError.CANCELED, "cancelled")
    except PlanningFailed as e:  # with the round counts (what else escapes: core.runner.run_episode)
        return _end(run, EpisodeError.PLANNING_FAILED, str(e))


def _loop(run: _Run) -> EpisodeResult:
    ep, s = run.ep, run.s
    run.planner = Conversation.open("Planner", run.planner_file, PLANNER_STATIC, run.values())
    if s.ablation == "full":
        run.analyzer = Conversation.open("Analyzer", run.analyzer_file, ANALYZER_STATIC, run.values())
    message = fill(run.planner_file.block("query"), {"objects": run.objects(), "Task": run.task})
    source = "query"
    commented: tuple[str, ...] | None = None  # the last plan the Analyzer commented on
    while True:
        if ep.cancel.is_set():
            return _end(run, EpisodeError.CANCELED, "cancelled")
        stop = _interjections(run)
        if stop is not None:
            return _end(run, EpisodeError.STOPPED_BY_HUMAN, f"a person asked to stop: {stop!r}")
        if run.counts["planner_rounds"] >= s.max_rounds:
            raise PlanningFailed(f"no executable plan after {s.max_rounds} Planner answers")
        raw, out = _ask(run, run.planner, message, s.max_tokens_planner, "planner", parse_planner_output)
        run.counts["planner_rounds"] += 1
        run.event(EventKind.ROBOT_THOUGHT, f"Planner: {out.text}", "planner", output_type=out.kind, output=raw,
                  input=source, message=message, round=run.counts["planner_rounds"],
                  steps=[s_.line for s_ in out.steps], questions=list(out.questions))
        if out.kind == PERCEPTION:
            if run.counts["perception_reruns"] >= s.max_perception_reruns:
                raise PlanningFailed(f"the Planner asked for more than {s.max_perception_reruns} perception reruns")
            run.counts["perception_reruns"] += 1
            _perceive(run, "Perception Rerun Required")
            message, source = fill(run.planner_file.block("perception_feedback"), {"objects": run.objects()}), \
                "perception_feedback"
            continue
        if out.kind == QUESTIONS:
            if run.counts["question_rounds"] >= s.max_questions:
                raise PlanningFailed(f"the Planner asked more than {s.max_questions} rounds of questions")
            run.counts["question_rounds"] += 1
            message, source = _questions(run, out), "human_feedback"
            continue
        # a plan
        if run.analyzer is not None:
            if s.defer_repeated_plan and commented == out.actions:
                run.event(EventKind.ROBOT_THOUGHT, "Analyzer: the Planner kept its plan; accepted (M l.231-233)",
                          "analyzer_deferred", feasible=True)
            else:
                verdict = _analyze(run, out)
                if not verdict.feasible:  # a scored plan may come back unchanged: then it is deferred to
                    commented = out.actions
                    message = fill(run.planner_file.block("analyzer_feedback"), {"comments": verdict.comments})
                    source = "analyzer_feedback"
                    continue
        accepted, answer = _gate(run, out)
        if not accepted:
            _rejected(run)
            if answer is None:
                raise PlanningFailed("the person did not accept the plan (no answer)")
            run.qa.append(("Do you accept this plan?", answer))
            message = fill(run.planner_file.block("human_feedback"),
                           {"answers": f"1: The user did not accept the plan: {answer}"})
            source = "human_feedback"
            continue
        run.counts["plans_accepted"] += 1
        sim = _simulate(run, out)
        if not sim.ok:
            _rejected(run)
            message = fill(run.planner_file.block("simulator_feedback"), {"simulator feedback": sim.error})
            source = "simulator_feedback"
            continue
        return _execute(run, sim)


def _rejected(run: _Run) -> None:
    """Remember the scored plan the simulator or the person just rejected, so that the next scored answer
    differs from it (after the Analyzer's comments the same plan may come back and be deferred to)."""
    if run.plan_lines and run.plan_lines not in run.rejected_plans:
        run.rejected_plans.append(run.plan_lines)


__all__ = ["STAGE", "InvalidMultitalkEpisode", "is_approval", "planner_points", "run_multitalk"]
