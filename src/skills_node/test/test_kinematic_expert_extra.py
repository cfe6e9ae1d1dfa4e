"""llm:=expert: the kinematic backend of a Statler scene gives the domain's hidden truth as world.json's
extra (skills_node.node writes `backend.expert_extra()` on every ground-truth publication)."""
from __future__ import annotations

import logging
import threading

from monologue_domain.kinematic_world import TabletopWorld
from monologue_domain.scene_spec import SceneSpec
from monologue_domain.statler_domains import DomainSettings, DomainTruth, domain_spec
from skills_node.robots.kinematic.core.backend import SimBackend
from skills_node.robots.kinematic.plugin import add_expert_extra


def test_a_statler_scene_gives_its_truth_and_scene_order_after_every_move() -> None:
    settings = DomainSettings("covers", ("orange",), ("red",))
    spec = domain_spec(settings, SceneSpec(("red", "blue"), ("green",)))
    world = TabletopWorld.from_spec(spec, 0)
    truth = DomainTruth.create(settings, spec, 0)
    assert truth is not None
    world.observer = truth
    world.settle()
    backend = SimBackend(world, logging.getLogger("test"), 0.0)
    add_expert_extra(backend, world, truth)
    extra = backend.expert_extra()  # type: ignore[attr-defined]
    d = extra["statler"]
    assert d["covered"] == {"red block": "orange cup"} and "red block" in d["objects"]  # hidden from perception
    assert d["order"] == [o.name for o in world.objects]
    assert "red block" not in [o.name for o in backend.ground_truth()]
    outcome = backend.execute("pick_place", ("orange cup", "middle"), lambda *a: None, threading.Event())
    assert outcome.ok
    assert backend.expert_extra()["statler"]["covered"] == {}  # type: ignore[attr-defined]
