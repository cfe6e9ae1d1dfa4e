"""What a bag recorded about the planner's episodes: transcript, skill calls, affordances (no rclpy).

Actions and services cannot be recorded on ROS 2 Jazzy (no action introspection in rclpy), so a
run's skill calls are rebuilt from recorded topics:
* goal (skill, args): the ROBOT_ACTION transcript event the planner appends just before sending it;
* result: NONE, unless an ERROR event with `error_code` (or an episode end CANCELED) follows;
* timing: the goal's accept stamp and the time its terminal status appeared on
  `/execute_skill/_action/status`, or, if that topic is missing, the neighbouring transcript events;
* affordances: the skills node's AffordanceReport on `/skills/affordances` for every answer.
The goal options (strategy, profile, feedback switches) come from the planner's transcript file
header when the bag directory holds it (TRANSCRIPTS_DIR), else the node defaults apply.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monologue_domain.transcript import EventKind, load_episode

from .bagio import Bag
from .layout import TRANSCRIPTS_DIR

TRANSCRIPT_TOPIC = "/monologue/transcript"
AFFORDANCES_TOPIC = "/skills/affordances"
SKILL_STATUS_TOPIC = "/execute_skill/_action/status"
_ACTIVE = (1, 2, 3)  # action_msgs/GoalStatus ACCEPTED, EXECUTING, CANCELING
_TERMINAL = (4, 5, 6)  # SUCCEEDED, CANCELED, ABORTED
SKILL_CANCELED = 6  # ExecuteSkill.Result.CANCELED


@dataclass(frozen=True)
class RecordedEvent:
    """One transcript event as published on the transcript topic."""

    episode_id: str
    index: int
    kind: str  # EventKind name
    text: str
    data: Mapping[str, Any]
    stamp_ns: int  # when the planner appended it

    @property
    def post_task(self) -> bool:
        return bool(self.data.get("post_task"))


@dataclass(frozen=True)
class SkillCall:
    """One execute_skill goal of the recording and the result the planner got."""

    skill: str
    args: tuple[str, ...]
    error_code: int  # ExecuteSkill.Result error code; 0 = NONE
    error_msg: str
    failed_precondition: str
    start_ns: int  # goal accepted (bag time, ns since the epoch)
    end_ns: int  # result available


@dataclass(frozen=True)
class AffordanceAnswer:
    """One get_affordances answer of the recording."""

    stamp_ns: int
    success: bool
    message: str
    skills: tuple[tuple[str, tuple[str, ...], str, float], ...]  # (skill, args, description, affordance)
    objects: tuple[str, ...]
    locations: tuple[str, ...]


@dataclass(frozen=True)
class RecordedEpisode:
    episode_id: str
    instruction: str
    events: tuple[RecordedEvent, ...]  # the episode's own events (no post-task questions)
    skill_calls: tuple[SkillCall, ...]
    header: Mapping[str, Any] = field(default_factory=dict)  # transcript file header; {} if absent

    @property
    def start_ns(self) -> int:
        return self.events[0].stamp_ns if self.events else 0


@dataclass(frozen=True)
class Recording:
    episodes: tuple[RecordedEpisode, ...]
    affordances: tuple[AffordanceAnswer, ...]
    all_events: tuple[RecordedEvent, ...]  # every transcript event, post-task ones included
    skill_timing_source: str  # "status topic" | "transcript" | "none"

    @property
    def skill_calls(self) -> tuple[SkillCall, ...]:
        return tuple(c for e in self.episodes for c in e.skill_calls)


def stamp_ns(t: Any) -> int:
    """builtin_interfaces/Time -> ns since the epoch."""
    return int(t.sec) * 1_000_000_000 + int(t.nanosec)


def event_from_msg(msg: Any) -> RecordedEvent:
    try:
        data = json.loads(msg.data_json or "{}")
    except json.JSONDecodeError:
        data = {"_unparsed": msg.data_json}
    try:
        kind = EventKind(int(msg.kind)).name
    except ValueError:
        kind = f"KIND_{int(msg.kind)}"
    return RecordedEvent(str(msg.episode_id), int(msg.index), kind, str(msg.text),
                         data if isinstance(data, dict) else {"_value": data}, stamp_ns(msg.stamp))


def _dedupe(events: Sequence[RecordedEvent]) -> list[RecordedEvent]:
    """Transcript events in order, each (episode, index) once (late joiners get history twice)."""
    seen: dict[tuple[str, int], RecordedEvent] = {}
    for e in events:
        seen.setdefault((e.episode_id, e.index), e)
    return sorted(seen.values(), key=lambda e: (e.stamp_ns, e.index))


def _calls_from_events(events: Sequence[RecordedEvent]) -> list[SkillCall]:
    calls: list[SkillCall] = []
    for i, e in enumerate(events):
        if e.kind != EventKind.ROBOT_ACTION.name:
            continue
        code, msg, pre = 0, "", ""
        end_ns = e.stamp_ns
        for later in events[i + 1:]:
            if later.kind == EventKind.ROBOT_ACTION.name:
                break
            if later.kind == EventKind.ERROR.name and "error_code" in later.data:
                code = int(later.data["error_code"])
                msg = str(later.data.get("message", ""))
                pre = str(later.data.get("failed_precondition", ""))
                end_ns = later.stamp_ns
                break
            if later.kind == EventKind.ERROR.name and later.data.get("error") == "CANCELED":
                code, msg, end_ns = SKILL_CANCELED, "cancelled", later.stamp_ns
                break
            end_ns = later.stamp_ns  # SUCCESS or the episode end came after the result
            break
        calls.append(SkillCall(str(e.data.get("skill", "")), tuple(str(a) for a in e.data.get("args", [])),
                               code, msg, pre, e.stamp_ns, max(end_ns, e.stamp_ns)))
    return calls


def _status_windows(statuses: Sequence[tuple[int, Any]]) -> list[tuple[int, int]]:
    """(accepted, finished) in ns for every goal seen on an action status topic, by accept time."""
    first: dict[bytes, int] = {}
    done: dict[bytes, int] = {}
    for log_ns, msg in statuses:
        for st in msg.status_list:
            gid = bytes(bytearray(st.goal_info.goal_id.uuid))
            if gid not in first and int(st.status) in _ACTIVE + _TERMINAL:
                first[gid] = stamp_ns(st.goal_info.stamp) or log_ns
            if gid not in done and int(st.status) in _TERMINAL:
                done[gid] = log_ns
    return sorted((first[g], done.get(g, first[g])) for g in first)


def _affordance(msg: Any) -> AffordanceAnswer:
    return AffordanceAnswer(
        stamp_ns(msg.header.stamp), bool(msg.success), str(msg.message),
        tuple((str(s.skill), tuple(str(a) for a in s.args), str(s.description), float(s.affordance))
              for s in msg.skills),
        tuple(str(o) for o in msg.objects), tuple(str(loc) for loc in msg.locations))


def _header(directory: Path, episode_id: str) -> dict[str, Any]:
    path = directory / f"{episode_id}.jsonl"
    if not path.is_file():
        return {}
    return dict(load_episode(path).header)


def read_recording(bag: Bag, logger: logging.Logger) -> Recording:
    """Everything a replay needs from `bag`; raises ValueError if it holds no transcript."""
    all_events = _dedupe([event_from_msg(m) for _t, m in bag.decoded(TRANSCRIPT_TOPIC)])
    if not all_events:
        raise ValueError(f"bag {bag.path} has no events on {TRANSCRIPT_TOPIC}: nothing to replay")
    order: list[str] = []
    for e in all_events:
        if e.episode_id not in order:
            order.append(e.episode_id)
    episodes: list[RecordedEpisode] = []
    for eid in order:
        events = tuple(sorted((e for e in all_events if e.episode_id == eid and not e.post_task),
                              key=lambda e: e.index))
        instruction = next((str(e.data.get("instruction", "")) for e in events
                            if e.kind == EventKind.HUMAN_INSTRUCTION.name), "")
        episodes.append(RecordedEpisode(eid, instruction, events, tuple(_calls_from_events(events)),
                                        _header(bag.path / TRANSCRIPTS_DIR, eid)))
    source = "transcript"
    windows = _status_windows(bag.decoded(SKILL_STATUS_TOPIC)) if SKILL_STATUS_TOPIC in bag.topics else []
    n_calls = sum(len(e.skill_calls) for e in episodes)
    if windows and len(windows) == n_calls:
        it = iter(windows)
        episodes = [RecordedEpisode(e.episode_id, e.instruction, e.events,
                                    tuple(_with_window(c, next(it)) for c in e.skill_calls), e.header)
                    for e in episodes]
        source = "status topic"
    elif windows:
        logger.warning("%s has %d goals but the transcript %d skill calls; timing skills from the transcript",
                       SKILL_STATUS_TOPIC, len(windows), n_calls)
    elif n_calls == 0:
        source = "none"
    affordances = tuple(sorted((_affordance(m) for _t, m in bag.decoded(AFFORDANCES_TOPIC)),
                               key=lambda a: a.stamp_ns))
    return Recording(tuple(episodes), affordances, tuple(all_events), source)


def _with_window(call: SkillCall, window: tuple[int, int]) -> SkillCall:
    return SkillCall(call.skill, call.args, call.error_code, call.error_msg, call.failed_precondition,
                     window[0], max(window))


FLAG_OPTIONS = ("object_feedback", "success_feedback", "scene_feedback", "human_feedback", "use_affordances")
_PARAM_OPTIONS = {"normalization": "scoring.normalization", "max_reprompts": "generation.max_reprompts",
                  "generation_fallback": "generation.fallback", "max_tokens": "generation.max_tokens"}


@dataclass(frozen=True)
class GoalSpec:
    """The ExecuteInstruction goal that started a recorded episode, as far as it is known."""

    instruction: str
    strategy: str = ""  # "" = the node's default
    prompt_profile: str = ""
    flags: Mapping[str, bool] = field(default_factory=dict)  # FLAG_OPTIONS that were recorded
    max_steps: int = 0  # 0 = the node's default
    objects: tuple[str, ...] = ()  # the task's object names for perception ([] = configured candidates)


def goal_spec(ep: RecordedEpisode) -> GoalSpec:
    """The goal of `ep`: instruction from the transcript, options from the transcript file header."""
    h = ep.header
    opts = h.get("options", {}) if isinstance(h.get("options"), dict) else {}
    return GoalSpec(ep.instruction, str(h.get("strategy", "")), str(h.get("prompt_profile", "")),
                    {f: bool(opts[f]) for f in FLAG_OPTIONS if f in opts}, int(opts.get("max_steps", 0)),
                    tuple(str(o) for o in h.get("objects", []) if isinstance(h.get("objects"), list)))


def planner_params(ep: RecordedEpisode) -> dict[str, str]:
    """Planner node parameters the episode ran with that are not part of the goal."""
    opts = ep.header.get("options", {})
    if not isinstance(opts, dict):
        return {}
    return {param: str(opts[key]) for key, param in _PARAM_OPTIONS.items() if key in opts}
