"""CAPE's episode loop: corrective actions from precondition errors (../shared/papers/cape.txt; no rclpy).

Per step: the LLM samples `cape.samples` free-form steps (temperature, presence penalty) after the
demonstration most similar to the task; each admissible action is scored by its best sample (S_w =
C + beta * P, or S_g = ((C + 1) / 2) * e^P; C cosine similarity of sentence embeddings, P mean
token log-prob); the best one runs unless its score is below the threshold or it is the done
action, which ends the plan. The grounded action text, not the sample, goes into the prompt.

A skill refused with PRECONDITION_FAILED changed nothing. `cape.method` decides what follows:
- Z_S / Z_I / Z_E (+S_g), F_E (+S_g): a corrective prompt (the task, the steps so far, the failed
  step, `Error: <message>. A correct step would be to`, `Step k:`) at specificity S, I or E; F adds
  3 (error, correction) examples from tasks other than the query; corrections chain up to
  `cape.max_corrections`, then the episode ends with PLANNING_FAILED;
- huang: open loop, the failed step stays in the plan and planning goes on;
- resampling: the next of the top-k grounded candidates runs, no error text reaches the LLM; if
  none of the k runs, the plan ends (PLANNING_FAILED).

Transcript (every item typed): HUMAN_INSTRUCTION (task, chosen demonstration), ROBOT_ACTION per
executed attempt (step, correction/resample index, C, P, score, sample, top candidates), ERROR per
failed skill (precondition line, proposition, message at the specificity), ROBOT_THOUGHT per
corrective prompt (its `Error: ...` line) and at the end (`Step k: Done`, score, threshold).
"""
from __future__ import annotations

import inspect
import math
import threading
import time
from collections.abc import Sequence
from typing import Any

from monologue_domain.transcript import EventKind
from monologue_llm.base import SamplingBackend

from ...episode import EpisodeError, EpisodeResult, ScoredCandidate, StepRecord
from ...feedback import wait_out_fault
from ...human import is_stop_request, take_interjections
from ...ports import SkillOption, SkillResult, SkillsPort
from ...strategy import EpisodeContext
from .grounding import Embedder, Grounded, Grounder, Proposal, most_similar
from .prompts import (
    Attempt,
    CapeDomain,
    CorrectionExample,
    Demonstration,
    PlanEntry,
    clean_step,
    error_info,
)
from .settings import CapeSettings

STOP = ("\n",)  # a step is one line
TOP_CANDIDATES = 5  # candidates kept in events and step records
_EMBEDDERS: dict[tuple[str, str], Embedder] = {}
_EMBEDDERS_LOCK = threading.Lock()


def admissible_options(skills: SkillsPort) -> list[SkillOption]:
    """Every skill instance, afforded or not: CAPE grounds to the whole repertoire and learns about
    preconditions only from errors. A port without `include_unaffordable` gives what it has."""
    fn: Any = skills.affordances
    try:
        full = "include_unaffordable" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        full = False
    return list(fn(include_unaffordable=True) if full else fn())


def usable_logprob(token_logprobs: Sequence[float]) -> float:
    """A sample's mean token log-probability (CAPE's P; 0.0 for no tokens) clamped to [-inf, 0]: a
    NaN or -inf token makes it -inf (the sample grounds nothing), a positive (invalid) one counts as 0."""
    if not token_logprobs:
        return 0.0
    if any(math.isnan(v) or v == -math.inf for v in token_logprobs):
        return -math.inf
    return sum(min(v, 0.0) for v in token_logprobs) / len(token_logprobs)  # sum, not fsum: may reach -inf


def make_embedder(settings: CapeSettings, llm: object) -> Embedder:
    """The embedder `cape.embedder` names: the planner LLM's own (through its cassette, if any) or
    a Sentence-BERT directory ("" = the packaged all-MiniLM-L6-v2), loaded once per process."""
    from monologue_llm.embeddings import BackendEmbedder, SentenceBertEmbedder, packaged_sentence_bert_dir

    if settings.embedder == "llm":
        return BackendEmbedder(llm)
    key = (settings.embedder, settings.sentence_bert_path)
    with _EMBEDDERS_LOCK:
        if key not in _EMBEDDERS:
            path = settings.sentence_bert_path.strip() or packaged_sentence_bert_dir()
            _EMBEDDERS[key] = SentenceBertEmbedder(path)
        return _EMBEDDERS[key]


def correction_examples(domain: CapeDomain, embedder: Embedder, task: str, n: int) -> list[CorrectionExample]:
    """The `n` (error, correction) examples most similar to `task` among those of other tasks."""
    norm = " ".join(task.lower().split()).rstrip(".")
    pool = [ex for ex in domain.corrections if " ".join(ex.task.lower().split()).rstrip(".") != norm]
    if n <= 0 or not pool:
        return []
    ranked = most_similar(embedder, task, [ex.task for ex in pool])
    return [pool[i] for i, _ in ranked[:n]]


class CapeEpisode:
    """One CAPE episode."""

    def __init__(self, ep: EpisodeContext, s: CapeSettings, domain: CapeDomain, embedder: Embedder) -> None:
        self.ep, self.s, self.domain, self.embedder = ep, s, domain, embedder
        self.task = ep.instruction.strip()
        self.requests = 0  # sampling requests so far (seed offset)
        self.grounder: Grounder | None = None
        self.options: list[SkillOption | None] = []

    # ---- pieces --------------------------------------------------------------------------------
    def admissible(self) -> None:
        texts: list[str] = []
        for o in admissible_options(self.ep.ports.skills):
            try:
                text = self.domain.action_text(o.skill, o.args)
            except (KeyError, IndexError):
                self.ep.log.warning("cape: no action text for %s%s; not admissible", o.skill, list(o.args))
                continue
            if text not in texts:
                texts.append(text)
                self.options.append(o)
        texts.append(self.domain.done)
        self.options.append(None)
        self.grounder = Grounder(self.embedder, texts)

    def propose(self, prompt: str, step: int) -> list[Grounded]:
        """Sample the next step and ground it; every admissible action ranked by its score."""
        s, llm = self.s, self.ep.llm
        assert self.grounder is not None
        t0 = time.monotonic()
        seed = s.seed + self.requests
        self.requests += 1
        if isinstance(llm, SamplingBackend):
            res = llm.sample(prompt, stop=STOP, max_tokens=s.max_tokens, n=s.samples, temperature=s.temperature,
                             presence_penalty=s.presence_penalty, seed=seed)
            proposals = [Proposal(clean_step(x.text), usable_logprob(x.token_logprobs)) for x in res.samples]
            prompt_tokens, new_tokens = res.prompt_tokens, res.new_tokens_processed
        else:  # greedy: one sample, P from scoring the line
            gen = llm.generate(prompt, stop=list(STOP), max_tokens=s.max_tokens)
            sc = llm.score(prompt, [gen.text]).scores[0] if gen.text.strip() else None
            p = sc.logprob / sc.token_count if sc is not None and sc.token_count else 0.0
            proposals = [Proposal(clean_step(gen.text), usable_logprob((p,)))]
            prompt_tokens, new_tokens = gen.prompt_tokens, gen.new_tokens_processed
        llm_s = time.monotonic() - t0
        ranked = self.grounder.ground(proposals, s.score, s.beta)
        self.ep.log.info("cape step %d: samples %s -> %s", step, [p.text for p in proposals],
                         [(g.action, round(g.score, 3)) for g in ranked[:3]])
        if ranked:
            cands = tuple(ScoredCandidate(self.domain.step_line(step, g.action), self.options[g.index],
                                          g.mean_logprob, g.similarity, 1.0, g.score)
                          for g in ranked[:TOP_CANDIDATES])
            record = StepRecord(step, cands, cands[0], f"cape_{s.score}", prompt_tokens, new_tokens, llm_s,
                                time.monotonic() - t0)
            self.ep.record_step(record)
        return ranked

    def passes(self, g: Grounded) -> bool:
        return g.score >= self.s.threshold and self.options[g.index] is not None

    def act(self, step: int, g: Grounded, ranked: Sequence[Grounded], correction: int) -> SkillResult:
        """Log the attempt (ROBOT_ACTION) and run it through the skills port."""
        opt = self.options[g.index]
        assert opt is not None
        kind = {"resample": "resample"}.get(self.s.mode, "correction")
        self.ep.transcript.append(EventKind.ROBOT_ACTION, self.domain.step_line(step, g.action), {
            "skill": opt.skill, "args": list(opt.args), "step": step, kind: correction,
            "llm_score": g.similarity, "affordance": 1.0, "score": g.score, "score_fn": self.s.score,
            "similarity": g.similarity, "mean_logprob": g.mean_logprob, "sample": g.sample,
            "method": self.s.method,
            "candidates": [[c.action, c.score] for c in ranked[:TOP_CANDIDATES]],
        })
        result = self.ep.ports.skills.execute(opt.skill, opt.args, self.ep.cancel)
        self.ep.state.executed += 1
        return result

    def report_error(self, step: int, g: Grounded, result: SkillResult, correction: int) -> str:
        """ERROR event of a failed attempt; returns the message at the configured specificity."""
        info = error_info(g.action, result.error_name, result.message, result.failed_precondition)
        message = info.message(self.s.specificity)
        # a refusal with a proposition moved nothing, whatever its code (the tabletop's not_reachable
        # is OUT_OF_LIMITS: monologue_domain.tabletop_preconditions)
        precondition = result.error_name == "PRECONDITION_FAILED" or bool(info.proposition)
        self.ep.transcript.append(
            EventKind.ERROR,
            f"{'Precondition error' if precondition else 'Skill error ' + result.error_name} at step {step}: "
            f"{info.explicit}",
            {"step": step, "action": g.action, "error_code": result.error_code, "error_name": result.error_name,
             "message": result.message, "failed_precondition": result.failed_precondition,
             "proposition": info.proposition, "precondition": precondition, "specificity": self.s.specificity,
             "error_message": message, "attempt": correction})
        return message

    def end_thought(self, step: int, reason: str, g: Grounded | None) -> None:
        self.ep.transcript.append(EventKind.ROBOT_THOUGHT, self.domain.step_line(step, self.domain.done), {
            "done": True, "step": step, "reason": reason, "threshold": self.s.threshold,
            **({"score": g.score, "best": g.action, "sample": g.sample} if g is not None else {})})

    def finish(self, error: EpisodeError, reason: str) -> EpisodeResult:
        return self.ep.finish(error, reason)

    # ---- the episode ---------------------------------------------------------------------------
    def run(self) -> EpisodeResult:
        ep, s, domain = self.ep, self.s, self.domain
        self.admissible()
        ranked_demos = most_similar(self.embedder, self.task, [d.task for d in domain.demonstrations])
        demo: Demonstration = domain.demonstrations[ranked_demos[0][0]]
        examples = correction_examples(domain, self.embedder, self.task, s.few_shot_examples) if s.few_shot else []
        ep.transcript.append(EventKind.HUMAN_INSTRUCTION, domain.task_line(self.task), {
            "instruction": self.task, "method": s.method, "demonstration": demo.task,
            "demonstration_similarity": ranked_demos[0][1],
            "few_shot_examples": [ex.task for ex in examples]})
        plan: list[PlanEntry] = []
        while len(plan) < ep.options.max_steps:
            step = len(plan) + 1
            if ep.cancel.is_set():
                return self.finish(EpisodeError.CANCELED, "cancelled")
            stop = next((t for t in take_interjections(ep) if is_stop_request(t, ep.options.stop_phrases)), None)
            if stop is not None:
                self.end_thought(step, f"a person asked to stop: {stop!r}", None)
                return self.finish(EpisodeError.STOPPED_BY_HUMAN, f"a person asked to stop: {stop!r}")
            ranked = self.propose(domain.prompt(demo, self.task, plan), step)
            top = ranked[0] if ranked else None
            if top is None or not self.passes(top):
                why = ("the LLM wrote no step" if top is None else
                       "the done action scored highest" if self.options[top.index] is None else
                       f"no step passed the threshold ({top.score:.3f} < {s.threshold:g})")
                self.end_thought(step, why, top)
                return self.finish(EpisodeError.NONE, f"plan ended: {why}")
            attempts: list[Attempt] = []
            chosen, correction = top, 0
            candidates = [g for g in ranked if self.options[g.index] is not None][: s.top_k]
            while True:
                ended = wait_out_fault(ep)
                if ended is not None:
                    return ended
                result = self.act(step, chosen, ranked, correction)
                if result.error_name == "CANCELED" or ep.cancel.is_set():
                    return self.finish(EpisodeError.CANCELED, "cancelled during a skill")
                if result.ok:
                    plan.append(PlanEntry(tuple(attempts), chosen.action))
                    break
                message = self.report_error(step, chosen, result, correction)
                if s.mode == "open_loop":  # Huang et al.: no feedback, the plan goes on
                    plan.append(PlanEntry((), chosen.action))
                    break
                correction += 1
                if s.mode == "resample":
                    if correction >= len(candidates):
                        ep.transcript.append(EventKind.ERROR, f"None of the top {len(candidates)} candidates of "
                                             f"step {step} could run", {"step": step, "resampled": correction})
                        return self.finish(EpisodeError.PLANNING_FAILED,
                                           f"none of the top {len(candidates)} grounded actions of step {step} "
                                           "is executable")
                    chosen = candidates[correction]
                    continue
                if correction > s.max_corrections:
                    ep.transcript.append(EventKind.ERROR, f"Gave up on step {step} after {s.max_corrections} "
                                         "corrections", {"step": step, "corrections": s.max_corrections})
                    return self.finish(EpisodeError.PLANNING_FAILED,
                                       f"step {step} still failed after {s.max_corrections} corrections")
                attempts.append(Attempt(chosen.action, message))
                ep.transcript.append(EventKind.ROBOT_THOUGHT, domain.error_line(message), {
                    "corrective_prompt": True, "step": step, "correction": correction, "failed": chosen.action,
                    "specificity": s.specificity, "error_message": message,
                    "few_shot_examples": [ex.task for ex in examples]})
                prompt = domain.prompt(demo, self.task, [*plan, PlanEntry(tuple(attempts), None)], examples,
                                       s.specificity)
                ranked = self.propose(prompt, step)
                top = ranked[0] if ranked else None
                if top is None or not self.passes(top):
                    why = ("the LLM wrote no corrective step" if top is None else
                           "the corrective step was the done action" if self.options[top.index] is None else
                           f"no corrective step passed the threshold ({top.score:.3f} < {s.threshold:g})")
                    self.end_thought(step, why, top)
                    return self.finish(EpisodeError.PLANNING_FAILED,
                                       f"unresolved precondition error at step {step}: {why}")
                chosen = top
        return self.finish(EpisodeError.MAX_STEPS_REACHED, f"reached the step cap of {ep.options.max_steps}")
