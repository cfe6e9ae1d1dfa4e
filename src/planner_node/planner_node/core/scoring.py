"""SayCan-style step choice: score every admissible skill line and the termination line with the LLM,
multiply by affordances, take the argmax (SC Algorithm 1). No rclpy."""
from __future__ import annotations

import time
from collections.abc import Mapping

from monologue_llm.base import InvalidOutputError, normalize_scores

from .calibration import calibrated_score
from .episode import PlanningFailed, ScoredCandidate, StepRecord
from .goal_check import Goal, advancing, check, goal_candidates, ground_goal, parse_goal
from .goal_examples import GOAL_EXAMPLES_K, goal_head, retrieve
from .ports import SkillOption
from .strategy import EpisodeContext

DONE_AFFORDANCE = 0.1  # SayCan's fixed affordance of the terminate skill (SC:L440)
# When the robot offers no move at all (e.g. after a simulator restart its arm is not connected yet),
# the skills are asked again every NO_MOVES_POLL_S s for up to NO_MOVES_WAIT_S s before the episode
# fails (PLANNING_FAILED): a robot that can do nothing has not done the task. Read at call time.
NO_MOVES_WAIT_S = 5.0  # s
NO_MOVES_POLL_S = 0.25  # s


def admissible_moves(ep: EpisodeContext, step: int) -> list[SkillOption]:
    """The skill instances the robot offers for step `step`: affordance > 0 (every one without
    affordances). If it offers none, re-ask for a bounded time; raise PlanningFailed if still none."""
    def query() -> list[SkillOption]:
        return [o for o in ep.ports.skills.affordances() if o.affordance > 0.0 or not ep.options.use_affordances]

    moves = query()
    if moves:
        return moves
    wait_s, poll_s = NO_MOVES_WAIT_S, NO_MOVES_POLL_S
    ep.log.warning("step %d: the robot offers no admissible move; asking again for up to %.1f s", step, wait_s)
    t0 = time.monotonic()
    deadline = t0 + wait_s
    while not moves:
        remaining = deadline - time.monotonic()
        if remaining <= 0.0:
            break
        if ep.cancel.wait(min(poll_s, remaining)):  # a cancel ends the wait (the loop reports CANCELED)
            raise PlanningFailed(f"cancelled while waiting for the robot to offer a move at step {step}")
        moves = query()
    if not moves:
        raise PlanningFailed(f"the robot offers no admissible move at step {step} (every skill's affordance "
                             f"is 0 or none is listed) after {wait_s:.1f} s; is the arm connected?")
    ep.log.info("step %d: the robot offers %d moves after %.2f s", step, len(moves), time.monotonic() - t0)
    return moves


def score_step(ep: EpisodeContext, step: int, categories: Mapping[str, str]) -> StepRecord:
    """Choose step `step` by scoring; with Scene feedback the done line is not a candidate (the
    chain of thought ends the episode instead)."""
    options, profile, log = ep.options, ep.profile, ep.log
    t0 = time.monotonic()
    goal = _goal(ep, categories)
    status = check(goal, ep.ports.success) if goal else None
    missing = status is not None and not status.holds
    if status is not None and status.holds:  # the goal holds: done, without asking the LLM
        done = ScoredCandidate(profile.done_line, None, 0.0, 1.0, 1.0, 1.0)
        log.info("step %d: the instruction's goal (%s) holds; done", step, goal.describe())
        return StepRecord(step, (done,), done, options.normalization, 0, 0, 0.0, time.monotonic() - t0)
    admissible = admissible_moves(ep, step)  # none offered: PlanningFailed, never the done line
    if status is not None and missing and options.goal_check in ("affordance", "directed"):
        placed = status.placed  # do not move what already is where the goal wants it
        unplaced = [o for o in admissible if not (o.skill == "pick_place" and o.args and o.args[0] in placed)]
        if options.goal_check == "affordance":
            admissible = unplaced
        else:  # directed: only the moves that make the goal nearer, when there are any
            moves = advancing(goal, status)
            nearer = [o for o in unplaced if o.skill == "pick_place" and tuple(o.args[:2]) in moves]
            if nearer:
                admissible = nearer
            else:  # e.g. the object to move next is covered: any move may uncover it (done stays withheld)
                log.info("step %d: no admissible move brings the goal (%s) nearer; offering every move",
                         step, goal.describe())
    texts: list[str] = []
    opts: list[SkillOption | None] = []
    for o in admissible:
        try:
            texts.append(profile.action(o.skill, o.args, categories))
        except KeyError:
            log.warning("no prompt template for skill %s; not offered to the LLM", o.skill)
            continue
        opts.append(o)
    if not options.scene_feedback and (not missing or not texts):  # Scene feedback: "Robot thought: None." ends
        # the episode; a goal check that found an unmet fact offers done only when nothing else is left
        texts.append(profile.done_line)
        opts.append(None)
    events = ep.transcript.prompt_events()
    candidates = [profile.lead + t for t in texts]
    t_llm = time.monotonic()
    if options.calibration == "content_free":  # minus each line's log-prob with the instruction "N/A"
        result, _ = calibrated_score(ep.llm, profile, events, candidates, options.calibration_weight)
    else:
        result = ep.llm.score(profile.prompt(events), candidates)
    llm_s = time.monotonic() - t_llm
    try:
        probs = normalize_scores(result.scores, options.normalization)
    except ValueError as e:  # a NaN log-probability: the backend's answer is unusable (LLM_FAILED)
        raise InvalidOutputError(f"unusable scores from the LLM: {e}") from e
    cands: list[ScoredCandidate] = []
    for text, opt, sc, p in zip(texts, opts, result.scores, probs):
        if opt is None:
            aff = DONE_AFFORDANCE if options.use_affordances else 1.0
        else:
            aff = opt.affordance if options.use_affordances else 1.0
        cands.append(ScoredCandidate(text, opt, sc.logprob, p, aff, p * aff))
    chosen = max(cands, key=lambda c: c.combined)
    step_s = time.monotonic() - t0
    log.info(
        "step %d: chose %r (llm %.3f x aff %.2f) from %d candidates; prompt %d tokens, %d new; "
        "LLM %.2f s, step %.2f s",
        step, chosen.text, chosen.llm_score, chosen.affordance, len(cands),
        result.prompt_tokens, result.new_tokens_processed, llm_s, step_s,
    )
    for c in sorted(cands, key=lambda c: -c.combined)[:5]:
        log.debug("  %.4f = %.4f x %.2f  %s", c.combined, c.llm_score, c.affordance, c.text)
    return StepRecord(step, tuple(cands), chosen, options.normalization, result.prompt_tokens,
                      result.new_tokens_processed, llm_s, step_s)


def _goal(ep: EpisodeContext, categories: Mapping[str, str]) -> Goal:
    """The instruction's goal for the goal check, worked out once per episode."""
    if ep.options.goal_check == "off":
        return Goal()
    if not (ep.options.success_feedback or ep.options.scene_feedback):
        return Goal()  # open loop: the goal check reads the success detector, which is feedback
    return ep.state.once(Goal, lambda: _read_goal(ep, categories))


def _read_goal(ep: EpisodeContext, categories: Mapping[str, str]) -> Goal:
    """The instruction's goal: parsed, or grounded by the LLM as `scoring.goal_grounding` says."""
    goal = parse_goal(ep.instruction, categories)
    grounding = ep.options.goal_grounding
    if not goal and grounding != "parser":
        examples = ep.profile.goal_examples
        head = ep.profile.goal_prompt
        if grounding == "llm_named_retrieved" and examples is not None:
            head = goal_head(examples, retrieve(examples, ep.instruction, categories, GOAL_EXAMPLES_K))
        elif grounding == "llm_named_retrieved":
            head = ""
        if not head:
            ep.log.warning("scoring.goal_grounding %s: prompt profile %s has no %s; the parser alone reads "
                           "the goal", grounding, ep.profile.name,
                           "goal_examples_file" if grounding == "llm_named_retrieved" else "goal_prompt_file")
        else:
            pairs = [(o.args[0], o.args[1]) for o in ep.ports.skills.affordances()
                     if o.skill == "pick_place" and len(o.args) == 2]
            candidates = goal_candidates(
                pairs, categories, lambda obj, target: ep.profile.skill_text("pick_place", (obj, target), categories))
            goal, text, ranked = ground_goal(ep.llm, head, ep.instruction, candidates, categories,
                                             named=grounding.startswith("llm_named"),
                                             calibrated=grounding == "llm_named_calibrated")
            ep.log.info("goal grounding: %r read as %r (%s) among %d of %d goals", ep.instruction, text,
                        goal.describe() if goal else "no goal", ranked, len(candidates))
    return goal
