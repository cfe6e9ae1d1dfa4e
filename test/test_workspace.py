"""Each package declares its kind once, in its manifest; scripts/workspace.py reads them for the import
contract, pytest's import path, mypy and setup.sh."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]


def _workspace() -> ModuleType:
    spec = importlib.util.spec_from_file_location("workspace_under_test", REPO / "scripts" / "workspace.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["workspace_under_test"] = mod
    spec.loader.exec_module(mod)
    return mod


def _manifest(root: Path, name: str, kind: str | None, build_type: str = "ament_python") -> None:
    (root / name).mkdir(parents=True)
    tag = f"<monologue_kind>{kind}</monologue_kind>" if kind is not None else ""
    (root / name / "package.xml").write_text(
        f"<package format=\"3\"><name>{name}</name><export><build_type>{build_type}</build_type>{tag}</export>"
        "</package>")


def test_every_package_of_the_tree_declares_a_kind() -> None:
    ws = _workspace()
    pkgs = {p.name: p for p in ws.packages(REPO / "src")}
    assert pkgs["planner_node"].kind == "node" and pkgs["monologue_llm"].kind == "library"
    assert pkgs["monologue_eval"].kind == "tool" and pkgs["monologue_interfaces"].kind == "interfaces"
    assert [p.name for p in pkgs.values() if p.wheels_only] == ["tf2_msgs"]
    # pytest's import path (conftest.py) is every Python package's source root
    for p in pkgs.values():
        if p.is_python:
            assert str(p.path) in sys.path


def test_a_new_package_is_found_and_a_missing_kind_named(tmp_path: Path) -> None:
    ws = _workspace()
    _manifest(tmp_path, "my_node", "node")
    _manifest(tmp_path, "my_msgs", "interfaces", "ament_cmake")
    (tmp_path / "build" / "copy").mkdir(parents=True)
    (tmp_path / "build" / "copy" / "package.xml").write_text("<package/>")  # a build tree is not a package
    assert [(p.name, p.kind, p.is_python) for p in ws.packages(tmp_path)] == [
        ("my_msgs", "interfaces", False), ("my_node", "node", True)]
    _manifest(tmp_path, "no_kind", None)
    with pytest.raises(ValueError, match=r"no_kind/package.xml: <export> needs <monologue_kind>"):
        ws.packages(tmp_path)


def test_the_cli_lists_kinds_and_paths() -> None:
    run = subprocess.run([sys.executable, str(REPO / "scripts" / "workspace.py"), "--kind", "library"],
                         capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["monologue_common", "monologue_domain", "monologue_llm", "monologue_vision"]
    run = subprocess.run([sys.executable, str(REPO / "scripts" / "workspace.py"), "--wheels-only"],
                         capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["tf2_msgs"]
