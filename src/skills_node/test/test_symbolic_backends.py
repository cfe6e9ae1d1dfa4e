"""The symbolic worlds' backends (robots/kitchen, robots/household) share one base (core/symbolic.py): the
same reads under the world lock, one name for the affordance list, the same skill execution. Pins the drift
the two copies had (only the kitchen read `objects` under the lock; `affordances` vs `affordance_list`)."""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import pytest

from monologue_domain.kitchen.household import SCENES, HouseholdWorld
from monologue_domain.kitchen.world import KitchenWorld, default_state
from monologue_domain.skills import Affordance
from skills_node.core.symbolic import SymbolicBackend
from skills_node.robots.household.core import HouseholdBackend
from skills_node.robots.kitchen.core import KitchenBackend

LOG = logging.getLogger("test")


def kitchen() -> KitchenBackend:
    return KitchenBackend(KitchenWorld.from_state(default_state()), LOG, 0.0)


def household() -> HouseholdBackend:
    scene, start = SCENES["lab"]()
    return HouseholdBackend(HouseholdWorld(scene, start), LOG, 0.0)


BACKENDS: list[Callable[[], SymbolicBackend[KitchenWorld] | SymbolicBackend[HouseholdWorld]]] = [kitchen, household]


def _waits_for_the_lock(b: SymbolicBackend[KitchenWorld] | SymbolicBackend[HouseholdWorld],
                        read: Callable[[], object]) -> object:
    """Call `read` in a thread while the world lock is held: it must wait, then finish once released."""
    out: list[object] = []
    t = threading.Thread(target=lambda: out.append(read()))
    with b._lock:
        t.start()
        t.join(0.2)
        assert t.is_alive() and not out  # blocked on the world lock
    t.join(5.0)
    assert not t.is_alive() and len(out) == 1
    return out[0]


@pytest.mark.parametrize("make", BACKENDS, ids=["kitchen", "household"])
def test_both_worlds_read_objects_and_affordances_under_the_world_lock(
        make: Callable[[], SymbolicBackend[KitchenWorld] | SymbolicBackend[HouseholdWorld]]) -> None:
    b = make()
    objects = _waits_for_the_lock(b, b.objects)
    assert isinstance(objects, list) and objects == list(b.world.objects) and objects
    affordances = _waits_for_the_lock(b, b.affordances)
    assert isinstance(affordances, list) and affordances and all(isinstance(a, Affordance) for a in affordances)
    assert _waits_for_the_lock(b, b.locations)
    assert _waits_for_the_lock(b, b.ground_truth)


@pytest.mark.parametrize("make", BACKENDS, ids=["kitchen", "household"])
def test_both_worlds_offer_one_affordance_list(
        make: Callable[[], SymbolicBackend[KitchenWorld] | SymbolicBackend[HouseholdWorld]]) -> None:
    """`affordances(include_unaffordable)` on both: all instances with it, the affordable ones without."""
    b = make()
    every, some = b.affordances(include_unaffordable=True), b.affordances()
    assert {a.description for a in some} <= {a.description for a in every}
    assert all(a.affordance > 0 for a in some) and len(every) > len(some)
    assert {a.skill for a in every} <= set(b.skill_names())
