"""`monologue-demo scene:=covers|disinfection|weights`: a multi-query Statler episode in one of Statler's
domains (../shared/papers/statler.txt §IV-A; monologue_domain.statler_domains), judged on the domain's
hidden ground truth (`sim/statler_truth`), which the planner never sees.

Each demo states a fact the robot cannot perceive, then asks for an action that depends on it:
- disinfection: "The red block is dirty." / "Put the blue block on the red block." (the blue block
  becomes dirty by touching it) / "Put the dirty blocks in the disinfector." -> both blocks moved;
- covers: the red block starts under the orange cup (perception does not see it): "The red block is
  under the orange cup." / "Put the red block in the green bowl." -> the cup is moved first;
- weights: two weight statements, then "Put blocks in the pink bowl so that their total weight is the
  same as in the gray bowl."
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from monologue_domain.statler_domains import TRUTH_TOPIC

WORLD_STATE_TOPIC = "planner/world_state"  # the planner's Statler state (latched JSON)
Truth = Mapping[str, Any]


@dataclass(frozen=True)
class StatlerDemo:
    """One domain's demo: the scene node's parameters, the queries (one per line of the instruction)
    and the goal on the final ground truth (the `sim/statler_truth` JSON)."""

    scene: str
    params: Mapping[str, str]  # sim.* parameters of the scene node
    queries: tuple[str, ...]
    goal: Callable[[Truth], bool]
    expect: str  # what the goal checks, printed

    @property
    def instruction(self) -> str:
        return "\n".join(self.queries)

    @property
    def topics(self) -> tuple[str, ...]:
        """The demo's own topics (absolute names): a recorded run waits until the recorder has them."""
        return (f"/{WORLD_STATE_TOPIC}", f"/{TRUTH_TOPIC}")


def _contains(truth: Truth, container: str) -> set[str]:
    return set(truth.get("contains", {}).get(container, []))


def _disinfected(truth: Truth) -> bool:
    return {"red block", "blue block"} <= _contains(truth, "disinfector") and not truth.get("dirty") \
        and "green block" not in _contains(truth, "disinfector")


def _same_weight(truth: Truth) -> bool:
    totals = truth.get("total_weight", {})
    return bool(_contains(truth, "pink bowl")) and totals.get("pink bowl") == totals.get("gray bowl")


DEMOS: dict[str, StatlerDemo] = {
    "disinfection": StatlerDemo(
        "disinfection",
        {"sim.block_colors": "[red, blue, green]", "sim.bowl_colors": "[yellow]", "sim.dirty_blocks": "[red]"},
        ("The red block is dirty.", "Put the blue block on the red block.",
         "Put the dirty blocks in the disinfector."),
        _disinfected, "the red and blue blocks in the disinfector, the green one not, no block dirty"),
    "covers": StatlerDemo(
        "covers",
        {"sim.block_colors": "[red, blue]", "sim.bowl_colors": "[green]", "sim.cup_colors": "[orange]",
         "sim.covered_blocks": "[red]"},
        ("The red block is under the orange cup.", "Put the red block in the green bowl."),
        lambda t: "red block" in _contains(t, "green bowl") and not t.get("covered"),
        "the red block uncovered and in the green bowl"),
    "weights": StatlerDemo(
        "weights",
        {"sim.block_colors": "[red, blue, green]", "sim.bowl_colors": "[pink, gray]",
         "sim.block_weights": "[2.0, 1.0, 1.0]"},
        ("Put the red block in the gray bowl.", "The red block is twice the weight of the blue block.",
         "The green block has the same weight as the blue block.",
         "Put blocks in the pink bowl so that their total weight becomes identical to what is in the gray bowl."),
        _same_weight, "the pink bowl's total weight equal to the gray bowl's"),
}


def demo_for(scene: str) -> StatlerDemo:
    """The demo of a Statler scene; ValueError naming the known ones."""
    try:
        return DEMOS[scene]
    except KeyError:
        raise ValueError(f"no Statler demo for scene {scene!r}; known: {sorted(DEMOS)}") from None


def latest_json(topics: Sequence[str], timeout_s: float = 5.0) -> dict[str, dict[str, Any]]:
    """The latest message (std_msgs/String, JSON) of each latched topic, waiting at most `timeout_s`
    s for all of them; a topic that sent nothing is missing from the result."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.utilities import ok
    from std_msgs.msg import String

    from monologue_common.qos import LATCHED

    own_context = not ok()
    if own_context:
        rclpy.init(args=[])
    node = rclpy.create_node(f"monologue_eval_statler_{os.getpid()}")
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    got: dict[str, dict[str, Any]] = {}

    def keep(topic: str) -> Callable[[String], None]:
        def on(msg: String) -> None:
            try:
                got[topic] = json.loads(msg.data)
            except json.JSONDecodeError:
                got[topic] = {"unreadable": msg.data[:200]}
        return on

    try:
        for t in topics:
            node.create_subscription(String, t, keep(t), LATCHED)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and len(got) < len(topics):
            executor.spin_once(timeout_sec=0.1)
        end = time.monotonic() + 0.3  # s: the newest of a burst of latched messages
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)
        return got
    finally:
        executor.shutdown()  # drops spin_once's suspended wait (it holds the node's handles)
        node.destroy_node()
        if own_context:
            rclpy.shutdown()


def final_truth(timeout_s: float = 5.0) -> tuple[dict[str, Any], dict[str, Any]]:
    """(ground truth of the domain, the planner's last Statler state message) from their latched topics."""
    got = latest_json([TRUTH_TOPIC, WORLD_STATE_TOPIC], timeout_s)
    return got.get(TRUTH_TOPIC, {}), got.get(WORLD_STATE_TOPIC, {})


__all__ = ["DEMOS", "WORLD_STATE_TOPIC", "StatlerDemo", "demo_for", "final_truth", "latest_json"]
