"""Python enums of the core must match the constants in monologue_interfaces (built package)."""
from __future__ import annotations

from monologue_domain.skills import SkillError, SkillState
from monologue_domain.transcript import EventKind
from monologue_interfaces.action import ExecuteInstruction, ExecuteSkill
from monologue_interfaces.msg import TranscriptEvent
from planner_node.core.episode import EpisodeError


def test_event_kinds_match_msg() -> None:
    for kind in EventKind:
        assert getattr(TranscriptEvent, f"KIND_{kind.name}") == kind.value


def test_episode_errors_match_action() -> None:
    for e in EpisodeError:
        assert getattr(ExecuteInstruction.Result, e.name) == e.value


def test_skill_errors_and_states_match_action() -> None:
    for e in SkillError:
        assert getattr(ExecuteSkill.Result, e.name) == e.value
    for s in SkillState:
        assert getattr(ExecuteSkill.Feedback, f"STATE_{s.name}") == s.value
