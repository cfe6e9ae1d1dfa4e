"""Plain data types shared by skill backends (no rclpy): defined in monologue_domain, re-exported here."""
from __future__ import annotations

from monologue_domain.objects import ObjectState
from monologue_domain.skills import Affordance, SkillError, SkillOutcome, SkillRejected, SkillState

__all__ = ["Affordance", "ObjectState", "SkillError", "SkillOutcome", "SkillRejected", "SkillState"]
