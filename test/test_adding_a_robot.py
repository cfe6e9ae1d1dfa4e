"""Adding a robot is one new module plus configuration (docs/adding_a_robot.md), shown with a toy robot:
a skills backend plug-in in a package of its own and a robot table entry with its parameter file, in a
copy of config/. No existing file is edited; the graph and the skills node pick both up by name."""
from __future__ import annotations

import logging
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]

# Step 1 of docs/adding_a_robot.md: the backend module (here in a package of its own, named by a dotted
# path; a folder skills_node/robots/<name>/ is named by <name> alone).
TOY_BACKEND = '''
"""Backend of a toy robot that waves (a stand-in for Spot or the kitchen)."""
from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from monologue_common.core.settings import ParamReader
from skills_node.plugin import BackendHandle, BackendHost, BackendPlugin
from skills_node.core.types import Affordance, SkillError, SkillOutcome


@dataclass(frozen=True)
class ToySettings:
    hands: tuple[str, ...]
    reach: float  # m


def read(r: ParamReader) -> ToySettings:
    return ToySettings(r.strings("toy.hands"), r.number("toy.reach", low=0.0, low_open=True))


class ToyBackend:
    def __init__(self, s: ToySettings) -> None:
        self.s = s

    def skill_names(self) -> Sequence[str]:
        return ("wave",)

    def affordances(self, include_unaffordable: bool = False) -> list[Affordance]:
        return [Affordance("wave", (h,), 1.0) for h in self.s.hands]

    def objects(self) -> list[str]:
        return []

    def locations(self) -> list[str]:
        return []

    def execute(self, skill, args, feedback, cancel: threading.Event) -> SkillOutcome:
        return SkillOutcome(SkillError.NONE, f"waved the {args[0]} hand {self.s.reach:.1f} m high")

    def ground_truth(self) -> None:
        return None


def create(host: BackendHost, s: ToySettings) -> BackendHandle:
    return BackendHandle(ToyBackend(s))


PLUGIN = BackendPlugin("toy", read, create, "a toy robot that waves")
'''

# Step 2: the robot table entry (appended to config/robots.yaml) ...
TOY_ENTRY = '''
  toy:
    description: a toy robot that waves
    skills_backend: toy_robots.toy_arm
    perception: oracle
    success: sim_geometric
    nodes:
      - name: toy_driver
        package: toy_robots
        executable: toy_driver
        role: drives the toy
'''

# ... and step 3: its parameter file config/robots/toy.yaml (the backend's block, and its own nodes').
TOY_PARAMS = '''
skills:
  ros__parameters:
    toy:
      hands: [left, right]
      reach: 1.5                       # m
toy_driver:
  ros__parameters:
    port: /dev/ttyUSB0
'''


def _node_parameters(node: str, args: list[str]) -> dict[str, object]:
    """The parameters rclpy declares for `node` from a `--ros-args` tail (files in order, then -p)."""
    def flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, object]:
        out: dict[str, object] = {}
        for k, v in tree.items():
            out.update(flatten(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v})
        return out

    params: dict[str, object] = {}
    for i, a in enumerate(args):
        if a == "--params-file":
            data = yaml.safe_load(Path(args[i + 1]).read_text())
            for section in ("/**", node):
                params.update(flatten((data.get(section) or {}).get("ros__parameters", {})))
        elif a == "-p":
            name, value = args[i + 1].split(":=", 1)
            params[name] = yaml.safe_load(value)
    return params


def test_a_new_robot_is_one_module_plus_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from monologue_bringup.graph import LIVE, REPLAY, find, graph_for, robot_params, robots, ros_args, select
    from skills_node.plugin import settings_from_parameters

    pkg = tmp_path / "toy_robots"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "toy_arm.py").write_text(textwrap.dedent(TOY_BACKEND))
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = tmp_path / "config"
    shutil.copytree(REPO / "config", cfg)
    with (cfg / "robots.yaml").open("a") as f:
        f.write(TOY_ENTRY)
    (cfg / "robots" / "toy.yaml").write_text(TOY_PARAMS)

    # the bring-up: a robot:= choice with its own node first, the table's parameters for the others
    assert robots(cfg) == (*robots(), "toy") and "toy" not in robots()
    assert [s.name for s in graph_for("toy", config_dir=cfg)] == ["toy_driver", *[s.name for s in select(LIVE)]]
    assert graph_for("toy", REPLAY, config_dir=cfg) == select(REPLAY)
    assert robot_params("toy", cfg)["skills"] == {"backend": "toy_robots.toy_arm"}
    assert find("toy_driver", cfg).package == "toy_robots"
    driver = _node_parameters("toy_driver", ros_args(find("toy_driver", cfg), cfg, "toy", "embedded"))
    assert driver["port"] == "/dev/ttyUSB0"

    # the skills node: the backend the table names, built from the toy's block only
    params = _node_parameters("skills", ros_args(find("skills"), cfg, "toy", "embedded"))
    settings, unused = settings_from_parameters(params)
    assert settings.plugin.name == "toy" and unused == []

    class Host:
        node: Any = None
        frame_id = "base_link"

        def logger(self, name: str) -> logging.Logger:
            return logging.getLogger(name)

        def publish_ground_truth(self) -> None:
            pass

    backend = settings.plugin.create(Host(), settings.backend_settings).backend
    assert [a.description for a in backend.affordances()] == ["wave(left)", "wave(right)"]
    import threading

    outcome = backend.execute("wave", ["left"], lambda *_: None, threading.Event())
    assert outcome.ok and outcome.message == "waved the left hand 1.5 m high"
    # a bad value in the new block is reported like any other
    with pytest.raises(ValueError, match=r"toy.reach: must be in \(0"):
        settings_from_parameters({**params, "toy.reach": 0.0})
