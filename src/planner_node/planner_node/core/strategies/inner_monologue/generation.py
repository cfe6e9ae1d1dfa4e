"""IM's generative planning: the LLM writes the next line and the parser maps it to an admissible
skill, with bounded re-prompts and a fallback (no rclpy)."""
from __future__ import annotations

import time
from collections.abc import Mapping

from monologue_domain.transcript import EventKind

from ...episode import PlanningFailed, ScoredCandidate, StepRecord
from ...parsing import parse_action
from ...prompts import PromptProfile
from ...scoring import admissible_moves, score_step
from ...strategy import EpisodeContext


def generate_step(ep: EpisodeContext, step: int, categories: Mapping[str, str]) -> StepRecord:
    """The LLM writes step `step`. Output that does not map is logged (ERROR event, not in the
    prompt) and never executed.

    Greedy decoding repeats itself on an identical prompt, so re-prompts escalate: the first
    attempt writes a free line, later ones continue a line that already starts with the action
    prefix. After them, `generation_fallback` "score"s the admissible lines or raises PlanningFailed.
    """
    options, profile, log, transcript = ep.options, ep.profile, ep.log, ep.transcript
    t0 = time.monotonic()
    options_by_call = {(o.skill, o.args): o for o in admissible_moves(ep, step)}  # none: PlanningFailed
    templates = {k: v.template for k, v in profile.skills.items()}
    prompt = profile.prompt(transcript.prompt_events())
    action_prefix = profile.lead + profile.formats["action"].split("{action}", 1)[0]
    llm_s = 0.0
    for attempt in range(options.max_reprompts + 1):
        prefix = "" if attempt == 0 else action_prefix
        t_llm = time.monotonic()
        gen = ep.llm.generate(prompt + prefix, stop=["\n"], max_tokens=options.max_tokens)
        llm_s += time.monotonic() - t_llm
        line = (prefix + gen.text).strip()
        line, suffix = split_suffix(profile, line)
        outcome = parse_action(line, list(options_by_call), list(categories), templates)
        log.info("step %d attempt %d: LLM wrote %r -> %s %s", step, attempt + 1, line,
                 outcome.kind.name, outcome.reason)
        if outcome.is_done:
            chosen = ScoredCandidate(profile.done_line, None, 0.0, 1.0, 1.0, 1.0)
        elif outcome.is_action and outcome.action is not None:
            opt = options_by_call[(outcome.action.skill, outcome.action.args)]
            text = profile.action(opt.skill, opt.args, categories)
            chosen = ScoredCandidate(text, opt, 0.0, 1.0, opt.affordance, opt.affordance)
        else:
            transcript.append(EventKind.ERROR, f"Rejected LLM output {line[:200]!r}: {outcome.reason}",
                              {"step": step, "attempt": attempt + 1, "output": line[:500],
                               "reason": outcome.reason})
            continue
        return StepRecord(step, (chosen,), chosen, "generate", gen.prompt_tokens, gen.new_tokens_processed,
                          llm_s, time.monotonic() - t0, suffix or "continue")
    if options.generation_fallback == "score":
        log.warning("step %d: no admissible generation; scoring the admissible lines instead", step)
        return score_step(ep, step, categories)
    raise PlanningFailed(f"no admissible step after {options.max_reprompts + 1} generations")


def split_suffix(profile: PromptProfile, line: str) -> tuple[str, str]:
    """`find a coke and ask: Is it cold?` -> (`find a coke`, `ask: Is it cold?`) for profiles that ask."""
    f = profile.formats
    if not profile.can_ask:
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
