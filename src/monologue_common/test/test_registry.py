"""The one plug-in registry: registration, built-ins found by package, dotted modules, clear errors."""
from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from monologue_common.core.registry import Registry, UnknownPluginError


@pytest.fixture
def plugin_dir(tmp_path: Path) -> Iterator[Path]:
    """A temporary directory on sys.path (the modules it holds are forgotten afterwards)."""
    sys.path.insert(0, str(tmp_path))
    before = set(sys.modules)
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        for name in set(sys.modules) - before:  # the modules of tmp_path only
            if str(getattr(sys.modules[name], "__file__", "") or "").startswith(str(tmp_path)):
                del sys.modules[name]


def test_register_get_and_names_in_order() -> None:
    reg: Registry[int] = Registry("numbers")
    reg.add("one", 1)

    @reg.register("two")
    def two() -> int:
        return 2

    assert reg.get("one") == 1
    assert reg.get("two") is two
    assert reg.names() == ("one", "two")
    assert "one" in reg and "three" not in reg


def test_unknown_name_lists_the_known_ones() -> None:
    reg: Registry[int] = Registry("numbers")
    reg.add("one", 1)
    reg.add("two", 2)
    with pytest.raises(UnknownPluginError, match=r"unknown numbers 'three'; known: one, two"):
        reg.get("three")
    with pytest.raises(ValueError):  # UnknownPluginError is a ValueError for existing callers
        reg.get("three")


def test_a_taken_name_is_refused_unless_replaced() -> None:
    reg: Registry[int] = Registry("numbers")
    reg.add("one", 1)
    reg.add("one", 1)  # the same object again is fine (a module imported twice)
    with pytest.raises(ValueError, match="already registered"):
        reg.add("one", 11)
    reg.add("one", 11, replace=True)
    assert reg.get("one") == 11
    reg.unregister("one")
    assert "one" not in reg


@pytest.mark.parametrize("bad", ["", " x", "a b"])
def test_invalid_names_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="invalid"):
        Registry[int]("numbers").add(bad, 1)


def test_built_ins_are_the_modules_of_the_package(plugin_dir: Path) -> None:
    pkg = plugin_dir / "my_plugins"
    (pkg / "beta").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "alpha.py").write_text("PLUGIN = 'a'\n")
    (pkg / "beta" / "__init__.py").write_text("PLUGIN = 'b'\n")
    (pkg / "_private.py").write_text("raise RuntimeError('never imported')\n")
    reg: Registry[str] = Registry("letters", package="my_plugins", attribute="PLUGIN",
                                  describe=lambda s: f"the letter {s}")
    assert reg.names() == ("alpha", "beta")
    assert reg.get("beta") == "b"
    assert reg.listing() == "letters:\n  alpha                    the letter a\n  beta                     the letter b"


def test_a_module_that_registers_itself(plugin_dir: Path) -> None:
    (plugin_dir / "reg_holder.py").write_text(
        "from monologue_common.core.registry import Registry\nREG = Registry('letters')\n")
    (plugin_dir / "lab").mkdir()
    (plugin_dir / "lab" / "__init__.py").write_text("")
    (plugin_dir / "lab" / "self_reg.py").write_text(textwrap.dedent("""
        import reg_holder
        reg_holder.REG.add("lab.self_reg", "x")
    """))
    import reg_holder  # type: ignore[import-not-found]

    assert reg_holder.REG.get("lab.self_reg") == "x"
    assert reg_holder.REG.names() == ("lab.self_reg",)


def test_dotted_module_path_from_a_temporary_directory(plugin_dir: Path) -> None:
    (plugin_dir / "lab_plugins").mkdir()
    (plugin_dir / "lab_plugins" / "__init__.py").write_text("")
    (plugin_dir / "lab_plugins" / "gripper.py").write_text("PLUGIN = {'kind': 'gripper'}\n")
    reg: Registry[dict[str, str]] = Registry("robots", attribute="PLUGIN")
    assert reg.get("lab_plugins.gripper") == {"kind": "gripper"}
    assert "lab_plugins.gripper" in reg.names()  # registered once loaded
    with pytest.raises(UnknownPluginError, match=r"module lab_plugins.nothing not found"):
        reg.get("lab_plugins.nothing")


def test_a_dotted_module_whose_own_import_fails_is_not_hidden(plugin_dir: Path) -> None:
    (plugin_dir / "broken").mkdir()
    (plugin_dir / "broken" / "__init__.py").write_text("")
    (plugin_dir / "broken" / "plugin.py").write_text("import a_module_that_does_not_exist_here\n")
    reg: Registry[object] = Registry("robots", attribute="PLUGIN")
    with pytest.raises(ModuleNotFoundError, match="a_module_that_does_not_exist_here"):
        reg.get("broken.plugin")
