"""A recorded kitchen run (the sim_kitchen graph with record:=) replays to the identical transcript: the
bag player stands in for the skills node, perception and the success detector judge from the bag."""
from __future__ import annotations

from pathlib import Path

import pytest

from monologue_eval.demo import run_episode

pytestmark = [pytest.mark.system, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]

def test_a_recorded_kitchen_run_replays_to_the_same_transcript(ros_domain: int, tmp_path: Path) -> None:
    """Record a kitchen episode (the graph with record:=) and replay the bag: the bag player stands in for
    the skills node and the planner must write the identical transcript."""
    from monologue_bringup.up import Supervisor
    from monologue_eval.replay import replay

    lines: list[str] = []
    bag = tmp_path / "bag"
    sup = Supervisor("sim_kitchen", "embedded", config_dir=REPO / "config", sink=lines.append, record=bag, node_params={
        "skills": {"kitchen.objects": "[coke@table, sponge@close counter]", "kitchen.robot_location": "table",
                   "kitchen.seed": "2", "kitchen.skill_duration": "0.05"}})  # transcripts: in the bag
    sup.start()
    try:
        result, _ = run_episode("pick up the sponge", timeout_s=300.0, print_event=lambda _e: None,
                                goal_options={"strategy": "inner_monologue", "prompt_profile": "im_kitchen",
                                              "use_affordances": 2, "max_steps": 6}, recorder_ready_s=60.0)
    finally:
        codes = sup.stop()
    assert all(c in (0, -2, -15, 130) for c in codes.values()), (codes, "\n".join(lines[-80:]))
    recorded = [e.text for e in result.transcript]
    assert "pick up the sponge" in recorded, recorded
    said: list[str] = []
    rc = replay(bag, rate=1.0, timeout_s=300.0, robot="sim_kitchen", config_dir=REPO / "config", sink=lines.append,
                say=said.append)
    assert rc == 0, "\n".join(said) + "\n" + "\n".join(lines[-80:])
    assert any("1 episode(s)" in line for line in said), said
