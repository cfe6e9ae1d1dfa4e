"""The packages of src/ keep the import contract (test/import_contract.py, docs/architecture.md)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def _contract() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_contract", REPO / "test" / "import_contract.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("import_contract", mod)
    spec.loader.exec_module(mod)
    return mod


def _write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def test_the_source_tree_keeps_the_contract() -> None:
    c = _contract()
    found = c.check_tree(REPO / "src")
    assert not found, "import contract violations:\n" + "\n".join(str(v) for v in found)


def test_a_peer_import_between_node_packages_is_caught(tmp_path: Path) -> None:
    c = _contract()
    _write(tmp_path, "success_detector_node/success_detector_node/node.py",
           "def f():\n    from perception_node.core.pipeline import decode_color\n")
    _write(tmp_path, "perception_node/perception_node/core/pipeline.py", "import numpy\n")
    found = c.check_tree(tmp_path)
    assert [(v.module, v.imported) for v in found] == [
        ("success_detector_node.node", "perception_node.core.pipeline")]
    assert "node package perception_node" in found[0].rule


def test_libraries_tools_and_ros_free_modules_are_checked(tmp_path: Path) -> None:
    c = _contract()
    _write(tmp_path, "monologue_llm/monologue_llm/base.py", "import planner_node.node\nimport rclpy\n")
    _write(tmp_path, "planner_node/planner_node/core/loop.py",
           "import rclpy.node\nfrom monologue_interfaces.msg import TranscriptEvent\nimport monologue_llm.base\n")
    _write(tmp_path, "planner_node/planner_node/node.py", "import rclpy\nimport monologue_eval.demo\n")
    _write(tmp_path, "monologue_eval/monologue_eval/bench.py", "from skills_node.core import tabletop\n"
           "import monologue_bag.core.bagio\nimport monologue_bringup.graph\n")
    _write(tmp_path, "skills_node/test/test_x.py", "from tabletop_sim.core import world\n")
    found = {(v.module, v.imported) for v in c.check_tree(tmp_path)}
    assert found == {
        ("monologue_llm.base", "planner_node.node"),
        ("monologue_llm.base", "rclpy"),
        ("planner_node.core.loop", "rclpy.node"),
        ("planner_node.core.loop", "monologue_interfaces.msg"),
        ("planner_node.node", "monologue_eval.demo"),
        ("monologue_eval.bench", "skills_node.core"),
        ("skills_node.test.test_x", "tabletop_sim.core"),
    }
    assert c.main([str(tmp_path)]) == 1


def test_an_import_circle_inside_a_package_is_caught(tmp_path: Path) -> None:
    c = _contract()
    _write(tmp_path, "planner_node/planner_node/__init__.py", "")
    _write(tmp_path, "planner_node/planner_node/core/__init__.py", "")
    # a -> b -> c -> a, through a relative import, an absolute one and one inside a function
    _write(tmp_path, "planner_node/planner_node/core/a.py", "from .b import x\n")
    _write(tmp_path, "planner_node/planner_node/core/b.py", "import planner_node.core.c\nx = 1\n")
    _write(tmp_path, "planner_node/planner_node/core/c.py", "def f():\n    from planner_node.core import a\n")
    # imports only for type checking never run, and a package importing its module is no circle alone
    _write(tmp_path, "planner_node/planner_node/core/d.py",
           "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .e import y\n")
    _write(tmp_path, "planner_node/planner_node/core/e.py", "from . import d\ny = 1\n")
    found = c.check_tree(tmp_path)
    assert [(v.module, v.rule) for v in found] == [
        ("planner_node.core.a", "import circle: planner_node.core.a <-> planner_node.core.b <-> planner_node.core.c")]
    assert found[0].line == 1
