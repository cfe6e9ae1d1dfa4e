"""The expert stand-in's side channel: simulators write the world's truth, runners the tasks' goals."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from monologue_domain.expert.channel import (
    TruthUnavailableError,
    read_task,
    read_world,
    wait_world,
    write_task,
    write_world,
)
from monologue_domain.scene import SceneObject

BLOCK = SceneObject(name="red block", category="block", position=(0.1, -0.2, 0.02), size=(0.04, 0.04, 0.04),
                    color="red", heavy=True)


def test_world_round_trip(tmp_path: Path) -> None:
    write_world(tmp_path, "kinematic", [BLOCK], held=["red block"], extra={"statler": {"dirty": ["red block"]}})
    truth = read_world(tmp_path)
    assert truth is not None
    assert (truth.source, truth.world, truth.held) == ("kinematic", "tabletop", ("red block",))
    assert truth.by_name()["red block"] == BLOCK  # tuples and flags survive JSON
    assert truth.extra == {"statler": {"dirty": ["red block"]}}


def test_only_simulated_sources_write_or_are_read(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a simulated backend"):
        write_world(tmp_path, "ur5e", [BLOCK])
    (tmp_path / "world.json").write_text(json.dumps({"source": "spot", "world": "kitchen", "stamp_s": 0,
                                                     "objects": []}))
    with pytest.raises(ValueError, match="not a simulated backend"):
        read_world(tmp_path)


def test_waiting_for_a_simulator_is_bounded(tmp_path: Path) -> None:
    assert read_world(tmp_path) is None
    with pytest.raises(TruthUnavailableError, match="only with a simulated robot"):
        wait_world(tmp_path, timeout_s=0.2)
    threading.Timer(0.1, lambda: write_world(tmp_path, "kitchen", [BLOCK])).start()
    assert wait_world(tmp_path, timeout_s=5.0).world == "kitchen"


def test_tasks_by_instruction(tmp_path: Path) -> None:
    assert read_task(tmp_path, "Stack the blocks.") is None
    write_task(tmp_path, "Stack the blocks. ", "tabletop", {"family": "stack"})
    write_task(tmp_path, "Put the red block in the blue bowl.", "tabletop", {"family": "pick_place"})
    assert read_task(tmp_path, " Stack the blocks.") == {"world": "tabletop", "goal": {"family": "stack"}}
    assert read_task(tmp_path, "Put the red block in the blue bowl.")["goal"] == {"family": "pick_place"}  # type: ignore[index]
