"""Object and Success feedback, skill execution and robot-fault pauses, and resuming an interrupted
episode: the pieces around one executed skill (no rclpy)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from monologue_domain.transcript import EventKind

from .episode import EpisodeError, EpisodeResult
from .ports import SceneItem, SkillOption, SkillResult
from .strategy import EpisodeContext


def categories(items: Sequence[SceneItem]) -> dict[str, str]:
    """{scene name: category} of a scene description."""
    return {i.name: i.category for i in items}


def object_feedback(ep: EpisodeContext, items: Sequence[SceneItem]) -> None:
    """Object feedback: the visible objects, and the occluded ones where the profile has a line."""
    names = [i.name for i in items if i.visible and i.category != "location"]
    ep.transcript.append(EventKind.SCENE_OBJECTS, ep.profile.objects(names), {"objects": names})
    hidden = [i.name for i in items if not i.visible and i.category != "location"]
    line = ep.profile.occluded(hidden)
    if line is not None:
        ep.transcript.append(EventKind.SCENE_OBJECTS, line, {"occluded": hidden})


def pause_while_faulted(ep: EpisodeContext) -> str | None:
    """Before a skill: if the robot reports a fault, pause (logged) until it clears or the pause
    (options.fault_pause_s, s) times out. Returns the fault that remains, or None."""
    robot = ep.ports.robot
    if robot is None:
        return None
    fault = robot.fault()
    if fault is None:
        return None
    pause_s = ep.options.fault_pause_s
    ep.log.warning("robot fault, pausing up to %.0f s: %s", pause_s, fault)
    ep.transcript.append(EventKind.ERROR, f"Paused: {fault}", {"fault": fault, "pause_s": pause_s})
    remaining = robot.wait_ok(pause_s, ep.cancel)
    if remaining is None and not ep.cancel.is_set():
        ep.transcript.append(EventKind.ERROR, "Resumed: the robot can move again", {"fault_cleared": fault})
    return remaining


Ending = Callable[[EpisodeError, str], EpisodeResult]  # ends the episode (EpisodeContext.finish or a wrapper)


def wait_out_fault(ep: EpisodeContext, end: Ending | None = None) -> EpisodeResult | None:
    """Before a skill: `pause_while_faulted`; the episode's end (`end`, default `ep.finish`) if it was
    cancelled meanwhile or the fault outlasted `options.fault_pause_s`, None to go on."""
    end = end or ep.finish
    fault = pause_while_faulted(ep)
    if ep.cancel.is_set():
        return end(EpisodeError.CANCELED, "cancelled while paused")
    if fault is not None:
        return end(EpisodeError.ROBOT_FAULT, f"the robot stayed faulted for {ep.options.fault_pause_s:.0f} s: {fault}")
    return None


def run_skill(ep: EpisodeContext, option: SkillOption, end: Ending | None = None) -> SkillResult | EpisodeResult:
    """Wait out a robot fault, run the skill and count it (`ep.state.executed`): its result, or the
    episode's end (cancelled while paused or during the skill, or the robot stayed faulted)."""
    end = end or ep.finish
    ended = wait_out_fault(ep, end)
    if ended is not None:
        return ended
    result = execute(ep, option)
    ep.state.executed += 1
    if result.error_name == "CANCELED" or ep.cancel.is_set():
        return end(EpisodeError.CANCELED, "cancelled during a skill")
    return result


def execute(ep: EpisodeContext, option: SkillOption) -> SkillResult:
    """Run the skill through the skills port (cancellable by ep.cancel)."""
    return ep.ports.skills.execute(option.skill, option.args, ep.cancel)


def report_skill(ep: EpisodeContext, option: SkillOption, result: SkillResult) -> None:
    """After a skill: an ERROR line if it failed, and the Success line if Success feedback is on
    (a failed skill counts as not successful without asking the detector)."""
    if not result.ok:
        detail = result.failed_precondition or result.message
        ep.transcript.append(EventKind.ERROR, f"Skill error {result.error_name}: {detail}",
                             {"error_code": result.error_code, "error_name": result.error_name,
                              "message": result.message, "failed_precondition": result.failed_precondition})
    if ep.options.success_feedback:
        if result.ok:
            report = ep.ports.success.detect(option.skill, option.args, result.start_s, result.end_s)
            ok, conf, why = report.success, report.confidence, report.explanation
        else:
            ok, conf, why = False, 1.0, f"the skill reported {result.error_name}"
        ep.transcript.append(EventKind.SUCCESS, ep.profile.success(ok),
                             {"success": ok, "confidence": conf, "explanation": why})


@dataclass(frozen=True)
class Resumed:
    """Where an interrupted episode continues."""

    first_step: int  # the step number of the next planned step
    steps_before: int  # actions the interrupted run had sent


def resume_episode(ep: EpisodeContext) -> Resumed:
    """Pick up an interrupted episode: count its steps, and settle an action whose outcome was not
    recorded (the success detector looks at the world now)."""
    transcript = ep.transcript
    events = transcript.events
    actions = [e for e in events if e.kind == EventKind.ROBOT_ACTION]
    transcript.append(EventKind.ERROR, f"Resumed after an interruption, {len(actions)} steps in",
                      {"resumed": True, "steps_before": len(actions)})
    last = actions[-1] if actions else None
    if last is not None and not any(e.kind == EventKind.SUCCESS and e.index > last.index for e in events):
        skill, args = str(last.data.get("skill", "")), tuple(str(a) for a in last.data.get("args", []))
        if ep.options.success_feedback and skill:
            report = ep.ports.success.detect(skill, args, last.stamp, ep.clock())
            transcript.append(EventKind.SUCCESS, ep.profile.success(report.success),
                              {"success": report.success, "confidence": report.confidence,
                               "explanation": f"checked after the interruption: {report.explanation}"})
    return Resumed(len(actions) + 1, len(actions))

