"""The kitchen's backend (ROS-free): SayCan's symbolic kitchen (monologue_domain.kitchen.world) on the
symbolic worlds' base."""
from __future__ import annotations

from collections.abc import Sequence

from monologue_domain.kitchen.skills import SKILLS
from monologue_domain.kitchen.world import KitchenWorld
from monologue_domain.skills import Affordance, SkillOutcome
from skills_node.core.symbolic import SymbolicBackend


class KitchenBackend(SymbolicBackend[KitchenWorld]):
    """A KitchenWorld behind the SkillBackend protocol; a skill takes `skill_duration_s`."""

    SKILLS = tuple(SKILLS)

    def _affordance_list(self, include_unaffordable: bool) -> list[Affordance]:
        return self._world.affordances(include_unaffordable)

    def _locations(self) -> list[str]:
        return self._world.locations

    def _run(self, skill: str, args: Sequence[str]) -> tuple[SkillOutcome, list[str]]:
        seen = len(self._world.events)
        outcome = self._world.execute(skill, args)
        return outcome, [f"disturbance: {e}" for e in self._world.events[seen:]]
