"""IM Object + Scene feedback (IM A.1, no rclpy): the LLM's goal state, the task progress re-checked
after every action, and the chain-of-thought line that may end the episode."""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from monologue_domain.transcript import EventKind

from .episode import one_line
from .parsing import parse_action
from .prompts import PromptProfile
from .strategy import EpisodeContext

SCENE_FORMATS = ("goal_state", "progress", "thought")  # profile formats Scene feedback needs


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


def missing_scene_formats(profile: PromptProfile) -> list[str]:
    """The formats Scene feedback needs that `profile` lacks ([] if it can run Scene feedback)."""
    return [k for k in SCENE_FORMATS if k not in profile.formats]


def goal_state(ep: EpisodeContext, categories: Mapping[str, str]) -> list[SubGoal]:
    """IM A.1: the LLM first lists the desired sub-goals, `Robot thought: Goal state is [...]`."""
    profile, transcript = ep.profile, ep.transcript
    prefix = profile.formats["goal_state"].split("{goals}", 1)[0]
    prompt = profile.prompt(transcript.prompt_events(), next_step=False) + prefix
    gen = ep.llm.generate(prompt, stop=["\n"], max_tokens=200)
    line = one_line(prefix + gen.text)
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


def progress(ep: EpisodeContext, goals: Sequence[SubGoal]) -> None:
    """IM A.1: re-check every sub-goal after each action; lost ones drop out again."""
    done: list[str] = []
    for g in goals:
        if g.obj and ep.ports.success.detect("pick_place", (g.obj, g.target), 0.0, 0.0).success:
            done.append(g.text)
    sep = ep.profile.formats.get("list_separator", ", ")
    completed = sep.join(f'"{t}"' for t in done)
    ep.transcript.append(EventKind.SCENE_PROGRESS, ep.profile.formats["progress"].format(completed=completed),
                         {"completed": done})


def thought(ep: EpisodeContext) -> bool:
    """Chain of thought after the Scene line; True if the thought ends the episode."""
    profile = ep.profile
    prefix = profile.formats["thought"].split("{thought}", 1)[0]
    prompt = profile.prompt(ep.transcript.prompt_events(), next_step=False) + prefix
    gen = ep.llm.generate(prompt, stop=["\n"], max_tokens=64)
    line = one_line(prefix + gen.text)
    finished = parse_action(line, [], []).is_done
    if finished:
        line = profile.done_line
    ep.transcript.append(EventKind.ROBOT_THOUGHT, line, {"done": finished})
    return finished


def recover_goals(ep: EpisodeContext, categories: Mapping[str, str]) -> list[SubGoal]:
    """The goal state an interrupted episode wrote (its last goal-state thought), or []."""
    goals: list[SubGoal] = []
    for e in ep.transcript.events:
        if e.kind == EventKind.ROBOT_THOUGHT and "goal_state" in e.data:
            goals = parse_goal_state(e.text, categories)
    return goals
