"""The Inner Monologue closed loop with a pluggable step chooser (no rclpy).

Each step: drain what people said, (re)describe the scene where the profile wants it, let the
chooser pick the next line (scoring or generation), execute it, and append the feedback (Success,
Scene) to the transcript. IM §3, SC Algorithm 1. Strategies call `run_closed_loop` with their
chooser and options; every outcome the loop decides ends the transcript (`EpisodeContext.finish`);
what escapes it (PlanningFailed, LLM and port errors, ...) is mapped by core.runner.run_episode.
"""
from __future__ import annotations

from monologue_domain.transcript import EventKind

from . import feedback, human, scene_feedback
from .episode import EpisodeError, EpisodeResult, InvalidEpisode
from .strategy import EpisodeContext, StepChooser


def check_episode(ep: EpisodeContext) -> None:
    """Raise InvalidEpisode if the instruction is empty or the profile cannot give the feedback the
    options ask for."""
    if not ep.instruction.strip():
        raise InvalidEpisode("the instruction is empty")
    if ep.options.success_feedback and not {"success_true", "success_false"} <= set(ep.profile.formats):
        raise InvalidEpisode(f"prompt profile {ep.profile.name} has no Success lines; "
                             "switch Success feedback off for it")


def run_closed_loop(ep: EpisodeContext, choose: StepChooser) -> EpisodeResult:
    """Run one episode of the closed loop, choosing every step with `choose`. With `ep.resume`,
    the transcript holds an interrupted episode and the loop continues after its last event,
    counting its steps."""
    transcript, profile, options = ep.transcript, ep.profile, ep.options
    check_episode(ep)
    instruction = ep.instruction.strip()
    items = ep.ports.scene.describe()
    cats = feedback.categories(items)
    every_step = profile.objects_every_step and options.object_feedback
    first_step = 1
    goals: list[scene_feedback.SubGoal] = []
    if ep.resume:
        first_step = feedback.resume_episode(ep).first_step
        goals = scene_feedback.recover_goals(ep, cats)
    else:
        if options.object_feedback and not every_step:
            feedback.object_feedback(ep, items)
        transcript.append(EventKind.HUMAN_INSTRUCTION, profile.instruction(instruction),
                          {"instruction": instruction})
    if options.scene_feedback and not ep.resume:
        missing = scene_feedback.missing_scene_formats(profile)
        if missing:
            raise InvalidEpisode(f"prompt profile {profile.name} has no {missing} formats for "
                                 "Scene feedback (use im_sim_object_scene)")
        goals = scene_feedback.goal_state(ep, cats)
    for step in range(first_step, options.max_steps + 1):
        if ep.cancel.is_set():
            return ep.finish(EpisodeError.CANCELED, "cancelled")
        interjected = human.take_interjections(ep)
        stop = next((t for t in interjected if human.is_stop_request(t, options.stop_phrases)), None)
        if stop is not None:
            transcript.append(EventKind.ROBOT_THOUGHT, profile.done_line, {"done": True, "stop_request": stop})
            return ep.finish(EpisodeError.STOPPED_BY_HUMAN, f"a person asked to stop: {stop!r}")
        if every_step:
            if step > first_step:
                items = ep.ports.scene.describe()
                cats = feedback.categories(items)
            feedback.object_feedback(ep, items)
        record = choose(ep, step, cats)
        ep.record_step(record)
        chosen = record.chosen
        if chosen.option is None:
            transcript.append(EventKind.ROBOT_THOUGHT, chosen.text, {"done": True})
            if "stop_marker" in profile.formats:  # IM Listing 2: `robot.stop()` then `STOP`
                transcript.append(EventKind.ROBOT_THOUGHT, profile.formats["stop_marker"], {"marker": True})
            if interjected:
                return ep.finish(EpisodeError.STOPPED_BY_HUMAN,
                                 f"the planner stopped after a person said {interjected[-1]!r}")
            return ep.finish(EpisodeError.NONE, "the planner chose done")
        opt = chosen.option
        question = human.ask_or_continue(ep, step, chosen, record.suffix)
        transcript.append(
            EventKind.ROBOT_ACTION, chosen.text,
            {"skill": opt.skill, "args": list(opt.args), "step": step,
             "llm_score": chosen.llm_score, "affordance": chosen.affordance,
             **({"suffix": "ask" if question else "continue"} if human.asks(ep) else {})},
        )
        if question:
            transcript.append(EventKind.ROBOT_QUESTION, question, {"question": question, "step": step})
        result = feedback.run_skill(ep, opt)
        if isinstance(result, EpisodeResult):
            return result
        feedback.report_skill(ep, opt, result)
        if question:
            human.await_answer(ep, question)
        if options.scene_feedback:
            scene_feedback.progress(ep, goals)
            if scene_feedback.thought(ep):
                return ep.finish(EpisodeError.NONE, "the planner thought it was done")
    return ep.finish(EpisodeError.MAX_STEPS_REACHED, f"reached the step cap of {options.max_steps}")
