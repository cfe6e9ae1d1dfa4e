"""The test session's set-up, loaded by pytest before any test module (pytest.ini sits here).

1. Import path: the source root of every Python package of src/, from the packages' own manifests
   (scripts/workspace.py), ahead of the colcon install/ copies, so unit tests run the source tree.
2. Every test session (and every pytest-xdist worker) runs on a ROS_DOMAIN_ID of its own: it claims a
   domain in 100-199 that no other session holds or uses (monologue_common.core.domain) before any test
   imports rclpy, so tests never meet a developer's graph or another test run.
   `MONOLOGUE_TEST_ROS_DOMAIN_ID=<n>` forces one.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent


def _source_roots() -> list[str]:
    spec = importlib.util.spec_from_file_location("monologue_workspace", ROOT / "scripts" / "workspace.py")
    assert spec is not None and spec.loader is not None
    workspace = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("monologue_workspace", workspace)
    spec.loader.exec_module(workspace)
    return [str(p) for p in workspace.python_paths(workspace.packages(ROOT / "src"))]


for _root in reversed(_source_roots()):
    if _root not in sys.path:
        sys.path.insert(0, _root)

from monologue_common.core import domain as ros_domains  # noqa: E402 - needs the import path above

_LOCKS: list[object] = []  # held for the whole session: closing a lock releases its domain


def pytest_configure(config: pytest.Config) -> None:
    forced = os.environ.get("MONOLOGUE_TEST_ROS_DOMAIN_ID", "")
    if forced:
        chosen = int(forced)
    else:
        chosen, lock = ros_domains.claim(*ros_domains.TEST_RANGE)
        _LOCKS.append(lock)
    os.environ["ROS_DOMAIN_ID"] = str(chosen)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")


def pytest_report_header(config: pytest.Config) -> str:
    return f"ROS_DOMAIN_ID={os.environ.get('ROS_DOMAIN_ID')} (this session's own; conftest.py)"


@pytest.fixture(autouse=True)
def _forget_modules_imported_from_temporary_directories(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Plug-in tests write packages into tmp_path and import them by name; forget those modules afterwards,
    so a later test (on the same xdist worker) writing a package of the same name imports its own. Only
    modules under pytest's own temporary base directory count (a checkout may itself live in /tmp)."""
    base = os.path.realpath(tmp_path_factory.getbasetemp()) + os.sep
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        path = getattr(sys.modules.get(name), "__file__", None) or ""
        if path and os.path.realpath(path).startswith(base):
            del sys.modules[name]


@pytest.fixture
def plugin_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], str]:
    """`write(dotted, source)`: the plug-in module `<package>.<module>` holding `source`, written into tmp_path
    with its package's `__init__.py` and put on sys.path as PYTHONPATH would; returns the dotted name (a
    plug-in from outside the project, selected by that name). Its modules are forgotten after the test."""

    def write(dotted: str, source: str) -> str:
        parts = dotted.split(".")
        for i in range(1, len(parts)):
            tmp_path.joinpath(*parts[:i]).mkdir(exist_ok=True)
            tmp_path.joinpath(*parts[:i], "__init__.py").touch()
        tmp_path.joinpath(*parts[:-1], f"{parts[-1]}.py").write_text(textwrap.dedent(source))
        monkeypatch.syspath_prepend(str(tmp_path))
        return dotted

    return write
