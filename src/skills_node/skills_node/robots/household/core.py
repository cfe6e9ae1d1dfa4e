"""The household's backend (ROS-free): CAPE's household (monologue_domain.kitchen.household) on the
symbolic worlds' base."""
from __future__ import annotations

from typing import Any

from monologue_domain.expert.household import WORLD, scene_to_json
from monologue_domain.kitchen.household import HOUSEHOLD_SKILLS, HouseholdWorld
from monologue_domain.kitchen.skills import PreconditionError
from monologue_domain.skills import Affordance
from skills_node.core.symbolic import SymbolicBackend


class HouseholdBackend(SymbolicBackend[HouseholdWorld]):
    """A HouseholdWorld behind the SkillBackend protocol; a skill takes `skill_duration_s`."""

    SKILLS = tuple(HOUSEHOLD_SKILLS)

    def _affordance_list(self, include_unaffordable: bool) -> list[Affordance]:
        return self._world.affordance_list(include_unaffordable)

    def _locations(self) -> list[str]:
        return self._world.rooms

    def _refusal(self, pre: PreconditionError) -> str:
        return f"{pre.text} (CAPE difficulty {pre.difficulty})"

    def expert_extra(self) -> dict[str, Any]:
        """The scene's fixed part (rooms, doors, things, hands) for the expert stand-in's truth (llm:=expert)."""
        with self._lock:
            return {WORLD: scene_to_json(self._world.scene, self._world.hands)}
